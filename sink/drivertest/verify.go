package drivertest

import (
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
)

// verifyReads checks what verify and a dry run's snapshot read of a
// target: CountFile counts the rows a file last wrote, SweepKeys gives
// the keys of the live rows of a scope as text, nothing of another scope.
func verifyReads(t *testing.T, f *Fx) {
	ords := Schema(Str("v"))
	otg := sink.Target{Table: "o"}
	f.MustEnsure(otg, ords)
	ow := f.Writer(otg, ords)
	f.Write(ow, 1, Batch(t, ords, []any{"a"}, []any{"b"}, []any{"c"}), Seq(1, 3))
	f.Write(ow, -2, Batch(t, ords, []any{"d"}, []any{"e"}), Seq(1, 2))
	var counts []string
	for _, fk := range []int64{1, -2, 9} {
		n, err := f.Env.Driver.CountFile(f.Ctx, f.Conn, "o", fk)
		if err != nil {
			t.Fatal(err)
		}
		counts = append(counts, fmt.Sprintf("%d:%d", fk, n))
	}
	if got := strings.Join(counts, " "); got != "1:3 -2:2 9:0" {
		t.Errorf("count by file: %s, want 1:3 -2:2 9:0", got)
	}

	s := Schema(Str("k"), Str("region"))
	tg := sink.Target{Table: "t", Key: []string{"k"}}
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	WantRows(t, "write", f.Write(w, 1, Batch(t, s, []any{"x", "eu"}, []any{"y", "us"}, []any{"z", "eu"}), Seq(1, 3)), idemtype.Rows{Read: 3, Inserted: 3})
	keys := func(sw sink.Sweep) []string {
		t.Helper()
		var out []string
		err := f.Env.Driver.SweepKeys(f.Ctx, f.Conn, sw, func(key []sql.NullString) error {
			out = append(out, fmt.Sprintf("%q/%v", key[0].String, key[0].Valid))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(out)
		return out
	}
	all := keys(sink.Sweep{Driver: f.Env.Driver, Table: "t", Key: []string{"k"}})
	if want := []string{`"x"/true`, `"y"/true`, `"z"/true`}; !slices.Equal(all, want) {
		t.Errorf("keys of the table: %q, want %q", all, want)
	}
	eu := keys(sink.Sweep{Driver: f.Env.Driver, Table: "t", Key: []string{"k"}, Scope: []sink.Term{{Column: "region", Value: "eu"}}})
	if want := []string{`"x"/true`, `"z"/true`}; !slices.Equal(eu, want) {
		t.Errorf("keys of the scope: %q, want %q", eu, want)
	}
}

// compareFindsKeysAndValues checks verify's comparison of a natural-key
// import (Compare): keys are found by value (1.50 finds a stored 1.5),
// a key given twice counts twice, and the values reported are those of
// rows the file last wrote that differ as an upsert tells them apart
// (the text of a decimal, NULL and an empty string), never a row another
// file wrote since.
func compareFindsKeysAndValues(t *testing.T, f *Fx) {
	s := Schema(Dec("k"), Str("v"), Dec("d"))
	tg := sink.Target{Table: "t", Key: []string{"k"}}
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	f.Write(w, 1, Batch(t, s, []any{"1.5", "a", "1.50"}, []any{"2", "b", nil}, []any{"3", "", "7"}), Seq(1, 3))
	f.Write(w, 2, Batch(t, s, []any{"4", "d", "1"}), Seq(1, 1))
	table, err := f.Env.Driver.Describe(f.Ctx, f.Conn, "t")
	if err != nil || table == nil {
		t.Fatalf("describe t: %v, %v", table, err)
	}
	rows := [][]any{{"1.50", "a", "1.5"}, {"2", "b", nil}, {"3", nil, "7"}, {"4", "x", "1"}, {"9", "a", "1"}, {"2", "b", nil}}
	compare := func(cols []string) (int64, []string) {
		t.Helper()
		c := sink.Comparison{Target: tg, Table: table, FileKey: 1, Columns: cols}
		for _, r := range rows {
			row := []any{r[0]}
			for _, col := range cols {
				row = append(row, r[s.FieldIndices(col)[0]])
			}
			c.Rows = append(c.Rows, row)
		}
		var got []string
		present, err := f.Env.Driver.Compare(f.Ctx, f.Conn, c, func(d sink.Differing) error {
			line := d.Key[0].String
			for j, col := range cols {
				if d.Differs[j] {
					line += fmt.Sprintf(" %s:%s→%s", col, text(d.Stored[j]), text(d.File[j]))
				}
			}
			got = append(got, line)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		return present, got
	}
	if present, got := compare(nil); present != 5 || got != nil {
		t.Errorf("keys only: %d present, differing %q; want 5 and none", present, got)
	}
	cols := sink.Rewritten(table, tg, []string{"k", "v", "d"})
	present, got := compare(cols)
	if want := []string{"1.5 k:1.5→1.50 d:1.50→1.5", "3 v:''→NULL"}; present != 5 || !slices.Equal(got, want) {
		t.Errorf("values of %q: %d present, differing %q; want 5 and %q", cols, present, got, want)
	}
}

// text renders a value Compare read: quoted text, or NULL.
func text(v sql.NullString) string {
	if !v.Valid {
		return "NULL"
	}
	if _, err := strconv.ParseFloat(v.String, 64); err == nil {
		return v.String
	}
	return "'" + v.String + "'"
}
