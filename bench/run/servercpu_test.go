package main

import (
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/pgtest"
)

// TestProcCPU reads a server's user and system time from its stat line,
// whose command name may hold spaces and parentheses.
func TestProcCPU(t *testing.T) {
	line := "3826 (maria (d) b) S 1 3826 3826 0 -1 4194560 94510 0 12 0 150 50 0 0 20 0 30 0 1234 1500000000 50000"
	got, ok := procCPU(line)
	if !ok || got != 2*time.Second {
		t.Fatalf("procCPU = %v, %v; want 2s, true", got, ok)
	}
	if _, ok := procCPU("3826 (cut"); ok {
		t.Fatal("procCPU of a cut line reported a time")
	}
}

// TestParseStat reads a process's parent, its own CPU time and its
// waited-for children's from its stat line: a PostgreSQL server's time is
// the postmaster's, its ended backends' (the children's fields) and its
// live children's.
func TestParseStat(t *testing.T) {
	line := "3826 (postgres (x)) S 812 3826 3826 0 -1 4194560 94510 0 12 0 150 50 2000 300 20 0 30 0 1234 1500000000 50000"
	got, ok := parseStat(line)
	want := stat{pid: 3826, ppid: 812, self: 2 * time.Second, children: 23 * time.Second}
	if !ok || got != want {
		t.Fatalf("parseStat = %+v, %v; want %+v, true", got, ok, want)
	}
	for _, bad := range []string{"3826 (cut", "x (postgres) S 812 3826 3826 0 -1 4194560 94510 0 12 0 150 50 2000 300", "3826 (postgres) S 812 3826 3826 0 -1 4194560 94510 0 12 0 150 50 2000"} {
		if _, ok := parseStat(bad); ok {
			t.Errorf("parseStat(%q) reported a time", bad)
		}
	}
}

// TestServerCPUAroundARace: in a race of two commands, two rounds (A B A
// B, each run after its setup as race runs it), each command is given what
// the server spent from the end of its setup to the start of the next
// setup, not what the setups' statements cost, and the second's note is
// its median and its paired ratio to the first's.
func TestServerCPUAroundARace(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs true")
	}
	var server time.Duration // the server's CPU time
	s := &serverCPU{cur: -1, read: func() (time.Duration, bool) { return server, true }}
	// Each setup costs the server 1 s; A 10 s and B 20 s in each round.
	statements := func() error { server += time.Second; return nil }
	cs := []cmd{{name: "A", argv: []string{"true"}, setup: statements}, {name: "B", argv: []string{"true"}, setup: statements}}
	for j := range cs {
		cs[j].setup = s.around(j, cs[j].setup)
	}
	for range 2 {
		for j, cost := range []time.Duration{10 * time.Second, 20 * time.Second} {
			if _, err := run(cs[j]); err != nil {
				t.Fatal(err)
			}
			server += cost // what the command made the server do
		}
	}
	s.stop()
	if server != 2*(2+10+20)*time.Second {
		t.Fatalf("the setups ran %v of server time, want 4s", server-60*time.Second)
	}
	for j, want := range []time.Duration{10 * time.Second, 20 * time.Second} {
		if got := s.times[j]; len(got) != 2 || got[0] != want || got[1] != want {
			t.Errorf("command %d: server CPU %v, want %v in each round", j, got, want)
		}
	}
	if got, want := s.note(1), "server CPU 20.00 s, 2.00× paired"; got != want {
		t.Errorf("note: %q, want %q", got, want)
	}
	if got := (&serverCPU{cur: -1}).note(0); got != "" {
		t.Errorf("note of nothing measured: %q", got)
	}
}

// fakeProcs is a procTable whose process 1 is a postmaster; reaping, when
// set, is a child it reaps just after that child's line is read (reapLate)
// or just before (not late): the moment a backend whose command ended is
// reaped, which a sample taken then straddles.
type fakeProcs struct {
	procs    map[int]stat
	reaping  int
	reapLate bool
}

func (f *fakeProcs) pids() []int {
	var out []int
	for pid := range f.procs {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out
}

func (f *fakeProcs) stat(pid int) (stat, bool) {
	if pid == f.reaping && !f.reapLate {
		f.reap()
	}
	st, ok := f.procs[pid]
	if pid == f.reaping && f.reapLate {
		f.reap()
	}
	return st, ok
}

// reap moves the child's time into the postmaster's reaped children's.
func (f *fakeProcs) reap() {
	pm := f.procs[1]
	pm.children += f.procs[f.reaping].self
	f.procs[1] = pm
	delete(f.procs, f.reaping)
	f.reaping = 0
}

// TestTreeCPUStraddlingAReap: a PostgreSQL server's time is the
// postmaster's own (1 s), its reaped backends' (10 s) and its live
// children's (a backend 7 s, the WAL writer 2 s; process 9 is no child of
// it): 20 s, whether the 7 s backend is reaped before its line is read
// (its time would be missed: read neither live nor in the postmaster's
// first line) or just after it (counted twice), or not at all.
func TestTreeCPUStraddlingAReap(t *testing.T) {
	for _, c := range []struct {
		name    string
		reaping int
		late    bool
	}{{"no reap", 0, false}, {"reaped before its line", 3, false}, {"reaped after its line", 3, true}} {
		f := &fakeProcs{procs: map[int]stat{
			1: {pid: 1, ppid: 0, self: time.Second, children: 10 * time.Second},
			2: {pid: 2, ppid: 1, self: 2 * time.Second},
			3: {pid: 3, ppid: 1, self: 7 * time.Second},
			9: {pid: 9, ppid: 8, self: 100 * time.Second},
		}, reaping: c.reaping, reapLate: c.late}
		got, ok := treeCPU(f, 1)
		if !ok || got != 20*time.Second {
			t.Errorf("%s: treeCPU = %v, %v; want 20s, true", c.name, got, ok)
		}
	}
	if _, ok := treeCPU(&fakeProcs{procs: map[int]stat{}}, 1); ok {
		t.Error("treeCPU of a postmaster that is gone reported a time")
	}
}

// TestServerCPUCommandEndsAsItIsRead: the backend of a command that has
// just ended is reaped while its end is read; the command is given the 5 s
// its backend spent, not 0 s (the reading that missed it, against which
// the paired ratio once read 0.07×).
func TestServerCPUCommandEndsAsItIsRead(t *testing.T) {
	f := &fakeProcs{procs: map[int]stat{1: {pid: 1, self: time.Second}, 2: {pid: 2, ppid: 1, self: time.Second}}}
	s := &serverCPU{cur: -1, read: func() (time.Duration, bool) { return treeCPU(f, 1) }}
	if err := s.around(0, nil)(); err != nil {
		t.Fatal(err)
	}
	f.procs[5] = stat{pid: 5, ppid: 1, self: 5 * time.Second} // the command's backend
	f.reaping = 5
	s.stop()
	if got := s.times[0]; len(got) != 1 || got[0] != 5*time.Second {
		t.Fatalf("server CPU %v, want [5s]", got)
	}
}

// TestServingPostmasterOfTheDSN: the postmaster of the test server is
// found every time, from a child of it that the session asking does not
// end: not the session's own backend, which has ended by the time psql
// has, before its parent could be read.
func TestServingPostmasterOfTheDSN(t *testing.T) {
	dsn := pgtest.DSN(t)
	if !loopback(pgHost(dsn)) {
		t.Skip("the test server does not run on this machine")
	}
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("needs psql")
	}
	out, err := exec.Command("psql", dsn, "-qAtc", `SELECT count(*) FROM (`+postmasterChild+`) AS c (pid) WHERE pid = pg_backend_pid()`).Output()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.TrimSpace(string(out)); n != "0" {
		t.Fatalf("the process %q names is the asking session's own backend (%s), which ends with it", postmasterChild, n)
	}
	p := procDir("/proc")
	for try := range 5 {
		pid, ok := servingPostmaster(dsn)
		if !ok {
			t.Fatalf("try %d: no postmaster found for the test server", try)
		}
		st, ok := p.stat(pid)
		if !ok || p.comm(pid) != "postgres" || p.comm(st.ppid) == "postgres" {
			t.Fatalf("try %d: process %d (%q, parent %d) is not a postmaster", try, pid, p.comm(pid), st.ppid)
		}
	}
}
