package pipeline

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// RejectLimit is how many bad rows a file may have and still be imported:
// a count, or a percentage of the file's rows. The zero value allows none.
type RejectLimit struct {
	Count   int64
	Percent float64 // used when positive
}

// ParseRejectLimit reads "10" or "0.5%".
func ParseRejectLimit(s string) (RejectLimit, error) {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || v < 0 || v > 100 {
			return RejectLimit{}, fmt.Errorf("%q: want a count or a percentage from 0%% to 100%%", s)
		}
		return RejectLimit{Percent: v}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return RejectLimit{}, fmt.Errorf("%q: want a count or a percentage from 0%% to 100%%", s)
	}
	return RejectLimit{Count: n}, nil
}

// Allows reports whether rejected bad rows out of rows are within the limit.
func (l RejectLimit) Allows(rejected, rows int64) bool {
	if l.Percent > 0 {
		return float64(rejected) <= l.Percent/100*float64(rows)
	}
	return rejected <= l.Count
}

func (l RejectLimit) String() string {
	if l.Percent > 0 {
		return strconv.FormatFloat(l.Percent, 'f', -1, 64) + "%"
	}
	return strconv.FormatInt(l.Count, 10)
}

// MarshalJSON writes the limit as its text: 10 or "0.5%".
func (l RejectLimit) MarshalJSON() ([]byte, error) {
	if l.Percent > 0 {
		return json.Marshal(l.String())
	}
	return json.Marshal(l.Count)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (l *RejectLimit) UnmarshalJSON(b []byte) error {
	var n int64
	if err := json.Unmarshal(b, &n); err == nil {
		*l = RejectLimit{Count: n}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := ParseRejectLimit(s)
	*l = v
	return err
}
