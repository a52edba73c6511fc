//go:build cgo

package sqlite

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	_ "github.com/mattn/go-sqlite3"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// open returns a real SQLite file in a temporary directory, opened as the
// pipeline opens its targets.
func open(t *testing.T) drivertest.Env {
	t.Helper()
	path := filepath.Join(t.TempDir(), "target.db")
	db, err := Driver{}.Open(t.Context(), "sqlite://"+path, sink.Settings{BusyTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.DB.Close() }) // after the fixture's connection closes
	return drivertest.Env{
		DB:           db.DB,
		Driver:       Driver{},
		AutoKey:      "INTEGER PRIMARY KEY",
		CountUpdates: countUpdates,
	}
}

// countUpdates counts the updated rows of table with a trigger.
func countUpdates(t *testing.T, conn *sql.Conn, table string) func() int64 {
	t.Helper()
	f := &drivertest.Fx{T: t, Ctx: t.Context(), Conn: conn, Env: drivertest.Env{Driver: Driver{}}}
	f.Exec(`CREATE TABLE IF NOT EXISTS updates (tbl TEXT PRIMARY KEY, n INTEGER NOT NULL)`)
	f.Exec(`INSERT INTO updates VALUES (?, 0)`, table)
	f.Exec(`CREATE TRIGGER ` + q(table+"_count_updates") + ` AFTER UPDATE ON ` + q(table) +
		` BEGIN UPDATE updates SET n = n + 1 WHERE tbl = ` + fmt.Sprintf("'%s'", table) + `; END`)
	return func() int64 { return f.Int(`SELECT n FROM updates WHERE tbl = ?`, table) }
}

func TestTarget(t *testing.T) { drivertest.RunTarget(t, open) }

// openStore returns a fresh SQLite file opened through the driver.
func openStore(t *testing.T) drivertest.Store {
	t.Helper()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "store.db")
	return drivertest.OpenStore(t, Driver{}, dsn, sink.Settings{BusyTimeout: 10 * time.Second}, func(t *testing.T, db *sql.DB) []string {
		return drivertest.Strings(t, db, `SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM sqlite_master ORDER BY type, name`)
	})
}

func TestLedger(t *testing.T) { drivertest.RunLedger(t, openStore) }

func TestCheckpoint(t *testing.T) { drivertest.RunCheckpoint(t, openStore) }

// strs returns the single text column of every row query selects.
func strs(t *testing.T, f *drivertest.Fx, query string, args ...any) []string {
	t.Helper()
	rows, err := f.Conn.QueryContext(f.Ctx, query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestTableLayouts: target tables are rowid tables keyed by a unique index
// on (file key, row ordinal) in ordinal mode, on a composite or text key
// otherwise; a single integer key is the rowid.
func TestTableLayouts(t *testing.T) {
	f := drivertest.Open(t, open(t))
	for _, c := range []struct {
		tg     sink.Target
		wr     int64
		pk     []string
		unique []string // the columns of its one unique index
		decl   string
	}{
		{sink.Target{Table: "ord"}, 0, nil, []string{sink.FileColumn, sink.RowColumn}, ""},
		{sink.Target{Table: "comp", Key: []string{"s", "id"}}, 0, nil, []string{"s", "id"}, ""},
		{sink.Target{Table: "text_key", Key: []string{"s"}}, 0, nil, []string{"s"}, ""},
		{sink.Target{Table: "int_key", Key: []string{"id"}}, 0, []string{"id"}, nil, "id INTEGER PRIMARY KEY"},
	} {
		f.MustEnsure(c.tg, drivertest.Schema(drivertest.I64("id"), drivertest.Str("s")))
		if wr := f.Int(`SELECT wr FROM pragma_table_list WHERE name = ?`, c.tg.Table); wr != c.wr {
			t.Errorf("%s: wr = %d, want %d", c.tg.Table, wr, c.wr)
		}
		if pk := strs(t, f, `SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk`, c.tg.Table); !slices.Equal(pk, c.pk) {
			t.Errorf("%s: primary key %v, want %v", c.tg.Table, pk, c.pk)
		}
		unique := strs(t, f, `SELECT i.name FROM pragma_index_list(?) l, pragma_index_info(l.name) i WHERE l."unique" = 1 ORDER BY l.name, i.seqno`, c.tg.Table)
		if !slices.Equal(unique, c.unique) {
			t.Errorf("%s: unique index on %v, want %v", c.tg.Table, unique, c.unique)
		}
		if c.decl != "" {
			sqlText := strs(t, f, `SELECT sql FROM sqlite_master WHERE name = ?`, c.tg.Table)
			if len(sqlText) != 1 || !strings.Contains(sqlText[0], `"id" INTEGER PRIMARY KEY`) {
				t.Errorf("%s: %v does not declare %s", c.tg.Table, sqlText, c.decl)
			}
		}
	}
}

// TestWideRowsStoredCompactly: rows of about 1 KiB take about their own
// size in the file, not a page each, keyed by their place in the file or
// by a short text key; in a WITHOUT ROWID table most of each row went to
// an overflow page of its own (4.2 times the data here). The rows read
// back exactly.
func TestWideRowsStoredCompactly(t *testing.T) {
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("k"), drivertest.Str("s"))
	for _, tg := range []sink.Target{{Table: "wide"}, {Table: "wide_text_key", Key: []string{"k"}}} {
		f := drivertest.Open(t, open(t)) // a file of its own, whose size is the table's
		f.MustEnsure(tg, s)
		w := f.Writer(tg, s)
		const rows, width = 3000, 1100
		var data int64
		var want []string
		for first := 1; first <= rows; first += 500 {
			var vals [][]any
			for i := first; i < first+500; i++ {
				k := fmt.Sprintf("key-%05d", i)
				v := strings.Repeat(string(rune('a'+i%26)), width)
				vals = append(vals, []any{i, k, v})
				data += int64(len(k)+len(v)) + 8
				want = append(want, fmt.Sprintf("%d|'%s'|'%s'", i, k, v))
			}
			f.Write(w, 1, drivertest.Batch(t, s, vals...), drivertest.Seq(int64(first), int64(first+499)))
		}
		drivertest.WantTable(t, tg.Table, f.Table(tg.Table, "id", "id", "k", "s"), want...)
		if stored := f.Int(`SELECT page_count * page_size FROM pragma_page_count, pragma_page_size`); stored > data*3/2 {
			t.Errorf("%s: %d rows of %d bytes (%d bytes of data) take %d bytes: %.1f times their size", tg.Table, rows, width, data, stored, float64(stored)/float64(data))
		}
	}
}

// TestUnchangedWritesNothing: rewriting the same batch changes no row at
// all, by SQLite's own count of changes.
func TestUnchangedWritesNothing(t *testing.T) {
	f := drivertest.Open(t, open(t))
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("name"))
	for _, tg := range []sink.Target{{Table: "ord"}, {Table: "nat", Key: []string{"id"}}} {
		f.MustEnsure(tg, s)
		w := f.Writer(tg, s)
		rec := drivertest.Batch(t, s, []any{1, "a"}, []any{2, "b"})
		f.Write(w, 1, rec, drivertest.Seq(1, 2))
		before := f.Int(`SELECT total_changes()`)
		drivertest.WantRows(t, tg.Table, f.Write(w, 1, rec, drivertest.Seq(1, 2)), idemtype.Rows{Read: 2, Unchanged: 2})
		if after := f.Int(`SELECT total_changes()`); after != before {
			t.Errorf("%s: rewriting the same batch changed %d rows", tg.Table, after-before)
		}
		changed := drivertest.Batch(t, s, []any{1, "a"}, []any{2, "B"}, []any{3, "c"})
		f.Write(w, 1, changed, drivertest.Seq(1, 3))
		if d := f.Int(`SELECT total_changes()`) - before; d != 2 {
			t.Errorf("%s: one update and one insert made %d changes", tg.Table, d)
		}
	}
}

func TestDescribe(t *testing.T) {
	f := drivertest.Open(t, open(t))
	f.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, flag BOOLEAN NOT NULL DEFAULT 0, at TIMESTAMP, doc JSON, x REAL, blob BLOB)`)
	f.Exec(`CREATE UNIQUE INDEX t_at_x ON t (at, x)`)
	tbl, err := (Driver{}).Describe(f.Ctx, f.Conn, "t")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range tbl.Columns {
		got = append(got, fmt.Sprintf("%s %s kind=%s notnull=%v default=%v", c.Name, c.SQLType, c.Kind, c.NotNull, c.Default))
	}
	drivertest.WantTable(t, "columns", got,
		"id INTEGER kind=int64 notnull=false default=true",
		"flag BOOLEAN kind=bool notnull=true default=true",
		"at TIMESTAMP kind=timestamptz notnull=false default=false",
		"doc JSON kind=json notnull=false default=false",
		"x REAL kind=float64 notnull=false default=false",
		"blob BLOB kind=unknown notnull=false default=false")
	if !tbl.HasKey([]string{"id"}) || !tbl.HasKey([]string{"x", "at"}) || tbl.HasKey([]string{"at"}) {
		t.Errorf("keys: %v", tbl.Keys)
	}

	// Only the rowid is filled in by SQLite when a row gives no value; an
	// INTEGER primary key that is not the rowid is not.
	for ddl, want := range map[string]string{
		`CREATE TABLE r1 (id INTEGER PRIMARY KEY, x TEXT)`:               "notnull=false default=true",
		`CREATE TABLE r2 (id integer, x TEXT, PRIMARY KEY (id DESC))`:    "notnull=false default=true",
		`CREATE TABLE r3 (id INTEGER PRIMARY KEY DESC, x TEXT)`:          "notnull=false default=false",
		`CREATE TABLE r4 (id INTEGER PRIMARY KEY, x TEXT) WITHOUT ROWID`: "notnull=true default=false",
		`CREATE TABLE r5 (id INT PRIMARY KEY, x TEXT)`:                   "notnull=false default=false",
		`CREATE TABLE r6 (id INTEGER, x TEXT, PRIMARY KEY (id, x))`:      "notnull=false default=false",
	} {
		f.Exec(ddl)
		name := strings.Fields(ddl)[2]
		tbl, err := (Driver{}).Describe(f.Ctx, f.Conn, name)
		if err != nil {
			t.Fatal(err)
		}
		c := tbl.Column("id")
		if got := fmt.Sprintf("notnull=%v default=%v", c.NotNull, c.Default); got != want {
			t.Errorf("%s: id is %s, want %s", ddl, got, want)
		}
		if !tbl.HasKey([]string{"id"}) && name != "r6" {
			t.Errorf("%s: keys %v", ddl, tbl.Keys)
		}
	}
}

// TestStorageClasses: booleans are stored as integers, timestamps as
// fixed-width UTC text, JSON as text, under declared types that say what
// they hold.
func TestStorageClasses(t *testing.T) {
	f := drivertest.Open(t, open(t))
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Bool("ok"), drivertest.TS("at"), drivertest.JSON("doc"), drivertest.F64("x"), drivertest.Str("s"))
	tg := sink.Target{Table: "ord"}
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	rec := drivertest.Batch(t, s,
		[]any{1, true, time.Date(2026, 11, 28, 10, 30, 0, 123456000, time.FixedZone("x", 3600)), `{"a": [1,2]}`, 2.0, "1"},
		[]any{2, nil, nil, nil, nil, nil})
	f.Write(w, 1, rec, drivertest.Seq(1, 2))
	got := strs(t, f, `SELECT typeof(ok) || ' ' || quote(ok) || ' ' || typeof(at) || ' ' || quote(at) || ' ' || typeof(doc) || ' ' || quote(doc) ||
		' ' || typeof(x) || ' ' || quote(x) || ' ' || typeof(s) || ' ' || quote(s) FROM ord ORDER BY id`)
	drivertest.WantTable(t, "storage classes", got,
		`integer 1 text '2026-11-28T09:30:00.123456Z' text '{"a": [1,2]}' real 2.0 text '1'`,
		`null NULL null NULL null NULL null NULL null NULL`)
	decl := strs(t, f, `SELECT name || ' ' || type FROM pragma_table_info('ord') ORDER BY cid`)
	drivertest.WantTable(t, "declared types", decl,
		"_idemport_file INTEGER", "_idemport_row INTEGER", "id INTEGER", "ok BOOLEAN", "at TIMESTAMP", "doc TEXT", "x REAL", "s TEXT")
}

// writeErr runs one Write in its own transaction, rolled back, and returns
// its error.
func writeErr(t *testing.T, f *drivertest.Fx, w sink.Writer, fileKey int64, rec arrow.RecordBatch, ordinals []int64) error {
	t.Helper()
	tx, err := f.Conn.BeginTx(f.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	_, err = w.Write(f.Ctx, tx, fileKey, rec, ordinals)
	return err
}

// TestBatchErrorNamesRow: a batch written in one statement step still names
// the row it failed on, whether the batch is inserted or upserted, and a
// timestamp SQLite's text form cannot hold fails the batch.
func TestBatchErrorNamesRow(t *testing.T) {
	f := drivertest.Open(t, open(t))
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("s"), drivertest.TS("at"))
	tg := sink.Target{Table: "chk"}
	f.Exec(`CREATE TABLE chk (_idemport_file INTEGER NOT NULL, _idemport_row INTEGER NOT NULL, id INTEGER, s TEXT CHECK (s <> 'bad'), at TIMESTAMP,
		PRIMARY KEY (_idemport_file, _idemport_row)) WITHOUT ROWID`)
	w := f.Writer(tg, s)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	bad := drivertest.Batch(t, s, []any{1, "a", at}, []any{2, "b", at}, []any{3, "bad", at}, []any{4, "d", at})
	err := writeErr(t, f, w, 7, bad, drivertest.Seq(11, 14))
	if err == nil || !strings.Contains(err.Error(), "row 13 ") || !strings.Contains(err.Error(), "CHECK") {
		t.Errorf("insert: %v, want an error naming row 13 and the CHECK constraint", err)
	}
	// With rows 11 and 12 stored, the batch goes through the upsert.
	f.Write(w, 7, drivertest.Batch(t, s, []any{1, "a", at}, []any{2, "b", at}), drivertest.Seq(11, 12))
	if err := writeErr(t, f, w, 7, bad, drivertest.Seq(11, 14)); err == nil || !strings.Contains(err.Error(), "row 13 ") {
		t.Errorf("upsert: %v, want an error naming row 13", err)
	}
	far := drivertest.Batch(t, s, []any{5, "e", at}, []any{6, "f", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err := writeErr(t, f, w, 7, far, drivertest.Seq(15, 16)); err == nil || !strings.Contains(err.Error(), "row 16 ") || !strings.Contains(err.Error(), "outside the years 0000-9999") {
		t.Errorf("year 10000: %v, want an error naming row 16 and the range", err)
	}
	drivertest.WantTable(t, "chk", f.Table("chk", "id", "id", "s"), "1|'a'", "2|'b'")
}

// TestNaturalKeyInsertsFirst: with natural keys, rows with new keys go in
// with a plain insert and no probe while most rows of the last batch were
// new; after a batch of mostly stored keys every row is probed. Either way
// the counts and values are exact, and a row that breaks a constraint or
// holds a timestamp SQLite's text cannot, fails naming it.
func TestNaturalKeyInsertsFirst(t *testing.T) {
	f := drivertest.Open(t, open(t))
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("s"), drivertest.TS("at"))
	f.Exec(`CREATE TABLE nk (id INTEGER PRIMARY KEY, s TEXT CHECK (s <> 'bad'), at TIMESTAMP, _idemport_file INTEGER, _idemport_row INTEGER)`)
	w := f.Writer(sink.Target{Table: "nk", Key: []string{"id"}}, s).(*writer)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	step := func(name string, rec arrow.RecordBatch, ords []int64, want idemtype.Rows, probes int) {
		t.Helper()
		before := w.probe.runs()
		drivertest.WantRows(t, name, f.Write(w, 1, rec, ords), want)
		if got := w.probe.runs() - before; got != probes {
			t.Errorf("%s: %d probes, want %d", name, got, probes)
		}
	}
	step("new keys", drivertest.Batch(t, s, []any{1, "a", at}, []any{2, "b", at}, []any{3, "c", at}, []any{4, "d", at}),
		drivertest.Seq(1, 4), idemtype.Rows{Read: 4, Inserted: 4}, 0)
	// Tried with the insert first: the three stored keys fail it and are probed.
	step("mostly stored", drivertest.Batch(t, s, []any{1, "a", at}, []any{2, "B", at}, []any{5, "e", at}, []any{3, "c", at}),
		drivertest.Seq(1, 4), idemtype.Rows{Read: 4, Inserted: 1, Updated: 1, Unchanged: 2}, 3)
	// Probed first, new or not; the key repeated in the batch too.
	step("after stored keys", drivertest.Batch(t, s, []any{6, "f", at}, []any{4, "d", at}, []any{6, "F", at}, []any{3, "c", at}),
		drivertest.Seq(5, 8), idemtype.Rows{Read: 4, Inserted: 1, Updated: 1, Unchanged: 2}, 4)
	// Most of the last batch was not new: probed first again, but now most is.
	step("back to new keys", drivertest.Batch(t, s, []any{8, "h", at}, []any{9, "i", at}, []any{10, "j", at}),
		drivertest.Seq(9, 11), idemtype.Rows{Read: 3, Inserted: 3}, 3)
	step("new keys again", drivertest.Batch(t, s, []any{11, "k", at}, []any{12, "l", at}, []any{11, "K", at}),
		drivertest.Seq(12, 14), idemtype.Rows{Read: 3, Inserted: 2, Updated: 1}, 1)
	want := []string{"1|'a'|1|1", "2|'B'|1|2", "3|'c'|1|3", "4|'d'|1|4", "5|'e'|1|3", "6|'F'|1|7", "8|'h'|1|9", "9|'i'|1|10", "10|'j'|1|11", "11|'K'|1|14", "12|'l'|1|13"}
	drivertest.WantTable(t, "nk", f.Table("nk", "id", "id", "s", "_idemport_file", "_idemport_row"), want...)

	bad := drivertest.Batch(t, s, []any{20, "x", at}, []any{21, "bad", at}, []any{22, "y", at})
	if err := writeErr(t, f, w, 2, bad, drivertest.Seq(1, 3)); err == nil || !strings.Contains(err.Error(), "row 2 ") || !strings.Contains(err.Error(), "CHECK") {
		t.Errorf("new key breaking a CHECK: %v, want an error naming row 2 and the CHECK constraint", err)
	}
	far := drivertest.Batch(t, s, []any{23, "x", at}, []any{24, "y", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err := writeErr(t, f, w, 2, far, drivertest.Seq(1, 2)); err == nil || !strings.Contains(err.Error(), "row 2 ") || !strings.Contains(err.Error(), "outside the years 0000-9999") {
		t.Errorf("year 10000: %v, want an error naming row 2 and the range", err)
	}
	drivertest.WantTable(t, "nk after failed writes", f.Table("nk", "id", "id", "s", "_idemport_file", "_idemport_row"), want...)
}

// TestNaturalKeyNewBatchInOneStep: with natural keys, a batch of new keys,
// while the last batch's were all new, goes in whole in one statement step,
// probing and inserting nothing row by row. A batch with a stored key fails
// that step, which changes nothing, and is written row by row, each row
// counted exactly (the rows before the stored key inserted once); the next
// batch goes row by row, and once one is all new the one after it is
// inserted whole again. A row the table refuses fails the step and then
// its own insert, named.
func TestNaturalKeyNewBatchInOneStep(t *testing.T) {
	f := drivertest.Open(t, open(t))
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("s"), drivertest.TS("at"))
	f.Exec(`CREATE TABLE nk (id INTEGER PRIMARY KEY, s TEXT CHECK (s <> 'bad'), at TIMESTAMP, _idemport_file INTEGER, _idemport_row INTEGER)`)
	w := f.Writer(sink.Target{Table: "nk", Key: []string{"id"}}, s).(*writer)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	step := func(name string, rec arrow.RecordBatch, ords []int64, want idemtype.Rows, whole, rows int) {
		t.Helper()
		wholeBefore, rowsBefore := w.insertAll.runs(), w.insert.runs()
		drivertest.WantRows(t, name, f.Write(w, 1, rec, ords), want)
		if got := w.insertAll.runs() - wholeBefore; got != whole {
			t.Errorf("%s: %d steps of the whole batch's insert, want %d", name, got, whole)
		}
		if got := w.insert.runs() - rowsBefore; got != rows {
			t.Errorf("%s: %d row inserts, want %d", name, got, rows)
		}
	}
	step("new keys", drivertest.Batch(t, s, []any{1, "a", at}, []any{2, "b", at}, []any{3, "c", at}),
		drivertest.Seq(1, 3), idemtype.Rows{Read: 3, Inserted: 3}, 1, 0)
	step("a stored key after new ones", drivertest.Batch(t, s, []any{4, "d", at}, []any{5, "e", at}, []any{2, "B", at}, []any{6, "f", at}),
		drivertest.Seq(4, 7), idemtype.Rows{Read: 4, Inserted: 3, Updated: 1}, 1, 4)
	step("new keys after a stored one", drivertest.Batch(t, s, []any{7, "g", at}, []any{8, "h", at}),
		drivertest.Seq(8, 9), idemtype.Rows{Read: 2, Inserted: 2}, 0, 2)
	step("new keys again", drivertest.Batch(t, s, []any{9, "i", at}, []any{10, "j", at}),
		drivertest.Seq(10, 11), idemtype.Rows{Read: 2, Inserted: 2}, 1, 0)
	want := []string{"1|'a'|1", "2|'B'|6", "3|'c'|3", "4|'d'|4", "5|'e'|5", "6|'f'|7", "7|'g'|8", "8|'h'|9", "9|'i'|10", "10|'j'|11"}
	drivertest.WantTable(t, "nk", f.Table("nk", "id", "id", "s", "_idemport_row"), want...)

	bad := drivertest.Batch(t, s, []any{20, "x", at}, []any{21, "bad", at}, []any{22, "y", at})
	if err := writeErr(t, f, w, 2, bad, drivertest.Seq(1, 3)); err == nil || !strings.Contains(err.Error(), "row 2 ") || !strings.Contains(err.Error(), "CHECK") {
		t.Errorf("new key breaking a CHECK: %v, want an error naming row 2 and the CHECK constraint", err)
	}
	drivertest.WantTable(t, "nk after a failed write", f.Table("nk", "id", "id", "s", "_idemport_row"), want...)
}

// TestWritersShareConnection: writers of the same and of different widths
// on one connection each keep working, whichever was made last.
func TestWritersShareConnection(t *testing.T) {
	f := drivertest.Open(t, open(t))
	narrow := drivertest.Schema(drivertest.I64("id"), drivertest.Str("s"))
	wide := drivertest.Schema(drivertest.I64("id"), drivertest.Str("s"), drivertest.F64("x"))
	var ws []sink.Writer
	for i, s := range []*arrow.Schema{narrow, wide, narrow} {
		tg := sink.Target{Table: fmt.Sprintf("t%d", i)}
		f.MustEnsure(tg, s)
		ws = append(ws, f.Writer(tg, s))
	}
	for round := range 2 {
		for i, s := range []*arrow.Schema{narrow, wide, narrow} {
			row := []any{round, fmt.Sprint("r", round)}
			if s == wide {
				row = append(row, 1.5)
			}
			got := f.Write(ws[i], 1, drivertest.Batch(t, s, row), drivertest.Seq(int64(round), int64(round)))
			drivertest.WantRows(t, fmt.Sprintf("t%d round %d", i, round), got, idemtype.Rows{Read: 1, Inserted: 1})
		}
	}
	drivertest.WantTable(t, "t1", f.Table("t1", "id", "id", "s", "x"), "0|'r0'|1.5", "1|'r1'|1.5")
}

// TestPageCacheBySpread: a writer that appends (an ordinal import into a
// table with no index of its own) sizes the connection's page cache small,
// and one whose rows land anywhere (a natural key, or an index of the
// table's) large, whichever wrote before on the connection; either lets a
// transaction's dirty pages grow to spillKiB before they spill to the log.
func TestPageCacheBySpread(t *testing.T) {
	f := drivertest.Open(t, open(t))
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("name"))
	ord, nat, indexed := sink.Target{Table: "ord"}, sink.Target{Table: "nat", Key: []string{"id"}}, sink.Target{Table: "indexed"}
	for _, tg := range []sink.Target{ord, nat, indexed} {
		f.MustEnsure(tg, s)
	}
	f.Exec(`CREATE INDEX indexed_name ON indexed (name)`)
	page := f.Int(`PRAGMA page_size`)
	for _, c := range []struct {
		tg   sink.Target
		want int64
	}{{ord, -appendCacheKiB}, {nat, -cacheKiB}, {ord, -appendCacheKiB}, {indexed, -cacheKiB}} {
		f.Writer(c.tg, s)
		if got := f.Int(`PRAGMA cache_size`); got != c.want {
			t.Errorf("writer for %s: cache_size %d, want %d", c.tg.Table, got, c.want)
		}
		// cache_spill reads in pages, each with a header of SQLite's.
		spill := f.Int(`PRAGMA cache_spill`) * page
		if spill > spillKiB<<10 || spill < spillKiB<<10*9/10 {
			t.Errorf("writer for %s: dirty pages spill past %d bytes, want about %d", c.tg.Table, spill, spillKiB<<10)
		}
	}
	// Closed, an appending writer gives the connection its cache back:
	// the next statement on it may write a table with indexes.
	w, err := f.Env.Driver.Writer(f.Ctx, f.Conn, ord, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := f.Int(`PRAGMA cache_size`); got != -cacheKiB {
		t.Errorf("after the writer for ord closed: cache_size %d, want %d", got, -cacheKiB)
	}
}
