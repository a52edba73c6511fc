package postgres

import (
	"testing"
	"time"

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
	for other.Int(`SELECT count(*) FROM pg_stat_activity WHERE pid = ? AND wait_event_type = 'Lock'`, pid) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
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
