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
	st, ok := parseStat(stat)
	return st.self, ok
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

// named returns the row name s with command j's note, if any.
func (s *serverCPU) named(j int, name string) string {
	if n := s.note(j); n != "" {
		return name + " (" + n + ")"
	}
	return name
}

// newPostgresCPU follows a local PostgreSQL server, whose work is done by
// many processes: the postmaster's CPU time, that of the children it has
// reaped (backends whose connection ended), and that of its children
// still running (backends, the WAL writer, the checkpointer…), when host
// is this machine and /proc shows the postmaster.
func newPostgresCPU(host string) *serverCPU {
	s := &serverCPU{cur: -1}
	if !loopback(host) {
		return s
	}
	if pm := postmaster(); pm != "" {
		s.read = func() (time.Duration, bool) { return treeCPU(pm) }
	}
	return s
}

// postmaster returns the /proc directory of a process named postgres whose
// parent is not one, or "".
func postmaster() string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if comm(d) != "postgres" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		if st, ok := parseStat(string(b)); ok && comm(filepath.Join("/proc", strconv.Itoa(st.ppid))) != "postgres" {
			return d
		}
	}
	return ""
}

func comm(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "comm"))
	return strings.TrimSpace(string(b))
}

// treeCPU returns the CPU time of the process in dir, of its reaped
// children and of its live children.
func treeCPU(dir string) (time.Duration, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return 0, false
	}
	root, ok := parseStat(string(b))
	if !ok {
		return 0, false
	}
	total := root.self + root.children
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		if st, ok := parseStat(string(b)); ok && st.ppid == root.pid {
			total += st.self
		}
	}
	return total, true
}

// stat is what a /proc/PID/stat line says of a process's CPU time.
type stat struct {
	pid, ppid int
	// self: its user and system time (fields 14 and 15); children: that of
	// the children it has waited for (fields 16 and 17).
	self, children time.Duration
}

// parseStat reads a /proc/PID/stat line, in clock ticks of 1/100 s
// (Linux's USER_HZ); the command name, field 2, may hold spaces and
// parentheses.
func parseStat(line string) (stat, bool) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return stat{}, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(line, " ", 2)[0]))
	f := strings.Fields(line[i+1:]) // from field 3, the state
	if err != nil || len(f) < 15 {
		return stat{}, false
	}
	var n [5]int64
	for k, j := range []int{1, 11, 12, 13, 14} { // ppid, utime, stime, cutime, cstime
		if n[k], err = strconv.ParseInt(f[j], 10, 64); err != nil {
			return stat{}, false
		}
	}
	tick := 10 * time.Millisecond
	return stat{pid: pid, ppid: int(n[0]), self: time.Duration(n[1]+n[2]) * tick, children: time.Duration(n[3]+n[4]) * tick}, true
}
