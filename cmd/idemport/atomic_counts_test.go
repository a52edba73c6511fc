package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// versionedBase and versionedUpdate are two files of (id, name, ts) keyed
// by id with --version-col ts. An empty ts is NULL.
const versionedBase = `id,name,ts
1,n1,10
2,n2,10
3,n3,10
4,n4,10
5,n5,10
6,n6,10
7,n7,10
8,n8,10
9,n9,10
10,n10,10
11,n11,
12,n12,10
`

// The update, partition by partition (3 rows each): 1 unchanged; 2
// changed at the same version; 3 newer; 4 older (stale); 5 without a
// version over a stored one (stale); 11 over a stored NULL version
// (applied); 13, 14, 15 new; 6 twice, the later and newer wins (the
// earlier is superseded); 7 older (stale); 15 again, older than its first
// occurrence (superseded).
const versionedUpdate = `id,name,ts
1,n1,10
2,x2,10
3,x3,11
4,x4,9
5,x5,
11,x11,5
13,n13,1
6,a6,12
14,n14,1
6,b6,13
7,x7,8
15,d15,1
15,e15,0
`

// versionedWant is the table after both files: id|name|ts.
var versionedWant = []string{"1|n1|10", "2|x2|10", "3|x3|11", "4|n4|10", "5|n5|10", "6|b6|13", "7|n7|10", "8|n8|10",
	"9|n9|10", "10|n10|10", "11|x11|5", "12|n12|10", "13|n13|1", "14|n14|1", "15|d15|1"}

// rowCounts is read, inserted, updated, unchanged, stale, superseded,
// rejected.
type rowCounts [7]int64

// opCounts returns the counters of the operation of fileID and the sum of
// its attempts' counters; it fails if an attempt has a negative counter.
func opCounts(t *testing.T, tg *testkit.Target, fileID string) (op, attempts rowCounts) {
	t.Helper()
	cols := `rows_read, rows_inserted, rows_updated, rows_unchanged, rows_stale, rows_superseded, rows_rejected`
	r := testkit.Query(t, tg.DB, tg.Rebind(`SELECT `+cols+` FROM `+tg.Ledger("operations")+` WHERE file_id = ?`), fileID)
	if len(r) != 1 {
		t.Fatalf("operation %s: %v", fileID, r)
	}
	for i := range op {
		op[i] = r[0][i].(int64)
	}
	for _, a := range testkit.Query(t, tg.DB, tg.Rebind(`SELECT `+cols+` FROM `+tg.Ledger("attempts")+` WHERE file_id = ?`), fileID) {
		for i := range attempts {
			if a[i].(int64) < 0 {
				t.Fatalf("an attempt on %s has a negative counter: %v", fileID, a)
			}
			attempts[i] += a[i].(int64)
		}
	}
	return op, attempts
}

// versionedTable returns the table as id|name|ts lines and its lineage
// (file, row) of each, in id order.
func versionedTable(t *testing.T, tg *testkit.Target) (rows, lineage []string) {
	t.Helper()
	for _, r := range testkit.Query(t, tg.DB, `SELECT `+tg.Text("id")+` || '|' || name || '|' || coalesce(`+tg.Text("ts")+`, 'NULL'),
		`+tg.Text("_idemport_file")+` || ':' || `+tg.Text("_idemport_row")+` FROM v ORDER BY id`) {
		rows, lineage = append(rows, r[0].(string)), append(lineage, r[1].(string))
	}
	return rows, lineage
}

// TestAtomicWithVersionCol: an --atomic import with --version-col leaves
// the table exactly as the same import without --atomic does (every value,
// the lineage of each row included), and counts the rows as a reader of
// the table sees them, as the plain import counts them, not as they were
// written to the staging table: the run's result, the operation and the
// sum of its attempts (each non-negative), clean and when killed and
// resumed.
//
// The killed subtest kills the update along a chain (killAlong): after
// the 2nd partition's commit, then its rerun inside the 4th (the 2nd of
// those left), the partitions done counted after each kill; the third
// attempt completes it. These were two killed subtests, each resumed by a
// second attempt (32 processes; now 24): what is given up is the table
// and the counts after a single kill's rerun; they are checked after the
// chain's, over three attempts.
func TestAtomicWithVersionCol(t *testing.T) {
	t.Parallel()
	want := rowCounts{13, 3, 4, 1, 3, 2, 0}
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, chain := range [][]string{nil, {"after-partition-commit:2", "inside-partition:2"}} {
			t.Run(fmt.Sprintf("kills=%v", chain), func(t *testing.T) {
				t.Parallel()
				var tables, lineages [2][]string
				for i, atomic := range []bool{false, true} {
					dir := t.TempDir()
					tg := testkit.NewTarget(t, name, dir)
					os.WriteFile(filepath.Join(dir, "base.csv"), []byte(versionedBase), 0o644)
					os.WriteFile(filepath.Join(dir, "update.csv"), []byte(versionedUpdate), 0o644)
					args := []string{"--table", "v", "--key", "id", "--version-col", "ts", "--column", "ts:int64", "--partition-rows", "3"}
					if atomic {
						args = append(args, "--atomic")
					}
					importTo(t, tg, dir, nil, 0, append(args, "base.csv")...)
					doneBefore := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("partitions")+` WHERE done = 1`)
					killAlong(t, tg, dir, chain, append([]string{"import"}, append(args, "update.csv")...), func(i int) {
						done := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("partitions")+` WHERE done = 1`) - doneBefore
						if want := []int64{2, 3}[i]; done != want {
							t.Fatalf("atomic=%v: after the kill at %s %d partitions of the update are done, want %d", atomic, chain[i], done, want)
						}
					})
					res := importTo(t, tg, dir, nil, 0, append(args, "update.csv")...)
					got := rowCounts{res.Rows.Read, res.Rows.Inserted, res.Rows.Updated, res.Rows.Unchanged, res.Rows.Stale, res.Rows.Superseded, res.Rows.Rejected}
					if chain == nil && got != want {
						t.Fatalf("atomic=%v: the run counted %v, want %v (read, inserted, updated, unchanged, stale, superseded, rejected)", atomic, got, want)
					}
					op, attempts := opCounts(t, tg, res.FileID)
					if op != want || attempts != want {
						t.Fatalf("atomic=%v: the operation counts %v, its attempts together %v, want %v", atomic, op, attempts, want)
					}
					tables[i], lineages[i] = versionedTable(t, tg)
					if !reflect.DeepEqual(tables[i], versionedWant) {
						t.Fatalf("atomic=%v: the table holds\n%s\nwant\n%s", atomic, strings.Join(tables[i], "\n"), strings.Join(versionedWant, "\n"))
					}
					if n := testkit.Int(t, tg.DB, tg.Rebind(`SELECT count(*) FROM `+tg.Ledger("attempts")+` WHERE file_id = ?`), res.FileID); n != int64(len(chain)+1) {
						t.Fatalf("atomic=%v: %d attempts, want %d (one per kill and the completing one)", atomic, n, len(chain)+1)
					}
				}
				if !reflect.DeepEqual(lineages[0], lineages[1]) {
					t.Fatalf("lineage with --atomic %v, without %v", lineages[1], lineages[0])
				}
			})
		}
	})
}

// TestAtomicEvolveAtCompletion: with --atomic, the columns --evolve adds
// or widens change the table in the transaction that completes the
// import, with its rows: killed after every partition was staged, the
// import has changed neither the table's columns nor its rows; resumed, it
// adds and widens them, and the whole table holds both files' values. The
// schema change is recorded with the attempt that completed it.
func TestAtomicEvolveAtCompletion(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, mode := range []string{"key", "ordinal"} {
			t.Run(mode, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				l := &life{t: t, tg: testkit.NewTarget(t, name, dir), dir: dir}
				l.write("f1.csv", "id,a\n1,10\n2,9223372036854775807\n")
				l.write("f2.csv", "id,a,b\n2,2.50,two\n3,-3,\n4,12345678901234567890.123,four\n")
				args := []string{"--table", "items", "--atomic", "--evolve", "widen", "--partition-rows", "1"}
				if mode == "key" {
					args = append(args, "--key", "id")
				}
				importTo(t, l.tg, dir, nil, 0, append(args, "f1.csv")...)
				columns := func() string { return tableColumns(t, l.tg, "items", false) }
				content := func() string {
					return l.rows("items", l.tg.Text("id")+" || '|' || "+l.tg.Text("a"), "_idemport_file", "_idemport_row")
				}
				cols, before := columns(), content()
				killed := l.tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=before-finalize:1"}, append(append([]string{"import"}, args...), "f2.csv")...)
				if killed.Signal != syscall.SIGKILL {
					t.Fatalf("not killed: exit %d\n%s%s", killed.Code, killed.Stdout, killed.Stderr)
				}
				if got := columns(); got != cols {
					t.Fatalf("before completing, the table's columns changed from %s to %s", cols, got)
				}
				if got := content(); got != before {
					t.Fatalf("before completing, the table's rows changed from\n%s\nto\n%s", before, got)
				}
				res := importTo(t, l.tg, dir, nil, 0, append(args, "f2.csv")...)
				if res.Outcome != "resumed" || fmt.Sprint(res.ColumnsAdded) != "[b]" || fmt.Sprint(res.ColumnsWidened) != "[a]" {
					t.Fatalf("resumed: outcome %s, columns added %v, widened %v", res.Outcome, res.ColumnsAdded, res.ColumnsWidened)
				}
				want := "1|10|NULL\n2|2.50|two\n2|9223372036854775807|NULL\n3|-3|NULL\n4|12345678901234567890.123|four"
				if mode == "key" {
					want = "1|10|NULL\n2|2.50|two\n3|-3|NULL\n4|12345678901234567890.123|four"
				}
				l.wantRows("items", want, l.tg.Text("id")+" || '|' || "+l.tg.Text("a"), "b")
				if got := columns(); got == cols || !strings.Contains(got, "b:") {
					t.Fatalf("after completing, the table's columns are %s (were %s)", got, cols)
				}
				if h := l.run(0, l.tg.With("history", "--table", "items", "f2.csv")...); !strings.Contains(h.Stdout, "schema: widened a int64 → decimal, added b (string)") &&
					!strings.Contains(h.Stdout, "schema: added b (string), widened a int64 → decimal") {
					t.Fatalf("history does not show the schema change:\n%s", h.Stdout)
				}
			})
		}
	})
}

// TestGCLeavesOtherLedgersStaging: on PostgreSQL two ledgers (two state
// schemas) import the same file into tables of the same name, each in its
// own schema, with --atomic; one is killed midway, its staging table kept
// for the resume. gc of the other ledger must not drop that staging table
// (it belongs to an operation it does not know), and the killed import
// then resumes and completes.
func TestGCLeavesOtherLedgersStaging(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.Postgres)
	dirA, dirB := t.TempDir(), t.TempDir()
	a, b := testkit.NewTarget(t, testkit.Postgres, dirA), testkit.NewTarget(t, testkit.Postgres, dirB)
	rows := testkit.Orders(t, filepath.Join(dirA, "orders.csv"), 100, 5)
	testkit.Orders(t, filepath.Join(dirB, "orders.csv"), 100, 5)
	args := []string{"import", "--atomic", "--partition-rows", "20", "orders.csv"}
	if r := a.Exec(t, dirA, []string{"IDEMPORT_FAILPOINT=after-partition-commit:2"}, args...); r.Signal != syscall.SIGKILL {
		t.Fatalf("not killed: exit %d\n%s", r.Code, r.Stderr)
	}
	if r := b.Exec(t, dirB, []string{"IDEMPORT_FAILPOINT=after-partition-commit:1"}, args...); r.Signal != syscall.SIGKILL {
		t.Fatalf("not killed: exit %d\n%s", r.Code, r.Stderr)
	}
	importTo(t, b, dirB, nil, 0, args[1:]...)
	gc := b.Exec(t, dirB, nil, "gc", "-o", "json")
	if gc.Code != 0 {
		t.Fatalf("gc: exit %d\n%s%s", gc.Code, gc.Stdout, gc.Stderr)
	}
	if strings.Contains(gc.Stdout, a.Schema) {
		t.Fatalf("gc of one ledger dropped another's staging table:\n%s", gc.Stdout)
	}
	importTo(t, a, dirA, nil, 0, args[1:]...)
	checkOrders(t, a, "orders", rows)
}

// TestAtomicSoftDeleteMarkAtCompletion: with --atomic --snapshot --delete
// soft, the deletion mark column is added in the transaction that
// completes the import, with the rows and the marks: killed before that
// transaction, or inside it (before the sweep, or with all but its event
// written), the import has changed neither the table's columns
// (idemport's own included) nor its rows; resumed, the rows the file lacks
// are marked, the others live, every value exact.
func TestAtomicSoftDeleteMarkAtCompletion(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, kill := range []string{"before-finalize:1", "before-sweep:1", "before-event:1"} {
			t.Run(kill, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				l := &life{t: t, tg: testkit.NewTarget(t, name, dir), dir: dir}
				l.write("f1.csv", "id,a,b\n1,-9223372036854775808,x\n2,9223372036854775807,\n3,0,\"\"\n4,4,four\n")
				l.write("f2.csv", "id,a,b\n2,9223372036854775807,two\n3,-1,\"\"\n4,4,four\n5,5,\n")
				args := []string{"--table", "items", "--key", "id", "--partition-rows", "1"}
				importTo(t, l.tg, dir, nil, 0, append(args, "f1.csv")...)
				cols := tableColumns(t, l.tg, "items", true)
				content := func() string { return l.rows("items", "id", "a", "b", "_idemport_file", "_idemport_row") }
				before := content()
				args = append(args, "--atomic", "--snapshot", "--delete", "soft", "--max-delete", "100%")
				killed := l.tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=" + kill}, append(append([]string{"import"}, args...), "f2.csv")...)
				if killed.Signal != syscall.SIGKILL {
					t.Fatalf("not killed at %s: exit %d\n%s%s", kill, killed.Code, killed.Stdout, killed.Stderr)
				}
				// Where DDL commits alone (MariaDB) the mark's column comes
				// before the completion (sink/mysql's doc); the rows do not.
				if got := tableColumns(t, l.tg, "items", true); got != cols && !l.tg.IsMariaDB() {
					t.Fatalf("killed at %s, before completing, the table's columns changed from %s to %s", kill, cols, got)
				}
				if got := content(); got != before {
					t.Fatalf("killed at %s, before completing, the rows changed from\n%s\nto\n%s", kill, before, got)
				}
				res := importTo(t, l.tg, dir, nil, 0, append(args, "f2.csv")...)
				if res.Outcome != "resumed" || res.Deleted != 1 {
					t.Fatalf("resumed: outcome %s, deleted %d; want resumed, 1", res.Outcome, res.Deleted)
				}
				if got := tableColumns(t, l.tg, "items", true); !strings.Contains(got, "_idemport_deleted_at:") {
					t.Fatalf("after completing, the table's columns are %s: no deletion mark", got)
				}
				l.wantRows("items", "1|-9223372036854775808|x|deleted\n2|9223372036854775807|two|live\n3|-1||live\n4|4|four|live\n5|5|NULL|live",
					"id", "a", "b", "CASE WHEN _idemport_deleted_at IS NULL THEN 'live' ELSE 'deleted' END")
			})
		}
	})
}
