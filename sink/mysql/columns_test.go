package mysql

import (
	"database/sql"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
)

// TestColumnsVersionChangesWithTheColumns: ColumnsVersion stays the same
// while nothing changes the table's columns (rows written, the
// auto-increment counter moved, another table changed), and changes with
// every change of the columns, checks or keys Describe reads, committed by
// another connection: a column added, widened, renamed, made NOT NULL,
// given a default or a comment, a check, a unique key made or dropped,
// the table dropped and made again under its name. A missing table is "".
func TestColumnsVersionChangesWithTheColumns(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{})
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
	// version reads the version as a partition transaction does, after
	// HoldColumns.
	version := func() string {
		t.Helper()
		var v string
		in(func(tx *sql.Tx) (err error) {
			if err = (Driver{}).HoldColumns(ctx, tx, "t"); err != nil {
				return err
			}
			v, err = Driver{}.ColumnsVersion(ctx, tx, "t")
			return err
		})
		return v
	}
	// stmtIn returns a function that runs s in its transaction.
	stmtIn := func(s string) func(tx *sql.Tx) error {
		return func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, s); return err }
	}
	missing := func(when string) {
		t.Helper()
		var v string
		in(func(tx *sql.Tx) (err error) { v, err = Driver{}.ColumnsVersion(ctx, tx, "t"); return err })
		if v != "" {
			t.Fatalf("%s: version %q, want \"\"", when, v)
		}
	}
	missing("no table")
	exec(t, db, `CREATE TABLE t (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, n BIGINT, s VARCHAR(20))`)
	last := version()
	if last == "" {
		t.Fatal("version \"\" of a table")
	}
	for _, c := range []struct{ name, stmt string }{
		{"rows written", `INSERT INTO t (n, s) VALUES (2, 'x'), (3, 'y')`},
		{"rows updated", `UPDATE t SET n = 4 WHERE n = 2`},
		{"another table changed", `CREATE TABLE other (a INT)`},
		{"another table's column added", `ALTER TABLE other ADD COLUMN b INT`},
		{"analyzed", `ANALYZE TABLE t`},
	} {
		exec(t, db, c.stmt)
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
		{"column widened in place", stmtIn(`ALTER TABLE t MODIFY COLUMN s VARCHAR(30)`)},
		{"column renamed", stmtIn(`ALTER TABLE t RENAME COLUMN added TO renamed`)},
		{"NOT NULL", stmtIn(`ALTER TABLE t MODIFY COLUMN s VARCHAR(30) NOT NULL`)},
		{"default", stmtIn(`ALTER TABLE t ALTER COLUMN renamed SET DEFAULT 7`)},
		{"comment", stmtIn(`ALTER TABLE t MODIFY COLUMN renamed BIGINT DEFAULT 7 COMMENT 'idemport:decimal'`)},
		{"check", stmtIn(`ALTER TABLE t ADD CONSTRAINT positive CHECK (renamed > 0)`)},
		{"unique key", stmtIn(`CREATE UNIQUE INDEX t_s ON t (s)`)},
		{"unique key dropped", stmtIn(`DROP INDEX t_s ON t`)},
		{"column dropped", stmtIn(`ALTER TABLE t DROP COLUMN renamed`)},
		{"table dropped", stmtIn(`DROP TABLE t`)},
		{"table made again", stmtIn(`CREATE TABLE t (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, n MEDIUMTEXT, s VARCHAR(30) NOT NULL)`)},
	}
	for _, c := range changes {
		in(c.do)
		if c.name == "table dropped" {
			missing(c.name)
			continue
		}
		v := version()
		if v == last || v == "" {
			t.Fatalf("%s: version %q, was %q", c.name, v, last)
		}
		last = v
	}
}
