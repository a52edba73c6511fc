package main

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestOverlapIntoAnExistingTableKilledThenRerun imports by key a delta
// over 8 MiB into the table an earlier file made (its keys that file's,
// with other values, and new ones), killed inside the overlap, which
// writes into the existing table before the plan is known, with one
// partition and with three written and not committed, and after the
// overlap committed with the plan (after-plan). Killed inside, the table
// is as it was, row by row (on PostgreSQL each row's writing transaction
// too), with no plan or partition of the delta; every rerun completes the
// delta: the table holds the delta's rows, each key once, the earlier
// file's keys updated, the others inserted.
func TestOverlapIntoAnExistingTableKilledThenRerun(t *testing.T) {
	t.Parallel()
	const stored = 3000
	testkit.Each(t, func(t *testing.T, name string) {
		for _, point := range []string{"inside-overlap:1", "inside-overlap:3", "after-plan:1"} {
			t.Run(point, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				if tg.IsMariaDB() {
					t.Skip("no overlap where DDL commits")
				}
				testkit.Orders(t, filepath.Join(dir, "day1.csv"), stored, 5)
				rows := testkit.Orders(t, filepath.Join(dir, "delta.csv"), overlapOrders, 6)
				if res, _ := overlapImport(t, tg, dir, nil, 0, "--table", "orders", "--key", "order_id", "day1.csv"); res.Outcome != "imported" {
					t.Fatalf("day 1: %+v", res)
				}
				before := tg.Snapshot(t)["orders"]
				args := []string{"--table", "orders", "--key", "order_id", "--partition-rows", "10000", "delta.csv"}
				killed := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=" + point}, append([]string{"import"}, args...)...)
				if killed.Signal != syscall.SIGKILL {
					t.Fatalf("not killed at %s: exit %d\n%s%.4000s", point, killed.Code, killed.Stdout, killed.Stderr)
				}
				done := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("partitions")+` WHERE done = 1`)
				if point != "after-plan:1" {
					if tg.Snapshot(t)["orders"] != before {
						t.Fatal("killed inside the overlap, the table is not as it was")
					}
					if plans := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("plans")); done != 1 || plans != 1 {
						t.Fatalf("killed inside the overlap: %d plans and %d partitions done, want day 1's alone", plans, done)
					}
				} else if done < 2 {
					t.Fatalf("killed after the plan: %d partitions done, the overlap committed none of the delta's", done)
				}
				res, _ := overlapImport(t, tg, dir, nil, 0, args...)
				if res.Outcome != "resumed" {
					t.Fatalf("rerun %+v, want resumed", res)
				}
				checkByKey(t, tg, rows)
				op := testkit.Query(t, tg.DB, `SELECT state, rows_read, rows_inserted, rows_updated + rows_unchanged FROM `+tg.Ledger("operations")+` ORDER BY rows_read`)
				if want := fmt.Sprint([][]any{{"completed", int64(stored), int64(stored), int64(0)}, {"completed", int64(len(rows)), int64(len(rows) - stored), int64(stored)}}); fmt.Sprint(op) != want {
					t.Fatalf("operations (state, read, inserted, updated+unchanged) %v, want %s", op, want)
				}
			})
		}
	})
}
