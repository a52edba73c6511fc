package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// TestGroupKilledThenRerun kills the binary importing an orders file whose
// keys are shuffled, which SQLite commits in groups of partitions (1, 1,
// 2, 4 and 2 of its ten), inside a group (its sixth partition marked done,
// the seventh not begun), at the end of a group before its COMMIT, and
// right after a group's COMMIT, then reruns it: the rerun finds done
// exactly the partitions of the groups committed before the kill, and
// the table ends with every row of the file, counted once. Elsewhere each
// partition commits alone.
func TestGroupKilledThenRerun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		point            string
		grouped, ungroup int64 // partitions the rerun finds done, grouped or not
	}{
		{"before-partition-commit:6", 4, 5},
		{"before-partition-commit:8", 4, 7},
		{"after-partition-commit:5", 8, 5},
	}
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, c := range cases {
			t.Run(c.point, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				path := filepath.Join(dir, "orders.csv")
				rows := testkit.Orders(t, path, crashRows, 11)
				shuffled := slices.Clone(rows)
				rand.New(rand.NewPCG(3, 5)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
				testkit.WriteOrders(t, path, shuffled)
				args := []string{"--key", "order_id", "--partition-rows", fmt.Sprint(crashRows / crashPartitions), "orders.csv"}
				killAlong(t, tg, dir, []string{c.point}, append([]string{"import"}, args...), nil)
				skipped := c.ungroup
				if name == testkit.SQLite {
					skipped = c.grouped
				}
				res := importTo(t, tg, dir, nil, 0, args...)
				if res.Outcome != "resumed" || res.Partitions.Skipped != skipped || res.Partitions.Committed != crashPartitions-skipped ||
					res.Rows.Inserted != (crashPartitions-skipped)*crashRows/crashPartitions {
					t.Fatalf("rerun: %s, partitions %+v, rows %+v; want resumed, %d skipped", res.Outcome, res.Partitions, res.Rows, skipped)
				}
				checkExact(t, tg, "natural", rows)
			})
		}
	})
}

// TestGroupMeetsOtherRuns stops an import of shuffled keys on SQLite
// inside a group of partitions (the fifth partition marked done, the
// sixth written, neither committed: four partitions done as another
// connection sees them), whose transaction holds the database's write
// lock, and meets it with other runs on the same table. A second import
// of the same file, an import of another file that adds a column
// (--evolve add), and an undo of an earlier import into the table, each
// with a short --busy-timeout, exit 4 naming the stopped holder, and the
// table and the ledger keep what they held. With a long
// --busy-timeout the file that adds a column waits, and so does the undo
// (--forget, as the import was by --key) of an earlier import into the
// table; once the holder is resumed, all three finish: the group commits
// whole, the column is added, the earlier import is forgotten with its
// rows kept. The table then holds the three files, value by value as
// text; the grouped import is a duplicate when run again, and the
// forgotten file a new import that changes nothing.
func TestGroupMeetsOtherRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.SQLite, dir)
	big := keyedRows(1, 1000, "b")
	rand.New(rand.NewPCG(5, 7)).Shuffle(len(big), func(i, j int) { big[i], big[j] = big[j], big[i] })
	early := keyedRows(2001, 2010, "e")
	writeKeyed(t, dir, "big.csv", big)
	writeKeyed(t, dir, "early.csv", early)
	write(t, dir, "extra.csv", "id,v,w\n3001,x3001,w3001\n3002,,w3002\n3003,x3003,\n")
	args := []string{"import", "--output", "json", "--table", "t", "--key", "id", "--partition-rows", "100"}
	if r := parsed(t, tg.Exec(t, dir, nil, append(args, "early.csv")...), "early.csv", 0); r.Outcome != "imported" {
		t.Fatalf("early.csv: %s", r.Outcome)
	}

	frozen := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=before-partition-commit:6:stop"}, append(args, "big.csv")...))
	holder := attemptOf(t, tg, frozen.cmd.Process.Pid)
	if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("partitions")+` WHERE done = 1 AND done_by = ?`, holder); n != 4 {
		t.Fatalf("%d partitions done while the holder is stopped at its sixth, want 4: not inside a group", n)
	}
	for _, f := range [][]string{{"big.csv"}, {"--evolve", "add", "extra.csv"}} {
		r := finishWithin(t, start(t, tg, dir, nil, append(append(args, "--busy-timeout", "1s"), f...)...), 2*time.Minute, f[len(f)-1])
		if r.Code != exitBusy {
			t.Fatalf("%s: exit %d, want 4\n%s%s", f[len(f)-1], r.Code, r.Stdout, r.Stderr)
		}
		checkNamesHolder(t, parseResults(t, r.Stdout)[0], holder, frozen.cmd.Process.Pid)
	}
	if cols := columnsOf(t, tg, "t"); !slices.Equal(cols, []string{"id", "v"}) {
		t.Fatalf("the busy imports changed the table: columns %v", cols)
	}
	// An undo waits for the lock no longer than its --busy-timeout either,
	// and exits 4 naming the holder, having changed nothing.
	u := finishWithin(t, start(t, tg, dir, nil, "undo", "--busy-timeout", "1s", "--forget", "--table", "t", "early.csv"), 2*time.Minute, "the undo")
	host, _ := os.Hostname()
	if u.Code != exitBusy || !strings.Contains(u.Stderr, holder) || !strings.Contains(u.Stderr, fmt.Sprintf("%s:%d", host, frozen.cmd.Process.Pid)) ||
		!strings.Contains(u.Stderr, fmt.Sprintf("kill -CONT %d", frozen.cmd.Process.Pid)) {
		t.Fatalf("undo with the holder stopped: exit %d, want 4 naming the holder %s\n%s%s", u.Code, holder, u.Stdout, u.Stderr)
	}
	if states := testkit.Query(t, tg.DB, `SELECT state FROM `+tg.Ledger("operations")+` WHERE rows_inserted = 10`); fmt.Sprint(states) != "[[completed]]" {
		t.Fatalf("early.csv's operation after the busy undo: %v, want completed", states)
	}

	evolving := start(t, tg, dir, nil, append(args, "--evolve", "add", "--busy-timeout", "10m", "extra.csv")...)
	undoing := start(t, tg, dir, nil, "undo", "--output", "json", "--forget", "--table", "t", "early.csv")
	waitForLock(t, tg, "")
	testkit.Continue(frozen.cmd.Process)
	if r := parsed(t, finishWithin(t, frozen, 2*time.Minute, "the resumed import"), "big.csv", 0); r.Outcome != "imported" ||
		r.Rows.Inserted != 1000 || r.Partitions.Committed != 10 {
		t.Fatalf("the resumed import: %s, rows %+v, partitions %+v; want imported, 1000 rows in 10 partitions", r.Outcome, r.Rows, r.Partitions)
	}
	if r := parsed(t, finishWithin(t, evolving, 2*time.Minute, "the import that adds a column"), "extra.csv", 0); r.Outcome != "imported" ||
		!slices.Equal(r.ColumnsAdded, []string{"w"}) || r.Rows.Inserted != 3 {
		t.Fatalf("extra.csv: %s, columns added %v, rows %+v", r.Outcome, r.ColumnsAdded, r.Rows)
	}
	u = finishWithin(t, undoing, 2*time.Minute, "the undo")
	if u.Code != 0 || !strings.Contains(u.Stdout, `"forgot":true`) {
		t.Fatalf("undo: exit %d\n%s%s", u.Code, u.Stdout, u.Stderr)
	}

	want := map[int64][2]string{}
	for _, rows := range [][][2]any{big, early} {
		for _, r := range rows {
			want[int64(r[0].(int))] = [2]string{r[1].(string), nullText}
		}
	}
	want[3001], want[3002], want[3003] = [2]string{"x3001", "w3001"}, [2]string{nullText, "w3002"}, [2]string{"x3003", nullText}
	checkGroupMet(t, tg, want)
	states := testkit.Query(t, tg.DB, `SELECT o.state, o.rows_inserted FROM `+tg.Ledger("operations")+` o ORDER BY o.rows_inserted`)
	if fmt.Sprint(states) != "[[completed 3] [undone 10] [completed 1000]]" {
		t.Fatalf("operations (state, inserted) %v", states)
	}
	if r := parsed(t, tg.Exec(t, dir, nil, append(args, "big.csv")...), "big.csv", 0); r.Outcome != "duplicate" || r.Rows.Inserted+r.Rows.Updated != 0 {
		t.Fatalf("big.csv again: %s, rows %+v; want a duplicate", r.Outcome, r.Rows)
	}
	if r := parsed(t, tg.Exec(t, dir, nil, append(args, "early.csv")...), "early.csv", 0); r.Outcome != "imported" || r.Rows.Unchanged != 10 {
		t.Fatalf("early.csv after its undo: %s, rows %+v; want imported, every row unchanged", r.Outcome, r.Rows)
	}
	checkGroupMet(t, tg, want)
}

// checkGroupMet asserts that table t holds exactly want (id → v, w), each
// value as SQLite renders it as text.
func checkGroupMet(t *testing.T, tg *testkit.Target, want map[int64][2]string) {
	t.Helper()
	got := testkit.Query(t, tg.DB, `SELECT id, CAST(id AS TEXT), coalesce(CAST(v AS TEXT), '`+nullText+`'), coalesce(CAST(w AS TEXT), '`+nullText+`') FROM t ORDER BY id`)
	if len(got) != len(want) || testkit.Int(t, tg.DB, `SELECT count(DISTINCT id) FROM t`) != int64(len(want)) {
		t.Fatalf("table t holds %d rows, want %d, each id once", len(got), len(want))
	}
	for _, g := range got {
		w, ok := want[g[0].(int64)]
		if !ok || g[1] != fmt.Sprint(g[0]) || g[2] != w[0] || g[3] != w[1] {
			t.Fatalf("table t: row %v, want %q", g[1:], w)
		}
	}
}
