package main

// A table that stops fitting a file after the file's plan was stored
// (altered by hand, by another import, or planned by an earlier version)
// is met only while writing. Every rerun reuses the stored plan, so a
// failure there (exit 1, "a rerun resumes") would repeat forever: it is a
// refusal (exit 5) naming the table and column and a next step that
// works, and nothing of the file is half applied by it.

import (
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// states returns the states of table's operations, oldest first.
func states(t *testing.T, tg *testkit.Target, table string) []string {
	t.Helper()
	var out []string
	for _, r := range testkit.Query(t, tg.DB, tg.Rebind(`SELECT state FROM `+tg.Ledger("operations")+` WHERE table_name = ? ORDER BY created_at`), table) {
		out = append(out, r[0].(string))
	}
	return out
}

// killedAt runs the import of args, killed at failpoint point.
func killedAt(t *testing.T, tg *testkit.Target, dir, point string, args ...string) {
	t.Helper()
	if r := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=" + point}, append([]string{"import"}, args...)...); r.Signal != syscall.SIGKILL {
		t.Fatalf("import %v at %s: exit %d, not killed\n%s%s", args, point, r.Code, r.Stdout, r.Stderr)
	}
}

// TestTableChangedAfterPlanIsRefused: an import killed after its plan was
// stored, whose table then loses a column the file has, is refused by
// every rerun (exit 5, never 1), the table as it was value by value and
// the operation refused with its plan dropped; the next steps the message
// names work: another --table imports the file, and the table made to fit
// again takes it with the same command. On MariaDB also a key column
// narrowed under a stored plan (decimal keys into BIGINT), which --evolve
// widen cannot widen back there: before, those rows landed rounded.
func TestTableChangedAfterPlanIsRefused(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		table := func(name string) [][]any {
			return sortedRows(t, tg, `SELECT `+tg.Text("id")+`, v FROM `+name)
		}
		writeFile(t, dir, "base.csv", "id,v\n10,x\n11,y\n")
		if tg.IsMariaDB() {
			narrowedKey(t, tg, dir)
		}
		importTo(t, tg, dir, nil, 0, "--table", "t", "--key", "id", "base.csv")
		writeFile(t, dir, "f.csv", "id,v\n1,a\n2,b\n3,c\n")
		args := []string{"--table", "t", "--key", "id", "f.csv"}
		killedAt(t, tg, dir, "after-plan", args...)
		testkit.Query(t, tg.DB, `ALTER TABLE t DROP COLUMN v`)
		want := [][]any{{"10"}, {"11"}}
		for range 2 {
			r := importTo(t, tg, dir, nil, exitRefused, args...)
			if r.Outcome != "refused" || !strings.Contains(r.Error, "table t does not fit") || !strings.Contains(r.Error, `"v"`) ||
				!strings.Contains(r.Error, "nothing was written") || !strings.Contains(r.Error, "--evolve add") {
				t.Fatalf("rerun after the table lost a column: %+v", r)
			}
			if got := sortedRows(t, tg, `SELECT `+tg.Text("id")+` FROM t`); !reflect.DeepEqual(got, want) {
				t.Fatalf("after the refusal, table t: %v, want %v", got, want)
			}
			if got := states(t, tg, "t"); !reflect.DeepEqual(got, []string{"completed", "refused"}) {
				t.Fatalf("after the refusal, operations of t: %v", got)
			}
		}
		if n := testkit.Int(t, tg.DB, tg.Rebind(`SELECT count(*) FROM `+tg.Ledger("partitions")+` WHERE table_name = 't' AND file_id = ?`), fileID(t, tg, dir, "f.csv")); n != 0 {
			t.Fatalf("the refused operation kept %d partitions of its plan", n)
		}
		// Another table takes the file.
		other := importTo(t, tg, dir, nil, 0, "--table", "t2", "--key", "id", "f.csv")
		if other.Outcome != "imported" || other.Rows.Inserted != 3 {
			t.Fatalf("f.csv into t2: %+v", other)
		}
		if got := table("t2"); !reflect.DeepEqual(got, [][]any{{"1", "a"}, {"2", "b"}, {"3", "c"}}) {
			t.Fatalf("table t2: %v", got)
		}
		// The table made to fit again takes it, with the same command.
		testkit.Query(t, tg.DB, `ALTER TABLE t ADD COLUMN v TEXT`)
		again := importTo(t, tg, dir, nil, 0, args...)
		if again.Rows.Inserted != 3 || again.Error != "" {
			t.Fatalf("f.csv into t fitting again: %+v", again)
		}
		if got := table("t"); !reflect.DeepEqual(got, [][]any{{"1", "a"}, {"10", nil}, {"11", nil}, {"2", "b"}, {"3", "c"}}) {
			t.Fatalf("table t: %v", got)
		}
		if got := states(t, tg, "t"); !reflect.DeepEqual(got, []string{"completed", "completed"}) {
			t.Fatalf("operations of t: %v", got)
		}
	})
}

// narrowedKey: on MariaDB, a file of decimal keys planned into a new table
// whose key column is then narrowed to BIGINT is refused with and without
// --evolve widen, nothing written (MariaDB would round 1.5 to 2), and
// imports into another table.
func narrowedKey(t *testing.T, tg *testkit.Target, dir string) {
	t.Helper()
	writeFile(t, dir, "k.csv", "id,v\n1.5,a\n2.5,b\n")
	killedAt(t, tg, dir, "after-plan", "--table", "k", "--key", "id", "k.csv")
	importTo(t, tg, dir, nil, 0, "--table", "k", "--key", "id", "base.csv")
	testkit.Query(t, tg.DB, `ALTER TABLE k MODIFY id BIGINT NOT NULL`)
	for _, extra := range [][]string{nil, {"--evolve", "widen"}} {
		r := importTo(t, tg, dir, nil, exitRefused, append([]string{"--table", "k", "--key", "id", "k.csv"}, extra...)...)
		if !strings.Contains(r.Error, `column "id"`) || !strings.Contains(r.Error, "(--table NAME)") {
			t.Fatalf("k.csv into the narrowed k %v: %+v", extra, r)
		}
		if got := sortedRows(t, tg, `SELECT `+tg.Text("id")+`, v FROM k`); !reflect.DeepEqual(got, [][]any{{"10", "x"}, {"11", "y"}}) {
			t.Fatalf("after k.csv %v, table k: %v", extra, got)
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("operations")+` WHERE state IN ('processing', 'failed')`); n != 0 {
			t.Fatalf("after k.csv %v: %d operations processing or failed", extra, n)
		}
	}
	importTo(t, tg, dir, nil, 0, "--table", "k2", "--key", "id", "k.csv")
	if got := sortedRows(t, tg, `SELECT `+tg.Text("id")+`, v FROM k2`); !reflect.DeepEqual(got, [][]any{{"1.5", "a"}, {"2.5", "b"}}) {
		t.Fatalf("table k2: %v", got)
	}
}

// fileID returns the file ID of dir/name, as the plan of an import says.
func fileID(t *testing.T, tg *testkit.Target, dir, name string) string {
	t.Helper()
	r := tg.Exec(t, dir, nil, "plan", "--output", "json", name)
	var p []struct {
		FileID string `json:"file_id"`
	}
	if err := decodeLines(r.Stdout, &p); err != nil || len(p) != 1 || p[0].FileID == "" {
		t.Fatalf("plan %s: %v\n%s%s", name, err, r.Stdout, r.Stderr)
	}
	return p[0].FileID
}

// undoStep is the undo command a refusal names.
var undoStep = regexp.MustCompile(`'idemport (undo [^']*)'`)

// TestTableChangedAfterCommitsIsRefused: an import killed after one of its
// three partitions committed, whose table then loses a column the file
// has, is refused by every rerun (exit 5, never 1), its committed row kept
// and the operation failed, resumable; the undo the message names removes
// the row, and the file then imports with --evolve add. With --atomic,
// killed before the completing transaction, nothing reaches the table.
func TestTableChangedAfterCommitsIsRefused(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, c := range []struct {
			name, point string
			atomic      bool
			kept        [][]any // the table's rows while the file is refused
		}{
			{"partitions", "after-partition-commit:1", false, [][]any{{"1"}, {"10"}}},
			{"atomic", "before-finalize", true, [][]any{{"10"}}},
		} {
			t.Run(c.name, func(t *testing.T) {
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				writeFile(t, dir, "base.csv", "id,v\n10,x\n")
				importTo(t, tg, dir, nil, 0, "--table", "t", "base.csv")
				writeFile(t, dir, "f.csv", "id,v\n1,a\n2,b\n3,c\n")
				args := []string{"--table", "t", "--partition-rows", "1", "f.csv"}
				if c.atomic {
					args = append(args, "--atomic")
				}
				killedAt(t, tg, dir, c.point, args...)
				testkit.Query(t, tg.DB, `ALTER TABLE t DROP COLUMN v`)
				want := c.kept
				// The dry run predicts the refusal, and says rows stay.
				dry := tg.Exec(t, dir, nil, append([]string{"import", "--dry-run"}, args...)...)
				if dry.Code != exitRefused || !strings.Contains(dry.Stdout, `no column "v"`) || strings.Contains(dry.Stdout, "nothing was written") ||
					!strings.Contains(dry.Stdout, "idemport undo") {
					t.Fatalf("dry run after the table lost a column: exit %d\n%s%s", dry.Code, dry.Stdout, dry.Stderr)
				}
				var r result
				for range 2 {
					r = importTo(t, tg, dir, nil, exitRefused, args...)
					if r.Outcome != "refused" || !strings.Contains(r.Error, "table t does not fit") || !strings.Contains(r.Error, `"v"`) ||
						!undoStep.MatchString(r.Error) {
						t.Fatalf("rerun after the table lost a column: %+v", r)
					}
					if got := sortedRows(t, tg, `SELECT `+tg.Text("id")+` FROM t`); !reflect.DeepEqual(got, want) {
						t.Fatalf("after the refusal, table t: %v, want %v", got, want)
					}
					if got := states(t, tg, "t"); !reflect.DeepEqual(got, []string{"completed", "failed"}) {
						t.Fatalf("after the refusal, operations of t: %v", got)
					}
				}
				undo := tg.Exec(t, dir, nil, append(strings.Fields(undoStep.FindStringSubmatch(r.Error)[1]), tg.Args...)...)
				if undo.Code != 0 {
					t.Fatalf("%s: exit %d\n%s%s", undoStep.FindString(r.Error), undo.Code, undo.Stdout, undo.Stderr)
				}
				if got := sortedRows(t, tg, `SELECT `+tg.Text("id")+` FROM t`); !reflect.DeepEqual(got, [][]any{{"10"}}) {
					t.Fatalf("after the undo, table t: %v", got)
				}
				importTo(t, tg, dir, nil, exitRefused, args...) // refused by the plan now
				evolved := importTo(t, tg, dir, nil, 0, append(args, "--evolve", "add")...)
				if evolved.Outcome != "imported" || evolved.Rows.Read != 3 {
					t.Fatalf("f.csv with --evolve add: %+v", evolved)
				}
				if got := sortedRows(t, tg, `SELECT `+tg.Text("id")+`, v FROM t`); !reflect.DeepEqual(got, [][]any{{"1", "a"}, {"10", nil}, {"2", "b"}, {"3", "c"}}) {
					t.Fatalf("table t: %v", got)
				}
				if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("operations")+` WHERE state IN ('processing', 'failed')`); n != 0 {
					t.Fatalf("%d operations processing or failed", n)
				}
			})
		}
	})
}
