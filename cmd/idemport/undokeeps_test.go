package main

// An undo drops a table only when the operation it undoes created it: on
// MariaDB, where DDL commits alone, the ledger records the tables an
// operation created, and the operations that follow it under the same
// table and file ID (a replacement, a new version superseding a refused
// one) did not create the table.

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// keptTable asserts that table is there after the undo run printed out,
// with the columns cols and the index the test added, and that the undo
// did not say it dropped it.
func keptTable(t *testing.T, tg *testkit.Target, run testkit.Run, table, cols, index string) {
	t.Helper()
	if run.Code != 0 {
		t.Fatalf("undo: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
	}
	if !tg.TableExists(t, table) || strings.Contains(run.Stdout, "dropped: "+table) {
		t.Fatalf("the undo dropped %s (exists: %v)\n%s", table, tg.TableExists(t, table), run.Stdout)
	}
	if got := tableColumns(t, tg, table, false); got != cols {
		t.Fatalf("the undo changed the columns of %s: %s, were %s", table, got, cols)
	}
	if !tg.IndexExists(t, index) {
		t.Fatalf("the undo lost the index %s the user added to %s", index, table)
	}
}

// TestUndoOfAReplacementKeepsTheTable imports a file whose first version
// creates its table, adds an index to the table as a user would, replaces
// the file with a corrected version (--replace; without a key and by key,
// with --atomic or not) and undoes the replacement, on each database. The
// replacement did not create the table, so the undo keeps it, whatever the
// database (before, MariaDB, where the ledger records the tables an
// operation created by table and file ID, dropped it, index and all): the
// reference's "the replaced version is not brought back": without a key
// the table is left without rows, with its columns and the index; by key
// (undo --forget) the table is, value by value (on PostgreSQL row version
// by row version), what it was before the undo. Without a key, the first
// version imported again holds exactly its rows, and undoing that import,
// which did not create the table either, keeps it again.
func TestUndoOfAReplacementKeepsTheTable(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, m := range replaceModes[:3] {
			t.Run(m.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				v1, v2 := m.versions(t, dir)
				if r := importTo(t, tg, dir, nil, 0, m.args()...); r.Outcome != "imported" {
					t.Fatalf("first version: %s %s", r.Outcome, r.Error)
				}
				testkit.Query(t, tg.DB, `CREATE INDEX orders_by_customer ON orders (customer_id)`)
				testkit.WriteOrders(t, filepath.Join(dir, "orders.csv"), v2)
				if r := importTo(t, tg, dir, nil, 0, m.args("--replace")...); r.Outcome != "imported" {
					t.Fatalf("the replacement: %s %s", r.Outcome, r.Error)
				}
				m.check(t, tg, v2)
				cols := tableColumns(t, tg, "orders", false)
				before := tg.Snapshot(t)["orders"]

				undo := []string{"undo", "--table", "orders", "orders.csv"}
				if m.key {
					undo = append(undo, "--forget")
				}
				keptTable(t, tg, tg.Exec(t, dir, nil, undo...), "orders", cols, "orders_by_customer")
				if m.key {
					if after := tg.Snapshot(t)["orders"]; after != before {
						t.Fatalf("undo --forget changed the table:\n before %s\n after  %s", before, after)
					}
					m.check(t, tg, v2)
					return
				}
				if n := rowsLeft(t, tg, "orders"); n != 0 {
					t.Fatalf("orders holds %d rows after the undo, want none", n)
				}

				testkit.WriteOrders(t, filepath.Join(dir, "orders.csv"), v1)
				if r := importTo(t, tg, dir, nil, 0, m.args()...); r.Outcome != "imported" {
					t.Fatalf("the first version again: %s %s", r.Outcome, r.Error)
				}
				m.check(t, tg, v1)
				keptTable(t, tg, tg.Exec(t, dir, nil, undo...), "orders", cols, "orders_by_customer")
				if n := rowsLeft(t, tg, "orders"); n != 0 {
					t.Fatalf("orders holds %d rows after the second undo, want none", n)
				}
			})
		}
	})
}

// TestUndoAfterALateRefusalKeepsTheTable: an import that creates its
// table, killed after its plan, whose table then loses a column, is
// refused by its rerun (the table changed after the plan); the rerun with
// --evolve add that the refusal suggests is a new operation, superseding
// the refused one, which imports the file into the table as it is. Its
// undo keeps the table, on each database, with its columns and an index
// the user added: that operation did not create it (before, on MariaDB,
// it inherited the refused operation's record of the table and dropped
// it).
func TestUndoAfterALateRefusalKeepsTheTable(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		writeFile(t, dir, "f.csv", "id,v\n1,a\n2,b\n3,c\n")
		args := []string{"--table", "n", "f.csv"}
		killedAt(t, tg, dir, "after-plan", args...)
		testkit.Query(t, tg.DB, `ALTER TABLE n DROP COLUMN v`)
		testkit.Query(t, tg.DB, `CREATE INDEX n_by_id ON n (id)`)
		if r := importTo(t, tg, dir, nil, exitRefused, args...); r.Outcome != "refused" {
			t.Fatalf("the rerun after the table lost a column: %+v", r)
		}
		r := importTo(t, tg, dir, nil, 0, append([]string{"--evolve", "add"}, args...)...)
		if r.Outcome != "imported" || r.Rows.Inserted != 3 {
			t.Fatalf("the rerun with --evolve add: %+v", r)
		}
		if got := sortedRows(t, tg, `SELECT `+tg.Text("id")+`, v FROM n`); len(got) != 3 || got[0][1] != "a" || got[2][1] != "c" {
			t.Fatalf("table n: %v", got)
		}
		cols := tableColumns(t, tg, "n", false)
		keptTable(t, tg, tg.Exec(t, dir, nil, "undo", "--table", "n", "f.csv"), "n", cols, "n_by_id")
		if n := rowsLeft(t, tg, "n"); n != 0 {
			t.Fatalf("n holds %d rows after the undo, want none", n)
		}
	})
}
