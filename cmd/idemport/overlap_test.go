package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// The overlap writes a new file's first partitions while its plan pass
// runs (pipeline/overlap.go), for files of at least 8 MiB. These tests
// give it such files, and tell from the log that it wrote: the partitions
// written were kept ("committed with the plan") or rolled back.
const (
	overlapKept    = "committed with the plan"
	overlapDropped = "the plan keeps nothing written while the plan pass ran"
	overlapOrders  = 120000 // rows of an orders file over 8 MiB
)

// overlapImport imports args against tg with debug logs, expecting exit
// code want, and returns its result and its log.
func overlapImport(t *testing.T, tg *testkit.Target, dir string, env []string, want int, args ...string) (result, string) {
	t.Helper()
	run := tg.Exec(t, dir, env, append([]string{"import", "--output", "json", "--log-level", "debug"}, args...)...)
	if run.Code != want {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %.4000s", run.Code, want, run.Stdout, run.Stderr)
	}
	var res result
	if err := json.Unmarshal([]byte(strings.SplitN(run.Stdout, "\n", 2)[0]), &res); err != nil {
		t.Fatalf("%v: %s", err, run.Stdout)
	}
	return res, run.Stderr
}

// trickyOverlapFile writes data.csv in dir, over 8 MiB: the rows of
// testkit.Tricky (ids 1-7: int64 edges and beyond, 2^53±1, long decimals,
// leading zeros, empty text and NULL) at its end (late) or at its start,
// and filler rows of plain integers, a float and text (ids 8 on) for the
// rest. It returns each column's values, in file order.
func trickyOverlapFile(t *testing.T, dir string, late bool) []testkit.TrickyColumn {
	t.Helper()
	csv, _, cols := testkit.Tricky()
	header, tricky, _ := strings.Cut(csv, "\n")
	const filler = 230000
	var b strings.Builder
	b.WriteString(header + "\n")
	want := make([][]string, len(cols))
	fill := func() {
		for i := 8; i < 8+filler; i++ {
			fmt.Fprintf(&b, "%d,%d,%d,%d,1.5,%d,x\n", i, i*3, -i, i*7, i)
			for c, v := range []string{fmt.Sprint(i), fmt.Sprint(i * 3), fmt.Sprint(-i), fmt.Sprint(i * 7), "1.5", fmt.Sprint(i), "x"} {
				want[c] = append(want[c], v)
			}
		}
	}
	addTricky := func() {
		b.WriteString(tricky)
		for c := range cols {
			want[c] = append(want[c], cols[c].Want...)
		}
	}
	if late {
		fill()
		addTricky()
	} else {
		addTricky()
		fill()
	}
	if b.Len() < 8<<20 {
		t.Fatalf("the file has %d bytes, fewer than an overlap takes", b.Len())
	}
	if err := os.WriteFile(filepath.Join(dir, "data.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for c := range cols {
		cols[c].Want = want[c]
	}
	return cols
}

// TestOverlapLandsEveryValue imports files whose first partitions are
// written while the plan pass runs, in ordinal mode and by key, and
// compares the whole table with the file value by value. With the tricky
// values in the first partition, the types the first partition infers
// are the file's: the partitions written are kept. With them in the last
// partition, which changes the types of five columns (an integer column
// that becomes a decimal beyond int64, text for leading zeros, …), what
// was written under the first partition's types is rolled back, and the
// file lands as the plan's types read it.
func TestOverlapLandsEveryValue(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		for _, late := range []bool{false, true} {
			for _, mode := range []string{"ordinal", "key"} {
				t.Run(fmt.Sprintf("%s/late=%v", mode, late), func(t *testing.T) {
					t.Parallel()
					dir := t.TempDir()
					tg := testkit.NewTarget(t, name, dir)
					cols := trickyOverlapFile(t, dir, late)
					args := []string{"--table", "t", "--partition-rows", "20000"}
					if mode == "key" {
						args = append(args, "--key", "id")
					}
					res, log := overlapImport(t, tg, dir, nil, 0, append(args, "data.csv")...)
					rows := int64(len(cols[0].Want))
					if res.Outcome != "imported" || res.Rows.Read != rows || res.Rows.Inserted != rows || res.Partitions.Committed != res.Partitions.Total {
						t.Fatalf("result %+v, want %d rows inserted in every partition", res, rows)
					}
					// Late, the plan keeps nothing: what was written (if the
					// writer began before the pass ended) is rolled back.
					if !strings.Contains(log, map[bool]string{false: overlapKept, true: overlapDropped}[late]) {
						t.Fatalf("the log does not say what became of the partitions written while the plan pass ran:\n%.4000s", log)
					}
					for _, c := range cols {
						testkit.CheckTricky(t, tg.DB, name, "t", "_idemport_row", c)
					}
					checkOverlapCounts(t, tg, rows)
				})
			}
		}
	})
}

// checkOverlapCounts checks that the one operation completed with rows
// read and inserted, and that its attempts and partitions count them.
func checkOverlapCounts(t *testing.T, tg *testkit.Target, rows int64) {
	t.Helper()
	op := testkit.Query(t, tg.DB, `SELECT state, rows_read, rows_inserted FROM `+tg.Ledger("operations"))
	if fmt.Sprint(op) != fmt.Sprint([][]any{{"completed", rows, rows}}) {
		t.Fatalf("operations %v, want completed with %d rows read and inserted", op, rows)
	}
	att := testkit.Query(t, tg.DB, `SELECT `+tg.Sum("rows_inserted")+`, `+tg.Sum("partitions_committed")+` FROM `+tg.Ledger("attempts"))
	part := testkit.Query(t, tg.DB, `SELECT `+tg.Sum("row_count")+`, count(*) FROM `+tg.Ledger("partitions")+` WHERE done = 1`)
	if fmt.Sprint(att) != fmt.Sprint(part) || fmt.Sprint(part[0][0]) != fmt.Sprint(rows) {
		t.Fatalf("attempts counted %v (rows, partitions), done partitions hold %v, the file %d rows", att, part, rows)
	}
}

// TestOverlapKilledThenRerun kills an import inside its overlap, with
// partitions written and not committed, and after its overlap committed
// with the plan (after-plan), in ordinal mode and by key: the kill inside
// leaves no table, no plan and no partition; the rerun imports every row
// once, the partitions the overlap committed skipped.
func TestOverlapKilledThenRerun(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		for _, mode := range []string{"ordinal", "natural"} {
			for _, point := range []string{"inside-overlap:1", "inside-overlap:3", "after-plan:1"} {
				t.Run(mode+"/"+point, func(t *testing.T) {
					t.Parallel()
					dir := t.TempDir()
					tg := testkit.NewTarget(t, name, dir)
					rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), overlapOrders, 5)
					args := []string{"--partition-rows", "10000", "orders.csv"}
					if mode == "natural" {
						args = append([]string{"--key", "order_id"}, args...)
					}
					killed := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=" + point}, append([]string{"import"}, args...)...)
					if killed.Signal != syscall.SIGKILL {
						t.Fatalf("not killed at %s: exit %d\n%s%.4000s", point, killed.Code, killed.Stdout, killed.Stderr)
					}
					done := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("partitions")+` WHERE done = 1`)
					if strings.HasPrefix(point, "inside-overlap") {
						if tg.TableExists(t, "orders") || done != 0 || testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("plans")) != 0 {
							t.Fatalf("killed inside the overlap: table orders exists %v, %d partitions done", tg.TableExists(t, "orders"), done)
						}
					} else if done == 0 {
						t.Fatalf("killed after the plan: no partition done, the overlap committed none")
					}
					res, _ := overlapImport(t, tg, dir, nil, 0, args...)
					if res.Outcome != "resumed" || res.Partitions.Skipped != done || res.Partitions.Committed != res.Partitions.Total-done {
						t.Fatalf("rerun %+v, want resumed with %d partitions skipped", res, done)
					}
					checkExact(t, tg, mode, rows)
				})
			}
		}
	})
}

// TestOverlapKilledBeforeItsClaim kills a first import of a new file into
// a new table at inside-early-overlap: on PostgreSQL the overlap's
// transaction has begun and created the table while the file was hashed,
// beside the state's migrations and the claim, before any row. Nothing
// of it may be left (no table, no plan, no partition done), and the rerun
// imports the file whole, value by value, its overlap kept. SQLite (one
// writer: the claim would wait for that transaction) begins no such
// transaction: the point is never reached, and the import runs through.
func TestOverlapKilledBeforeItsClaim(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		for _, mode := range []string{"ordinal", "natural"} {
			t.Run(mode, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), overlapOrders, 7)
				args := []string{"--partition-rows", "10000", "orders.csv"}
				if mode == "natural" {
					args = append([]string{"--key", "order_id"}, args...)
				}
				killed := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=inside-early-overlap:1"}, append([]string{"import", "--log-level", "debug"}, args...)...)
				if name != testkit.Postgres {
					if killed.Code != 0 {
						t.Fatalf("exit %d\n%s%.4000s", killed.Code, killed.Stdout, killed.Stderr)
					}
					checkExact(t, tg, mode, rows)
					return
				}
				if killed.Signal != syscall.SIGKILL {
					t.Fatalf("not killed at inside-early-overlap: exit %d\n%s%.8000s", killed.Code, killed.Stdout, killed.Stderr)
				}
				if tg.TableExists(t, "orders") {
					t.Fatal("killed before the overlap's first row: table orders exists")
				}
				// The state's tables may not exist yet: its migrations run
				// beside the hash.
				if tg.TableExists(t, tg.Schema+".plans") {
					plans := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("plans"))
					done := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("partitions")+` WHERE done = 1`)
					if plans != 0 || done != 0 {
						t.Fatalf("killed before the overlap's first row: %d plans, %d partitions done", plans, done)
					}
				}
				res, log := overlapImport(t, tg, dir, nil, 0, args...)
				if (res.Outcome != "imported" && res.Outcome != "resumed") || res.Partitions.Skipped != 0 || res.Partitions.Committed != res.Partitions.Total {
					t.Fatalf("rerun %+v, want every partition committed by it", res)
				}
				if !strings.Contains(log, overlapKept) {
					t.Fatalf("the rerun's overlap was not kept:\n%.4000s", log)
				}
				checkExact(t, tg, mode, rows)
			})
		}
	})
}

// TestOverlapMeetsAnotherImport freezes an import inside its overlap,
// which holds the new table's creation (on SQLite the write lock), while
// another file is imported into the same table: that import waits for it
// (or, past a short --busy-timeout, says busy and imports on its rerun),
// and each file lands whole, value by value, once the first goes on.
func TestOverlapMeetsAnotherImport(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		for _, busy := range []string{"30s", "1s"} {
			t.Run("busy-timeout="+busy, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				a := testkit.Orders(t, filepath.Join(dir, "a.csv"), overlapOrders, 1)
				b := testkit.Orders(t, filepath.Join(dir, "b.csv"), 3000, 2)
				args := []string{"import", "--table", "t", "--partition-rows", "10000"}
				first := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=inside-overlap:2:stop"}, append(args, "a.csv")...))
				second := start(t, tg, dir, nil, append(args, "--busy-timeout", busy, "b.csv")...)
				time.Sleep(1500 * time.Millisecond)
				if err := testkit.Continue(first.cmd.Process); err != nil {
					t.Fatal(err)
				}
				if r := testkit.Wait(t, first.cmd); r.Code != 0 {
					t.Fatalf("the frozen import: exit %d\n%s%s", r.Code, first.stdout.String(), first.stderr.String())
				}
				r := testkit.Wait(t, second.cmd)
				switch {
				case r.Code == 4 && busy == "1s":
					// Busy past its timeout: nothing of it was written; its
					// rerun imports it.
					if res := importTo(t, tg, dir, nil, 0, "--table", "t", "b.csv"); res.Outcome != "imported" && res.Outcome != "resumed" {
						t.Fatalf("rerun of the busy import: %+v", res)
					}
				case r.Code != 0:
					t.Fatalf("the import that met the overlap: exit %d\n%s%s", r.Code, second.stdout.String(), second.stderr.String())
				}
				checkTwoFiles(t, tg, "t", a, b)
			})
		}
	})
}

// checkTwoFiles checks that table holds the rows of two orders files
// imported in ordinal mode, each whole and once: the file with the most
// rows is want1's.
func checkTwoFiles(t *testing.T, tg *testkit.Target, table string, want1, want2 [][]string) {
	t.Helper()
	files := testkit.Query(t, tg.DB, `SELECT _idemport_file, count(*) FROM `+table+` GROUP BY _idemport_file ORDER BY count(*) DESC`)
	if len(files) != 2 {
		t.Fatalf("rows of %d files, want 2: %v", len(files), files)
	}
	for i, want := range [][][]string{want1, want2} {
		view := fmt.Sprintf("%s_file%d", table, i)
		if _, err := tg.DB.Exec(fmt.Sprintf(`CREATE VIEW %s AS SELECT * FROM %s WHERE _idemport_file = %v`, view, table, files[i][0])); err != nil {
			t.Fatal(err)
		}
		checkOrders(t, tg, view, want)
	}
}

// lateRefusal is a file whose bad row is its last: its first partitions
// are written while the plan pass runs, before it finds the row. It is
// large (32 MiB), so that the pass, which has read part of it while the
// file was hashed, still runs when the import has claimed the file and
// begins to write. It returns the file and its row count.
func lateRefusal() (string, int) {
	var b strings.Builder
	b.WriteString(refusedPre)
	n := 2
	for b.Len() < 32<<20 {
		n++
		fmt.Fprintf(&b, "%d,%d,name %d\n", n, n%100, n)
	}
	n++
	fmt.Fprintf(&b, "%d,7,\xff\xfe\n", n)
	return b.String(), n
}

// overlapsBefore says which refused cases write partitions while the plan
// pass runs before it refuses the file (where DDL is transactional).
func overlapsBefore(c refusedCase) bool {
	return slices.Contains(c.args, "--partition-rows")
}
