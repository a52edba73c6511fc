package main

// MariaDB, where every DDL statement commits the transaction it runs in:
// the values land exactly, and each DDL step an import takes (the table it
// creates, the staging table of --atomic, --evolve's columns) is resumed
// exactly after a kill, and leaves no trace when the import is refused,
// abandoned or undone. testkit.MariaDB is not among testkit.Each's
// targets: besides these, the command's tests that run on it name it
// (testkit.EachOf with testkit.AllTargetNames): the crash suite, the
// kill, stall and interrupt tests, the whole-table value comparisons, the
// snapshot, --atomic, --evolve, --replace and undo tests and kill chains,
// the outbox's, several workers and processes, the soaks (random kills,
// last wins, --atomic and --evolve), and verify while an import runs.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// onMariaDB runs f as a subtest on a fresh MariaDB target.
func onMariaDB(t *testing.T, f func(t *testing.T, dir string, tg *testkit.Target)) {
	t.Helper()
	testkit.EachOf(t, []string{testkit.MariaDB}, func(t *testing.T, name string) {
		dir := t.TempDir()
		f(t, dir, testkit.NewTarget(t, name, dir))
	})
}

// userTables returns the target's tables that are not idemport's ledger.
func userTables(t *testing.T, tg *testkit.Target) []string {
	t.Helper()
	var out []string
	for _, name := range tg.Tables(t) {
		if !strings.HasPrefix(name, "idemport_") {
			out = append(out, name)
		}
	}
	return out
}

// rowsLeft returns how many rows table holds, 0 when it is gone: on
// MariaDB an undone or abandoned import drops the table it created.
func rowsLeft(t *testing.T, tg *testkit.Target, table string) int64 {
	t.Helper()
	if tg.IsMariaDB() && !tg.TableExists(t, table) {
		return 0
	}
	return testkit.Int(t, tg.DB, `SELECT count(*) FROM `+table)
}

// createdRecords returns the ledger's record of the tables operations
// created (table, file ID, created, planned), sorted.
func createdRecords(t *testing.T, tg *testkit.Target) [][]any {
	t.Helper()
	return testkit.Query(t, tg.DB, `SELECT table_name, file_id, created, planned FROM `+tg.Ledger("created")+` ORDER BY 1, 2, 3`)
}

// TestMariaDBTrickyValues imports the tricky values with the real binary
// into MariaDB, CSV and JSONL by key and CSV by ordinal, with 4-byte UTF-8
// beside them, and compares every stored value with the file's as text:
// BIGINT edges, integers beyond them and long decimals as their text,
// empty text apart from NULL, JSON as written. A later file's 02134 into
// the integer column the first made is refused (exit 5), writing nothing.
func TestMariaDBTrickyValues(t *testing.T) {
	t.Parallel()
	csv, jsonl, cols := testkit.Tricky()
	onMariaDB(t, func(t *testing.T, dir string, tg *testkit.Target) {
		for file, content := range map[string]string{"tricky.csv": csv, "tricky.jsonl": jsonl} {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct{ file, table, order string }{
			{"tricky.csv", "by_key", "id"},
			{"tricky.jsonl", "json_key", "id"},
			{"tricky.csv", "by_row", "_idemport_row"},
		} {
			args := []string{"--table", c.table, c.file}
			if c.order == "id" {
				args = append([]string{"--key", "id"}, args...)
			}
			if r := importTo(t, tg, dir, nil, 0, args...); r.Rows.Inserted != int64(len(cols[0].Want)) {
				t.Fatalf("%s: %+v", c.table, r)
			}
			check := cols
			if strings.HasSuffix(c.file, ".jsonl") {
				check = append(check[:len(check):len(check)], testkit.TrickyJSON)
			}
			for _, col := range check {
				testkit.CheckTricky(t, tg.DB, testkit.MariaDB, c.table, c.order, col)
			}
		}

		utf8 := "k,s\n1,😀 𝄞 ok\n2,\"\"\n3,\n4,Ünïcödé 中文 🇫🇷\n"
		os.WriteFile(filepath.Join(dir, "utf8.csv"), []byte(utf8), 0o644)
		importTo(t, tg, dir, nil, 0, "--table", "utf8", "--key", "k", "utf8.csv")
		testkit.CheckTricky(t, tg.DB, testkit.MariaDB, "utf8", "k", testkit.TrickyColumn{Name: "s", Want: []string{"😀 𝄞 ok", "", testkit.Null, "Ünïcödé 中文 🇫🇷"}})

		os.WriteFile(filepath.Join(dir, "zips1.csv"), []byte("zip\n2134\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "zips2.csv"), []byte("zip\n02134\n"), 0o644)
		importTo(t, tg, dir, nil, 0, "--table", "zips", "zips1.csv")
		run := tg.Exec(t, dir, nil, "import", "--table", "zips", "zips2.csv")
		if run.Code != 5 || !strings.Contains(run.Stdout+run.Stderr, "leading zeros would be lost") {
			t.Fatalf("02134 into an integer column: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
		testkit.CheckTricky(t, tg.DB, testkit.MariaDB, "zips", "zip", testkit.TrickyColumn{Name: "zip", Want: []string{"2134"}})
	})
}

// TestMariaDBKilledAtDDLSteps kills an --atomic import by key into a new
// table along the DDL steps it takes before its plan's transaction (the
// target recorded, created; the staging table recorded, created), then
// after the plan, before and after the completion, each run resuming what
// the one before left. The last run completes it: the table holds the
// file's rows exactly, counted once, the staging table is gone, and the
// ledger records the target alone as the operation's creation, planned.
// An import with --evolve add into it, killed after it added its column,
// is resumed by a rerun with the file's values, and history keeps the
// column added by the attempt that added it.
func TestMariaDBKilledAtDDLSteps(t *testing.T) {
	t.Parallel()
	onMariaDB(t, func(t *testing.T, dir string, tg *testkit.Target) {
		rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 200, 7)
		args := []string{"import", "--atomic", "--key", "order_id", "--partition-rows", "50", "orders.csv"}
		chain := []string{"after-ddl-record", "after-ddl", "after-ddl-record:2", "after-ddl:2", "after-plan", "after-partition-commit:2", "before-finalize", "inside-finalize"}
		killAlong(t, tg, dir, chain, args, func(i int) {
			if chain[i] == "after-ddl:2" {
				// Both tables made, the plan not stored: the rerun drops
				// and makes them again.
				if got := userTables(t, tg); len(got) != 2 {
					t.Fatalf("after %s the tables are %v, want orders and its staging table", chain[i], got)
				}
				if got := createdRecords(t, tg); len(got) != 2 || got[0][3] != int64(0) {
					t.Fatalf("after %s the ledger records %v created, want two tables, not planned", chain[i], got)
				}
			}
		})
		if r := importTo(t, tg, dir, nil, 0, args[1:]...); r.Outcome != "resumed" {
			t.Fatalf("the last rerun: %s, want resumed", r.Outcome)
		}
		checkMariaSettled(t, tg, dir, "key", rows, args[1:]...)
		if got := userTables(t, tg); !slices.Equal(got, []string{"orders"}) {
			t.Fatalf("tables left: %v, want orders alone", got)
		}
		want := [][]any{{"orders", "orders.csv", "orders", int64(1)}}
		if got := createdRecords(t, tg); len(got) != 1 || !reflect.DeepEqual(got[0][2:], want[0][2:]) {
			t.Fatalf("created: %v, want the target alone, planned", got)
		}

		// --evolve add: the column is added before the partition's
		// transaction; killed between, the rerun writes the new column.
		var b strings.Builder
		b.WriteString("order_id,sku,extra\n")
		for _, r := range rows[:60] {
			fmt.Fprintf(&b, "%s,%s,x%s\n", r[0], r[2], r[0])
		}
		os.WriteFile(filepath.Join(dir, "more.csv"), []byte(b.String()), 0o644)
		evolve := []string{"import", "--table", "orders", "--key", "order_id", "--evolve", "add", "--partition-rows", "20", "more.csv"}
		killAlong(t, tg, dir, []string{"after-ddl", "after-partition-commit"}, evolve, nil)
		importTo(t, tg, dir, nil, 0, evolve[1:]...)
		// The killed attempt that added the column says so in history.
		if got := testkit.Query(t, tg.DB, `SELECT schema_changes FROM `+tg.Ledger("attempts")+` WHERE schema_changes IS NOT NULL`); !reflect.DeepEqual(got, [][]any{{"added extra (string)"}}) {
			t.Fatalf("schema changes recorded: %v, want the column added, once", got)
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM orders WHERE extra = CONCAT('x', order_id)`); n != 60 {
			t.Fatalf("%d rows hold their extra, want 60", n)
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM orders WHERE extra IS NULL`); n != int64(len(rows)-60) {
			t.Fatalf("%d rows without extra, want %d", n, len(rows)-60)
		}
	})
}

// TestMariaDBRefusedLeavesNoTable refuses a file with a bad row before any
// effect: no table is made. Then an import of it allowed one bad row is
// killed once it created its table, before its plan committed, and a rerun
// allowed none refuses the file: the table that run made is dropped, as a
// rollback would have, and nothing of it is recorded. A table that existed
// before a refused import stays.
func TestMariaDBRefusedLeavesNoTable(t *testing.T) {
	t.Parallel()
	onMariaDB(t, func(t *testing.T, dir string, tg *testkit.Target) {
		os.WriteFile(filepath.Join(dir, "bad.csv"), []byte("id,n\n1,2\n2,x\n3,4\n"), 0o644)
		typed := []string{"import", "--table", "t", "--column", "n:int64", "bad.csv"}
		if r := tg.Exec(t, dir, nil, typed...); r.Code != 5 {
			t.Fatalf("refused file: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if got := userTables(t, tg); len(got) != 0 {
			t.Fatalf("a refused file left tables %v", got)
		}

		allowed := append(slices.Clone(typed[:len(typed)-1]), "--max-rejects", "1", "bad.csv")
		killAlong(t, tg, dir, []string{"after-ddl"}, []string{"import", "--table", "u", "--column", "n:int64", "--max-rejects", "1", "bad.csv"}, func(int) {
			if !tg.TableExists(t, "u") {
				t.Fatal("the killed run made no table")
			}
		})
		if r := tg.Exec(t, dir, nil, "import", "--table", "u", "--column", "n:int64", "bad.csv"); r.Code != 5 {
			t.Fatalf("rerun refusing: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if got := userTables(t, tg); len(got) != 0 {
			t.Fatalf("the refusal after a killed run left tables %v", got)
		}
		if got := createdRecords(t, tg); len(got) != 0 {
			t.Fatalf("the refusal left records of tables created: %v", got)
		}

		// A table that exists is never dropped by a refusal.
		importTo(t, tg, dir, nil, 0, allowed[1:]...)
		os.WriteFile(filepath.Join(dir, "worse.csv"), []byte("id,n\n1,y\n"), 0o644)
		if r := tg.Exec(t, dir, nil, "import", "--table", "t", "--column", "n:int64", "worse.csv"); r.Code != 5 {
			t.Fatalf("refused into an existing table: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM t`); n != 2 {
			t.Fatalf("t holds %d rows, want the first import's 2", n)
		}
	})
}

// TestMariaDBUndoDropsCreatedTable undoes an ordinal import that created
// its table: the table goes with its rows. One that another import also
// wrote into stays, with that import's rows.
func TestMariaDBUndoDropsCreatedTable(t *testing.T) {
	t.Parallel()
	onMariaDB(t, func(t *testing.T, dir string, tg *testkit.Target) {
		os.WriteFile(filepath.Join(dir, "a.csv"), []byte("id,s\n1,a\n2,b\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "b.csv"), []byte("id,s\n3,c\n"), 0o644)
		importTo(t, tg, dir, nil, 0, "--table", "t", "a.csv")
		if r := tg.Exec(t, dir, nil, "undo", "a.csv"); r.Code != 0 {
			t.Fatalf("undo: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if got := userTables(t, tg); len(got) != 0 {
			t.Fatalf("the undone import left tables %v", got)
		}
		if got := createdRecords(t, tg); len(got) != 0 {
			t.Fatalf("the undo left records of tables created: %v", got)
		}

		importTo(t, tg, dir, nil, 0, "--table", "t", "a.csv")
		importTo(t, tg, dir, nil, 0, "--table", "t", "b.csv")
		if r := tg.Exec(t, dir, nil, "undo", "a.csv"); r.Code != 0 {
			t.Fatalf("undo: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if got := testkit.Query(t, tg.DB, `SELECT id, s FROM t ORDER BY id`); !reflect.DeepEqual(got, [][]any{{int64(3), "c"}}) {
			t.Fatalf("t after undoing a.csv: %v, want b.csv's row", got)
		}
	})
}

// TestMariaDBTwoProcessesOnOneAtomicImport stops a process of an --atomic
// import once it stored its plan (its target and staging table made), and
// starts another on the same import, which joins it, writes every
// partition and completes it; the first, continued, finds it done. The
// table is exact, the staging table dropped, and a rerun a duplicate.
func TestMariaDBTwoProcessesOnOneAtomicImport(t *testing.T) {
	t.Parallel()
	onMariaDB(t, func(t *testing.T, dir string, tg *testkit.Target) {
		rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 200, 11)
		args := []string{"--atomic", "--workers", "2", "--partition-rows", "40", "orders.csv"}
		run := func(fp string) *started {
			return launch(t, tg.Cmd(t, dir, []string{"IDEMPORT_FAILPOINT=" + fp}, append([]string{"import", "--output", "json"}, args...)...))
		}
		first := stopped(t, run("after-plan:stop"))
		second := finished(t, run(""), "the joining run", 0)
		if second.Outcome != "resumed" || second.Partitions.Committed != 5 {
			t.Fatalf("the joining run: %s committing %d partitions", second.Outcome, second.Partitions.Committed)
		}
		continued(t, first)
		if res := finished(t, first, "the first run", 0); res.Partitions.Committed != 0 {
			t.Fatalf("the first run committed %d partitions after the other completed", res.Partitions.Committed)
		}
		checkMariaSettled(t, tg, dir, "ordinal", rows, args...)
		if got := userTables(t, tg); !slices.Equal(got, []string{"orders"}) {
			t.Fatalf("tables left: %v, want orders alone", got)
		}
	})
}

// abandonUnder runs an ordinal JSON import of 100 orders in partitions
// of 25 into tg, stops it after its first commit, runs during, writes
// other content over the file and lets the import go on: it must end
// failed, saying the import was abandoned, and its run is returned.
func abandonUnder(t *testing.T, dir string, tg *testkit.Target, during func()) testkit.Run {
	t.Helper()
	testkit.Orders(t, filepath.Join(dir, "orders.csv"), 100, 3)
	s := launch(t, tg.Cmd(t, dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit:stop"}, "import", "--output", "json", "--partition-rows", "25", "orders.csv"))
	stopped(t, s)
	during()
	testkit.Orders(t, filepath.Join(dir, "orders.csv"), 100, 4) // another content, same size or not
	continued(t, s)
	r := testkit.Wait(t, s.cmd)
	// Not "abandoned" alone: the driver's log of a connection abandoned
	// (sink/mysql) says it too.
	if r.Code == 0 || !strings.Contains(r.Stdout, "the import was abandoned") {
		t.Fatalf("a file changed under the import: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	return r
}

// TestMariaDBAbandonDropsCreatedTable changes the file under an ordinal
// import that created its table: the operation is abandoned, its rows
// removed, and the table it made dropped.
func TestMariaDBAbandonDropsCreatedTable(t *testing.T) {
	t.Parallel()
	onMariaDB(t, func(t *testing.T, dir string, tg *testkit.Target) {
		r := abandonUnder(t, dir, tg, func() {})
		if got := userTables(t, tg); len(got) != 0 {
			t.Fatalf("the abandoned import left tables %v\n%s%s", got, r.Stdout, r.Stderr)
		}
		if got := createdRecords(t, tg); len(got) != 0 {
			t.Fatalf("the abandon left records of tables created: %v\n%s%s", got, r.Stdout, r.Stderr)
		}
	})
}

// TestMariaDBAbandonKeepsAHeldTable changes the file under an ordinal
// import that created its table while another table's foreign key refers
// to that table, so that the abandon cannot drop it: the run says which
// table stays and the undo that drops it, and that undo, once the other
// table is gone, does.
func TestMariaDBAbandonKeepsAHeldTable(t *testing.T) {
	t.Parallel()
	onMariaDB(t, func(t *testing.T, dir string, tg *testkit.Target) {
		r := abandonUnder(t, dir, tg, func() {
			if _, err := tg.DB.Exec(`CREATE TABLE held (f BIGINT NOT NULL, r BIGINT NOT NULL,
				FOREIGN KEY (f, r) REFERENCES orders (_idemport_file, _idemport_row)) ENGINE = InnoDB`); err != nil {
				t.Fatal(err)
			}
		})
		var res struct{ Notes []string }
		if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil {
			t.Fatalf("%v\n%s", err, r.Stdout)
		}
		var undo []string
		for _, n := range res.Notes {
			if strings.HasPrefix(n, "could not drop orders, which the abandoned import had created (") {
				if i, j := strings.Index(n, "`idemport "), strings.LastIndex(n, "`"); i >= 0 && j > i {
					undo = strings.Fields(n[i+len("`idemport ") : j])
				}
			}
		}
		if !slices.Equal(undo[:min(len(undo), 3)], []string{"undo", "--table", "orders"}) || len(undo) != 4 {
			t.Fatalf("the run does not say that orders stays and which undo drops it: notes %q\n%s", res.Notes, r.Stderr)
		}
		if got := userTables(t, tg); !slices.Equal(got, []string{"held", "orders"}) {
			t.Fatalf("tables after the abandon: %v, want held and orders", got)
		}
		if _, err := tg.DB.Exec(`DROP TABLE held`); err != nil {
			t.Fatal(err)
		}
		if r := tg.Exec(t, dir, nil, undo...); r.Code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", undo, r.Code, r.Stdout, r.Stderr)
		}
		if got := userTables(t, tg); len(got) != 0 {
			t.Fatalf("the undo the run named left tables %v", got)
		}
		if got := createdRecords(t, tg); len(got) != 0 {
			t.Fatalf("the undo left records of tables created: %v", got)
		}
	})
}

// checkMariaSettled is checkExact (the table exact, the operation
// completed with the table's rows inserted, every row and partition
// counted once by the attempts) and then what checkAtomicSettled adds: no
// attempt failed, no staging table left, and a rerun a duplicate.
func checkMariaSettled(t *testing.T, tg *testkit.Target, dir, mode string, rows [][]string, args ...string) {
	t.Helper()
	checkExact(t, tg, mode, rows)
	if failed := testkit.Query(t, tg.DB, `SELECT attempt_id, outcome, error FROM `+tg.Ledger("attempts")+` WHERE outcome = 'failed'`); len(failed) > 0 {
		t.Fatalf("attempts recorded failed: %v", failed)
	}
	for _, name := range tg.Tables(t) {
		if strings.HasPrefix(name, "_idemport_") {
			t.Fatalf("table %s left behind", name)
		}
	}
	if again := importTo(t, tg, dir, nil, 0, args...); again.Outcome != "duplicate" {
		t.Fatalf("rerun: %s, want duplicate", again.Outcome)
	}
}

// TestMariaDBOneEvolvesTheTable: two processes of one --evolve add import
// meet where the table does not fit the file yet. The first stops once it
// found the table needs a column and recorded that it adds it, before it
// adds it (after-ddl-record); the second, joining the import, must wait
// for it rather than find the column missing too and add it as well. The
// first goes on and adds the column; the second's two workers, both
// waiting, then take the lock in turn without a deadlock, find the column
// there and change nothing. The column is recorded added once, by the first, and
// named once among the runs' columns_added; the table holds every row.
// (Before, each of several workers or runs that looked at the table before
// one changed it recorded and reported the column as its own.)
func TestMariaDBOneEvolvesTheTable(t *testing.T) {
	t.Parallel()
	onMariaDB(t, func(t *testing.T, dir string, tg *testkit.Target) {
		os.WriteFile(filepath.Join(dir, "base.csv"), []byte("id,a\n1,x\n"), 0o644)
		importTo(t, tg, dir, nil, 0, "--table", "t", "--key", "id", "base.csv")
		var b strings.Builder
		b.WriteString("id,a,extra\n")
		for i := 1; i <= 40; i++ {
			fmt.Fprintf(&b, "%d,a%d,e%d\n", i, i, i)
		}
		os.WriteFile(filepath.Join(dir, "more.csv"), []byte(b.String()), 0o644)
		args := []string{"import", "--output", "json", "--table", "t", "--key", "id", "--evolve", "add", "--partition-rows", "10", "more.csv"}
		// One worker first, so that the lock waited for is the second run's.
		first := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=after-ddl-record:stop"}, append(slices.Clone(args[:len(args)-1]), "--workers", "1", "more.csv")...))
		second := start(t, tg, dir, nil, append(slices.Clone(args[:len(args)-1]), "--workers", "2", "more.csv")...)
		// The second waits for the first's lock, or goes on and records a
		// change of its own.
		changes := `SELECT count(*) FROM ` + tg.Ledger("attempts") + ` WHERE schema_changes IS NOT NULL`
		for deadline := time.Now().Add(2 * time.Minute); ; {
			if n := testkit.Int(t, tg.DB, changes); n > 1 {
				t.Fatalf("the second run recorded the column added too, while the first had not added it yet")
			}
			if time.Now().After(deadline) {
				r := testkit.Wait(t, second.cmd)
				t.Fatalf("the second run never waited for the first: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			if testkit.Int(t, tg.DB, mariaWaiting) > 1 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		continued(t, first)
		var added []string
		for _, s := range []*started{first, second} {
			r := testkit.Wait(t, s.cmd)
			if r.Code != 0 && r.Code != 4 {
				t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			// The lock's key stays once made: the waiters for it take it
			// in turn rather than deadlock on making it again.
			if strings.Contains(r.Stderr, "deadlock") {
				t.Fatalf("a run met a deadlock:\n%s", r.Stderr)
			}
			if r.Code == 0 {
				added = append(added, parsed(t, r, "a run", 0).ColumnsAdded...)
			}
		}
		if res := importTo(t, tg, dir, nil, 0, args[3:]...); res.Outcome != "duplicate" && res.Outcome != "resumed" {
			t.Fatalf("the last run: %s", res.Outcome)
		} else {
			added = append(added, res.ColumnsAdded...)
		}
		if !slices.Equal(added, []string{"extra"}) {
			t.Fatalf("the runs say they added %v, want extra once", added)
		}
		if got := testkit.Query(t, tg.DB, `SELECT schema_changes FROM `+tg.Ledger("attempts")+` WHERE schema_changes IS NOT NULL`); !reflect.DeepEqual(got, [][]any{{"added extra (string)"}}) {
			t.Fatalf("schema changes recorded: %v, want the column added, once", got)
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM t WHERE a = CONCAT('a', id) AND extra = CONCAT('e', id)`); n != 40 {
			t.Fatalf("%d rows hold the file's values, want 40", n)
		}
	})
}

// TestAtomicMoveMeetsAKeyStoredMeanwhile: MariaDB's move of an --atomic
// import's staged rows updates the stored keys and then inserts the
// others. Stopped between the two (failpoint inside-move) while another
// import by key writes one of those others, and let go once that import
// stopped before its COMMIT, the move's insert waits for the key and,
// as the other import commits, meets it stored (error 1062 on the key):
// the completion runs again and completes, exit 0, not a refusal, the
// table value for value the two files applied in the order their effects
// committed, the counts what the move did, each import completed once and
// its rerun a duplicate. Killed at the same point, the next import leaves
// the table as it was, and its rerun resumes exactly.
func TestAtomicMoveMeetsAKeyStoredMeanwhile(t *testing.T) {
	t.Parallel()
	onMariaDB(t, func(t *testing.T, dir string, tg *testkit.Target) {
		l := &life{t: t, tg: tg, dir: dir}
		key := []string{"--table", "am", "--key", "id"}
		l.write("base.csv", "id,v,n\n1,1,base\n2,1,base\n")
		l.run(0, append(append([]string{"import"}, key...), "base.csv")...)
		l.write("a.csv", "id,v,n\n1,2,a\n3,2,a\n4,2,a\n")
		l.write("b.csv", "id,v,n\n4,1,b\n5,1,b\n")
		imp := []string{"import", "--output", "json"}
		a := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=inside-move:stop"}, append(slices.Clone(imp), append(append([]string{"--atomic"}, key...), "a.csv")...)...))
		// a.csv's stored key 1 is updated, its keys 3 and 4 not yet
		// inserted: b.csv writes 4 and stops before its COMMIT.
		b := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=before-partition-commit:stop"}, append(slices.Clone(imp), append(slices.Clone(key), "b.csv")...)...))
		if err := testkit.Continue(a.cmd.Process); err != nil {
			t.Fatal(err)
		}
		// a.csv's insert waits for b.csv's key 4, checking it is no
		// duplicate (InnoDB's monitor shows the wait, as innodb_trx need
		// not).
		var db string
		if err := tg.DB.QueryRow(`SELECT DATABASE()`).Scan(&db); err != nil {
			t.Fatal(err)
		}
		waits := regexp.MustCompile(`index PRIMARY of table "` + regexp.QuoteMeta(db) + `"\."am" trx id \d+ lock mode S locks rec but not gap waiting`)
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			var typ, name, status string
			if err := tg.DB.QueryRow(`SHOW ENGINE INNODB STATUS`).Scan(&typ, &name, &status); err != nil {
				t.Fatal(err)
			}
			if waits.MatchString(status) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the move's insert never waited for b.csv's key 4:\n%s", status)
			}
		}
		if err := testkit.Continue(b.cmd.Process); err != nil {
			t.Fatal(err)
		}
		if err := b.cmd.Wait(); err != nil {
			t.Fatalf("b.csv: %v\nstdout: %s\nstderr: %s", err, b.stdout.String(), b.stderr.String())
		}
		if rs := parseResults(t, b.stdout.String()); len(rs) != 1 || rs[0].Outcome != "imported" || rs[0].Rows.Inserted != 2 {
			t.Fatalf("b.csv: %+v, want imported, 2 rows inserted", rs)
		}
		if err := a.cmd.Wait(); err != nil {
			t.Fatalf("a.csv, its move meeting key 4 stored: %v\nstdout: %s\nstderr: %s", err, a.stdout.String(), a.stderr.String())
		}
		rs := parseResults(t, a.stdout.String())
		if len(rs) != 1 || rs[0].Outcome != "imported" || rs[0].Rows.Inserted != 1 || rs[0].Rows.Updated != 2 || rs[0].Rows.Unchanged != 0 {
			t.Fatalf("a.csv: %+v, want imported, 1 row inserted (3), 2 updated (1, and 4 over b.csv's)\nstderr: %s", rs, a.stderr.String())
		}
		want := "1|2|a\n2|1|base\n3|2|a\n4|2|a\n5|1|b"
		if got := l.rows("am", "id", "v", "n"); got != want {
			t.Fatalf("table:\n%s\nwant:\n%s", got, want)
		}
		// Keys 1, 3 and 4 carry a.csv's lineage, and no staging table is left.
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM am WHERE _idemport_file = (SELECT _idemport_file FROM am WHERE id = 3) AND _idemport_row IS NOT NULL`); n != 3 {
			t.Fatalf("%d rows carry a.csv's lineage, want 3", n)
		}
		for _, tb := range tg.Tables(t) {
			if strings.Contains(tb, "_idemport_stage_") {
				t.Fatalf("the completed import left the staging table %s", tb)
			}
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
		if got := l.rows("am", "id", "v", "n"); got != want {
			t.Fatalf("after the reruns, table:\n%s\nwant:\n%s", got, want)
		}
		if got := testkit.Query(t, tg.DB, `SELECT state, count(*) FROM `+tg.Ledger("operations")+` GROUP BY state`); !reflect.DeepEqual(got, [][]any{{"completed", int64(3)}}) {
			t.Fatalf("operations by state: %v, want 3 completed", got)
		}
		if failed := testkit.Query(t, tg.DB, `SELECT attempt_id, outcome, error FROM `+tg.Ledger("attempts")+` WHERE outcome <> 'imported'`); len(failed) > 0 {
			t.Fatalf("attempts not imported: %v", failed)
		}

		// Killed between the move's statements, nothing of the file is in
		// the table; the rerun resumes and moves it all.
		l.write("c.csv", "id,v,n\n2,3,c\n6,3,c\n")
		c := append(append([]string{"import", "--atomic"}, key...), "c.csv")
		if r := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=inside-move"}, c...); r.Signal != syscall.SIGKILL {
			t.Fatalf("c.csv not killed inside its move: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if got := l.rows("am", "id", "v", "n"); got != want {
			t.Fatalf("c.csv killed inside its move changed the table:\n%s", got)
		}
		if r := importTo(t, tg, dir, nil, 0, append([]string{"--atomic"}, append(slices.Clone(key), "c.csv")...)...); r.Outcome != "resumed" || r.Partitions.Skipped != 1 {
			t.Fatalf("the rerun of c.csv: %s, %d partitions skipped; want resumed, 1", r.Outcome, r.Partitions.Skipped)
		}
		if got, want := l.rows("am", "id", "v", "n"), "1|2|a\n2|3|c\n3|2|a\n4|2|a\n5|1|b\n6|3|c"; got != want {
			t.Fatalf("after c.csv, table:\n%s\nwant:\n%s", got, want)
		}
	})
}

// TestAtomicMoveCountsAndRefusesWithKeysStoredMeanwhile: MariaDB's move of
// an --atomic import's staged rows, stopped between its update of the
// stored keys and its insert of the others (failpoint inside-move).
//
// While stopped, another import stores a key the move is to insert, and
// completes: the move runs again (after a pause, named in its warning and
// waited), and its counts are what it did (1 new, 2 changed over the
// other import's key and a stored one), each key counted new by one
// import alone, the table value for value.
//
// On a table with a unique index on another column: the same, the file's
// row duplicating a stored value of that index, is the table's refusal at
// once (exit 5, the undo --forget next step), no move again; and so is
// the duplicate its insert meets on that index after waiting for another
// import's uncommitted row, which commits with a key of the file besides:
// a key stored meanwhile does not make a duplicate on another index one.
func TestAtomicMoveCountsAndRefusesWithKeysStoredMeanwhile(t *testing.T) {
	t.Parallel()
	onMariaDB(t, func(t *testing.T, dir string, tg *testkit.Target) {
		l := &life{t: t, tg: tg, dir: dir}
		imp := []string{"import", "--output", "json"}
		inMove := []string{"IDEMPORT_FAILPOINT=inside-move:stop"}
		again := regexp.MustCompile(`moving them again.* pause=(\S+)`)

		// The counts.
		key := []string{"--table", "mc", "--key", "id"}
		l.write("base.csv", "id,v,n\n1,1,base\n2,1,base\n")
		l.run(0, append(append([]string{"import"}, key...), "base.csv")...)
		l.write("a.csv", "id,v,n\n1,2,a\n3,2,a\n4,2,a\n")
		l.write("b.csv", "id,v,n\n4,1,b\n5,1,b\n")
		a := stopped(t, start(t, tg, dir, inMove, append(slices.Clone(imp), append(append([]string{"--atomic"}, key...), "a.csv")...)...))
		if r := importTo(t, tg, dir, nil, 0, append(slices.Clone(key), "b.csv")...); r.Rows.Inserted != 2 || r.Rows.Updated != 0 {
			t.Fatalf("b.csv: %+v, want 2 rows inserted", r.Rows)
		}
		continued := time.Now()
		if err := testkit.Continue(a.cmd.Process); err != nil {
			t.Fatal(err)
		}
		if err := a.cmd.Wait(); err != nil {
			t.Fatalf("a.csv: %v\nstdout: %s\nstderr: %s", err, a.stdout.String(), a.stderr.String())
		}
		took := time.Since(continued)
		rs := parseResults(t, a.stdout.String())
		if len(rs) != 1 || rs[0].Outcome != "imported" || rs[0].Rows.Inserted != 1 || rs[0].Rows.Updated != 2 || rs[0].Rows.Unchanged != 0 {
			t.Fatalf("a.csv: %+v, want imported, 1 row inserted (3), 2 updated (1, and 4 over b.csv's)\nstderr: %s", rs, a.stderr.String())
		}
		m := again.FindAllStringSubmatch(a.stderr.String(), -1)
		if len(m) != 1 {
			t.Fatalf("a.csv moved again %d times, want once, after a pause:\n%s", len(m), a.stderr.String())
		}
		if pause, err := time.ParseDuration(m[0][1]); err != nil || took < pause {
			t.Fatalf("a.csv moved again after a pause of %s (%v), but completed %s after it went on", m[0][1], err, took)
		}
		if got, want := l.rows("mc", "id", "v", "n"), "1|2|a\n2|1|base\n3|2|a\n4|2|a\n5|1|b"; got != want {
			t.Fatalf("table:\n%s\nwant:\n%s", got, want)
		}
		ins := testkit.Int(t, tg.DB, `SELECT CAST(sum(rows_inserted) AS SIGNED) FROM `+tg.Ledger("operations"))
		upd := testkit.Int(t, tg.DB, `SELECT CAST(sum(rows_updated) AS SIGNED) FROM `+tg.Ledger("operations"))
		if ins != 5 || upd != 2 {
			t.Fatalf("the imports' rows inserted and updated: %d and %d, want 5 (one for each key) and 2", ins, upd)
		}

		// The refusals.
		for _, c := range []struct {
			name, a, b string
			hold       bool // b holds its rows uncommitted until the move's insert waits for them
		}{
			{"stored before", "id,v,u\n1,2,x1\n3,2,x2\n4,2,y4\n", "id,v,u\n4,1,z4\n5,1,z5\n", false},
			{"waited for", "id,v,u\n1,2,x1\n3,2,y3\n6,2,y6\n", "id,v,u\n5,1,y3\n6,1,z6\n", true},
		} {
			table := "mu" + strings.Fields(c.name)[0]
			key := []string{"--table", table, "--key", "id"}
			for _, q := range []string{`CREATE TABLE ` + table + ` (id bigint PRIMARY KEY, v bigint, u varchar(20), _idemport_file bigint, _idemport_row bigint, UNIQUE KEY uq_u (u))`} {
				if _, err := tg.DB.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			l.write(table+"-base.csv", "id,v,u\n1,1,x1\n2,1,x2\n")
			l.run(0, append(append([]string{"import"}, key...), table+"-base.csv")...)
			l.write(table+"-a.csv", c.a)
			l.write(table+"-b.csv", c.b)
			a := stopped(t, start(t, tg, dir, inMove, append(slices.Clone(imp), append(append([]string{"--atomic"}, key...), table+"-a.csv")...)...))
			if !c.hold {
				importTo(t, tg, dir, nil, 0, append(slices.Clone(key), table+"-b.csv")...)
				if err := testkit.Continue(a.cmd.Process); err != nil {
					t.Fatal(err)
				}
			} else {
				b := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=before-partition-commit:stop"}, append(slices.Clone(imp), append(slices.Clone(key), table+"-b.csv")...)...))
				if err := testkit.Continue(a.cmd.Process); err != nil {
					t.Fatal(err)
				}
				var db string
				if err := tg.DB.QueryRow(`SELECT DATABASE()`).Scan(&db); err != nil {
					t.Fatal(err)
				}
				waits := regexp.MustCompile(`index uq_u of table "` + regexp.QuoteMeta(db) + `"\."` + table + `" trx id \d+ lock.*waiting`)
				for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
					var typ, name, status string
					if err := tg.DB.QueryRow(`SHOW ENGINE INNODB STATUS`).Scan(&typ, &name, &status); err != nil {
						t.Fatal(err)
					}
					if waits.MatchString(status) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: the move's insert never waited for b.csv's y3:\n%s", c.name, status)
					}
				}
				if err := testkit.Continue(b.cmd.Process); err != nil {
					t.Fatal(err)
				}
				if err := b.cmd.Wait(); err != nil {
					t.Fatalf("%s: b.csv: %v\nstdout: %s\nstderr: %s", c.name, err, b.stdout.String(), b.stderr.String())
				}
			}
			err := a.cmd.Wait()
			if code := a.cmd.ProcessState.ExitCode(); code != 5 {
				t.Fatalf("%s: a.csv: exit %d (%v), want 5\nstdout: %s\nstderr: %s", c.name, code, err, a.stdout.String(), a.stderr.String())
			}
			all := a.stdout.String() + a.stderr.String()
			if again.MatchString(all) || !strings.Contains(all, "refused: the file cannot be moved into "+table) || !strings.Contains(all, "uq_u") {
				t.Fatalf("%s: a.csv not refused at once, naming uq_u:\n%s", c.name, all)
			}
			if rs := parseResults(t, a.stdout.String()); len(rs) != 1 || rs[0].Outcome != "refused" || !strings.HasPrefix(rs[0].Next, "idemport undo --forget --table "+table+" ") {
				t.Fatalf("%s: a.csv's refusal has no next: line naming undo --forget:\n%s", c.name, all)
			}
			want := map[bool]string{false: "1|1|x1\n2|1|x2\n4|1|z4\n5|1|z5", true: "1|1|x1\n2|1|x2\n5|1|y3\n6|1|z6"}[c.hold]
			if got := l.rows(table, "id", "v", "u"); got != want {
				t.Fatalf("%s: table:\n%s\nwant:\n%s", c.name, got, want)
			}
		}

		// A key the table's collation makes one with another of the file
		// is the table's refusal, though another import stored a key of
		// the file while the move stopped: the keys missing are counted
		// as the insert begins.
		key = []string{"--table", "mk", "--key", "id"}
		if _, err := tg.DB.Exec(`CREATE TABLE mk (id varchar(10) COLLATE utf8mb4_general_ci PRIMARY KEY, v bigint, _idemport_file bigint, _idemport_row bigint)`); err != nil {
			t.Fatal(err)
		}
		l.write("mk-a.csv", "id,v\nB,2\nb,2\nc,2\n")
		l.write("mk-b.csv", "id,v\nc,1\n")
		a = stopped(t, start(t, tg, dir, inMove, append(slices.Clone(imp), append(append([]string{"--atomic"}, key...), "mk-a.csv")...)...))
		importTo(t, tg, dir, nil, 0, append(slices.Clone(key), "mk-b.csv")...)
		if err := testkit.Continue(a.cmd.Process); err != nil {
			t.Fatal(err)
		}
		err := a.cmd.Wait()
		if all := a.stdout.String() + a.stderr.String(); a.cmd.ProcessState.ExitCode() != 5 || again.MatchString(all) || !strings.Contains(all, "refused: the file cannot be moved into mk") {
			t.Fatalf("mk-a.csv: exit %d (%v), want 5, refused at once:\n%s", a.cmd.ProcessState.ExitCode(), err, all)
		}
		if got, want := l.rows("mk", "id", "v"), "c|1"; got != want {
			t.Fatalf("mk: table:\n%s\nwant:\n%s", got, want)
		}
	})
}

// TestMariaDBAtomicKeysOneToTheCollation: an --atomic import by key into
// an existing MariaDB table made without idemport's lineage columns, whose
// key column compares text without case (utf8mb4_general_ci). The file's
// keys 'a' and 'A' are one key to the table: the file repeats a key in
// the table's eyes and is refused whole (exit 5), the message naming both
// rows and keys and the undo --forget that gets out, every rerun the
// same, the table as before. Its next: line says what a plain import of
// the file does, which quarantines nothing: the plain import then writes
// the later row, A, and counts the earlier one, met after it (the writer
// takes keys in byte order, A before a), superseded, not stale (older by
// --version-col, which it is not). Then the fixed file moves, value for
// value.
func TestMariaDBAtomicKeysOneToTheCollation(t *testing.T) {
	t.Parallel()
	onMariaDB(t, func(t *testing.T, dir string, tg *testkit.Target) {
		for _, q := range []string{
			`CREATE TABLE ci (k varchar(20) COLLATE utf8mb4_general_ci PRIMARY KEY, v text) ENGINE=InnoDB`,
			`INSERT INTO ci VALUES ('x', '0')`,
		} {
			if _, err := tg.DB.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		read := func() [][]any { return testkit.Query(t, tg.DB, `SELECT k, v FROM ci ORDER BY k`) }
		before := [][]any{{"x", "0"}}
		os.WriteFile(filepath.Join(dir, "f.csv"), []byte("k,v\nb,1\na,2\nA,3\nx,4\n"), 0o644)
		args := []string{"import", "--table", "ci", "--key", "k", "--atomic", "f.csv"}
		next := regexp.MustCompile(`(?m)^  next: idemport undo --forget --table ci (\S+) .*, or this one without --atomic, which writes the later of such rows over the earlier one`)
		var fileID string
		for i := range 2 {
			r := tg.Exec(t, dir, nil, args...)
			out := r.Stdout + r.Stderr
			if r.Code != 5 || !strings.Contains(out, `refused: the file cannot be moved into ci as it is`) ||
				!strings.Contains(out, `rows 2 and 3 of the file hold the keys ("a") and ("A"), which ci compares as one key`) {
				t.Fatalf("run %d: exit %d, want 5 refused naming rows 2 and 3:\n%s", i, r.Code, out)
			}
			m := next.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("run %d: no next: line naming undo --forget:\n%s", i, out)
			}
			fileID = m[1]
			if got := read(); !reflect.DeepEqual(got, before) {
				t.Fatalf("run %d: a refused move changed ci: %v, want %v", i, got, before)
			}
		}
		if r := tg.Exec(t, dir, nil, "undo", "--forget", "--table", "ci", fileID); r.Code != 0 {
			t.Fatalf("undo --forget: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		plain := tg.Exec(t, dir, nil, "import", "--table", "ci", "--key", "k", "f.csv")
		if want := "f.csv: imported 3 rows into ci (2 new, 1 updated; 1 superseded (a later row of the file has the same key); "; plain.Code != 0 || !strings.HasPrefix(plain.Stdout, want) {
			t.Fatalf("plain import: exit %d, want 0 and %q:\n%s%s", plain.Code, want, plain.Stdout, plain.Stderr)
		}
		if got, want := read(), [][]any{{"A", "3"}, {"b", "1"}, {"x", "4"}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("after the plain import ci holds %v, want %v", got, want)
		}
		got := testkit.Query(t, tg.DB, `SELECT rows_read, rows_inserted, rows_updated, rows_unchanged, rows_stale, rows_superseded, rows_rejected FROM `+tg.Ledger("operations")+` WHERE state = 'completed'`)
		if want := [][]any{{int64(4), int64(2), int64(1), int64(0), int64(0), int64(1), int64(0)}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("the plain import's operation counts %v, want %v", got, want)
		}
		os.WriteFile(filepath.Join(dir, "f.csv"), []byte("k,v\nb,1\nA,3\nx,4\n"), 0o644)
		if r := tg.Exec(t, dir, nil, args...); r.Code != 0 {
			t.Fatalf("the fixed file: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if got, want := read(), [][]any{{"A", "3"}, {"b", "1"}, {"x", "4"}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("ci holds %v, want %v", got, want)
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM ci WHERE _idemport_row IS NOT NULL`); n != 3 {
			t.Fatalf("%d rows of ci carry their lineage, want 3", n)
		}
	})
}

// TestMariaDBPlainImportOfKeysOneToTheCollation: a plain import by key
// into a MariaDB table whose key column compares text without case and
// pads (utf8mb4_general_ci), of files holding keys the plan tells apart
// but the table compares as one ('a' and 'A', 'c ' and 'c'): the later
// row of the file wins, and a row met after it is counted superseded,
// never stale (which says older by --version-col, and there is none),
// read always the sum of the counts. Once through the one-statement
// merge (the key the table's one unique index), once through the update
// and insert (another unique index), which count alike: the two rows of
// such a pair apply in rounds of their own. The writer takes keys in byte
// order, so which row of a pair the table meets first is known (B before
// b: B is unchanged against the stored b, and b updates it).
func TestMariaDBPlainImportOfKeysOneToTheCollation(t *testing.T) {
	t.Parallel()
	onMariaDB(t, func(t *testing.T, dir string, tg *testkit.Target) {
		for _, c := range []struct{ table, ddl, fWant, hWant string }{
			{"ci1", `CREATE TABLE ci1 (k varchar(20) COLLATE utf8mb4_general_ci PRIMARY KEY, v text)`,
				"4 2 1 0 0 1 0", "4 1 1 1 0 1 0"},
			{"ci2", `CREATE TABLE ci2 (k varchar(20) COLLATE utf8mb4_general_ci PRIMARY KEY, v text, u bigint UNIQUE)`,
				"4 2 1 0 0 1 0", "4 1 1 1 0 1 0"},
		} {
			for _, q := range []string{c.ddl, `INSERT INTO ` + c.table + ` (k, v) VALUES ('x', '0')`} {
				if _, err := tg.DB.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			os.WriteFile(filepath.Join(dir, "f.csv"), []byte("k,v\nb,1\na,2\nA,3\nx,4\n"), 0o644)
			os.WriteFile(filepath.Join(dir, "h.csv"), []byte("k,v\nB,1\nb,2\nc ,3\nc,4\n"), 0o644)
			for _, f := range []string{"f.csv", "h.csv"} {
				r := tg.Exec(t, dir, nil, "import", "--table", c.table, "--key", "k", f)
				if r.Code != 0 || strings.Contains(r.Stdout, "stale") || !strings.Contains(r.Stdout, "superseded (a later row of the file has the same key)") {
					t.Fatalf("%s %s: exit %d, want 0, rows superseded, none stale:\n%s%s", c.table, f, r.Code, r.Stdout, r.Stderr)
				}
			}
			got := testkit.Query(t, tg.DB, `SELECT concat_ws(' ', rows_read, rows_inserted, rows_updated, rows_unchanged, rows_stale, rows_superseded, rows_rejected)
				FROM `+tg.Ledger("operations")+` WHERE table_name = ? ORDER BY created_at`, c.table)
			if want := [][]any{{c.fWant}, {c.hWant}}; !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: counts (read inserted updated unchanged stale superseded rejected) %v, want %v", c.table, got, want)
			}
			if got, want := testkit.Query(t, tg.DB, `SELECT k, v FROM `+c.table+` ORDER BY k`), [][]any{{"A", "3"}, {"b", "2"}, {"c", "4"}, {"x", "4"}}; !reflect.DeepEqual(got, want) {
				t.Fatalf("%s holds %v, want %v", c.table, got, want)
			}
		}
	})
}
