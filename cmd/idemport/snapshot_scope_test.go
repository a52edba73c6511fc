package main

// Snapshot scopes: two scopes are one only when they are the same columns
// with the same values.

import (
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestSnapshotScopeEscaped: --snapshot-scope 'a=x&b=2' (column a holding
// "x&b=2") and --snapshot-scope a=x --snapshot-scope b=2 are two scopes:
// each has its own last snapshot, its own sweep, and the same file under
// each is a different mapping.
func TestSnapshotScopeEscaped(t *testing.T) {
	testkit.Each(t, func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		l := &life{t: t, tg: testkit.NewTarget(t, name, dir), dir: dir}
		one := []string{"--snapshot-scope", "a=x&b=2"}
		two := []string{"--snapshot-scope", "a=x", "--snapshot-scope", "b=2"}
		snap := func(want int, scope []string, asOf, file string, extra ...string) result {
			t.Helper()
			args := append([]string{"--table", "t", "--key", "id", "--snapshot", "--as-of", asOf}, scope...)
			return importTo(t, l.tg, dir, nil, want, append(append(args, extra...), file)...)
		}
		l.write("one1.csv", "id,a,b,v\n1,x&b=2,0,p\n2,x&b=2,0,q\n")
		l.write("two1.csv", "id,a,b,v\n3,x,2,r\n4,x,2,s\n")
		l.write("two2.csv", "id,a,b,v\n3,x,2,r2\n")
		if r := snap(0, one, "2026-11-24", "one1.csv"); r.Outcome != "imported" {
			t.Fatalf("one1: %s", r.Outcome)
		}
		// Older than the other scope's snapshot, but the first of its own.
		if r := snap(0, two, "2026-11-23", "two1.csv"); r.Outcome != "imported" {
			t.Fatalf("two1 (as of the day before one1, in another scope): outcome %s, want imported", r.Outcome)
		}
		if r := snap(0, two, "2026-11-24", "two2.csv", "--max-delete", "50%"); r.Outcome != "imported" || r.Deleted != 1 {
			t.Fatalf("two2: outcome %s deleted %d, want imported, 1", r.Outcome, r.Deleted)
		}
		l.wantRows("t", "1|x&b=2|0|p\n2|x&b=2|0|q\n3|x|2|r2", "id", "a", "b", "v")
		// Stale in its own scope still.
		if r := snap(0, one, "2026-11-23", "two1.csv", "--file-id", "late"); r.Outcome != "stale" {
			t.Fatalf("an older snapshot of the one-column scope: outcome %s, want stale", r.Outcome)
		}
		// The same file under the other scope is another mapping.
		r := snap(exitConflict, two, "2026-11-24", "one1.csv")
		if r.Outcome != "conflict" || !strings.Contains(r.Error, "snapshot") {
			t.Fatalf("one1 under the two-column scope: outcome %s error %q, want a mapping conflict", r.Outcome, r.Error)
		}
	})
}
