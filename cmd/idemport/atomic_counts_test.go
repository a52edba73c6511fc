package main

import (
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
	for _, r := range testkit.Query(t, tg.DB, `SELECT CAST(id AS TEXT) || '|' || name || '|' || coalesce(CAST(ts AS TEXT), 'NULL'),
		CAST(_idemport_file AS TEXT) || ':' || CAST(_idemport_row AS TEXT) FROM v ORDER BY id`) {
		rows, lineage = append(rows, r[0].(string)), append(lineage, r[1].(string))
	}
	return rows, lineage
}

// TestAtomicWithVersionCol: an --atomic import with --version-col leaves
// the table exactly as the same import without --atomic does (every value,
// the lineage of each row included), and counts the rows as a reader of
// the table sees them, as the plain import counts them, not as they were
// written to the staging table: the run's result, the operation and the
// sum of its attempts (each non-negative), clean and when killed after a
// partition and resumed by a second attempt.
func TestAtomicWithVersionCol(t *testing.T) {
	want := rowCounts{13, 3, 4, 1, 3, 2, 0}
	testkit.Each(t, func(t *testing.T, name string) {
		for _, kill := range []string{"", "after-partition-commit:2", "inside-partition:4"} {
			t.Run("kill="+kill, func(t *testing.T) {
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
					if kill != "" {
						r := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=" + kill}, append([]string{"import"}, append(args, "update.csv")...)...)
						if r.Signal != syscall.SIGKILL {
							t.Fatalf("not killed at %s: exit %d\n%s%s", kill, r.Code, r.Stdout, r.Stderr)
						}
					}
					res := importTo(t, tg, dir, nil, 0, append(args, "update.csv")...)
					got := rowCounts{res.Rows.Read, res.Rows.Inserted, res.Rows.Updated, res.Rows.Unchanged, res.Rows.Stale, res.Rows.Superseded, res.Rows.Rejected}
					if kill == "" && got != want {
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
					if kill != "" && atomic {
						if n := testkit.Int(t, tg.DB, tg.Rebind(`SELECT count(*) FROM `+tg.Ledger("attempts")+` WHERE file_id = ?`), res.FileID); n != 2 {
							t.Fatalf("%d attempts, want 2 (killed and resumed)", n)
						}
					}
				}
				if !reflect.DeepEqual(lineages[0], lineages[1]) {
					t.Fatalf("lineage with --atomic %v, without %v", lineages[1], lineages[0])
				}
			})
		}
	})
}
