package drivertest

import (
	"database/sql"
	"errors"
	"slices"
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
)

// decimalKeysByValue checks that decimal keys are one key when they are
// equal in value (1.5 and 1.50, 1 and 1.0, 0 and 0.00), whatever text
// each row writes, in every statement that compares keys: the Writer's
// upsert, a staged import's Classify and Merge, and a snapshot's Sweep;
// and that the row written last keeps its own text.
func decimalKeysByValue(t *testing.T, f *Fx) {
	s := Schema(Dec("k"), Str("v"))
	tg := sink.Target{Table: "t", Key: []string{"k"}}
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	table := func(name string) []string {
		got := f.Table(name, "k", "k:decimal", "v", sink.FileColumn, sink.RowColumn)
		slices.Sort(got)
		return got
	}

	first := Batch(t, s, []any{"1.5", "a"}, []any{"1", "b"}, []any{"0", "c"}, []any{"100", "d"})
	WantRows(t, "file 1", f.Write(w, 1, first, Seq(1, 4)), idemtype.Rows{Read: 4, Inserted: 4})
	// File 2 writes the same numbers in other text: the rows are updated,
	// their text now file 2's, also where nothing else changes (1.50, 0.00).
	// 10 is not 100, nor 1.
	second := Batch(t, s, []any{"1.50", "a"}, []any{"1.0", "B"}, []any{"0.00", "c"}, []any{"10", "e"})
	WantRows(t, "file 2", f.Write(w, 2, second, Seq(1, 4)), idemtype.Rows{Read: 4, Inserted: 1, Updated: 3})
	want := []string{"0.00|'c'|2|3", "1.0|'B'|2|2", "1.50|'a'|2|1", "10|'e'|2|4", "100|'d'|1|4"}
	WantTable(t, "after file 2", table("t"), sorted(want...)...)
	WantRows(t, "file 2 again", f.Write(w, 2, second, Seq(1, 4)), idemtype.Rows{Read: 4, Unchanged: 4})
	// Rows of one Write are applied in order: a number written twice is
	// inserted, then updated to the later text.
	twice := Batch(t, s, []any{"2.5", "x"}, []any{"2.50", "x"}, []any{"-0.10", "y"}, []any{"-0.1", "y"})
	WantRows(t, "a number twice in a batch", f.Write(w, 3, twice, Seq(1, 4)), idemtype.Rows{Read: 4, Inserted: 2, Updated: 2})
	want = append(want, "-0.1|'y'|3|4", "2.50|'x'|3|2")
	WantTable(t, "after the batch", table("t"), sorted(want...)...)

	// A table of the key alone: the key's text is still the later row's.
	ks := Schema(Dec("k"))
	ktg := sink.Target{Table: "only", Key: []string{"k"}}
	f.MustEnsure(ktg, ks)
	kw := f.Writer(ktg, ks)
	WantRows(t, "key only", f.Write(kw, 1, Batch(t, ks, []any{"7"}, []any{"8.0"}), Seq(1, 2)), idemtype.Rows{Read: 2, Inserted: 2})
	WantRows(t, "key only, other text", f.Write(kw, 2, Batch(t, ks, []any{"7.00"}, []any{"8.0"}), Seq(1, 2)), idemtype.Rows{Read: 2, Updated: 1, Unchanged: 1})
	got := f.Table("only", "k", "k:decimal")
	slices.Sort(got)
	WantTable(t, "key only", got, "7.00", "8.0")

	// A composite key of a decimal and a string.
	cs := Schema(Dec("a"), Str("b"), Str("v"))
	ctg := sink.Target{Table: "c", Key: []string{"a", "b"}}
	f.MustEnsure(ctg, cs)
	cw := f.Writer(ctg, cs)
	WantRows(t, "composite", f.Write(cw, 1, Batch(t, cs, []any{"1.5", "x", "p"}, []any{"1.5", "y", "q"}), Seq(1, 2)), idemtype.Rows{Read: 2, Inserted: 2})
	WantRows(t, "composite, other text", f.Write(cw, 2, Batch(t, cs, []any{"1.50", "x", "p"}, []any{"1.5", "Y", "q"}), Seq(1, 2)), idemtype.Rows{Read: 2, Inserted: 1, Updated: 1})
	got = f.Table("c", "b", "a:decimal", "b", "v")
	slices.Sort(got)
	WantTable(t, "composite", got, sorted("1.5|'Y'|'q'", "1.5|'y'|'q'", "1.50|'x'|'p'")...)

	// A staged import (--atomic) moves its rows in by value: 1.500 updates
	// the row of 1.50 and takes its text, 10.0 the row of 10 (else
	// unchanged but for its text), 3 is new.
	stage := sink.StagePrefix + "t"
	stg := sink.Target{Table: stage, Key: []string{"k"}}
	f.MustEnsure(stg, s)
	sw := f.Writer(stg, s)
	f.Write(sw, 4, Batch(t, s, []any{"1.500", "a"}, []any{"10.0", "e"}, []any{"100", "d"}, []any{"3", "z"}), Seq(1, 4))
	f.inTx(func(tx *sql.Tx) {
		classes, err := f.Env.Driver.Classify(f.Ctx, tx, tg, stage, []string{"k", "v"}, "0")
		if err != nil {
			t.Fatal(err)
		}
		WantRows(t, "classify", classes[0], idemtype.Rows{Read: 4, Inserted: 1, Updated: 2, Unchanged: 1})
		staged, fresh, written, err := f.Env.Driver.Merge(f.Ctx, tx, tg, stage, []string{"k", "v"})
		if err != nil {
			t.Fatal(err)
		}
		if staged != 4 || fresh != 1 || written != 3 {
			t.Errorf("merge: staged %d, fresh %d, written %d; want 4, 1, 3", staged, fresh, written)
		}
	})
	WantTable(t, "after the merge", table("t"), sorted("-0.1|'y'|3|4", "0.00|'c'|2|3", "1.0|'B'|2|2", "1.500|'a'|4|1",
		"10.0|'e'|4|2", "100|'d'|1|4", "2.50|'x'|3|2", "3|'z'|4|4")...)

	// A snapshot's sweep: the file has 1.5, 0, -0.100 and 2.5 in other
	// text (their rows were not rewritten: say an older --version-col
	// kept them); every other row goes.
	seen := "_idemport_seen_t"
	f.inTx(func(tx *sql.Tx) {
		if err := f.Env.Driver.EnsureSeen(f.Ctx, tx, seen, "t", []string{"k"}, Schema(Dec("k"))); err != nil {
			t.Fatal(err)
		}
	})
	f.Write(f.Writer(sink.Target{Table: seen}, Schema(Dec("k"))), 5,
		Batch(t, Schema(Dec("k")), []any{"1.5"}, []any{"0"}, []any{"-0.100"}, []any{"2.5"}), Seq(1, 4))
	sweep := sink.Sweep{Driver: f.Env.Driver, Table: "t", Key: []string{"k"}, Seen: seen}
	f.inTx(func(tx *sql.Tx) {
		missing, live, err := sweep.Count(f.Ctx, tx)
		if err != nil {
			t.Fatal(err)
		}
		if missing != 4 || live != 8 {
			t.Errorf("sweep count: %d missing of %d live, want 4 of 8", missing, live)
		}
		n, err := sweep.Apply(f.Ctx, tx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n != 4 {
			t.Errorf("sweep deleted %d rows, want 4", n)
		}
	})
	WantTable(t, "after the sweep", table("t"), sorted("-0.1|'y'|3|4", "0.00|'c'|2|3", "1.500|'a'|4|1", "2.50|'x'|3|2")...)
}

// sorted returns rows sorted, as the tables above are read.
func sorted(rows ...string) []string {
	slices.Sort(rows)
	return rows
}

// inTx runs fn inside a transaction on the fixture's connection and
// commits it.
func (f *Fx) inTx(fn func(tx *sql.Tx)) {
	f.T.Helper()
	tx, err := f.Conn.BeginTx(f.Ctx, nil)
	if err != nil {
		f.T.Fatal(err)
	}
	defer tx.Rollback()
	fn(tx)
	if err := tx.Commit(); err != nil {
		f.T.Fatal(err)
	}
}

// keyWidensAsLimitsSay checks that a driver widens a key column exactly
// when its Limits do not say FixedKeys, and otherwise refuses with a
// *sink.ConfigError and leaves the column as it was: the plan trusts
// FixedKeys to refuse, before any effect, a file whose key needs widening.
func keyWidensAsLimitsSay(t *testing.T, f *Fx) {
	s := Schema(I64("id"), Str("v"))
	tg := sink.Target{Table: "t", Key: []string{"id"}}
	f.MustEnsure(tg, s)
	tx, err := f.Conn.BeginTx(f.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = f.Env.Driver.Widen(f.Ctx, tx, "t", "id", idemtype.Decimal)
	if err == nil {
		err = tx.Commit()
	} else {
		tx.Rollback()
	}
	fixed := f.Env.Driver.Limits().FixedKeys
	var cerr *sink.ConfigError
	switch {
	case fixed && !errors.As(err, &cerr):
		t.Fatalf("widen of a key column with Limits.FixedKeys: %v, want a *sink.ConfigError", err)
	case !fixed && err != nil:
		t.Fatalf("widen of a key column without Limits.FixedKeys: %v", err)
	}
	table, err := f.Env.Driver.Describe(f.Ctx, f.Env.DB, "t")
	if err != nil {
		t.Fatal(err)
	}
	want := idemtype.Decimal
	if fixed {
		want = idemtype.Int64
	}
	if got := table.Kind("id"); got != want {
		t.Fatalf("key column id after the widen: %s, want %s (Limits.FixedKeys %v)", got, want, fixed)
	}
}
