package main

import (
	"syscall"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// killAlong runs the idemport command args once per point of chain, in
// dir against tg, each run killed at its point (IDEMPORT_FAILPOINT), so
// that every run after the first resumes what the one before it left.
// It fails the test unless each run died of a real SIGKILL; after, when
// not nil, runs after the i-th kill, to check what that kill left.
func killAlong(t *testing.T, tg *testkit.Target, dir string, chain []string, args []string, after func(i int)) {
	t.Helper()
	for i, point := range chain {
		r := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=" + point}, args...)
		if r.Signal != syscall.SIGKILL {
			t.Fatalf("not killed at %s (chain %v): exit %d\n%s%s", point, chain, r.Code, r.Stdout, r.Stderr)
		}
		if after != nil {
			after(i)
		}
	}
}
