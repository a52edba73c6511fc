package postgres

import (
	"database/sql"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// directRows counts the rows of file fileKey in table that tx wrote under
// a savepoint, which is how a natural-key batch is copied straight into
// the target: those rows carry the subtransaction's id, where a merge's
// rows carry the transaction's own.
func directRows(t *testing.T, f *drivertest.Fx, tx *sql.Tx, table string, fileKey int64) int64 {
	t.Helper()
	var n int64
	if err := tx.QueryRowContext(f.Ctx, `SELECT count(*) FROM `+quoteTable(table)+` WHERE _idemport_file = $1
		AND xmin::text <> (pg_current_xact_id()::text::bigint % 4294967296)::text`, fileKey).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// writeDirect writes one batch in its own transaction, like Fx.Write, and
// also returns how many of its rows were copied straight into the table.
func writeDirect(t *testing.T, f *drivertest.Fx, w sink.Writer, table string, fileKey int64, rec arrow.RecordBatch, ordinals []int64) (idemtype.Rows, int64) {
	t.Helper()
	tx, err := f.Conn.BeginTx(f.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := f.WriteIn(tx, w, fileKey, rec, ordinals)
	n := directRows(t, f, tx, table, fileKey)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return c, n
}

// TestNaturalKeyFirstLoadStraightIntoTable writes natural-key batches
// whose keys are new straight into the target, falls back to staging and
// merging for a batch with a stored key (the key last in the batch, so
// most of the COPY had run, and first in another), and goes back to
// copying once a merged batch inserts every row. The whole table is
// compared after each step, with int64 edges in the key, empty strings
// and NULLs.
func TestNaturalKeyFirstLoadStraightIntoTable(t *testing.T) {
	f := drivertest.Open(t, open(t))
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("name"), drivertest.F64("x"), drivertest.TS("at"), drivertest.Dec("d"))
	tg := sink.Target{Table: "direct", Key: []string{"id"}}
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	cols := []string{"id", "name", "x", "at", "d", sink.FileColumn, sink.RowColumn}
	at := time.Date(2024, 2, 29, 23, 59, 59, 999999000, time.UTC)
	const ts = "2024-02-29T23:59:59.999999Z"
	wantDirect := func(what string, got, want int64) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %d rows copied straight into the table, want %d", what, got, want)
		}
	}

	// File 1: every key new, int64 edges among them.
	first := drivertest.Batch(t, s,
		[]any{math.MaxInt64, "max", 1.5, at, "12345678901234567890.123456789"},
		[]any{math.MinInt64, "", -0.25, nil, "-0.000000000000000001"},
		[]any{0, nil, nil, at, nil},
		[]any{-1, "minus one", 1e15, at, "1"},
		[]any{math.MaxInt64 - 1, "max-1", 0.0, nil, "0"},
	)
	c, n := writeDirect(t, f, w, "direct", 1, first, drivertest.Seq(1, 5))
	drivertest.WantRows(t, "file 1", c, idemtype.Rows{Read: 5, Inserted: 5})
	wantDirect("file 1", n, 5)
	table := []string{
		"-9223372036854775808|''|-0.25|NULL|-0.000000000000000001|1|2",
		"-1|'minus one'|1000000000000000.0|" + ts + "|1|1|4",
		"0|NULL|NULL|" + ts + "|NULL|1|3",
		"9223372036854775806|'max-1'|0.0|NULL|0|1|5",
		"9223372036854775807|'max'|1.5|" + ts + "|12345678901234567890.123456789|1|1",
	}
	drivertest.WantTable(t, "file 1", f.Table("direct", "id", cols...), table...)

	// File 2: four new keys, then the stored key MaxInt64 changed; the
	// COPY has written the new rows when the stored key stops it.
	second := drivertest.Batch(t, s,
		[]any{10, "ten", 10.0, nil, "10"},
		[]any{11, "eleven", 11.0, nil, "11"},
		[]any{math.MinInt64 + 1, "min+1", nil, nil, nil},
		[]any{12, "", nil, nil, nil},
		[]any{math.MaxInt64, "MAX", 1.5, at, "12345678901234567890.123456789"},
	)
	c, n = writeDirect(t, f, w, "direct", 2, second, drivertest.Seq(1, 5))
	drivertest.WantRows(t, "file 2", c, idemtype.Rows{Read: 5, Inserted: 4, Updated: 1})
	wantDirect("file 2", n, 0)
	table = []string{
		"-9223372036854775808|''|-0.25|NULL|-0.000000000000000001|1|2",
		"-9223372036854775807|'min+1'|NULL|NULL|NULL|2|3",
		"-1|'minus one'|1000000000000000.0|" + ts + "|1|1|4",
		"0|NULL|NULL|" + ts + "|NULL|1|3",
		"10|'ten'|10.0|NULL|10|2|1",
		"11|'eleven'|11.0|NULL|11|2|2",
		"12|''|NULL|NULL|NULL|2|4",
		"9223372036854775806|'max-1'|0.0|NULL|0|1|5",
		"9223372036854775807|'MAX'|1.5|" + ts + "|12345678901234567890.123456789|2|5",
	}
	drivertest.WantTable(t, "file 2", f.Table("direct", "id", cols...), table...)

	// File 3: new keys only (out of order: keys in increasing order look
	// up the stored ones instead, see TestNaturalKeyDeltaSplit), but after
	// a batch that found a stored key: merged, every row inserted. File 4:
	// new keys, copied again.
	c, n = writeDirect(t, f, w, "direct", 3, drivertest.Batch(t, s, []any{21, "twenty-one", nil, nil, nil}, []any{20, "twenty", nil, nil, nil}), drivertest.Ords(6, 7))
	drivertest.WantRows(t, "file 3", c, idemtype.Rows{Read: 2, Inserted: 2})
	wantDirect("file 3", n, 0)
	c, n = writeDirect(t, f, w, "direct", 4, drivertest.Batch(t, s, []any{31, "thirty-one", nil, nil, nil}, []any{30, "thirty", nil, nil, nil}), drivertest.Ords(8, 9))
	drivertest.WantRows(t, "file 4", c, idemtype.Rows{Read: 2, Inserted: 2})
	wantDirect("file 4", n, 2)
	table = append(table[:7:7], append([]string{"20|'twenty'|NULL|NULL|NULL|3|7", "21|'twenty-one'|NULL|NULL|NULL|3|6",
		"30|'thirty'|NULL|NULL|NULL|4|9", "31|'thirty-one'|NULL|NULL|NULL|4|8"}, table[7:]...)...)
	drivertest.WantTable(t, "files 3 and 4", f.Table("direct", "id", cols...), table...)

	// File 5: rows of file 1 again, the first stored, one changed:
	// nothing is inserted twice.
	again := drivertest.Batch(t, s,
		[]any{math.MaxInt64 - 1, "max-1", 0.0, nil, "0"},
		[]any{math.MinInt64, "", -0.25, nil, "-0.000000000000000001"},
		[]any{0, "zero", nil, at, nil},
	)
	c, n = writeDirect(t, f, w, "direct", 5, again, drivertest.Seq(1, 3))
	drivertest.WantRows(t, "file 5", c, idemtype.Rows{Read: 3, Updated: 1, Unchanged: 2})
	wantDirect("file 5", n, 0)
	table[3] = "0|'zero'|NULL|" + ts + "|NULL|5|3"
	drivertest.WantTable(t, "file 5", f.Table("direct", "id", cols...), table...)
}

// TestNaturalKeyFallbackKeepsGuards: a batch with new keys and a stored
// key that its version makes stale falls back to the merge, which counts
// the stale row and leaves it as it is; and a batch that repeats a key is
// merged in rounds, never copied.
func TestNaturalKeyFallbackKeepsGuards(t *testing.T) {
	f := drivertest.Open(t, open(t))
	s := drivertest.Schema(drivertest.I64("id"), drivertest.I64("v"), drivertest.Str("name"))
	tg := sink.Target{Table: "guarded", Key: []string{"id"}, Version: "v"}
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	cols := []string{"id", "v", "name", sink.FileColumn, sink.RowColumn}

	drivertest.WantRows(t, "file 1", f.Write(w, 1, drivertest.Batch(t, s, []any{1, 5, "v5"}), drivertest.Ords(1)), idemtype.Rows{Read: 1, Inserted: 1})
	rec := drivertest.Batch(t, s, []any{2, 1, "two"}, []any{3, 1, "three"}, []any{1, 4, "v4"})
	drivertest.WantRows(t, "file 2", f.Write(w, 2, rec, drivertest.Seq(1, 3)), idemtype.Rows{Read: 3, Inserted: 2, Stale: 1})
	drivertest.WantTable(t, "file 2", f.Table("guarded", "id", cols...), "1|5|'v5'|1|1", "2|1|'two'|2|1", "3|1|'three'|2|2")

	// A merge that inserted every row lets the next batch be copied; this
	// one repeats key 4, and so is merged: the later row wins.
	drivertest.WantRows(t, "file 3", f.Write(w, 3, drivertest.Batch(t, s, []any{9, 1, "nine"}), drivertest.Ords(1)), idemtype.Rows{Read: 1, Inserted: 1})
	rep := drivertest.Batch(t, s, []any{4, 1, "first"}, []any{5, 1, "five"}, []any{4, 1, "second"})
	c, n := writeDirect(t, f, w, "guarded", 4, rep, drivertest.Seq(1, 3))
	drivertest.WantRows(t, "file 4", c, idemtype.Rows{Read: 3, Inserted: 2, Updated: 1})
	if n != 0 {
		t.Errorf("file 4 repeats a key, yet %d of its rows were copied straight into the table", n)
	}
	drivertest.WantTable(t, "file 4", f.Table("guarded", "id", cols...),
		"1|5|'v5'|1|1", "2|1|'two'|2|1", "3|1|'three'|2|2", "4|1|'second'|4|3", "5|1|'five'|4|2", "9|1|'nine'|3|1")

	// Keys in order but for one repeated: not all apart, so merged in
	// rounds too.
	drivertest.WantRows(t, "file 5", f.Write(w, 5, drivertest.Batch(t, s, []any{10, 1, "ten"}), drivertest.Ords(1)), idemtype.Rows{Read: 1, Inserted: 1})
	rep = drivertest.Batch(t, s, []any{11, 1, "eleven"}, []any{12, 1, "first"}, []any{12, 1, "second"}, []any{13, 1, "thirteen"})
	c, n = writeDirect(t, f, w, "guarded", 6, rep, drivertest.Seq(1, 4))
	drivertest.WantRows(t, "file 6", c, idemtype.Rows{Read: 4, Inserted: 3, Updated: 1})
	if n != 0 {
		t.Errorf("file 6 repeats a key, yet %d of its rows were copied straight into the table", n)
	}
	drivertest.WantTable(t, "file 6", f.Table("guarded", "id", cols...),
		"1|5|'v5'|1|1", "2|1|'two'|2|1", "3|1|'three'|2|2", "4|1|'second'|4|3", "5|1|'five'|4|2", "9|1|'nine'|3|1",
		"10|1|'ten'|5|1", "11|1|'eleven'|6|1", "12|1|'second'|6|3", "13|1|'thirteen'|6|4")
}

// TestNaturalKeyDirectCopiesDeadlock has two transactions copy the same
// new keys in opposite orders, each blocking the other: a holds key 2 from
// an earlier batch and copies key 1, b copies keys 1 and 2. Which one
// PostgreSQL fails to break the deadlock is set by their deadlock_timeout
// (the other's check would come a minute later):
//
//   - b, in its COPY: it rolls the COPY back and merges instead, waiting
//     for a (its merge may still meet a's COPY once more).
//   - a, in its COPY: rolled back to the COPY's savepoint, a still holds
//     key 2, which b waits for, and its merge waits for b's key 1: the
//     same deadlock again, and PostgreSQL fails a's merge.
//
// A Write that fails so must fail with an error Deadlock recognises: the
// transaction then rolls back, which lets the other go on, and runs again
// from its start, as the pipeline runs a partition again. Both commit,
// the victim last, each key stored once with the victim's values.
func TestNaturalKeyDirectCopiesDeadlock(t *testing.T) {
	for _, victim := range []string{"b", "a"} {
		t.Run("victim "+victim, func(t *testing.T) {
			env := open(t)
			setup := drivertest.Open(t, env)
			s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("name"))
			tg := sink.Target{Table: "dl", Key: []string{"id"}}
			setup.MustEnsure(tg, s)
			a, b := drivertest.Open(t, env), drivertest.Open(t, env)
			map[string]*drivertest.Fx{"a": b, "b": a}[victim].Exec(`SET deadlock_timeout = '60s'`)
			if victim == "b" {
				// b waits first: its check must come after a waits too,
				// however loaded the machine.
				b.Exec(`SET deadlock_timeout = '3s'`)
			}
			// again runs a failed transaction of f again, as the pipeline
			// runs a partition again: its batches (each with its ordinal) in
			// a new transaction, committed. The new transaction may meet the
			// other once more (its first COPY can take a key back before the
			// other, woken by the rollback, looks again), and is then rolled
			// back and run again, until it commits.
			again := func(f *drivertest.Fx, who string, err error, fileKey int64, rows ...[]any) idemtype.Rows {
				for try := 1; ; try++ {
					if !(Driver{}).Deadlock(err) {
						t.Errorf("%s (try %d): %v, not a deadlock Deadlock recognises", who, try, err)
						return idemtype.Rows{}
					}
					if try > 5 {
						t.Errorf("%s: still deadlocked after %d tries: %v", who, try, err)
						return idemtype.Rows{}
					}
					var c idemtype.Rows
					if c, err = writeAll(f, tg, s, fileKey, rows); err == nil {
						return c
					}
				}
			}
			wa, wb := a.Writer(tg, s), b.Writer(tg, s)
			txa, err := a.Conn.BeginTx(a.Ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			txb, err := b.Conn.BeginTx(b.Ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			pidB := b.Int(`SELECT pg_backend_pid()`)
			ca := a.WriteIn(txa, wa, 1, drivertest.Batch(t, s, []any{2, "a"}), drivertest.Ords(1))
			done := make(chan idemtype.Rows, 1)
			go func() {
				// Copies key 1, then waits for a's key 2.
				c, err := wb.Write(b.Ctx, txb, 2, drivertest.Batch(t, s, []any{1, "b"}, []any{2, "b"}), drivertest.Ords(1, 2))
				if err == nil {
					err = txb.Commit()
				}
				if err != nil {
					txb.Rollback()
					wb.Close()
					c = again(b, "b", err, 2, []any{1, "b"}, []any{2, "b"})
				}
				done <- c
			}()
			awaitLockWait(t, setup.Env.DB, int(pidB), done)
			// Waits for b's key 1: a deadlock.
			c, err := wa.Write(a.Ctx, txa, 1, drivertest.Batch(t, s, []any{1, "a"}), drivertest.Ords(2))
			if err == nil {
				err = txa.Commit()
			}
			if err != nil {
				txa.Rollback()
				wa.Close()
				ca = again(a, "a", err, 1, []any{2, "a"}, []any{1, "a"})
			} else {
				ca.Add(c)
			}
			cb := <-done
			if t.Failed() {
				return
			}
			if victim == "a" && err == nil {
				t.Fatalf("a was not the deadlock's victim")
			}
			var sum idemtype.Rows
			sum.Add(ca)
			sum.Add(cb)
			if sum.Inserted != 2 || sum.Updated != 2 || sum.Read != 4 {
				t.Errorf("counted %+v, want 2 inserted and 2 updated of 4", sum)
			}
			// The victim commits last: its values, and its file key (a's is
			// 1, b's 2).
			file := map[string]int{"a": 1, "b": 2}[victim]
			drivertest.WantTable(t, "after both", setup.Table("dl", "id", "id", "name", sink.FileColumn),
				fmt.Sprintf("1|'%s'|%d", victim, file), fmt.Sprintf("2|'%s'|%d", victim, file))
		})
	}
}

// writeAll writes rows, each its own batch with its ordinal, through a new
// writer in one transaction of f, and commits it; on an error the
// transaction is rolled back.
func writeAll(f *drivertest.Fx, tg sink.Target, s *arrow.Schema, fileKey int64, rows [][]any) (idemtype.Rows, error) {
	w := f.Writer(tg, s)
	defer w.Close()
	tx, err := f.Conn.BeginTx(f.Ctx, nil)
	if err != nil {
		return idemtype.Rows{}, err
	}
	var c idemtype.Rows
	for i, r := range rows {
		n, err := w.Write(f.Ctx, tx, fileKey, drivertest.Batch(f.T, s, r), drivertest.Ords(int64(i+1)))
		if err != nil {
			tx.Rollback()
			return idemtype.Rows{}, err
		}
		c.Add(n)
	}
	return c, tx.Commit()
}

// TestNaturalKeyMergeInKeyOrder: a merged batch writes its rows in the
// order of their keys (so that concurrent merges lock rows in one order),
// whether the merge sorts them (keys out of order) or they were staged in
// that order (increasing integer keys, merged without a sort). The heap
// shows the order: rows inserted one after another sit one after another.
func TestNaturalKeyMergeInKeyOrder(t *testing.T) {
	f := drivertest.Open(t, open(t))
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("name"))
	tg := sink.Target{Table: "ordered", Key: []string{"id"}}
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	drivertest.WantRows(t, "file 1", f.Write(w, 1, drivertest.Batch(t, s, []any{1, "one"}, []any{99, "ninety-nine"}), drivertest.Ords(1, 2)), idemtype.Rows{Read: 2, Inserted: 2})
	// Each batch updates stored key 1, and so is merged: those out of
	// order because their first row is stored (a merge that updates
	// turns direct copies off for the next), the one in order because its
	// last key, 99, is stored too (see splitNew). Key 1 is merged first
	// each time: its new version comes before the batch's new rows.
	steps := [][]int{{1, 12, 10, 11}, {1, 20, 21, 22, 99}, {1, 32, 30, 31}}
	for i, keys := range steps {
		var rows [][]any
		for _, k := range keys {
			rows = append(rows, []any{k, fmt.Sprint("file ", i+2)})
		}
		c, n := writeDirect(t, f, w, "ordered", int64(i+2), drivertest.Batch(t, s, rows...), drivertest.Seq(1, int64(len(rows))))
		drivertest.WantRows(t, fmt.Sprint("file ", i+2), c, idemtype.Rows{Read: int64(len(keys)), Inserted: 3, Updated: int64(len(keys)) - 3})
		if n != 0 {
			t.Errorf("file %d: %d rows copied straight into the table, want the batch merged", i+2, n)
		}
	}
	drivertest.WantTable(t, "in the heap's order", f.Table("ordered", "ctid", "id"),
		"10", "11", "12", "20", "21", "22", "99", "1", "30", "31", "32")
}
