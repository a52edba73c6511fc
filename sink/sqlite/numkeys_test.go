//go:build cgo

package sqlite

import (
	"slices"
	"strings"
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// TestDecimalKeyIndex: a decimal key is a unique index on the number its
// text spells (numberExpr), which Describe reads back as the key. A table
// an older version made, keyed by the text, is still written (as it was,
// by text) until Ensure gives it the index by number; rows it holds whose
// keys are equal in value keep Ensure from doing so, and its error names
// them. A widen of the key column to text makes the index compare text;
// one of an integer key to decimal gets the index by number from Ensure.
func TestDecimalKeyIndex(t *testing.T) {
	f := drivertest.Open(t, open(t))
	s := drivertest.Schema(drivertest.Dec("k"), drivertest.Str("v"))
	tg := sink.Target{Table: "t", Key: []string{"k"}}
	f.MustEnsure(tg, s)
	exprs := strs(t, f, `SELECT l.name FROM pragma_index_list('t') l, pragma_index_xinfo(l.name) x WHERE l."unique" = 1 AND x.key = 1 AND x.cid = -2`)
	if !slices.Equal(exprs, []string{"t_idemport_key"}) {
		t.Fatalf("unique indexes on an expression: %v, want t_idemport_key", exprs)
	}
	tbl, indexes, err := describe(f.Ctx, f.Conn, "t")
	if err != nil {
		t.Fatal(err)
	}
	if !tbl.HasKey([]string{"k"}) || !numberKey(tbl, indexes, []string{"k"}) {
		t.Fatalf("keys %v, indexes %+v: want k, by number", tbl.Keys, indexes)
	}
	// A file whose key column is text would find no such key.
	if numberKey(tbl, indexes, []string{"v"}) || tbl.HasKey([]string{"v"}) {
		t.Fatalf("keys %v: v is none", tbl.Keys)
	}

	// A table an older version made: its key is a unique index on the
	// text.
	f.Exec(`CREATE TABLE old (k DECIMAL TEXT NOT NULL, v TEXT, _idemport_file INTEGER, _idemport_row INTEGER, UNIQUE (k))`)
	f.Exec(`INSERT INTO old (k, v) VALUES ('1.5', 'a'), ('2', 'b')`)
	otg := sink.Target{Table: "old", Key: []string{"k"}}
	// An import planned by the older version, resumed by this one, writes
	// the table as it is: by text.
	w := f.Writer(otg, s)
	drivertest.WantRows(t, "before Ensure", f.Write(w, 1, drivertest.Batch(t, s, []any{"3", "c"}, []any{"2", "B"}), drivertest.Seq(1, 2)),
		idemtype.Rows{Read: 2, Inserted: 1, Updated: 1})
	f.MustEnsure(otg, s)
	tbl, indexes, err = describe(f.Ctx, f.Conn, "old")
	if err != nil {
		t.Fatal(err)
	}
	if !numberKey(tbl, indexes, []string{"k"}) {
		t.Fatalf("after Ensure, old has no key by number: %+v", indexes)
	}
	w = f.Writer(otg, s)
	drivertest.WantRows(t, "after Ensure", f.Write(w, 2, drivertest.Batch(t, s, []any{"1.50", "a"}, []any{"3.0", "c"}), drivertest.Seq(1, 2)),
		idemtype.Rows{Read: 2, Updated: 2})
	got := f.Table("old", "k", "k:decimal", "v")
	slices.Sort(got)
	drivertest.WantTable(t, "old", got, "1.50|'a'", "2|'B'", "3.0|'c'")

	// An older table holding keys equal in value.
	f.Exec(`CREATE TABLE dup (k DECIMAL TEXT NOT NULL, v TEXT, _idemport_file INTEGER, _idemport_row INTEGER, UNIQUE (k))`)
	f.Exec(`INSERT INTO dup (k, v) VALUES ('1.5', 'a'), ('1.50', 'b'), ('7', 'c'), ('2', 'd'), ('2.000', 'e')`)
	err = f.Ensure(sink.Target{Table: "dup", Key: []string{"k"}}, s)
	if err == nil || !strings.Contains(err.Error(), "(1.5) and (1.50)") || !strings.Contains(err.Error(), "(2) and (2.000)") ||
		!strings.Contains(err.Error(), "delete all but one row of each, then rerun") {
		t.Fatalf("Ensure of a table with keys equal in value: %v", err)
	}
	if n := f.Int(`SELECT count(*) FROM pragma_index_list('dup')`); n != 1 {
		t.Fatalf("dup has %d indexes after the refused Ensure, want its own 1", n)
	}

	// Widened to text, the key compares as text, and every index of the
	// table, the user's own included, is there again after the rebuild.
	f.Exec(`CREATE INDEX t_by_v ON t (v)`)
	before := f.Int(`SELECT count(*) FROM pragma_index_list('t')`)
	tx, err := f.Conn.BeginTx(f.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := (Driver{}).Widen(f.Ctx, tx, "t", "k", idemtype.String); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := f.Int(`SELECT count(*) FROM pragma_index_list('t')`); n != before || before < 2 {
		t.Fatalf("t has %d indexes after widening, had %d", n, before)
	}
	ts := drivertest.Schema(drivertest.Str("k"), drivertest.Str("v"))
	f.MustEnsure(tg, ts)
	w = f.Writer(tg, ts)
	drivertest.WantRows(t, "text keys", f.Write(w, 3, drivertest.Batch(t, ts, []any{"1.5", "x"}, []any{"1.50", "y"}, []any{"abc.0", "z"}, []any{"abc", "z"}), drivertest.Seq(1, 4)),
		idemtype.Rows{Read: 4, Inserted: 4})

	// An integer key (the rowid) widened to decimal.
	is := drivertest.Schema(drivertest.I64("k"), drivertest.Str("v"))
	itg := sink.Target{Table: "i", Key: []string{"k"}}
	f.MustEnsure(itg, is)
	f.Write(f.Writer(itg, is), 1, drivertest.Batch(t, is, []any{1, "a"}, []any{2, "b"}), drivertest.Seq(1, 2))
	tx, err = f.Conn.BeginTx(f.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := (Driver{}).Widen(f.Ctx, tx, "i", "k", idemtype.Decimal); err != nil {
		t.Fatal(err)
	}
	if err := (Driver{}).Ensure(f.Ctx, tx, itg, s); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	w = f.Writer(itg, s)
	drivertest.WantRows(t, "widened key", f.Write(w, 2, drivertest.Batch(t, s, []any{"1.0", "c"}, []any{"2.5", "d"}), drivertest.Seq(1, 2)),
		idemtype.Rows{Read: 2, Inserted: 1, Updated: 1})
	got = f.Table("i", "k", "k:decimal", "v")
	slices.Sort(got)
	drivertest.WantTable(t, "i", got, "1.0|'c'", "2.5|'d'", "2|'b'")
}
