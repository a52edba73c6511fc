package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// serverCPU follows the CPU time a local database server spends while
// each command of a race runs: the server's user and system time (Linux:
// /proc/PID/stat) read after a command's setup and again before the next
// command's, so that the setups' statements are left out. Other clients
// of the server are counted too: on a shared machine the readings are an
// upper bound. Its zero value, or one with no read, measures nothing.
type serverCPU struct {
	read  func() (time.Duration, bool)
	cur   int // the command running, from its setup's end; -1: none
	last  time.Duration
	times [][]time.Duration // per command, per round
}

// newServerCPU follows the server process named one of names when host is
// this machine and /proc shows the process; otherwise it measures nothing.
func newServerCPU(host string, names ...string) *serverCPU {
	s := &serverCPU{cur: -1}
	if !loopback(host) {
		return s
	}
	if stat := findProc(names...); stat != "" {
		s.read = func() (time.Duration, bool) {
			b, err := os.ReadFile(stat)
			if err != nil {
				return 0, false
			}
			return procCPU(string(b))
		}
	}
	return s
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// findProc returns the /proc stat file of the first process whose command
// name is one of names, or "".
func findProc(names ...string) string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "comm"))
		if err != nil {
			continue
		}
		for _, n := range names {
			if strings.TrimSpace(string(b)) == n {
				return filepath.Join(d, "stat")
			}
		}
	}
	return ""
}

// procCPU returns the user and system time in a /proc/PID/stat line
// (fields 14 and 15, in clock ticks of 1/100 s, Linux's USER_HZ); the
// command name, field 2, may hold spaces and parentheses.
func procCPU(stat string) (time.Duration, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(stat[i+1:]) // from field 3, the state
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+s) * 10 * time.Millisecond, true
}

// around returns the setup of command j of the race: it ends the reading
// of the command that ran before it, runs setup, and starts j's.
func (s *serverCPU) around(j int, setup func() error) func() error {
	if s.read == nil {
		return setup
	}
	for len(s.times) <= j {
		s.times = append(s.times, nil)
	}
	return func() error {
		s.stop()
		var err error
		if setup != nil {
			err = setup()
		}
		if now, ok := s.read(); ok {
			s.cur, s.last = j, now
		}
		return err
	}
}

// stop ends the reading of the command running, if any: call it after
// the race.
func (s *serverCPU) stop() {
	if s.cur < 0 {
		return
	}
	if now, ok := s.read(); ok {
		s.times[s.cur] = append(s.times[s.cur], now-s.last)
	}
	s.cur = -1
}

// note returns what the server spent while command j ran, as a note for
// its row: the median, and for j > 0 the median of the per-round ratios
// to command 0's; "" when nothing was measured.
func (s *serverCPU) note(j int) string {
	if j >= len(s.times) || len(s.times[j]) == 0 {
		return ""
	}
	var secs, ratios []float64
	for i, d := range s.times[j] {
		secs = append(secs, d.Seconds())
		if j > 0 && i < len(s.times[0]) && s.times[0][i] > 0 {
			ratios = append(ratios, d.Seconds()/s.times[0][i].Seconds())
		}
	}
	out := fmt.Sprintf("server CPU %.2f s", median(secs))
	if len(ratios) > 0 {
		out += fmt.Sprintf(", %.2f× paired", median(ratios))
	}
	return out
}
