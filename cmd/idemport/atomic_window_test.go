//go:build !windows

package main

import (
	"reflect"
	"regexp"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// TestAtomicCountsAKeyStoredBeforeItsMove: an --atomic import's completing
// transaction classifies the staged rows (new, changed, unchanged, older)
// and then moves them. Stopped between the two (failpoint before-move)
// while a plain import by key stores and commits one of the keys it
// classified new, the move meets that key stored: the completing
// transaction runs again, and the counts each import reports and stores
// are what its move did (the key counted inserted by the import that
// inserted it, updated by the other; over both imports one inserted row a
// key), the table value for value, the lineage the file that last wrote
// each row, each rerun a duplicate. Killed at the same point, the import
// leaves the table as it was, and its rerun resumes and moves it exactly.
// On PostgreSQL and MariaDB, where the other import can write while the
// completing transaction is open; on PostgreSQL also a move that waits
// for a key of the file another import holds uncommitted, and updates it
// as that import commits: counted updated, the transaction run again.
func TestAtomicCountsAKeyStoredBeforeItsMove(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.Postgres, testkit.MariaDB}, func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		l := &life{t: t, tg: tg, dir: dir}
		key := []string{"--table", "aw", "--key", "id"}
		l.write("base.csv", "id,v,n\n1,1,base\n2,1,base\n")
		ids := map[string]string{"base.csv": importTo(t, tg, dir, nil, 0, append(slices.Clone(key), "base.csv")...).FileID}
		l.write("a.csv", "id,v,n\n1,2,a\n3,2,a\n4,2,a\n")
		l.write("b.csv", "id,v,n\n4,1,b\n5,1,b\n")

		imp := []string{"import", "--output", "json"}
		// b.csv stops with its plan stored: the table it writes is
		// ensured (on PostgreSQL under a lock a completing transaction
		// holds too). a.csv classifies 3 and 4 new and 1 changed, and
		// stops; b.csv stores 4 (and 5) and completes.
		b := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=after-plan:stop"}, append(append(slices.Clone(imp), key...), "b.csv")...))
		a := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=before-move:stop"}, append(append(append(slices.Clone(imp), "--atomic"), key...), "a.csv")...))
		if err := testkit.Continue(b.cmd.Process); err != nil {
			t.Fatal(err)
		}
		if err := b.cmd.Wait(); err != nil {
			t.Fatalf("b.csv: %v\nstdout: %s\nstderr: %s", err, b.stdout.String(), b.stderr.String())
		}
		if rs := parseResults(t, b.stdout.String()); len(rs) != 1 || rs[0].Outcome != "imported" || rs[0].Rows.Inserted != 2 || rs[0].Rows.Updated != 0 {
			t.Fatalf("b.csv: %+v, want imported, 2 rows inserted", rs)
		} else {
			ids["b.csv"] = rs[0].FileID
		}
		if err := testkit.Continue(a.cmd.Process); err != nil {
			t.Fatal(err)
		}
		if err := a.cmd.Wait(); err != nil {
			t.Fatalf("a.csv: %v\nstdout: %s\nstderr: %s", err, a.stdout.String(), a.stderr.String())
		}
		rs := parseResults(t, a.stdout.String())
		if len(rs) != 1 || rs[0].Outcome != "imported" || rs[0].Rows.Read != 3 || rs[0].Rows.Inserted != 1 || rs[0].Rows.Updated != 2 || rs[0].Rows.Unchanged != 0 {
			t.Fatalf("a.csv: %+v, want imported, 3 read, 1 inserted (3), 2 updated (1, and 4 over b.csv's)\nstderr: %s", rs, a.stderr.String())
		}
		ids["a.csv"] = rs[0].FileID
		if n := len(regexp.MustCompile(`moving them again`).FindAllString(a.stderr.String(), -1)); n != 1 {
			t.Fatalf("a.csv moved again %d times, want once:\n%s", n, a.stderr.String())
		}
		want := "1|2|a\n2|1|base\n3|2|a\n4|2|a\n5|1|b"
		l.wantRows("aw", want, "id", "v", "n")

		// The ledger: each operation's counts (its attempts' add up to
		// them), and one inserted row for each of the 5 keys.
		for _, c := range []struct {
			file string
			want rowCounts // read, inserted, updated, unchanged, stale, superseded, rejected
		}{
			{"base.csv", rowCounts{2, 2, 0, 0, 0, 0, 0}},
			{"a.csv", rowCounts{3, 1, 2, 0, 0, 0, 0}},
			{"b.csv", rowCounts{2, 2, 0, 0, 0, 0, 0}},
		} {
			op, attempts := opCounts(t, tg, ids[c.file])
			if op != c.want || attempts != c.want {
				t.Fatalf("%s: the operation counts %v, its attempts %v; want %v", c.file, op, attempts, c.want)
			}
		}
		if n := testkit.Int(t, tg.DB, `SELECT `+tg.Sum("rows_inserted")+` FROM `+tg.Ledger("operations")); n != 5 {
			t.Fatalf("the imports counted %d rows inserted, want 5, one for each key", n)
		}

		// The lineage: each row names the file and row that last wrote it.
		lineage := func() map[int64][2]int64 {
			out := map[int64][2]int64{}
			for _, r := range testkit.Query(t, tg.DB, `SELECT id, _idemport_file, _idemport_row FROM aw`) {
				out[r[0].(int64)] = [2]int64{r[1].(int64), r[2].(int64)}
			}
			return out
		}
		got := lineage()
		fa, fb, fbase := got[3][0], got[5][0], got[2][0]
		if fa == fb || fa == fbase || fb == fbase {
			t.Fatalf("lineage: a.csv, b.csv and base.csv not told apart: %v", got)
		}
		if wantL := map[int64][2]int64{1: {fa, 1}, 2: {fbase, 2}, 3: {fa, 2}, 4: {fa, 3}, 5: {fb, 2}}; !reflect.DeepEqual(got, wantL) {
			t.Fatalf("lineage (file, row) by key: %v, want %v", got, wantL)
		}
		for _, f := range []string{"a.csv", "b.csv"} {
			args := append(slices.Clone(key), f)
			if f == "a.csv" {
				args = append([]string{"--atomic"}, args...)
			}
			if r := importTo(t, tg, dir, nil, 0, args...); r.Outcome != "duplicate" {
				t.Fatalf("the rerun of %s: %s, want duplicate", f, r.Outcome)
			}
		}
		l.wantRows("aw", want, "id", "v", "n")

		// Killed between the classification and the move, nothing of the
		// file is in the table; the rerun resumes and moves it all.
		l.write("c.csv", "id,v,n\n2,3,c\n6,3,c\n")
		c := append(append([]string{"import", "--atomic"}, key...), "c.csv")
		if r := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=before-move"}, c...); r.Signal != syscall.SIGKILL {
			t.Fatalf("c.csv not killed before its move: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		l.wantRows("aw", want, "id", "v", "n")
		r := importTo(t, tg, dir, nil, 0, append([]string{"--atomic"}, append(slices.Clone(key), "c.csv")...)...)
		if r.Outcome != "resumed" || r.Partitions.Skipped != 1 {
			t.Fatalf("the rerun of c.csv: %s, %d partitions skipped; want resumed, 1", r.Outcome, r.Partitions.Skipped)
		}
		// Its partition's counts are the killed attempt's, recounted by
		// the move: 6 inserted, 2 updated.
		if op, attempts := opCounts(t, tg, r.FileID); op != (rowCounts{2, 1, 1, 0, 0, 0, 0}) || attempts != op {
			t.Fatalf("c.csv: the operation counts %v, its attempts %v; want 2 read, 1 inserted, 1 updated", op, attempts)
		}
		l.wantRows("aw", "1|2|a\n2|3|c\n3|2|a\n4|2|a\n5|1|b\n6|3|c", "id", "v", "n")
		if got := testkit.Query(t, tg.DB, `SELECT state, count(*) FROM `+tg.Ledger("operations")+` GROUP BY state`); !reflect.DeepEqual(got, [][]any{{"completed", int64(4)}}) {
			t.Fatalf("operations by state: %v, want 4 completed", got)
		}
		if n := testkit.Int(t, tg.DB, `SELECT `+tg.Sum("rows_inserted")+` FROM `+tg.Ledger("operations")); n != 6 {
			t.Fatalf("the imports counted %d rows inserted, want 6, one for each key", n)
		}
		if !tg.IsPostgres() {
			return // MariaDB's insert meeting a key it waited for: TestAtomicMoveMeetsAKeyStoredMeanwhile
		}

		// On PostgreSQL the move, one INSERT … ON CONFLICT, waits for a
		// key of the file another import holds uncommitted (stopped before
		// its COMMIT), and as that import commits, updates it: it counts it
		// so, not new as the classification and a count read before the
		// move do, and the completing transaction runs again.
		l.write("d.csv", "id,v,n\n3,4,d\n7,4,d\n")
		l.write("e.csv", "id,v,n\n7,5,e\n8,5,e\n")
		e := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=before-partition-commit:stop"}, append(append(slices.Clone(imp), key...), "e.csv")...))
		d := start(t, tg, dir, nil, append(append(append(slices.Clone(imp), "--atomic"), key...), "d.csv")...)
		for deadline := time.Now().Add(time.Minute); testkit.Int(t, tg.DB, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO "aw" (%'`) == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("d.csv's move never waited for e.csv's key 7\nstderr: %s", d.stderr.String())
			}
		}
		if err := testkit.Continue(e.cmd.Process); err != nil {
			t.Fatal(err)
		}
		if err := e.cmd.Wait(); err != nil {
			t.Fatalf("e.csv: %v\nstdout: %s\nstderr: %s", err, e.stdout.String(), e.stderr.String())
		}
		if err := d.cmd.Wait(); err != nil {
			t.Fatalf("d.csv: %v\nstdout: %s\nstderr: %s", err, d.stdout.String(), d.stderr.String())
		}
		if rs := parseResults(t, d.stdout.String()); len(rs) != 1 || rs[0].Outcome != "imported" || rs[0].Rows.Inserted != 0 || rs[0].Rows.Updated != 2 {
			t.Fatalf("d.csv: %+v, want imported, 2 rows updated (3, and 7 over e.csv's)\nstderr: %s", rs, d.stderr.String())
		}
		l.wantRows("aw", "1|2|a\n2|3|c\n3|4|d\n4|2|a\n5|1|b\n6|3|c\n7|4|d\n8|5|e", "id", "v", "n")
		if n := testkit.Int(t, tg.DB, `SELECT `+tg.Sum("rows_inserted")+` FROM `+tg.Ledger("operations")); n != 8 {
			t.Fatalf("the imports counted %d rows inserted, want 8, one for each key", n)
		}
	})
}
