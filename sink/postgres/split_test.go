package postgres

import (
	"strings"
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// TestNaturalKeyDeltaSplit writes a batch of increasing integer keys as a
// daily delta sorted by its key has them: stored keys (changed, unchanged,
// and one its version makes stale), then new keys past the greatest stored
// one. The stored ones are merged and the new ones copied straight into
// the table, for a key column of bigint and of integer; the whole table,
// lineage included, is compared, and a trigger counts the rows updated, so
// an unchanged or stale row rewritten fails. A new key below the greatest
// stored one is merged with the stored ones.
func TestNaturalKeyDeltaSplit(t *testing.T) {
	for _, keyType := range []string{"bigint", "integer"} {
		t.Run(keyType, func(t *testing.T) {
			env := open(t)
			f := drivertest.Open(t, env)
			s := drivertest.Schema(drivertest.I64("id"), drivertest.I64("v"), drivertest.Str("name"))
			tg := sink.Target{Table: "delta", Key: []string{"id"}, Version: "v"}
			f.Exec(`CREATE TABLE delta (id ` + keyType + ` PRIMARY KEY, v bigint, name text)`)
			f.MustEnsure(tg, s)
			w := f.Writer(tg, s)
			cols := []string{"id", "v", "name", sink.FileColumn, sink.RowColumn}
			drivertest.WantRows(t, "file 1", f.Write(w, 1, drivertest.Batch(t, s,
				[]any{1, 1, "one"}, []any{2, 1, "two"}, []any{4, 5, "four"}, []any{6, 1, "six"}, []any{9, 1, "nine"},
			), drivertest.Seq(1, 5)), idemtype.Rows{Read: 5, Inserted: 5})
			updates := countUpdates(t, f.Conn, "delta")

			// Key 1 unchanged, 2 changed, 3 new (below 9, the greatest
			// stored key), 4 stale, 9 changed; 10, 12 and 13 new.
			delta := drivertest.Batch(t, s,
				[]any{1, 1, "one"}, []any{2, 2, "TWO"}, []any{3, 1, "three"}, []any{4, 4, "old four"},
				[]any{9, 1, "NINE"}, []any{10, 1, "ten"}, []any{12, 1, "twelve"}, []any{13, nil, nil},
			)
			c, n := writeDirect(t, f, w, "delta", 2, delta, drivertest.Seq(1, 8))
			drivertest.WantRows(t, "file 2", c, idemtype.Rows{Read: 8, Inserted: 4, Updated: 2, Unchanged: 1, Stale: 1})
			if n != 3 {
				t.Errorf("file 2: %d rows copied straight into the table, want the 3 past the greatest stored key", n)
			}
			if got := updates(); got != 2 {
				t.Errorf("file 2: %d rows updated, want the 2 changed", got)
			}
			drivertest.WantTable(t, "file 2", f.Table("delta", "id", cols...),
				"1|1|'one'|1|1", "2|2|'TWO'|2|2", "3|1|'three'|2|3", "4|5|'four'|1|3", "6|1|'six'|1|4",
				"9|1|'NINE'|2|5", "10|1|'ten'|2|6", "12|1|'twelve'|2|7", "13|NULL|NULL|2|8")

			// Every key stored: merged whole, nothing copied.
			c, n = writeDirect(t, f, w, "delta", 3, drivertest.Batch(t, s, []any{10, 1, "TEN"}, []any{13, 1, "thirteen"}), drivertest.Seq(1, 2))
			drivertest.WantRows(t, "file 3", c, idemtype.Rows{Read: 2, Updated: 2})
			if n != 0 {
				t.Errorf("file 3: %d rows copied straight into the table, want none", n)
			}
			// Every key new: copied whole.
			c, n = writeDirect(t, f, w, "delta", 4, drivertest.Batch(t, s, []any{20, 1, "twenty"}, []any{21, 1, "twenty-one"}), drivertest.Seq(1, 2))
			drivertest.WantRows(t, "file 4", c, idemtype.Rows{Read: 2, Inserted: 2})
			if n != 2 {
				t.Errorf("file 4: %d rows copied straight into the table, want 2", n)
			}
			if got := updates(); got != 4 {
				t.Errorf("files 3 and 4: %d rows updated in all, want 4", got)
			}
			drivertest.WantTable(t, "files 3 and 4", f.Table("delta", "id", cols...),
				"1|1|'one'|1|1", "2|2|'TWO'|2|2", "3|1|'three'|2|3", "4|5|'four'|1|3", "6|1|'six'|1|4",
				"9|1|'NINE'|2|5", "10|1|'TEN'|3|1", "12|1|'twelve'|2|7", "13|1|'thirteen'|3|2",
				"20|1|'twenty'|4|1", "21|1|'twenty-one'|4|2")
		})
	}
}

// TestNaturalKeyDeltaSplitRace: a key past the greatest stored one that
// another transaction inserts after the look-up makes the COPY of the new
// keys fail on it; the COPY is rolled back and those rows are merged, the
// other transaction's row updated, every other key inserted once.
func TestNaturalKeyDeltaSplitRace(t *testing.T) {
	env := open(t)
	f := drivertest.Open(t, env)
	other := drivertest.Open(t, env)
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("name"))
	tg := sink.Target{Table: "race", Key: []string{"id"}}
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	drivertest.WantRows(t, "file 1", f.Write(w, 1, drivertest.Batch(t, s, []any{1, "one"}), drivertest.Ords(1)), idemtype.Rows{Read: 1, Inserted: 1})

	tx, err := other.Conn.BeginTx(other.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() // on failure: other's connection closes once it ends
	if _, err := tx.ExecContext(other.Ctx, `INSERT INTO race (id, name) VALUES (3, 'theirs')`); err != nil {
		t.Fatal(err)
	}
	pid := f.Int(`SELECT pg_backend_pid()`)
	type result struct {
		c idemtype.Rows
		n int64
	}
	done := make(chan result, 1)
	go func() {
		// The look-up does not see key 3; the COPY waits for it.
		c, n := writeDirect(t, f, w, "race", 2, drivertest.Batch(t, s, []any{1, "ONE"}, []any{2, "two"}, []any{3, "three"}, []any{4, "four"}), drivertest.Seq(1, 4))
		done <- result{c, n}
	}()
	awaitLockWait(t, other.Env.DB, int(pid), done)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	drivertest.WantRows(t, "file 2", r.c, idemtype.Rows{Read: 4, Inserted: 2, Updated: 2})
	if r.n != 0 {
		t.Errorf("file 2: %d rows copied straight into the table, want the refused COPY rolled back", r.n)
	}
	drivertest.WantTable(t, "file 2", f.Table("race", "id", "id", "name", sink.FileColumn, sink.RowColumn),
		"1|'ONE'|2|1", "2|'two'|2|2", "3|'three'|2|3", "4|'four'|2|4")
}

// TestNaturalKeyDeltaSplitRisingEnd writes a batch of keys out of order
// that ends with keys in increasing order above all the others, as a
// delta of changed keys in any order and then new keys has them: the rows
// up to the greatest stored key of that end are merged (the keys before
// it out of order among them), the rest copied straight into the table.
func TestNaturalKeyDeltaSplitRisingEnd(t *testing.T) {
	f := drivertest.Open(t, open(t))
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("name"))
	tg := sink.Target{Table: "rising", Key: []string{"id"}}
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	cols := []string{"id", "name", sink.FileColumn, sink.RowColumn}
	drivertest.WantRows(t, "file 1", f.Write(w, 1, drivertest.Batch(t, s,
		[]any{1, "one"}, []any{2, "two"}, []any{3, "three"}, []any{5, "five"}, []any{9, "nine"},
	), drivertest.Seq(1, 5)), idemtype.Rows{Read: 5, Inserted: 5})
	updates := countUpdates(t, f.Conn, "rising")

	// 5 changed, 2 unchanged, 4 new, 3 changed, then in order above them
	// 8 new (below 9, stored), 10 and 11 new.
	delta := drivertest.Batch(t, s,
		[]any{5, "FIVE"}, []any{2, "two"}, []any{4, "four"}, []any{3, "THREE"}, []any{8, "eight"}, []any{10, "ten"}, []any{11, "eleven"},
	)
	c, n := writeDirect(t, f, w, "rising", 2, delta, drivertest.Seq(1, 7))
	drivertest.WantRows(t, "file 2", c, idemtype.Rows{Read: 7, Inserted: 4, Updated: 2, Unchanged: 1})
	if n != 2 {
		t.Errorf("file 2: %d rows copied straight into the table, want the 2 past the greatest stored key", n)
	}
	if got := updates(); got != 2 {
		t.Errorf("file 2: %d rows updated, want the 2 changed", got)
	}
	drivertest.WantTable(t, "file 2", f.Table("rising", "id", cols...),
		"1|'one'|1|1", "2|'two'|1|2", "3|'THREE'|2|4", "4|'four'|2|3", "5|'FIVE'|2|1",
		"8|'eight'|2|5", "9|'nine'|1|5", "10|'ten'|2|6", "11|'eleven'|2|7")
}

func TestRisingEnd(t *testing.T) {
	for _, c := range []struct {
		keys []int64
		want int
	}{
		{[]int64{7}, 0},
		{[]int64{1, 2, 3}, 0},
		{[]int64{3, 1, 2}, 3},           // 1, 2 rise, but not above 3
		{[]int64{5, 2, 4, 3, 8, 10}, 4}, // 3, 8, 10 rise; 8 is above 5, 2 and 4
		{[]int64{2, 1, 3}, 2},
		{[]int64{2, 3, 1}, 3},
		{[]int64{-1, -5, -9223372036854775808, 9223372036854775807}, 3},
	} {
		if got := risingEnd(c.keys); got != c.want {
			t.Errorf("risingEnd(%v) = %d, want %d", c.keys, got, c.want)
		}
	}
}

// TestNaturalKeyIncreasingWhole writes batches of increasing integer keys
// as the partitions of a file sorted by its key have them, each spanning
// the keys stored before it, with their rows' ordinals out of order. A
// batch after one that met no stored key is tried as one COPY: one of new
// keys only is copied whole, though stored keys lie between them; one
// with stored keys (changed, unchanged, stale, after new ones) is rolled
// back and split, its stored keys and those before them merged, the rest
// copied. A batch after one that met stored keys is split at once, and
// one that it copies whole lets the next be tried as one COPY again. The
// whole table, lineage included, is compared after each batch, and a
// trigger counts the rows updated.
func TestNaturalKeyIncreasingWhole(t *testing.T) {
	f := drivertest.Open(t, open(t))
	s := drivertest.Schema(drivertest.I64("id"), drivertest.I64("v"), drivertest.Str("name"))
	tg := sink.Target{Table: "whole", Key: []string{"id"}, Version: "v"}
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	cols := []string{"id", "v", "name", sink.FileColumn, sink.RowColumn}
	step := func(what string, fileKey int64, ordinals []int64, want idemtype.Rows, wantDirect int64, rows ...[]any) {
		t.Helper()
		c, n := writeDirect(t, f, w, "whole", fileKey, drivertest.Batch(t, s, rows...), ordinals)
		drivertest.WantRows(t, what, c, want)
		if n != wantDirect {
			t.Errorf("%s: %d rows copied straight into the table, want %d", what, n, wantDirect)
		}
	}
	step("file 1", 1, []int64{3, 1, 4, 2}, idemtype.Rows{Read: 4, Inserted: 4}, 4,
		[]any{10, 1, "ten"}, []any{20, 1, "twenty"}, []any{30, 1, "thirty"}, []any{40, 1, "forty"})
	updates := countUpdates(t, f.Conn, "whole")

	// New keys between the stored ones: copied whole.
	step("file 2", 2, []int64{5, 1, 4, 2, 3}, idemtype.Rows{Read: 5, Inserted: 5}, 5,
		[]any{5, 1, "five"}, []any{15, 1, "fifteen"}, []any{25, 1, "twenty-five"}, []any{35, 1, "thirty-five"}, []any{45, 1, "forty-five"})
	drivertest.WantTable(t, "file 2", f.Table("whole", "id", cols...),
		"5|1|'five'|2|5", "10|1|'ten'|1|3", "15|1|'fifteen'|2|1", "20|1|'twenty'|1|1", "25|1|'twenty-five'|2|4",
		"30|1|'thirty'|1|4", "35|1|'thirty-five'|2|2", "40|1|'forty'|1|2", "45|1|'forty-five'|2|3")

	// 1 and 2 new, 20 changed, 30 stale, 35 unchanged; 50 and 60 new, past
	// 45, the greatest stored key.
	step("file 3", 3, []int64{7, 2, 5, 1, 6, 4, 3}, idemtype.Rows{Read: 7, Inserted: 4, Updated: 1, Unchanged: 1, Stale: 1}, 2,
		[]any{1, 1, "one"}, []any{2, 1, "two"}, []any{20, 2, "TWENTY"}, []any{30, 0, "old thirty"},
		[]any{35, 1, "thirty-five"}, []any{50, 1, "fifty"}, []any{60, 1, "sixty"})
	if got := updates(); got != 1 {
		t.Errorf("file 3: %d rows updated, want the 1 changed", got)
	}
	// New keys after a batch that met stored keys: split (none stored in
	// their range), all copied.
	step("file 4", 4, []int64{2, 1}, idemtype.Rows{Read: 2, Inserted: 2}, 2, []any{3, 1, "three"}, []any{4, 1, "four"})
	// New keys around 60, stored: tried as one COPY again, copied whole.
	step("file 5", 5, []int64{3, 1, 2}, idemtype.Rows{Read: 3, Inserted: 3}, 3,
		[]any{55, 1, "fifty-five"}, []any{57, 1, "fifty-seven"}, []any{65, 1, "sixty-five"})
	// The stored key last, most of the COPY run: all merged.
	step("file 6", 6, []int64{2, 3, 1}, idemtype.Rows{Read: 3, Inserted: 2, Updated: 1}, 0,
		[]any{6, 1, "six"}, []any{7, 1, "seven"}, []any{65, 2, "SIXTY-FIVE"})
	if got := updates(); got != 2 {
		t.Errorf("files 3 to 6: %d rows updated in all, want 2", got)
	}
	drivertest.WantTable(t, "file 6", f.Table("whole", "id", cols...),
		"1|1|'one'|3|7", "2|1|'two'|3|2", "3|1|'three'|4|2", "4|1|'four'|4|1",
		"5|1|'five'|2|5", "6|1|'six'|6|2", "7|1|'seven'|6|3", "10|1|'ten'|1|3", "15|1|'fifteen'|2|1",
		"20|2|'TWENTY'|3|5", "25|1|'twenty-five'|2|4", "30|1|'thirty'|1|4", "35|1|'thirty-five'|2|2",
		"40|1|'forty'|1|2", "45|1|'forty-five'|2|3", "50|1|'fifty'|3|4", "55|1|'fifty-five'|5|3",
		"57|1|'fifty-seven'|5|1", "60|1|'sixty'|3|3", "65|2|'SIXTY-FIVE'|6|1")
}

// TestKeyOrderErrorNamesRows: a batch of a natural key's rows in key order
// has its rows out of the file's order; an error names the lowest and the
// highest of them, whether the batch was copied straight into the table
// or merged.
func TestKeyOrderErrorNamesRows(t *testing.T) {
	f := drivertest.Open(t, open(t))
	s := drivertest.Schema(drivertest.I64("id"), drivertest.I64("n"))
	tg := sink.Target{Table: "span", Key: []string{"id"}}
	f.Exec(`CREATE TABLE span (id bigint PRIMARY KEY, n bigint CHECK (n >= 0))`)
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	drivertest.WantRows(t, "file 1", f.Write(w, 1, drivertest.Batch(t, s, []any{5, 1}, []any{6, 1}), drivertest.Seq(1, 2)), idemtype.Rows{Read: 2, Inserted: 2})
	for _, c := range []struct {
		what string
		keys []int // with 5 and 6 stored: merged
	}{
		{"copied", []int{1, 2, 3}},
		{"merged", []int{1, 5, 6}},
	} {
		rec := drivertest.Batch(t, s, []any{c.keys[0], 1}, []any{c.keys[1], 1}, []any{c.keys[2], -1})
		tx, err := f.Conn.BeginTx(f.Ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = w.Write(f.Ctx, tx, 2, rec, []int64{7, 3, 9})
		tx.Rollback()
		if err == nil || !strings.Contains(err.Error(), "rows 3-9") {
			t.Errorf("%s: %v, want an error naming rows 3-9", c.what, err)
		}
	}
}

// TestNaturalKeyStoredFirstKeyNotTried: a batch tried as one COPY (after
// one copied whole) whose first key is stored would fail at its first row;
// it is merged, or split, without the COPY. A sequence that a trigger
// advances for every row the server is given to insert (a COPY's or a
// merge's, rolled back or not) counts the rows tried; the whole table,
// lineage included, is compared.
func TestNaturalKeyStoredFirstKeyNotTried(t *testing.T) {
	f := drivertest.Open(t, open(t))
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("name"))
	tg := sink.Target{Table: "first", Key: []string{"id"}}
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	f.Exec(`CREATE SEQUENCE tried`)
	f.Exec(`CREATE FUNCTION count_tried() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM nextval('tried'); RETURN NEW; END $$`)
	f.Exec(`CREATE TRIGGER first_tried BEFORE INSERT ON first FOR EACH ROW EXECUTE FUNCTION count_tried()`)
	last := int64(0)
	step := func(what string, fileKey int64, want idemtype.Rows, wantTried, wantDirect int64, rows ...[]any) {
		t.Helper()
		c, n := writeDirect(t, f, w, "first", fileKey, drivertest.Batch(t, s, rows...), drivertest.Seq(1, int64(len(rows))))
		drivertest.WantRows(t, what, c, want)
		if n != wantDirect {
			t.Errorf("%s: %d rows copied straight into the table, want %d", what, n, wantDirect)
		}
		tried := f.Int(`SELECT last_value FROM tried`)
		if tried-last != wantTried {
			t.Errorf("%s: %d rows given to the server to insert, want %d", what, tried-last, wantTried)
		}
		last = tried
	}
	step("file 1", 1, idemtype.Rows{Read: 3, Inserted: 3}, 3, 3, []any{10, "ten"}, []any{20, "twenty"}, []any{30, "thirty"})
	// Increasing, 10 stored: split, 10 and 15 merged, 40 copied.
	step("file 2", 2, idemtype.Rows{Read: 3, Inserted: 2, Updated: 1}, 3, 1, []any{10, "TEN"}, []any{15, "fifteen"}, []any{40, "forty"})
	step("file 3", 3, idemtype.Rows{Read: 2, Inserted: 2}, 2, 2, []any{50, "fifty"}, []any{60, "sixty"})
	// Out of order, 20 stored: merged.
	step("file 4", 4, idemtype.Rows{Read: 2, Inserted: 1, Updated: 1}, 2, 0, []any{20, "TWENTY"}, []any{5, "five"})
	// Back to one COPY after a batch whose rows were all inserted.
	step("file 5", 5, idemtype.Rows{Read: 2, Inserted: 2}, 2, 0, []any{7, "seven"}, []any{6, "six"})
	step("file 6", 6, idemtype.Rows{Read: 2, Inserted: 2}, 2, 2, []any{70, "seventy"}, []any{65, "sixty-five"})
	cols := []string{"id", "name", sink.FileColumn, sink.RowColumn}
	drivertest.WantTable(t, "file 6", f.Table("first", "id", cols...),
		"5|'five'|4|2", "6|'six'|5|2", "7|'seven'|5|1", "10|'TEN'|2|1", "15|'fifteen'|2|2", "20|'TWENTY'|4|1",
		"30|'thirty'|1|3", "40|'forty'|2|3", "50|'fifty'|3|1", "60|'sixty'|3|2", "65|'sixty-five'|6|2", "70|'seventy'|6|1")
}

// TestNaturalKeyNewKeysNotLookedUpAgain writes batches of increasing new
// keys in one transaction: the first is looked up, and one that starts
// above the last key of the batch before and below the least key stored
// above it is copied straight into the table without a look-up; one past
// that stored key is looked up again. A key another transaction stored
// since, in a batch not looked up, fails its COPY: the batch is merged,
// the other transaction's row updated. The table's scans in the
// transaction (pg_stat_xact_user_tables: a look-up scans it, a COPY does
// not) tell the look-ups; the whole table, lineage included, is compared.
func TestNaturalKeyNewKeysNotLookedUpAgain(t *testing.T) {
	env := open(t)
	f := drivertest.Open(t, env)
	other := drivertest.Open(t, env)
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("name"))
	tg := sink.Target{Table: "fresh", Key: []string{"id"}}
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	drivertest.WantRows(t, "file 1", f.Write(w, 1, drivertest.Batch(t, s, []any{100, "hundred"}, []any{200, "two hundred"}), drivertest.Seq(1, 2)),
		idemtype.Rows{Read: 2, Inserted: 2})
	tx, err := f.Conn.BeginTx(f.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	scans := func() int64 {
		var n int64
		if err := tx.QueryRowContext(f.Ctx, `SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_xact_user_tables
			WHERE relid = 'fresh'::regclass`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	step := func(what string, fileKey int64, lookedUp bool, want idemtype.Rows, wantDirect int64, rows ...[]any) {
		t.Helper()
		before := scans()
		c := f.WriteIn(tx, w, fileKey, drivertest.Batch(t, s, rows...), drivertest.Seq(1, int64(len(rows))))
		drivertest.WantRows(t, what, c, want)
		if got := scans() > before; got != lookedUp {
			t.Errorf("%s: looked up %v, want %v", what, got, lookedUp)
		}
		if n := directRows(t, f, tx, "fresh", fileKey); n != wantDirect {
			t.Errorf("%s: %d rows copied straight into the table, want %d", what, n, wantDirect)
		}
	}
	step("file 2", 2, true, idemtype.Rows{Read: 3, Inserted: 3}, 3, []any{1, "one"}, []any{2, "two"}, []any{3, "three"})
	step("file 3", 3, false, idemtype.Rows{Read: 3, Inserted: 3}, 3, []any{4, "four"}, []any{5, "five"}, []any{6, "six"})
	step("file 4", 4, false, idemtype.Rows{Read: 2, Inserted: 2}, 2, []any{50, "fifty"}, []any{99, "ninety-nine"})
	// 150 is past 100, stored: looked up.
	step("file 5", 5, true, idemtype.Rows{Read: 2, Inserted: 2}, 2, []any{150, "one fifty"}, []any{160, "one sixty"})
	// 170 is below 200, the least stored above 160: copied whole, though
	// its keys go past 200.
	step("file 6", 6, false, idemtype.Rows{Read: 2, Inserted: 2}, 2, []any{170, "one seventy"}, []any{250, "two fifty"})
	// Past 200: looked up.
	step("file 7", 7, true, idemtype.Rows{Read: 1, Inserted: 1}, 1, []any{260, "two sixty"})
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	other.Exec(`INSERT INTO fresh (id, name) VALUES (270, 'theirs')`)
	tx, err = f.Conn.BeginTx(f.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Not looked up before its COPY, which 270 fails: split, 265 and 270
	// merged, 275 copied.
	step("file 8", 8, true, idemtype.Rows{Read: 3, Inserted: 2, Updated: 1}, 1, []any{265, "two sixty-five"}, []any{270, "two seventy"}, []any{275, "two seventy-five"})
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	drivertest.WantTable(t, "file 8", f.Table("fresh", "id", "id", "name", sink.FileColumn, sink.RowColumn),
		"1|'one'|2|1", "2|'two'|2|2", "3|'three'|2|3", "4|'four'|3|1", "5|'five'|3|2", "6|'six'|3|3",
		"50|'fifty'|4|1", "99|'ninety-nine'|4|2", "100|'hundred'|1|1", "150|'one fifty'|5|1", "160|'one sixty'|5|2",
		"170|'one seventy'|6|1", "200|'two hundred'|1|2", "250|'two fifty'|6|2", "260|'two sixty'|7|1",
		"265|'two sixty-five'|8|1", "270|'two seventy'|8|2", "275|'two seventy-five'|8|3")
}
