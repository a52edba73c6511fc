package postgres

import (
	"database/sql"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/pgtest"
)

// TestColumnsVersionChangesWithTheColumns: ColumnsVersion stays the same
// while nothing changes the table (rows written, other tables changed),
// and changes with every change of the columns or keys Describe reads,
// committed by another transaction: a column added, widened, renamed,
// made NOT NULL or given a default, a unique index created or dropped,
// the table dropped and made again under its name. A missing table is "".
func TestColumnsVersionChangesWithTheColumns(t *testing.T) {
	db, _ := pgtest.Open(t)
	ctx := t.Context()
	exec := func(f func(tx *sql.Tx) error) {
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
	stmt := func(s string) func(tx *sql.Tx) error {
		return func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, s); return err }
	}
	// version reads the version as a partition transaction does, after
	// HoldColumns.
	version := func() string {
		t.Helper()
		var v string
		exec(func(tx *sql.Tx) (err error) {
			if err = (Driver{}).HoldColumns(ctx, tx, "t"); err != nil {
				return err
			}
			v, err = Driver{}.ColumnsVersion(ctx, tx, "t")
			return err
		})
		return v
	}
	var v string
	exec(func(tx *sql.Tx) (err error) { v, err = Driver{}.ColumnsVersion(ctx, tx, "t"); return err })
	if v != "" {
		t.Fatalf("no table: version %q, want \"\"", v)
	}
	exec(stmt(`CREATE TABLE t (id bigint PRIMARY KEY, n bigint, s text)`))
	last := version()
	if last == "" {
		t.Fatal("version \"\" of a table")
	}
	same := []struct {
		name string
		do   func(tx *sql.Tx) error
	}{
		{"rows written", stmt(`INSERT INTO t VALUES (1, 2, 'x'); UPDATE t SET n = 3`)},
		{"another table changed", stmt(`CREATE TABLE other (a int); ALTER TABLE other ADD COLUMN b int; CREATE UNIQUE INDEX ON other (a)`)},
		{"analyzed", stmt(`ANALYZE t`)},
	}
	for _, c := range same {
		exec(c.do)
		if v := version(); v != last {
			t.Fatalf("%s: version %q, was %q", c.name, v, last)
		}
	}
	changes := []struct {
		name string
		do   func(tx *sql.Tx) error
	}{
		{"column added", func(tx *sql.Tx) error {
			return Driver{}.AddColumn(ctx, tx, "t", arrow.Field{Name: "added", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
		}},
		{"column widened", func(tx *sql.Tx) error { return Driver{}.Widen(ctx, tx, "t", "n", idemtype.Decimal) }},
		{"column widened without a rewrite", stmt(`ALTER TABLE t ALTER COLUMN s TYPE varchar(10)`)},
		{"column renamed", stmt(`ALTER TABLE t RENAME COLUMN added TO renamed`)},
		{"NOT NULL", stmt(`ALTER TABLE t ALTER COLUMN s SET NOT NULL`)},
		{"default", stmt(`ALTER TABLE t ALTER COLUMN renamed SET DEFAULT 7`)},
		{"unique index", stmt(`CREATE UNIQUE INDEX t_s ON t (s)`)},
		{"unique index dropped", stmt(`DROP INDEX t_s`)},
		{"column dropped", stmt(`ALTER TABLE t DROP COLUMN renamed`)},
		{"table made again", stmt(`DROP TABLE t; CREATE TABLE t (id bigint PRIMARY KEY, n numeric, s varchar(10) NOT NULL)`)},
	}
	for _, c := range changes {
		exec(c.do)
		v := version()
		if v == last || v == "" {
			t.Fatalf("%s: version %q, was %q", c.name, v, last)
		}
		last = v
	}
}
