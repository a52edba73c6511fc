package main

// The --max-delete guard of a scoped snapshot counts the rows the scope held
// before the import wrote anything, however its rows moved, however often
// it was killed and resumed; and two scopes are one only when they are the
// same columns with the same values.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestSnapshotScopeGuardCountsBefore: regions holds 4 EU rows and 36 US
// rows; the EU feed's snapshot has the 36 as EU rows and lacks the 4. It
// deletes every row the EU scope held before it, 100%, so the default
// guard of 10% refuses it, also after kills between its partitions and
// before its sweep (the resumed attempts count the same 4), and the dry run
// says so; --max-delete 100% completes it, also killed before and after its
// sweep.
//
// Each mode runs clean and killed. The killed run kills the refused
// import at each point of a chain, each rerun at the next (after the 2nd
// partition's commit, then after the 5th of those left, then before the
// sweep), and the completing one before its sweep and then after it: the
// kill points of the earlier design, which ran one kill per subtest (30
// killed subtests, now 6); a kill after the first hits a resumed run,
// whose guard must still count the 4 the scope held before the first.
func TestSnapshotScopeGuardCountsBefore(t *testing.T) {
	t.Parallel()
	// The kills of the killed run: the refused run's chain, then the
	// completing run's.
	chains := map[int][]string{1: {"after-partition-commit:2", "after-partition-commit:5", "before-sweep:1"},
		3: {"before-sweep:1", "after-sweep:1"}}
	modes := []string{"key", "key-soft", "key-atomic"}
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, mode := range modes {
			for _, label := range []string{"clean", "killed"} {
				kills := map[int][]string{}
				if label == "killed" {
					kills = chains
				}
				t.Run(mode+"/"+label, func(t *testing.T) {
					t.Parallel()
					dir := t.TempDir()
					l := &life{t: t, tg: testkit.NewTarget(t, name, dir), dir: dir}
					var all, eu strings.Builder
					all.WriteString("id,region,v\n")
					eu.WriteString("id,region,v\n")
					for i := 1; i <= 40; i++ {
						region := map[bool]string{true: "EU", false: "US"}[i <= 4]
						fmt.Fprintf(&all, "%d,%s,v%d\n", i, region, i)
						if i > 4 {
							fmt.Fprintf(&eu, "%d,EU,w%d\n", i, i)
						}
					}
					l.write("all.csv", all.String())
					l.write("eu.csv", eu.String())
					importTo(t, l.tg, dir, nil, 0, "--table", "regions", "--key", "id", "all.csv")
					before := l.rows("regions", "id", "region", "v")
					args := []string{"--table", "regions", "--key", "id", "--snapshot", "--snapshot-scope", "region=EU", "--partition-rows", "4"}
					switch mode {
					case "key-soft":
						args = append(args, "--delete", "soft")
					case "key-atomic":
						args = append(args, "--atomic")
					}
					killAt := func(run int, extra ...string) {
						t.Helper()
						killAlong(t, l.tg, dir, kills[run], append(append(append([]string{"import"}, args...), extra...), "eu.csv"), nil)
					}
					killAt(1)
					dry := l.tg.Exec(t, dir, nil, append(append([]string{"import", "--dry-run"}, args...), "eu.csv")...)
					if dry.Code != exitRefused || !regexpLine(dry.Stdout, `^an import would: refuse \(\w+\): snapshot sweep refused: it would delete 4 of the 4 rows of regions in scope`) {
						t.Fatalf("dry run: exit %d, does not predict the guard's refusal\n%s%s", dry.Code, dry.Stdout, dry.Stderr)
					}
					r := importTo(t, l.tg, dir, nil, exitRefused, append(args, "eu.csv")...)
					if r.Outcome != "refused" || r.Deleted != 0 || !strings.Contains(r.Error, "would delete 4 of the 4 rows of regions in scope") {
						t.Fatalf("EU feed: outcome %s deleted %d error %q, want refused: 4 of the 4 rows", r.Outcome, r.Deleted, r.Error)
					}
					// Nothing swept: the 4 are there; the 36 moved unless atomic.
					rows := l.rows("regions", "id", "region", "v")
					if mode == "key-atomic" {
						if rows != before {
							t.Fatalf("a refused atomic snapshot changed regions:\n%s", rows)
						}
					} else {
						for i := 1; i <= 40; i++ {
							line := fmt.Sprintf("%d|EU|w%d", i, i)
							if i <= 4 {
								line = fmt.Sprintf("%d|EU|v%d", i, i)
							}
							if !strings.Contains("\n"+rows+"\n", "\n"+line+"\n") {
								t.Fatalf("after the refusal regions lacks %s:\n%s", line, rows)
							}
						}
					}
					killAt(3, "--max-delete", "100%")
					r = importTo(t, l.tg, dir, nil, 0, append(args, "--max-delete", "100%", "eu.csv")...)
					if r.Outcome != "resumed" || r.Deleted != 4 {
						t.Fatalf("with --max-delete 100%%: outcome %s deleted %d, want resumed, 4", r.Outcome, r.Deleted)
					}
					got := l.rows("regions", "id", "region", "v", stateCol(mode))
					var exp []string
					for i := 1; i <= 40; i++ {
						switch {
						case i > 4:
							exp = append(exp, fmt.Sprintf("%d|EU|w%d|live", i, i))
						case mode == "key-soft":
							exp = append(exp, fmt.Sprintf("%d|EU|v%d|deleted", i, i))
						}
					}
					if got != sortedText(exp) {
						t.Fatalf("regions holds\n%s\nwant\n%s", got, sortedText(exp))
					}
					l.wantStates("regions", "completed,completed", "")
				})
			}
		}
	})
}

// stateCol renders a row's deletion mark with --delete soft (live or
// deleted), and "live" otherwise.
func stateCol(mode string) string {
	if strings.Contains(mode, "soft") {
		return "CASE WHEN _idemport_deleted_at IS NULL THEN 'live' ELSE 'deleted' END"
	}
	return "'live'"
}

// sortedText joins lines sorted as life.rows orders them (by the first
// column, compared as the database compares the integer id).
func sortedText(lines []string) string {
	out := make([]string, len(lines))
	copy(out, lines)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && idOf(out[j]) < idOf(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return strings.Join(out, "\n")
}

func idOf(line string) int64 {
	id, _, _ := strings.Cut(line, "|")
	return mustInt(id)
}

// TestSnapshotScopeOutOfScopeRow: a scoped snapshot whose file has a row
// outside the scope writes it and never sweeps it, and the guard counts
// only the scope's rows: the first file sweeps nothing (not "0 of the -1
// rows"), the second deletes 1 of the scope's 2 rows, refused at the
// default 10% and done at 50%.
func TestSnapshotScopeOutOfScopeRow(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, mode := range []string{"key", "key-atomic"} {
			t.Run(mode, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				l := &life{t: t, tg: testkit.NewTarget(t, name, dir), dir: dir}
				l.write("eu1.csv", "id,region,v\n1,EU,a\n2,EU,b\n3,US,c\n")
				l.write("eu2.csv", "id,region,v\n1,EU,a2\n3,US,c2\n")
				args := []string{"--table", "mixed", "--key", "id", "--snapshot", "--snapshot-scope", "region=EU"}
				if mode == "key-atomic" {
					args = append(args, "--atomic")
				}
				r := importTo(t, l.tg, dir, nil, 0, append(args, "eu1.csv")...)
				if r.Outcome != "imported" || r.Deleted != 0 {
					t.Fatalf("eu1: outcome %s deleted %d error %q, want imported, 0", r.Outcome, r.Deleted, r.Error)
				}
				l.wantRows("mixed", "1|EU|a\n2|EU|b\n3|US|c", "id", "region", "v")
				r = importTo(t, l.tg, dir, nil, exitRefused, append(args, "eu2.csv")...)
				if !strings.Contains(r.Error, "would delete 1 of the 2 rows of mixed in scope") {
					t.Fatalf("eu2: error %q, want 1 of the 2 rows", r.Error)
				}
				r = importTo(t, l.tg, dir, nil, 0, append(args, "--max-delete", "50%", "eu2.csv")...)
				if r.Deleted != 1 {
					t.Fatalf("eu2 with 50%%: deleted %d, want 1", r.Deleted)
				}
				l.wantRows("mixed", "1|EU|a2\n3|US|c2", "id", "region", "v")
			})
		}
	})
}

// TestSnapshotScopeEscaped: --snapshot-scope 'a=x&b=2' (column a holding
// "x&b=2") and --snapshot-scope a=x --snapshot-scope b=2 are two scopes:
// each has its own last snapshot, its own sweep, and the same file under
// each is a different mapping.
func TestSnapshotScopeEscaped(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
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
