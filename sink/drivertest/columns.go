package drivertest

import (
	"context"
	"database/sql"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
)

// A ColumnsVersioner is a driver that tells, inside a transaction that
// holds a table's columns (HoldColumns), whether they may have changed
// since it last looked: the pipeline describes the table again only when
// the version differs.
type ColumnsVersioner interface {
	sink.Driver
	ColumnsVersion(ctx context.Context, tx *sql.Tx, table string) (version string, err error)
}

// A Step is a change a test commits to table t, by a transaction of its
// own, between two readings of its version.
type Step struct {
	Name string
	Do   func(tx *sql.Tx) error
}

// Stmt is a Step that runs the statement s.
func Stmt(name, s string) Step {
	return Step{name, func(tx *sql.Tx) error { _, err := tx.Exec(s); return err }}
}

// ColumnsVersion checks d's ColumnsVersion on db, where create makes the
// table t of columns id (the key), n (an integer) and s (text): a missing
// table's version is ""; the version of t, read after HoldColumns as a
// partition transaction reads it, stays the same through every step of
// same (rows written, another table changed), and differs from the one
// before after each step of changes, which follow the driver's own
// AddColumn of "added" and Widen of n to a decimal (a column renamed, made
// NOT NULL, given a default, a unique key, the table made again…). A
// step named "table dropped" must leave the version "".
func ColumnsVersion(t *testing.T, db *sql.DB, d ColumnsVersioner, create string, same, changes []Step) {
	t.Helper()
	ctx := t.Context()
	in := func(f func(tx *sql.Tx) error) {
		t.Helper()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if err := f(tx); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	version := func(hold bool) string {
		t.Helper()
		var v string
		in(func(tx *sql.Tx) (err error) {
			if hold {
				if err = d.HoldColumns(ctx, tx, "t"); err != nil {
					return err
				}
			}
			v, err = d.ColumnsVersion(ctx, tx, "t")
			return err
		})
		return v
	}
	if v := version(false); v != "" {
		t.Fatalf("no table: version %q, want \"\"", v)
	}
	in(Stmt("create", create).Do)
	last := version(true)
	if last == "" {
		t.Fatal("version \"\" of a table")
	}
	for _, c := range same {
		in(c.Do)
		if v := version(true); v != last {
			t.Fatalf("%s: version %q, was %q", c.Name, v, last)
		}
	}
	own := []Step{
		{"column added", func(tx *sql.Tx) error {
			return d.AddColumn(ctx, tx, "t", arrow.Field{Name: "added", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
		}},
		{"column widened", func(tx *sql.Tx) error { return d.Widen(ctx, tx, "t", "n", idemtype.Decimal) }},
	}
	for _, c := range append(own, changes...) {
		in(c.Do)
		if c.Name == "table dropped" {
			if v := version(false); v != "" {
				t.Fatalf("%s: version %q, want \"\"", c.Name, v)
			}
			continue
		}
		v := version(true)
		if v == last || v == "" {
			t.Fatalf("%s: version %q, was %q", c.Name, v, last)
		}
		last = v
	}
}
