package drivertest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
)

// ---- ordinal mode --------------------------------------------------------

func ordinalTableKeyedByLineage(t *testing.T, f *Fx) {
	f.MustEnsure(sink.Target{Table: "people"}, people)
	desc, err := f.Env.Driver.Describe(f.Ctx, f.Conn, "people")
	if err != nil || desc == nil {
		t.Fatalf("describe: %v, %v", desc, err)
	}
	if len(desc.Keys) == 0 || !slices.Equal(desc.Keys[0], []string{sink.FileColumn, sink.RowColumn}) {
		t.Errorf("keys %v, want the primary key (%s, %s) first", desc.Keys, sink.FileColumn, sink.RowColumn)
	}
	WantTable(t, "columns", f.Columns("people"), sink.FileColumn, sink.RowColumn, "id", "name", "score")
	for _, c := range desc.Columns {
		wantNotNull := c.Name == sink.FileColumn || c.Name == sink.RowColumn
		if c.NotNull != wantNotNull {
			t.Errorf("column %s: NOT NULL %v", c.Name, c.NotNull)
		}
	}
	// Ensure on the table it created is accepted as is.
	f.MustEnsure(sink.Target{Table: "people"}, people)
	WantTable(t, "columns after a second Ensure", f.Columns("people"), sink.FileColumn, sink.RowColumn, "id", "name", "score")
}

func ordinalInsertUnchangedUpdated(t *testing.T, f *Fx) {
	tg := sink.Target{Table: "people"}
	f.MustEnsure(tg, people)
	w := f.Writer(tg, people)
	cols := []string{sink.FileColumn, sink.RowColumn, "id", "name", "score"}

	first := Batch(t, people, []any{1, "ann", 1.5}, []any{2, "bob", nil}, []any{3, nil, 3.0})
	WantRows(t, "first write", f.Write(w, 7, first, Seq(1, 3)), idemtype.Rows{Read: 3, Inserted: 3})
	want := []string{"7|1|1|'ann'|1.5", "7|2|2|'bob'|NULL", "7|3|3|NULL|3.0"}
	WantTable(t, "after first write", f.Table("people", lineageOrder, cols...), want...)

	// The same batch again changes nothing, not even by rewriting rows.
	updates := f.Env.CountUpdates(t, f.Conn, "people")
	WantRows(t, "same batch again", f.Write(w, 7, first, Seq(1, 3)), idemtype.Rows{Read: 3, Unchanged: 3})
	if n := updates(); n != 0 {
		t.Errorf("rewriting the same batch updated %d rows", n)
	}
	WantTable(t, "after same batch", f.Table("people", lineageOrder, cols...), want...)

	// Row 2 gains a score, row 3 loses its score: exactly those two update,
	// including changes to and from NULL.
	changed := Batch(t, people, []any{1, "ann", 1.5}, []any{2, "bob", 2.0}, []any{3, nil, nil})
	WantRows(t, "changed batch", f.Write(w, 7, changed, Seq(1, 3)), idemtype.Rows{Read: 3, Updated: 2, Unchanged: 1})
	if n := updates(); n != 2 {
		t.Errorf("changed batch updated %d rows, want 2", n)
	}
	WantTable(t, "after changed batch", f.Table("people", lineageOrder, cols...),
		"7|1|1|'ann'|1.5", "7|2|2|'bob'|2.0", "7|3|3|NULL|NULL")
}

func ordinalGaps(t *testing.T, f *Fx) {
	tg := sink.Target{Table: "people"}
	f.MustEnsure(tg, people)
	w := f.Writer(tg, people)
	cols := []string{sink.RowColumn, "id", "name"}

	rows := [][]any{{1, "a", nil}, {2, "b", nil}, {4, "d", nil}, {5, "e", nil}}
	WantRows(t, "gapped insert", f.Write(w, 9, Batch(t, people, rows...), Ords(1, 2, 4, 5)), idemtype.Rows{Read: 4, Inserted: 4})
	WantRows(t, "gapped again", f.Write(w, 9, Batch(t, people, rows...), Ords(1, 2, 4, 5)), idemtype.Rows{Read: 4, Unchanged: 4})

	rows[2] = []any{4, "D", nil}
	WantRows(t, "gapped, one changed", f.Write(w, 9, Batch(t, people, rows...), Ords(1, 2, 4, 5)), idemtype.Rows{Read: 4, Updated: 1, Unchanged: 3})

	// A contiguous run over the gap: 3 is new, 1, 2, 4 and 5 exist.
	all := Batch(t, people, []any{1, "a", nil}, []any{2, "b", nil}, []any{3, "c", nil}, []any{4, "D", nil}, []any{5, "E", nil})
	WantRows(t, "contiguous over the gap", f.Write(w, 9, all, Seq(1, 5)), idemtype.Rows{Read: 5, Inserted: 1, Updated: 1, Unchanged: 3})

	// A gapped batch whose ordinals span rows it does not carry.
	mixed := Batch(t, people, []any{2, "b", nil}, []any{5, "E", nil}, []any{8, "h", nil})
	WantRows(t, "gapped, mixed", f.Write(w, 9, mixed, Ords(2, 5, 8)), idemtype.Rows{Read: 3, Inserted: 1, Unchanged: 2})

	WantTable(t, "after gaps", f.Table("people", lineageOrder, cols...),
		"1|1|'a'", "2|2|'b'", "3|3|'c'", "4|4|'D'", "5|5|'E'", "8|8|'h'")
}

func ordinalFileKeysDoNotCollide(t *testing.T, f *Fx) {
	tg := sink.Target{Table: "people"}
	f.MustEnsure(tg, people)
	w := f.Writer(tg, people)

	a := Batch(t, people, []any{1, "a1", nil}, []any{2, "a2", nil})
	b := Batch(t, people, []any{1, "b1", nil}, []any{2, "b2", nil})
	const big = 1<<62 + 12345 // file keys are 64-bit hashes
	WantRows(t, "file A", f.Write(w, big, a, Seq(1, 2)), idemtype.Rows{Read: 2, Inserted: 2})
	WantRows(t, "file B, same ordinals", f.Write(w, -big, b, Seq(1, 2)), idemtype.Rows{Read: 2, Inserted: 2})
	WantRows(t, "file A again", f.Write(w, big, a, Seq(1, 2)), idemtype.Rows{Read: 2, Unchanged: 2})
	WantTable(t, "two files", f.Table("people", lineageOrder, sink.FileColumn, sink.RowColumn, "name"),
		fmt.Sprintf("%d|1|'b1'", -big), fmt.Sprintf("%d|2|'b2'", -big), fmt.Sprintf("%d|1|'a1'", big), fmt.Sprintf("%d|2|'a2'", big))
}

func ordinalLargeBatch(t *testing.T, f *Fx) {
	tg := sink.Target{Table: "people"}
	f.MustEnsure(tg, people)
	w := f.Writer(tg, people)

	const n = 2537
	build := func(changeEvery int) arrow.RecordBatch {
		var rows [][]any
		for i := 1; i <= n; i++ {
			name := fmt.Sprintf("p%d", i)
			if changeEvery > 0 && i%changeEvery == 0 {
				name += "!"
			}
			rows = append(rows, []any{i, name, float64(i) / 4})
		}
		return Batch(t, people, rows...)
	}
	WantRows(t, "insert", f.Write(w, 5, build(0), Seq(1, n)), idemtype.Rows{Read: n, Inserted: n})
	WantRows(t, "again", f.Write(w, 5, build(0), Seq(1, n)), idemtype.Rows{Read: n, Unchanged: n})
	WantRows(t, "every 7th changed", f.Write(w, 5, build(7), Seq(1, n)), idemtype.Rows{Read: n, Updated: n / 7, Unchanged: n - n/7})
	if got := f.Int(`SELECT count(*) FROM people WHERE name LIKE '%!'`); got != n/7 {
		t.Errorf("%d rows changed, want %d", got, n/7)
	}
	if got := f.Int(`SELECT count(*) FROM people`); got != n {
		t.Errorf("%d rows stored, want %d", got, n)
	}
}

// severalWritesInOneTransaction writes batches of one partition, as the
// pipeline does, in one transaction: later batches see earlier ones.
func severalWritesInOneTransaction(t *testing.T, f *Fx) {
	for _, tg := range []sink.Target{{Table: "ord"}, {Table: "nat", Key: []string{"id"}}} {
		f.MustEnsure(tg, named)
		w := f.Writer(tg, named)
		tx, err := f.Conn.BeginTx(f.Ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var total idemtype.Rows
		total.Add(f.WriteIn(tx, w, 3, Batch(t, named, []any{1, "a"}, []any{2, "b"}), Seq(1, 2)))
		total.Add(f.WriteIn(tx, w, 3, Batch(t, named, []any{3, "c"}, []any{4, "d"}), Seq(3, 4)))
		second := f.WriteIn(tx, w, 3, Batch(t, named, []any{1, "a"}, []any{2, "B"}), Seq(1, 2))
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		WantRows(t, tg.Table+" batches", total, idemtype.Rows{Read: 4, Inserted: 4})
		// Rows inserted earlier in the same transaction count as existing.
		WantRows(t, tg.Table+" batch over earlier batch", second, idemtype.Rows{Read: 2, Updated: 1, Unchanged: 1})
		WantTable(t, tg.Table, f.Table(tg.Table, "id", lineageCols("id", "name")...),
			"1|'a'|3|1", "2|'B'|3|2", "3|'c'|3|3", "4|'d'|3|4")
	}
}

// rolledBackWriteLeavesNothing rolls back the transaction of a Write: its
// rows are gone, and the Writer goes on working on the same connection.
func rolledBackWriteLeavesNothing(t *testing.T, f *Fx) {
	for _, tg := range []sink.Target{{Table: "ord"}, {Table: "nat", Key: []string{"id"}}} {
		f.MustEnsure(tg, named)
		w := f.Writer(tg, named)
		rec := Batch(t, named, []any{1, "a"}, []any{2, "b"}, []any{1, "A"})
		tx, err := f.Conn.BeginTx(f.Ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteIn(tx, w, 3, rec, Seq(1, 3))
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if n := f.Int(`SELECT count(*) FROM ` + tg.Table); n != 0 {
			t.Errorf("%s: %d rows after a rollback", tg.Table, n)
		}
		want := idemtype.Rows{Read: 3, Inserted: 3}
		if !tg.Ordinal() {
			want = idemtype.Rows{Read: 3, Inserted: 2, Updated: 1}
		}
		WantRows(t, tg.Table+" after a rollback", f.Write(w, 3, rec, Seq(1, 3)), want)
		again := idemtype.Rows{Read: 3, Unchanged: 3}
		if !tg.Ordinal() {
			again = idemtype.Rows{Read: 3, Unchanged: 2, Stale: 1} // row 1 is older than row 3
		}
		WantRows(t, tg.Table+" again", f.Write(w, 3, rec, Seq(1, 3)), again)
	}
}

// writeOutsideItsTransactionWritesNothing: a Write into a transaction that
// is over, or under a cancelled context, fails and writes nothing. The
// pipeline meets both when a run is cancelled (Ctrl-C, a failed worker):
// database/sql then rolls the transaction back from a goroutine of its
// own, and a writer stepping statements on the raw connection outside the
// transaction would commit each row by itself.
func writeOutsideItsTransactionWritesNothing(t *testing.T, f *Fx) {
	for _, tg := range []sink.Target{{Table: "ord"}, {Table: "nat", Key: []string{"id"}}} {
		f.MustEnsure(tg, named)
		w := f.Writer(tg, named)
		rec := Batch(t, named, []any{1, "a"}, []any{2, "b"})
		tx, err := f.Conn.BeginTx(f.Ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(f.Ctx, tx, 3, rec, Seq(1, 2)); err == nil {
			t.Errorf("%s: a Write into a rolled-back transaction succeeded", tg.Table)
		}
		if n := f.Int(`SELECT count(*) FROM ` + tg.Table); n != 0 {
			t.Errorf("%s: %d rows written outside the rolled-back transaction", tg.Table, n)
		}

		ctx, cancel := context.WithCancel(f.Ctx)
		cancel()
		if tx, err = f.Conn.BeginTx(f.Ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(ctx, tx, 3, rec, Seq(1, 2)); err == nil {
			t.Errorf("%s: a Write under a cancelled context succeeded", tg.Table)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if n := f.Int(`SELECT count(*) FROM ` + tg.Table); n != 0 {
			t.Errorf("%s: %d rows written under a cancelled context", tg.Table, n)
		}
		WantRows(t, tg.Table+" afterwards", f.Write(w, 3, rec, Seq(1, 2)), idemtype.Rows{Read: 2, Inserted: 2})
	}
}

// ---- natural-key mode ----------------------------------------------------

func naturalKeyKeepsLineageOfUnchangedRows(t *testing.T, f *Fx) {
	tg := sink.Target{Table: "t", Key: []string{"id"}}
	f.MustEnsure(tg, named)
	w := f.Writer(tg, named)
	updates := f.Env.CountUpdates(t, f.Conn, "t")
	cols := lineageCols("id", "name")

	a := Batch(t, named, []any{1, "one"}, []any{2, "two"}, []any{3, "three"})
	WantRows(t, "file A", f.Write(w, 100, a, Seq(1, 3)), idemtype.Rows{Read: 3, Inserted: 3})
	WantTable(t, "after file A", f.Table("t", "id", cols...),
		"1|'one'|100|1", "2|'two'|100|2", "3|'three'|100|3")

	// File B: id 1 unchanged, id 2 changed, id 4 new.
	b := Batch(t, named, []any{1, "one"}, []any{2, "TWO"}, []any{4, "four"})
	WantRows(t, "file B", f.Write(w, 200, b, Seq(1, 3)), idemtype.Rows{Read: 3, Inserted: 1, Updated: 1, Unchanged: 1})
	if n := updates(); n != 1 {
		t.Errorf("file B updated %d rows, want 1", n)
	}
	WantTable(t, "after file B", f.Table("t", "id", cols...),
		"1|'one'|100|1", "2|'TWO'|200|2", "3|'three'|100|3", "4|'four'|200|3")

	// File B again: nothing changes.
	WantRows(t, "file B again", f.Write(w, 200, b, Seq(1, 3)), idemtype.Rows{Read: 3, Unchanged: 3})
	if n := updates(); n != 1 {
		t.Errorf("file B again updated rows: %d in all, want 1", n)
	}
}

func naturalKeyDuplicatesInOneBatch(t *testing.T, f *Fx) {
	tg := sink.Target{Table: "t", Key: []string{"id"}}
	f.MustEnsure(tg, named)
	w := f.Writer(tg, named)
	cols := lineageCols("id", "name")

	f.Write(w, 100, Batch(t, named, []any{1, "one"}), Ords(1))
	rec := Batch(t, named,
		[]any{5, "a"},   // insert
		[]any{5, "b"},   // update of the row just inserted
		[]any{5, "b"},   // unchanged: keeps ordinal 2's lineage
		[]any{1, "uno"}, // update of a row of another file
		[]any{1, "uno"}, // unchanged
		[]any{6, "x"},   // insert
	)
	WantRows(t, "duplicates", f.Write(w, 300, rec, Seq(1, 6)), idemtype.Rows{Read: 6, Inserted: 2, Updated: 2, Unchanged: 2})
	WantTable(t, "after duplicates", f.Table("t", "id", cols...),
		"1|'uno'|300|4", "5|'b'|300|2", "6|'x'|300|6")
}

// naturalKeyManyDuplicates repeats keys many times in one batch, with
// versions that go up and down: the outcome and the counts are those of
// applying the rows one by one.
func naturalKeyManyDuplicates(t *testing.T, f *Fx) {
	tg := sink.Target{Table: "t", Key: []string{"id"}, Version: "v"}
	f.MustEnsure(tg, versioned)
	w := f.Writer(tg, versioned)
	var rows [][]any
	// id 1: versions 0..9 rising, then 9..0 falling; id 2: always v 5 with
	// alternating names; id 3: once.
	for v := 0; v < 10; v++ {
		rows = append(rows, []any{1, v, fmt.Sprintf("up%d", v)}, []any{2, 5, []string{"x", "y"}[v%2]})
	}
	for v := 9; v >= 0; v-- {
		rows = append(rows, []any{1, v, fmt.Sprintf("down%d", v)})
	}
	rows = append(rows, []any{3, nil, "once"})
	rec := Batch(t, versioned, rows...)
	// id 1: 1 insert, 9 updates, then "down9" with equal version and a
	// later row updates, the other 9 are stale. id 2: 1 insert, 9 updates.
	WantRows(t, "many duplicates", f.Write(w, 1, rec, Seq(1, int64(len(rows)))),
		idemtype.Rows{Read: 31, Inserted: 3, Updated: 19, Stale: 9})
	WantTable(t, "after many duplicates", f.Table("t", "id", lineageCols("id", "v", "name")...),
		"1|9|'down9'|1|21", "2|5|'y'|1|20", "3|NULL|'once'|1|31")
}

func naturalCompositeKey(t *testing.T, f *Fx) {
	s := Schema(Str("a"), I64("b"), Str("val"))
	tg := sink.Target{Table: "c", Key: []string{"a", "b"}}
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	cols := lineageCols("a", "b", "val")

	first := Batch(t, s, []any{"x", 1, "x1"}, []any{"x", 2, "x2"}, []any{"y", 1, "y1"})
	WantRows(t, "insert", f.Write(w, 1, first, Seq(1, 3)), idemtype.Rows{Read: 3, Inserted: 3})

	second := Batch(t, s,
		[]any{"x", 1, "X1"}, // update
		[]any{"x", 2, "x2"}, // unchanged
		[]any{"y", 2, "y2"}, // insert: shares a with one key, b with another
		[]any{"x", 1, "X1"}, // duplicate in the batch: unchanged
		[]any{"y", 1, "Y1"}, // update
	)
	WantRows(t, "upsert", f.Write(w, 2, second, Seq(1, 5)), idemtype.Rows{Read: 5, Inserted: 1, Updated: 2, Unchanged: 2})
	WantTable(t, "composite", f.Table("c", "a, b", cols...),
		"'x'|1|'X1'|2|1", "'x'|2|'x2'|1|2", "'y'|1|'Y1'|2|5", "'y'|2|'y2'|2|3")
}

// naturalKeyDeltaExact is DeltaExact into a table of its own.
func naturalKeyDeltaExact(t *testing.T, f *Fx) { DeltaExact(t, f, "delta", nil) }

// DeltaExact writes a delta into table (made by Ensure, then given to
// setup when it is not nil) over rows of values that lose something when
// cast or compared carelessly (BIGINT's edges, 2^53+1, a decimal longer
// than DECIMAL(65,30) holds, the empty string apart from NULL, quotes and
// backslashes), keyed by id and versioned by v, and checks its counts and
// the whole table, lineage included, as text. The delta has rows where
// only the last column changes, only the first (the version), several at
// once, only a decimal's text (1.5 to 1.50, one number), text to empty
// and to NULL; rows unchanged; rows older by their version (stale, NULL
// older than any); keys repeated in it (a new key twice, a changed key
// and then an older row of it, an unchanged key twice); and new keys.
// Then an earlier row of the same file with a newer version, written
// after a later one: the version decides, not the place.
func DeltaExact(t *testing.T, f *Fx, table string, setup func()) {
	t.Helper()
	s := Schema(I64("id"), I64("v"), I64("n"), Dec("d"), Str("s"), Str("z"))
	tg := sink.Target{Table: table, Key: []string{"id"}, Version: "v"}
	f.MustEnsure(tg, s)
	if setup != nil {
		setup()
	}
	w := f.Writer(tg, s)
	cols := lineageCols("id", "v", "n", "d", "s", "z")
	longDec := "-" + strings.Repeat("9", 40) + "." + strings.Repeat("0", 34) + "1"
	quoted := `it's "q" \ back\\slash`
	WantRows(t, table+": stored", f.Write(w, 1, Batch(t, s,
		[]any{1, 1, math.MaxInt64, "0.1", "plain", "last"},
		[]any{2, 1, math.MinInt64, "-1.50", "", "x"},
		[]any{3, 1, 0, longDec, "three", nil},
		[]any{4, 1, 1<<53 + 1, "1.50", nil, ""},
		[]any{5, 1, 5, "1.5", "a", "b"},
		[]any{6, 5, 6, "6", "six", "six"},
		[]any{7, 3, 7, "7", "s", "z"},
		[]any{8, 1, 8, "8", `\`, "''"},
	), Seq(1, 8)), idemtype.Rows{Read: 8, Inserted: 8})
	WantTable(t, table+": stored", f.Table(table, "id", cols...),
		"1|1|9223372036854775807|0.1|'plain'|'last'|1|1",
		"2|1|-9223372036854775808|-1.50|''|'x'|1|2",
		"3|1|0|"+longDec+"|'three'|NULL|1|3",
		"4|1|9007199254740993|1.50|NULL|''|1|4",
		"5|1|5|1.5|'a'|'b'|1|5",
		"6|5|6|6|'six'|'six'|1|6",
		"7|3|7|7|'s'|'z'|1|7",
		`8|1|8|8|'\'|''''|1|8`)
	WantRows(t, table+": delta", f.Write(w, 2, Batch(t, s,
		[]any{1, 1, math.MaxInt64, "0.1", "plain", "LAST"},    // 11: the last column changes
		[]any{2, 2, math.MinInt64, "-1.50", "", "x"},          // 12: the first (the version)
		[]any{3, 1, -1, "0.000001", quoted, ""},               // 13: several
		[]any{4, 1, 1<<53 + 1, "1.50", nil, ""},               // 14: unchanged
		[]any{5, 1, 5, "1.50", "a", "b"},                      // 15: the decimal's text
		[]any{6, 4, 60, "60", "SIX", "SIX"},                   // 16: older version: stale
		[]any{7, nil, 70, "70", "x", "x"},                     // 17: NULL version: stale
		[]any{8, 1, 8, "8", "", nil},                          // 18: empty and NULL
		[]any{9, 1, math.MaxInt64, longDec[1:], "new'", `\"`}, // 19: new
		[]any{10, 1, 1, "1", "ten-a", nil},                    // 20: new
		[]any{2, 1, 0, "0", "older", "older"},                 // 21: older than row 12: stale
		[]any{10, 1, 2, "2", "ten-b", "b"},                    // 22: a later row of the file: updated
		[]any{4, 1, 1<<53 + 1, "1.50", nil, ""},               // 23: unchanged
	), Seq(11, 23)), idemtype.Rows{Read: 13, Inserted: 2, Updated: 6, Unchanged: 2, Stale: 3})
	want := []string{
		"1|1|9223372036854775807|0.1|'plain'|'LAST'|2|11",
		"2|2|-9223372036854775808|-1.50|''|'x'|2|12",
		"3|1|-1|0.000001|'" + quoted + "'|''|2|13",
		"4|1|9007199254740993|1.50|NULL|''|1|4",
		"5|1|5|1.50|'a'|'b'|2|15",
		"6|5|6|6|'six'|'six'|1|6",
		"7|3|7|7|'s'|'z'|1|7",
		"8|1|8|8|''|NULL|2|18",
		"9|1|9223372036854775807|" + longDec[1:] + `|'new''|'\"'|2|19`,
		"10|1|2|2|'ten-b'|'b'|2|22",
	}
	WantTable(t, table+": after the delta", f.Table(table, "id", cols...), want...)
	WantRows(t, table+": an earlier row, newer", f.Write(w, 2, Batch(t, s,
		[]any{1, 2, 1, "0.1", "plain", "earlier row, newer version"},
	), Ords(5)), idemtype.Rows{Read: 1, Updated: 1})
	want[0] = "1|2|1|0.1|'plain'|'earlier row, newer version'|2|5"
	WantTable(t, table+": after the earlier row", f.Table(table, "id", cols...), want...)
}

// ---- version and order guards --------------------------------------------

func versionGuard(t *testing.T, f *Fx) {
	tg := sink.Target{Table: "t", Key: []string{"id"}, Version: "v"}
	f.MustEnsure(tg, versioned)
	w := f.Writer(tg, versioned)
	updates := f.Env.CountUpdates(t, f.Conn, "t")
	cols := lineageCols("id", "v", "name")

	WantRows(t, "file 10", f.Write(w, 10, Batch(t, versioned,
		[]any{1, 5, "a"},
		[]any{2, nil, "b"},
		[]any{3, 5, "c"},
		[]any{4, 5, "d"},
		[]any{5, 5, "e"},
	), Seq(1, 5)), idemtype.Rows{Read: 5, Inserted: 5})

	WantRows(t, "file 20", f.Write(w, 20, Batch(t, versioned,
		[]any{1, 4, "older"},   // older v: stale
		[]any{2, 1, "b1"},      // stored NULL v is overwritten
		[]any{3, nil, "null"},  // NULL v over a stored v: stale
		[]any{4, 5, "d-equal"}, // equal v applies
		[]any{5, 6, "e"},       // newer v applies
	), Seq(1, 5)), idemtype.Rows{Read: 5, Updated: 3, Stale: 2})
	if n := updates(); n != 3 {
		t.Errorf("file 20 updated %d rows, want 3", n)
	}
	WantTable(t, "after file 20", f.Table("t", "id", cols...),
		"1|5|'a'|10|1",
		"2|1|'b1'|20|2",
		"3|5|'c'|10|3",
		"4|5|'d-equal'|20|4",
		"5|6|'e'|20|5")

	// Equal v and equal values: unchanged, lineage kept.
	WantRows(t, "file 30", f.Write(w, 30, Batch(t, versioned,
		[]any{4, 5, "d-equal"},
		[]any{1, 3, "stale again"},
	), Seq(1, 2)), idemtype.Rows{Read: 2, Unchanged: 1, Stale: 1})
	WantTable(t, "after file 30", f.Table("t", "id", cols...),
		"1|5|'a'|10|1",
		"2|1|'b1'|20|2",
		"3|5|'c'|10|3",
		"4|5|'d-equal'|20|4",
		"5|6|'e'|20|5")
}

// timestampVersionGuard orders versions that are timestamps, across
// time zones and sub-second digits.
func timestampVersionGuard(t *testing.T, f *Fx) {
	s := Schema(Str("k"), TS("at"), Str("name"))
	tg := sink.Target{Table: "t", Key: []string{"k"}, Version: "at"}
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	noon := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	WantRows(t, "first", f.Write(w, 1, Batch(t, s,
		[]any{"a", noon, "a"},
		[]any{"b", noon, "b"},
		[]any{"c", noon, "c"},
	), Seq(1, 3)), idemtype.Rows{Read: 3, Inserted: 3})
	WantRows(t, "second", f.Write(w, 2, Batch(t, s,
		[]any{"a", noon.Add(-time.Microsecond), "older by 1µs"},
		[]any{"b", noon.In(time.FixedZone("x", -5*3600)).Add(time.Microsecond), "newer by 1µs"},
		[]any{"c", time.Date(2026, 11, 28, 13, 0, 0, 0, time.FixedZone("y", 3600)), "equal, written elsewhere"},
	), Seq(1, 3)), idemtype.Rows{Read: 3, Updated: 2, Stale: 1})
	WantTable(t, "timestamps", f.Table("t", "k", "k", "at", "name"),
		"'a'|2026-11-28T12:00:00.000000Z|'a'",
		"'b'|2026-11-28T12:00:00.000001Z|'newer by 1µs'",
		"'c'|2026-11-28T12:00:00.000000Z|'equal, written elsewhere'")
}

func sameFileOrderGuard(t *testing.T, f *Fx) {
	tg := sink.Target{Table: "t", Key: []string{"id"}}
	f.MustEnsure(tg, named)
	w := f.Writer(tg, named)
	cols := lineageCols("id", "name")

	// Partitions of one file committed out of order: row 20 first.
	WantRows(t, "row 20", f.Write(w, 50, Batch(t, named, []any{9, "twenty"}), Ords(20)), idemtype.Rows{Read: 1, Inserted: 1})
	WantRows(t, "row 10, same file", f.Write(w, 50, Batch(t, named, []any{9, "ten"}), Ords(10)), idemtype.Rows{Read: 1, Stale: 1})
	WantTable(t, "after row 10", f.Table("t", "id", cols...), "9|'twenty'|50|20")

	// The same row again is not older than itself.
	WantRows(t, "row 20 again", f.Write(w, 50, Batch(t, named, []any{9, "twenty"}), Ords(20)), idemtype.Rows{Read: 1, Unchanged: 1})

	// Another file's smaller ordinal is not older.
	WantRows(t, "row 5 of another file", f.Write(w, 60, Batch(t, named, []any{9, "five"}), Ords(5)), idemtype.Rows{Read: 1, Updated: 1})
	WantTable(t, "after another file", f.Table("t", "id", cols...), "9|'five'|60|5")

	// Within one batch too, duplicates obey the guard after an update.
	WantRows(t, "mixed batch", f.Write(w, 60, Batch(t, named, []any{9, "four"}, []any{9, "six"}), Ords(4, 6)),
		idemtype.Rows{Read: 2, Updated: 1, Stale: 1})
	WantTable(t, "after mixed batch", f.Table("t", "id", cols...), "9|'six'|60|6")
}

func sameFileOrderGuardWithEqualVersions(t *testing.T, f *Fx) {
	tg := sink.Target{Table: "t", Key: []string{"id"}, Version: "v"}
	f.MustEnsure(tg, versioned)
	w := f.Writer(tg, versioned)
	cols := lineageCols("id", "v", "name")

	f.Write(w, 50, Batch(t, versioned, []any{1, 3, "twenty"}, []any{2, nil, "twenty"}), Ords(20, 21))
	WantRows(t, "earlier rows, equal versions", f.Write(w, 50,
		Batch(t, versioned, []any{1, 3, "ten"}, []any{2, nil, "ten"}), Ords(10, 11)), idemtype.Rows{Read: 2, Stale: 2})
	WantTable(t, "equal versions", f.Table("t", "id", cols...), "1|3|'twenty'|50|20", "2|NULL|'twenty'|50|21")
}

// versionOrderDoesNotDependOnCommitOrder writes rows of one file with the
// same key, in file order and in other orders (as partitions may commit):
// the stored row must be the same every way. The earlier row has the newer
// version, so it wins in file order; it must win in any order.
func versionOrderDoesNotDependOnCommitOrder(t *testing.T, f *Fx) {
	rows := []struct {
		ord int64
		v   any
		val string
	}{{10, 2, "ten"}, {20, 1, "twenty"}, {30, nil, "thirty"}}
	final := func(table string, order []int) ([]string, idemtype.Rows) {
		tg := sink.Target{Table: table, Key: []string{"id"}, Version: "v"}
		f.MustEnsure(tg, versioned)
		w := f.Writer(tg, versioned)
		var total idemtype.Rows
		for _, i := range order {
			r := rows[i]
			total.Add(f.Write(w, 70, Batch(t, versioned, []any{1, r.v, r.val}), Ords(r.ord)))
		}
		return f.Table(table, "id", lineageCols("id", "v", "name")...), total
	}
	inOrder, c := final("t0", []int{0, 1, 2})
	WantTable(t, "in file order", inOrder, "1|2|'ten'|70|10")
	WantRows(t, "in file order", c, idemtype.Rows{Read: 3, Inserted: 1, Stale: 2})
	for i, order := range [][]int{{2, 1, 0}, {1, 0, 2}, {2, 0, 1}, {1, 2, 0}} {
		got, c := final(fmt.Sprintf("t%d", i+1), order)
		WantTable(t, fmt.Sprintf("commit order %v", order), got, inOrder...)
		if c.Inserted != 1 || c.Read != 3 {
			t.Errorf("commit order %v: counted %+v", order, c)
		}
	}
}

// writeBalancedMixed puts every outcome in one Write.
func writeBalancedMixed(t *testing.T, f *Fx) {
	tg := sink.Target{Table: "t", Key: []string{"id"}, Version: "v"}
	f.MustEnsure(tg, versioned)
	w := f.Writer(tg, versioned)
	f.Write(w, 1, Batch(t, versioned, []any{1, 1, "a"}, []any{2, 1, "b"}, []any{3, 9, "c"}), Seq(1, 3))

	rec := Batch(t, versioned,
		[]any{1, 1, "a"}, // unchanged
		[]any{2, 2, "B"}, // updated
		[]any{3, 1, "c"}, // stale
		[]any{4, 1, "d"}, // inserted
		[]any{4, 2, "D"}, // updated (duplicate)
		[]any{4, 1, "x"}, // stale (duplicate, older version)
		[]any{2, 2, "B"}, // unchanged (duplicate)
	)
	WantRows(t, "mixed", f.Write(w, 2, rec, Seq(1, 7)), idemtype.Rows{Read: 7, Inserted: 1, Updated: 2, Unchanged: 2, Stale: 2})
	WantTable(t, "mixed", f.Table("t", "id", lineageCols("id", "v", "name")...),
		"1|1|'a'|1|1", "2|2|'B'|2|2", "3|9|'c'|1|3", "4|2|'D'|2|5")

	// An empty batch counts nothing.
	empty := Batch(t, versioned)
	WantRows(t, "empty", f.Write(w, 2, empty, nil), idemtype.Rows{})
}

// ---- existing tables -----------------------------------------------------

func existingTableWithNaturalKey(t *testing.T, f *Fx) {
	f.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)`)
	f.Exec(`INSERT INTO t VALUES (1, 'one'), (2, 'two')`)
	tg := sink.Target{Table: "t", Key: []string{"id"}}

	tbl, err := f.Env.Driver.Describe(f.Ctx, f.Conn, "t")
	if err != nil || tbl == nil {
		t.Fatalf("describe: %v, %v", tbl, err)
	}
	if err := sink.Check(tbl, tg, named); err != nil {
		t.Fatalf("check: %v", err)
	}
	f.MustEnsure(tg, named)
	WantTable(t, "columns after ensure", f.Columns("t"), "id", "name", sink.FileColumn, sink.RowColumn)
	f.MustEnsure(tg, named) // again: nothing more to add
	WantTable(t, "columns after a second ensure", f.Columns("t"), "id", "name", sink.FileColumn, sink.RowColumn)

	// Rows the user wrote have no lineage; the sink must still update them.
	w := f.Writer(tg, named)
	rec := Batch(t, named, []any{1, "one"}, []any{2, "TWO"}, []any{3, "three"})
	WantRows(t, "first import", f.Write(w, 40, rec, Seq(1, 3)), idemtype.Rows{Read: 3, Inserted: 1, Updated: 1, Unchanged: 1})
	WantTable(t, "first import", f.Table("t", "id", lineageCols("id", "name")...),
		"1|'one'|NULL|NULL", "2|'TWO'|40|2", "3|'three'|40|3")
}

func existingTableWithVersionAndNoLineage(t *testing.T, f *Fx) {
	f.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER, name TEXT)`)
	f.Exec(`INSERT INTO t VALUES (1, 5, 'a'), (2, 5, 'b'), (3, NULL, 'c')`)
	tg := sink.Target{Table: "t", Key: []string{"id"}, Version: "v"}
	f.MustEnsure(tg, versioned)
	w := f.Writer(tg, versioned)
	rec := Batch(t, versioned, []any{1, 4, "older"}, []any{2, 6, "newer"}, []any{3, 1, "versioned"})
	WantRows(t, "over user rows", f.Write(w, 40, rec, Seq(1, 3)), idemtype.Rows{Read: 3, Updated: 2, Stale: 1})
	WantTable(t, "over user rows", f.Table("t", "id", lineageCols("id", "v", "name")...),
		"1|5|'a'|NULL|NULL", "2|6|'newer'|40|2", "3|1|'versioned'|40|3")
}

func existingTableRejectedInOrdinalMode(t *testing.T, f *Fx) {
	f.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)`)
	err := f.Ensure(sink.Target{Table: "t"}, named)
	if err == nil {
		t.Fatal("ordinal mode accepted a table keyed by id")
	}
	if want := "its primary key is not (_idemport_file, _idemport_row)"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	WantTable(t, "a rejected table", f.Columns("t"), "id", "name")
}

// existingTableWiderTypes writes into columns of wider kinds than the
// file's: integers and timestamps into text, integers into a decimal.
func existingTableWiderTypes(t *testing.T, f *Fx) {
	f.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, n TEXT, at TEXT)`)
	s := Schema(I64("id"), I64("n"), TS("at"))
	tg := sink.Target{Table: "t", Key: []string{"id"}}
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	rec := Batch(t, s, []any{1, 42, at}, []any{2, nil, nil})
	WantRows(t, "wider", f.Write(w, 1, rec, Seq(1, 2)), idemtype.Rows{Read: 2, Inserted: 2})
	WantTable(t, "wider", f.Table("t", "id", "id", "n", "at"),
		"1|'42'|'2026-01-02T03:04:05.000006Z'", "2|NULL|NULL")
	WantRows(t, "wider again", f.Write(w, 1, rec, Seq(1, 2)), idemtype.Rows{Read: 2, Unchanged: 2})
}

// existingFloatRefusesInt64: a float column holds integers exactly only
// within ±2^53, so a file's int64 column is refused, not rounded.
func existingFloatRefusesInt64(t *testing.T, f *Fx) {
	f.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, x DOUBLE PRECISION)`)
	s := Schema(I64("id"), I64("x"))
	err := f.Ensure(sink.Target{Table: "t", Key: []string{"id"}}, s)
	if err == nil || !strings.Contains(err.Error(), `column "x"`) || !strings.Contains(err.Error(), "2^53") {
		t.Fatalf("ensure: %v, want a refusal of column x naming 2^53", err)
	}
}

// decimalsExact writes decimals, as keys and as values, into a table the
// driver creates, and reads back their exact text: nothing goes through a
// float, and a changed scale is a change.
func decimalsExact(t *testing.T, f *Fx) {
	s := Schema(Dec("k"), Dec("d"))
	tg := sink.Target{Table: "t", Key: []string{"k"}}
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	long := "12345678901234567890.123456789"
	tiny := "0." + strings.Repeat("0", 399) + "1"
	rec := Batch(t, s,
		[]any{"9007199254740992", long}, []any{"9007199254740993", tiny},
		[]any{"-9223372036854775809", "1.50"}, []any{"0.1", nil})
	WantRows(t, "insert", f.Write(w, 1, rec, Seq(1, 4)), idemtype.Rows{Read: 4, Inserted: 4})
	// The column is the driver's decimal (numeric, DECIMAL TEXT), so that
	// a second file's decimals are read as decimals too.
	desc, err := f.Env.Driver.Describe(f.Ctx, f.Conn, "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"k", "d"} {
		if col := desc.Column(c); col == nil || col.Kind != idemtype.Decimal {
			t.Fatalf("column %s is %+v, want the decimal kind", c, col)
		}
	}
	want := []string{"-9223372036854775809|1.50", "0.1|NULL", "9007199254740992|" + long, "9007199254740993|" + tiny}
	got := f.Table("t", "k", "k:decimal", "d:decimal")
	slices.Sort(got)
	WantTable(t, "decimals", got, want...)
	WantRows(t, "again", f.Write(w, 1, rec, Seq(1, 4)), idemtype.Rows{Read: 4, Unchanged: 4})
	rec2 := Batch(t, s, []any{"-9223372036854775809", "1.5"})
	WantRows(t, "scale", f.Write(w, 2, rec2, Seq(1, 1)), idemtype.Rows{Read: 1, Updated: 1})
	if got := f.Table("t", "k", "k:decimal", "d:decimal"); !slices.Contains(got, "-9223372036854775809|1.5") {
		t.Errorf("after a scale change: %q", got)
	}

	// Ordinal mode: a first load may be copied straight into the table.
	vals := []string{"0", "0.00", "-0.0001", "10000", "99999999.99990000", "-12345678901234567890.123456789",
		"1" + strings.Repeat("0", 40) + ".5", tiny, "0.1"}
	so := Schema(Dec("d"))
	tgo := sink.Target{Table: "o"}
	f.MustEnsure(tgo, so)
	wo := f.Writer(tgo, so)
	var rows [][]any
	for _, v := range vals {
		rows = append(rows, []any{v})
	}
	n := int64(len(vals))
	WantRows(t, "ordinal", f.Write(wo, 1, Batch(t, so, rows...), Seq(1, n)), idemtype.Rows{Read: n, Inserted: n})
	WantTable(t, "ordinal", f.Table("o", sink.RowColumn, "d:decimal"), vals...)
	WantRows(t, "ordinal again", f.Write(wo, 1, Batch(t, so, rows...), Seq(1, n)), idemtype.Rows{Read: n, Unchanged: n})
}

func checkReportsEveryProblem(t *testing.T, f *Fx) {
	s := Schema(I64("id"), Str("name"), Str("note"))
	tg := sink.Target{Table: "t", Key: []string{"id"}}
	cases := []struct {
		name, ddl string
		// Substrings of the error, in any case; none means accepted. TYPE
		// is the type of column name as Describe reports it: as written
		// (INTEGER, REAL) on SQLite and PostgreSQL, as the server spells
		// it (int(11), double) on MariaDB.
		want []string
	}{
		{"fits", `CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, note TEXT, extra TEXT, d TEXT NOT NULL DEFAULT 'x')`, nil},
		{"missing column", `CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)`,
			[]string{`it has no column "note"`}},
		{"not null without default", `CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, note TEXT, created TEXT NOT NULL)`,
			[]string{`column "created" is NOT NULL without a default and the file does not have it`}},
		{"incompatible type", `CREATE TABLE t (id INTEGER PRIMARY KEY, name INTEGER, note TEXT)`,
			[]string{`column "name" is TYPE, the file's is string`}},
		{"key not unique", `CREATE TABLE t (id INTEGER, name TEXT, note TEXT)`,
			[]string{`(id) is not its primary key or a unique index`}},
		{"all at once", `CREATE TABLE t (id INTEGER PRIMARY KEY, name REAL, created TEXT NOT NULL)`,
			[]string{`it has no column "note"`, `column "name" is TYPE, the file's is string`, `column "created" is NOT NULL without a default`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.Exec(`DROP TABLE IF EXISTS t`)
			f.Exec(c.ddl)
			tbl, err := f.Env.Driver.Describe(f.Ctx, f.Conn, "t")
			if err != nil {
				t.Fatal(err)
			}
			checkErr := sink.Check(tbl, tg, s)
			ensureErr := f.Ensure(tg, s)
			for what, err := range map[string]error{"check": checkErr, "ensure": ensureErr} {
				if len(c.want) == 0 {
					if err != nil {
						t.Errorf("%s: %v", what, err)
					}
					continue
				}
				if err == nil {
					t.Errorf("%s accepted the table", what)
					continue
				}
				for _, w := range c.want {
					if col := tbl.Column("name"); col != nil {
						w = strings.ReplaceAll(w, "TYPE", col.SQLType)
					}
					if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(w)) {
						t.Errorf("%s: error %q does not say %q", what, err, w)
					}
				}
			}
			if len(c.want) > 0 && slices.Contains(f.Columns("t"), sink.FileColumn) {
				t.Errorf("ensure altered a table it rejected")
			}
		})
	}
}

func uniqueIndexKey(t *testing.T, f *Fx) {
	// A surrogate key the file does not carry, and the natural key as a
	// unique index only.
	f.Exec(`CREATE TABLE t (rid ` + f.Env.AutoKey + `, code TEXT NOT NULL, name TEXT)`)
	f.Exec(`CREATE UNIQUE INDEX t_code ON t (code)`)
	f.Exec(`INSERT INTO t (code, name) VALUES ('a', 'alpha')`)
	s := Schema(Str("code"), Str("name"))
	tg := sink.Target{Table: "t", Key: []string{"code"}}
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	rec := Batch(t, s, []any{"a", "ALPHA"}, []any{"b", "beta"})
	WantRows(t, "via unique index", f.Write(w, 3, rec, Seq(1, 2)), idemtype.Rows{Read: 2, Inserted: 1, Updated: 1})
	// The database numbers new rows (PostgreSQL may skip numbers).
	WantTable(t, "via unique index", f.Table("t", "rid", lineageCols("code", "name")...),
		"'a'|'ALPHA'|3|1", "'b'|'beta'|3|2")
	if n := f.Int(`SELECT count(DISTINCT rid) FROM t`); n != 2 {
		t.Errorf("%d surrogate keys for 2 rows", n)
	}

	// A composite unique index, declared in another column order.
	f.Exec(`CREATE TABLE u (a TEXT, b INTEGER, val TEXT)`)
	f.Exec(`CREATE UNIQUE INDEX u_ba ON u (b, a)`)
	us := Schema(Str("a"), I64("b"), Str("val"))
	utg := sink.Target{Table: "u", Key: []string{"a", "b"}}
	f.MustEnsure(utg, us)
	uw := f.Writer(utg, us)
	WantRows(t, "composite index", f.Write(uw, 3, Batch(t, us, []any{"x", 1, "v"}, []any{"x", 1, "w"}), Seq(1, 2)),
		idemtype.Rows{Read: 2, Inserted: 1, Updated: 1})

	// A partial unique index is not a key (where the database has them);
	// neither is a plain index.
	f.Exec(`CREATE TABLE p (k TEXT, val TEXT)`)
	keys := []string{"val"}
	if !f.Env.NoPartialIndexes {
		f.Exec(`CREATE UNIQUE INDEX p_k ON p (k) WHERE k IS NOT NULL`)
		keys = append(keys, "k")
	}
	f.Exec(`CREATE INDEX p_val ON p (val)`)
	ps := Schema(Str("k"), Str("val"))
	for _, key := range keys {
		if err := f.Ensure(sink.Target{Table: "p", Key: []string{key}}, ps); err == nil || !strings.Contains(err.Error(), "is not its primary key or a unique index") {
			t.Errorf("key %s on p: %v", key, err)
		}
	}
}

func describeMissingTable(t *testing.T, f *Fx) {
	tbl, err := f.Env.Driver.Describe(f.Ctx, f.Conn, "nope")
	if err != nil || tbl != nil {
		t.Fatalf("describe of a missing table: %+v, %v", tbl, err)
	}
}

// ---- stored values -------------------------------------------------------

func storedValues(t *testing.T, f *Fx) {
	s := Schema(I64("id"), Bool("ok"), TS("at"), JSON("doc"), F64("x"), Str("s"))
	for _, tg := range []sink.Target{{Table: "ord"}, {Table: "nat", Key: []string{"id"}}} {
		f.MustEnsure(tg, s)
		desc, err := f.Env.Driver.Describe(f.Ctx, f.Conn, tg.Table)
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, c := range desc.Columns {
			if c.Name != "doc" { // JSON may be stored as text
				kinds = append(kinds, c.Name+" "+c.Kind.String())
			}
		}
		want := []string{"id int64", "ok bool", "at timestamptz", "x float64", "s string"}
		if tg.Ordinal() {
			want = append([]string{"_idemport_file int64", "_idemport_row int64"}, want...)
		} else {
			want = append(want, "_idemport_file int64", "_idemport_row int64")
		}
		WantTable(t, tg.Table+" kinds", kinds, want...)

		w := f.Writer(tg, s)
		rec := Batch(t, s,
			[]any{1, true, time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC), `{"b":{"c":null},"a":[1,2.5,"x"]}`, 1.25, ""},
			[]any{2, false, time.Date(2026, 11, 28, 10, 30, 0, 123456000, time.FixedZone("x", 3600)), `null`, 2.0, "two"},
			[]any{3, nil, nil, nil, nil, nil},
			[]any{4, true, time.UnixMicro(-1), `"s"`, -0.5, "it's \"quoted\"\nand ünïcode"},
		)
		WantRows(t, tg.Table, f.Write(w, 1, rec, Seq(1, 4)), idemtype.Rows{Read: 4, Inserted: 4})
		WantTable(t, tg.Table, f.Table(tg.Table, "id", "id", "ok", "at", "doc:json", "x", "s"),
			`1|true|2026-11-28T09:30:00.000000Z|{"a":[1,2.5,"x"],"b":{"c":null}}|1.25|''`,
			`2|false|2026-11-28T09:30:00.123456Z|null|2.0|'two'`,
			`3|NULL|NULL|NULL|NULL|NULL`,
			"4|true|1969-12-31T23:59:59.999999Z|\"s\"|-0.5|'it's \"quoted\"\nand ünïcode'")
		WantRows(t, tg.Table+" again", f.Write(w, 1, rec, Seq(1, 4)), idemtype.Rows{Read: 4, Unchanged: 4})
	}
}
