package main

import (
	"runtime"
	"testing"
	"time"
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
