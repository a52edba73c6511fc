package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// parseDuration reads a duration as Go writes them (90s, 1h30m), which may
// begin with a number of days: 90d, 1d12h. It is how every duration flag
// reads its value.
func parseDuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("%q: want a duration such as 30s, 10m, 36h or 90d", s)
	var total time.Duration
	rest := s
	if i := strings.IndexByte(rest, 'd'); i > 0 {
		days, err := strconv.Atoi(rest[:i])
		if err != nil || days < 0 || days > 100*365 {
			return 0, bad
		}
		total = time.Duration(days) * 24 * time.Hour
		rest = rest[i+1:]
	} else if rest == "" {
		return 0, bad
	}
	if rest != "" {
		d, err := time.ParseDuration(rest)
		if err != nil || d < 0 {
			return 0, bad
		}
		total += d
	}
	return total, nil
}

// durationFlag is a pflag.Value for a time.Duration read by parseDuration,
// so that every duration flag takes days as --min-age and gc do.
type durationFlag struct{ d *time.Duration }

func newDurationFlag(p *time.Duration, value time.Duration) durationFlag {
	*p = value
	return durationFlag{p}
}

func (f durationFlag) String() string {
	if f.d == nil {
		return "0s"
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		// pflag quotes the value and names the flag.
		return errors.New("want a duration such as 30s, 10m, 36h or 90d")
	}
	*f.d = d
	return nil
}

func (f durationFlag) Type() string { return "duration" }
