package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
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

// newPostgresCPU follows the local PostgreSQL server at dsn, whose work
// is done by many processes: the postmaster's CPU time, that of the
// children it has reaped (backends whose connection ended), and that of
// its children still running (backends, the WAL writer, the
// checkpointer…), when dsn's host is this machine and /proc shows the
// postmaster. The postmaster is the one serving dsn (servingPostmaster),
// so that another server on the machine is not taken for it; without
// psql, the first postmaster /proc lists.
func newPostgresCPU(dsn string) *serverCPU {
	s := &serverCPU{cur: -1}
	if !loopback(pgHost(dsn)) {
		return s
	}
	pm, ok := servingPostmaster(dsn)
	if !ok {
		pm, ok = postmaster(procDir("/proc"))
	}
	if ok {
		s.read = func() (time.Duration, bool) { return treeCPU(procDir("/proc"), pm) }
	}
	return s
}

// servingPostmaster returns the pid of the postmaster of the server at
// dsn: the parent of its checkpointer, a child that lives as long as the
// server does. (The backend that answers the query, pg_backend_pid, has
// mostly ended by the time psql has, and its parent cannot be read.)
func servingPostmaster(dsn string) (int, bool) {
	out, err := exec.Command("psql", dsn, "-qAtc", postmasterChild).Output()
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return 0, false
	}
	st, ok := procDir("/proc").stat(pid)
	if !ok || st.ppid <= 1 {
		return 0, false
	}
	return st.ppid, true
}

// postmasterChild is the query that names a child of the postmaster that
// outlives the session that asks: the checkpointer.
const postmasterChild = `SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'`

// postmaster returns the pid of a process named postgres whose parent is
// not one.
func postmaster(p procDir) (int, bool) {
	for _, pid := range p.pids() {
		if p.comm(pid) != "postgres" {
			continue
		}
		if st, ok := p.stat(pid); ok && p.comm(st.ppid) != "postgres" {
			return pid, true
		}
	}
	return 0, false
}

// procTable is where treeCPU reads processes: /proc (procDir), or a
// test's table.
type procTable interface {
	// pids lists the processes now.
	pids() []int
	// stat reads process pid's stat line; false once it is gone.
	stat(pid int) (stat, bool)
}

// procDir is a procTable read from a /proc file system mounted there.
type procDir string

func (p procDir) pids() []int {
	dirs, _ := filepath.Glob(filepath.Join(string(p), "[0-9]*"))
	out := make([]int, 0, len(dirs))
	for _, d := range dirs {
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

func (p procDir) stat(pid int) (stat, bool) {
	b, err := os.ReadFile(filepath.Join(string(p), strconv.Itoa(pid), "stat"))
	if err != nil {
		return stat{}, false
	}
	return parseStat(string(b))
}

func (p procDir) comm(pid int) string {
	b, _ := os.ReadFile(filepath.Join(string(p), strconv.Itoa(pid), "comm"))
	return strings.TrimSpace(string(b))
}

// treeCPU returns the CPU time of process pid, of the children it has
// reaped and of its live children, as one consistent sample. A child
// reaped while the children are read moves its time from the live ones
// to the parent's reaped ones: read before the move and after, it would
// be missed (reaped before its line was read, after the parent's) or
// counted twice; a backend is reaped just as the command that used it
// ends, when its time is read. So the parent's line is read before the
// children's and again after them, and the sample is taken again until
// the reaped children's time stayed the same across it; after 10 tries
// nothing is read.
func treeCPU(p procTable, pid int) (time.Duration, bool) {
	for range 10 {
		before, ok := p.stat(pid)
		if !ok {
			return 0, false
		}
		var live time.Duration
		for _, c := range p.pids() {
			if st, ok := p.stat(c); ok && st.ppid == pid {
				live += st.self
			}
		}
		after, ok := p.stat(pid)
		if !ok {
			return 0, false
		}
		if after.children == before.children {
			return after.self + after.children + live, true
		}
	}
	return 0, false
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
