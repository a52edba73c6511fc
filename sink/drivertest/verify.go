package drivertest

import (
	"database/sql"
	"fmt"
	"slices"
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
