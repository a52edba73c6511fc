package main

import (
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestRestatedColumnTypesKeepTheFingerprint imports a file with
// --column qty:float64 (its values alone would be int64), then reruns it
// as a user would once the table exists: without the flag, and with
// --column flags that name the types the table's columns now have. Each
// reads the file exactly as the first import did, so each is a duplicate
// (exit 0, nothing written), and verify and plan agree. A --column that
// names another type than the table's is still a conflict; so is leaving a
// numeric --column out under --evolve widen, which infers numeric columns
// from the file instead of reading them as the table's.
func TestRestatedColumnTypesKeepTheFingerprint(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		writeFile(t, dir, "q.csv", "id,qty\n1,2\n2,3\n")
		first := importTo(t, tg, dir, nil, 0, "--table", "q", "--key", "id", "--column", "qty:float64", "q.csv")
		if first.Outcome != "imported" || first.Rows.Inserted != 2 {
			t.Fatalf("first import: %+v", first)
		}
		before := tg.Snapshot(t, "quickcheck")
		for _, flags := range [][]string{
			nil,
			{"--column", "id:int64", "--column", "qty:float64"},
			{"--column", "id:int64"},
			{"--column", "qty:double"},
		} {
			args := append([]string{"--table", "q", "--key", "id"}, flags...)
			res := importTo(t, tg, dir, nil, 0, append(args, "q.csv")...)
			if res.Outcome != "duplicate" || res.FileID != first.FileID || res.Previous == nil || res.Previous.AttemptID != first.AttemptID {
				t.Fatalf("rerun with %v: %s (%s), want a duplicate of attempt %s", flags, res.Outcome, res.Error, first.AttemptID)
			}
			plan := tg.Exec(t, dir, nil, append(append([]string{"plan"}, args...), "q.csv")...)
			if plan.Code != 0 || !strings.Contains(plan.Stdout, "an import would: duplicate") {
				t.Fatalf("plan with %v: exit %d\n%s%s", flags, plan.Code, plan.Stdout, plan.Stderr)
			}
			ver := tg.Exec(t, dir, nil, append(append([]string{"verify"}, args...), "q.csv")...)
			if ver.Code != 0 || !strings.Contains(ver.Stdout, "holds all 2 rows") {
				t.Fatalf("verify with %v: exit %d\n%s%s", flags, ver.Code, ver.Stdout, ver.Stderr)
			}
		}
		if d := before.Diff(tg.Snapshot(t, "quickcheck")); d != "" {
			t.Fatalf("the duplicates wrote to %s", d)
		}
		other := importTo(t, tg, dir, nil, 3, "--table", "q", "--key", "id", "--column", "qty:string", "q.csv")
		if other.Outcome != "conflict" || !strings.Contains(other.Error, "mapping differs") || !strings.Contains(other.Error, `columns was {"qty":"float64"}, now {"qty":"string"}`) {
			t.Fatalf("--column qty:string into a float64 column: %+v", other)
		}

		// Under --evolve widen the table's numeric columns do not fix how
		// the file is read: leaving out --column qty:float64 would read qty
		// as int64 and widen the column. That is another mapping.
		// A text column's type is the table's under widen too.
		writeFile(t, dir, "w.csv", "id,qty,note\n1,2,a\n2,3,b\n3,4,c\n")
		importTo(t, tg, dir, nil, 0, "--table", "w", "--key", "id", "--evolve", "widen", "--column", "qty:float64", "w.csv")
		same := importTo(t, tg, dir, nil, 0, "--table", "w", "--key", "id", "--evolve", "widen", "--column", "qty:float64", "--column", "note:string", "w.csv")
		if same.Outcome != "duplicate" {
			t.Fatalf("widen, restating note:string: %+v", same)
		}
		for _, flags := range [][]string{nil, {"--column", "qty:float64", "--column", "id:int64"}} {
			args := append([]string{"--table", "w", "--key", "id", "--evolve", "widen"}, flags...)
			left := importTo(t, tg, dir, nil, 3, append(args, "w.csv")...)
			if left.Outcome != "conflict" || !strings.Contains(left.Error, "mapping differs") {
				t.Fatalf("widen with %v: %+v", flags, left)
			}
		}
	})
}
