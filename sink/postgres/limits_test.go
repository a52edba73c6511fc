package postgres

import (
	"errors"
	"testing"

	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// TestDescribeLimits reads what columns hold beyond their kind.
func TestDescribeLimits(t *testing.T) {
	f := drivertest.Open(t, open(t))
	f.Exec(`CREATE TABLE t (a smallint, b integer, c bigint, d varchar(20), e char(3), f text, g numeric(38,9), h numeric, i numeric(3,-2), j jsonb, k json NOT NULL)`)
	tbl, err := (Driver{}).Describe(f.Ctx, f.Conn, "t")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]sink.Column{
		"a": {IntBits: 16}, "b": {IntBits: 32}, "c": {}, "d": {MaxChars: 20}, "e": {MaxChars: 3}, "f": {},
		"g": {Numeric: true, Precision: 38, Scale: 9}, "h": {Numeric: true}, "i": {Numeric: true, Precision: 3, Scale: -2},
		"j": {JSONB: true}, "k": {NotNull: true},
	}
	for _, c := range tbl.Columns {
		w := want[c.Name]
		got := sink.Column{IntBits: c.IntBits, MaxChars: c.MaxChars, Numeric: c.Numeric, Precision: c.Precision, Scale: c.Scale, JSONB: c.JSONB, NotNull: c.NotNull}
		if got != w {
			t.Errorf("column %s: %+v, want %+v", c.Name, got, w)
		}
	}
}

// TestWriteRowErrors: a write the server refuses for a row's values is a
// *sink.RowError naming the code (and the column when the server does), on
// the binary COPY path and on pgx's, where a value pgx cannot encode for
// the column ends the COPY.
func TestWriteRowErrors(t *testing.T) {
	f := drivertest.Open(t, open(t))
	tg := sink.Target{Table: "t"}
	f.Exec(`CREATE TABLE t (_idemport_file bigint NOT NULL, _idemport_row bigint NOT NULL, id bigint, e text UNIQUE,
		c bigint CHECK (c > 0), s smallint, PRIMARY KEY (_idemport_file, _idemport_row))`)
	schema := drivertest.Schema(drivertest.I64("id"), drivertest.Str("e"), drivertest.I64("c"), drivertest.I64("s"))
	w := f.Writer(tg, schema)
	defer w.Close()
	for _, c := range []struct {
		name string
		row  []any
		code string
	}{
		{"unique", []any{2, "a", 1, 1}, sink.CodeConstraint},
		{"check", []any{3, "b", -1, 1}, sink.CodeConstraint},
		{"smallint", []any{4, "c", 1, 40000}, sink.CodeRefused},
	} {
		t.Run(c.name, func(t *testing.T) {
			f.Write(w, 1, drivertest.Batch(t, schema, []any{1, "a", 1, 1}), []int64{1})
			tx, err := f.Conn.BeginTx(f.Ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			_, err = w.Write(f.Ctx, tx, 1, drivertest.Batch(t, schema, c.row), []int64{2})
			var re *sink.RowError
			if !errors.As(err, &re) || re.Code != c.code || re.Reason == "" {
				t.Fatalf("write: %v (%#v), want a row error %s", err, re, c.code)
			}
		})
	}
}
