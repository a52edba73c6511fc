package mysql

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// statements returns a function that tells how many LOAD DATA and
// INSERT … VALUES statements f's connection has run since statements was
// called (the server's Com_load and Com_insert; INSERT … SELECT and
// UPDATE count apart).
func statements(f *drivertest.Fx) func() (loads, inserts int64) {
	f.T.Helper()
	read := func() (int64, int64) {
		f.T.Helper()
		rows, err := f.Conn.QueryContext(f.Ctx, `SHOW SESSION STATUS WHERE Variable_name IN ('Com_load', 'Com_insert')`)
		if err != nil {
			f.T.Fatal(err)
		}
		defer rows.Close()
		var loads, inserts int64
		for rows.Next() {
			var name string
			var v int64
			if err := rows.Scan(&name, &v); err != nil {
				f.T.Fatal(err)
			}
			if name == "Com_load" {
				loads = v
			} else {
				inserts = v
			}
		}
		if err := rows.Err(); err != nil {
			f.T.Fatal(err)
		}
		return loads, inserts
	}
	l0, i0 := read()
	return func() (int64, int64) {
		f.T.Helper()
		l, i := read()
		return l - l0, i - i0
	}
}

// TestWriterLoadsEveryByte: the rows go through LOAD DATA LOCAL, straight
// into the table (ordinal mode's first load, and natural keys none of
// which is stored) and into the staging table (a second load, which
// changes rows), and every string keeps its bytes: tabs, newlines,
// carriage returns, backslashes, NUL, the texts \N and NULL, 4-byte UTF-8,
// the empty string apart from NULL, and JSON as written. No batch falls
// back to INSERT statements, which would hide a line the server read
// otherwise than it was meant.
func TestWriterLoadsEveryByte(t *testing.T) {
	f := writerFx(t)
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("s"), drivertest.JSON("j"), drivertest.Dec("d"), drivertest.F64("x"))
	texts := []any{"tab\there", "line\nbreak", "cr\r\nlf", `back\slash\`, `\N`, "NULL", "nul\x00byte", `\`, "", nil,
		"\\t\\n", "𝄞 😀\tü", "end\t", "\t", "\n", "\\\\N"}
	var rows, changed [][]any
	var want, wantChanged []string
	for i, v := range texts {
		j, d := any(fmt.Sprintf(`{"k": %q, "n": [1, 2.50]}`, fmt.Sprint(v))), any(fmt.Sprintf("%d.50", i))
		x, cx := any(0.1*float64(i)), any(2.5)
		if v == nil {
			j, d, x, cx = nil, nil, nil, nil
		}
		rows = append(rows, []any{i + 1, v, j, d, x})
		changed = append(changed, []any{i + 1, v, j, d, cx})
		want = append(want, fmt.Sprintf("%d|%s|%s|%s|%s", i+1, sqlText(v), sqlText(j), sqlText(d), floatText(x)))
		wantChanged = append(wantChanged, fmt.Sprintf("%d|%s|%s|%s|%s", i+1, sqlText(v), sqlText(j), sqlText(d), floatText(cx)))
	}
	n := int64(len(rows))
	for _, tg := range []sink.Target{{Table: "ord"}, {Table: "nat", Key: []string{"id"}}} {
		f.MustEnsure(tg, s)
		w := f.Writer(tg, s)
		for _, step := range []struct {
			what string
			rows [][]any
			want []string
			rc   idemtype.Rows
		}{
			{"first", rows, want, idemtype.Rows{Read: n, Inserted: n}},
			{"changed", changed, wantChanged, idemtype.Rows{Read: n, Updated: n - 1, Unchanged: 1}},
		} {
			count := statements(f)
			drivertest.WantRows(t, tg.Table+" "+step.what, f.Write(w, 1, drivertest.Batch(t, s, step.rows...), drivertest.Seq(1, n)), step.rc)
			drivertest.WantTable(t, tg.Table+" "+step.what, f.Table(tg.Table, "id", "id", "s", "j:string", "d:string", "x"), step.want...)
			// The changed rows are staged and merged: one load (by natural
			// key the stored first key keeps them from the table's).
			if loads, inserts := count(); loads == 0 || inserts != 0 {
				t.Errorf("%s %s: %d loads and %d INSERT statements, want loads and no INSERT", tg.Table, step.what, loads, inserts)
			}
		}
	}
}

// TestWriterLoadsLinesAcrossPackets: the driver sends a load's lines a
// packet (16 KiB) at a time, and a batch of many rows, some longer than a
// packet and some escaped, arrives whole and in order, each value exact,
// in ordinal mode as by natural key, through loads alone.
func TestWriterLoadsLinesAcrossPackets(t *testing.T) {
	f := writerFx(t)
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("s"), drivertest.I64("n"))
	const n = 3000
	var rows [][]any
	var want []string
	for i := range n {
		v := any(fmt.Sprintf("%d:%s", i, strings.Repeat("ab\\t\tc\n", i%37)))
		switch {
		case i%500 == 7:
			v = strings.Repeat(fmt.Sprintf("%d\t", i), 40<<10/4) // longer than a packet (16 KiB)
		case i%11 == 0:
			v = nil
		}
		rows = append(rows, []any{i + 1, v, i * 3})
		want = append(want, fmt.Sprintf("%d|%s|%d", i+1, sqlText(v), i*3))
	}
	for _, tg := range []sink.Target{{Table: "ord"}, {Table: "nat", Key: []string{"id"}}} {
		f.MustEnsure(tg, s)
		w := f.Writer(tg, s)
		count := statements(f)
		drivertest.WantRows(t, tg.Table, f.Write(w, 1, drivertest.Batch(t, s, rows...), drivertest.Seq(1, n)), idemtype.Rows{Read: n, Inserted: n})
		got := f.Table(tg.Table, "id", "id", "s", "n")
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows, want %d", tg.Table, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: row %d differs:\n got %.200s\nwant %.200s", tg.Table, i+1, got[i], want[i])
			}
		}
		if loads, inserts := count(); loads != 1 || inserts != 0 {
			t.Errorf("%s: %d loads and %d INSERT statements, want one load", tg.Table, loads, inserts)
		}
	}
}

// sqlText is v as drivertest.Fx.Table renders a string column.
func sqlText(v any) string {
	if v == nil {
		return "NULL"
	}
	return "'" + v.(string) + "'"
}

// floatText is v as drivertest.Fx.Table renders a float column.
func floatText(v any) string {
	if v == nil {
		return "NULL"
	}
	s := strconv.FormatFloat(v.(float64), 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// TestWriterLoadWarnings: with LOCAL the server turns what strict mode
// refuses into warnings, cutting, clamping or skipping the row; the
// Writer sees the warnings, undoes the load and fails the Write with the
// *sink.RowError an INSERT gets, in ordinal mode as by natural key, and
// the transaction goes on without any of the refused rows.
func TestWriterLoadWarnings(t *testing.T) {
	f := writerFx(t)
	s := drivertest.Schema(drivertest.I64("id"), drivertest.I64("small"), drivertest.Str("code"), drivertest.I64("u"), drivertest.JSON("j"))
	for _, tg := range []sink.Target{{Table: "ord"}, {Table: "nat", Key: []string{"id"}}} {
		key := `PRIMARY KEY (id)`
		if tg.Ordinal() {
			key = `PRIMARY KEY (` + q(sink.FileColumn) + `, ` + q(sink.RowColumn) + `)`
		}
		f.Exec(`CREATE TABLE ` + q(tg.Table) + ` (id BIGINT, small SMALLINT, code VARCHAR(3), u INT, j LONGTEXT CHECK (json_valid(j)),
			` + q(sink.FileColumn) + ` BIGINT, ` + q(sink.RowColumn) + ` BIGINT, ` + key + `, UNIQUE KEY u (u))`)
		f.MustEnsure(tg, s)
		w := f.Writer(tg, s)
		cases := []struct {
			name   string
			row    []any
			code   string
			column string
		}{
			{"out of range", []any{2, 40000, "ok", 2, "[]"}, sink.CodeRefused, "small"},
			{"too long", []any{2, 1, "long", 2, "[]"}, sink.CodeRefused, "code"},
			{"a good row", []any{2, 1, "ok", 2, "[]"}, "", ""},
			{"unique", []any{3, 1, "ok", 1, "[]"}, sink.CodeConstraint, ""},
			{"check", []any{3, 1, "ok", 3, "{"}, sink.CodeConstraint, ""},
		}
		tx, err := f.Conn.BeginTx(f.Ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteIn(tx, w, 1, drivertest.Batch(t, s, []any{1, 1, "ok", 1, "{}"}), drivertest.Ords(1))
		for i, c := range cases {
			_, err := w.Write(f.Ctx, tx, 1, drivertest.Batch(t, s, c.row), drivertest.Ords(int64(i+2)))
			if c.code == "" {
				if err != nil {
					t.Errorf("%s %s: %v", tg.Table, c.name, err)
				}
				continue
			}
			var re *sink.RowError
			if !errors.As(err, &re) {
				t.Errorf("%s %s: %v, want a *sink.RowError", tg.Table, c.name, err)
				continue
			}
			if re.Code != c.code || re.Column != c.column || re.Reason == "" {
				t.Errorf("%s %s: code %q, column %q, reason %q; want %q, %q and a reason", tg.Table, c.name, re.Code, re.Column, re.Reason, c.code, c.column)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		drivertest.WantTable(t, tg.Table+" after the refused rows", f.Table(tg.Table, "id", "id", "small", "code", "u", "j:string"),
			"1|1|'ok'|1|'{}'", "2|1|'ok'|2|'[]'")
	}
}

// TestWriterWithoutLocalInfile: a server that takes no LOAD DATA LOCAL
// (local_infile off) gets the rows in INSERT statements, whether it was
// off when the Writer was made or turned off after. The test turns the
// server's global setting off for its length; the Writers of other tests
// that meet it take the same path.
func TestWriterWithoutLocalInfile(t *testing.T) {
	f := writerFx(t)
	if f.Int(`SELECT @@GLOBAL.local_infile`) == 0 {
		t.Skip("local_infile is off on the test server")
	}
	t.Cleanup(func() { f.Exec(`SET GLOBAL local_infile = 1`) })
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("s"))
	rows := [][]any{{1, "a\tb"}, {2, ""}, {3, nil}}
	want := []string{"1|'a\tb'", "2|''", "3|NULL"}
	for _, tg := range []sink.Target{{Table: "ord"}, {Table: "nat", Key: []string{"id"}}} {
		for _, made := range []string{"before", "after"} {
			f.Exec(`SET GLOBAL local_infile = 1`)
			table := tg
			table.Table += "_" + made
			f.MustEnsure(table, s)
			if made == "before" {
				f.Exec(`SET GLOBAL local_infile = 0`)
			}
			w := f.Writer(table, s)
			f.Exec(`SET GLOBAL local_infile = 0`)
			count := statements(f)
			drivertest.WantRows(t, table.Table, f.Write(w, 1, drivertest.Batch(t, s, rows...), drivertest.Seq(1, 3)), idemtype.Rows{Read: 3, Inserted: 3})
			drivertest.WantRows(t, table.Table+" again", f.Write(w, 1, drivertest.Batch(t, s, rows...), drivertest.Seq(1, 3)), idemtype.Rows{Read: 3, Unchanged: 3})
			drivertest.WantTable(t, table.Table, f.Table(table.Table, "id", "id", "s"), want...)
			if loads, inserts := count(); inserts == 0 {
				t.Errorf("%s: %d loads and no INSERT statement", table.Table, loads)
			}
		}
	}
}

// TestLinesStreamsEveryRow: a load's lines, made a chunk at a time as
// they are read, are every row's line once and in order, whatever the
// reads ask for, with lines longer than a chunk and chunks ending inside
// a read.
func TestLinesStreamsEveryRow(t *testing.T) {
	for _, n := range []int{0, 1, 7, 5000} {
		row := func(r int, b []byte) []byte {
			b = strconv.AppendInt(b, int64(r), 10)
			if r%1000 == 3 {
				b = append(b, strings.Repeat("x", linesChunk+r)...)
			}
			return append(b, '\n')
		}
		var want []byte
		for r := range n {
			want = row(r, want)
		}
		if err := iotest.TestReader(&lines{row: row, n: n}, want); err != nil {
			t.Errorf("%d rows: %v", n, err)
		}
	}
}

// TestWriterLoadsDates: a date goes into a DATE column through the load
// as the text the INSERTs bind (sink.FormatDate), in ordinal mode as by
// natural key: DATE's least and greatest, around the epoch, leap days,
// and NULL.
func TestWriterLoadsDates(t *testing.T) {
	f := writerFx(t)
	s := drivertest.Schema(drivertest.I64("id"), arrow.Field{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true})
	want := []string{"1000-01-01", "9999-12-31", "1969-12-31", "1970-01-01", "1970-01-02", "2000-02-29",
		"1900-02-28", "1900-03-01", "2024-12-31", "2026-12-04", "NULL"}
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	var wantRows []string
	for i, d := range want {
		b.Field(0).(*array.Int64Builder).Append(int64(i + 1))
		if d == "NULL" {
			b.Field(1).AppendNull()
		} else {
			day, err := time.Parse(time.DateOnly, d)
			if err != nil {
				t.Fatal(err)
			}
			b.Field(1).(*array.Date32Builder).Append(arrow.Date32FromTime(day))
		}
		wantRows = append(wantRows, fmt.Sprintf("%d|%s", i+1, d))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	loadOnceByEitherMode(t, f, s, rec, "id, coalesce(day, 'NULL')", wantRows)
}

// TestWriterLoadsTimestamps: a point in time and a local timestamp go
// into DATETIME(6) columns through the load as loadDatetimeLayout's text,
// a whole second without a fraction and a fraction without the zeros
// ending it, and the server holds each to the microsecond, in ordinal
// mode as by natural key: fractions of every length (.5 through
// .000001, and six digits), DATETIME's least and greatest values, before
// the epoch, and NULL. The same rows again change nothing.
func TestWriterLoadsTimestamps(t *testing.T) {
	f := writerFx(t)
	local := arrow.Field{Name: "wall", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true}
	s := drivertest.Schema(drivertest.I64("id"), drivertest.TS("at"), local)
	want := []string{"1000-01-01 00:00:00.000000", "9999-12-31 23:59:59.999999", "1969-12-31 23:59:59.000000",
		"1970-01-01 00:00:00.000000", "2023-04-22 00:00:21.000000", "2023-04-22 00:00:21.500000",
		"2023-04-22 00:00:21.050000", "2023-04-22 00:00:21.005000", "2023-04-22 00:00:21.000500",
		"2023-04-22 00:00:21.000050", "2023-04-22 00:00:21.000005", "2023-04-22 00:00:21.100000",
		"2023-04-22 00:00:21.000010", "2023-04-22 00:00:21.000001", "2023-04-22 00:00:21.120000",
		"2023-04-22 00:00:21.102030", "2023-04-22 00:00:21.999990", "2023-04-22 00:00:21.123456",
		"1969-12-31 23:59:59.000001", "2024-02-29 23:59:59.900000", "NULL"}
	var rows [][]any
	var wantRows []string
	for i, w := range want {
		var v any
		if w != "NULL" {
			at, err := time.Parse("2006-01-02 15:04:05.000000", w)
			if err != nil {
				t.Fatal(err)
			}
			v = at
		}
		rows = append(rows, []any{i + 1, v, v})
		wantRows = append(wantRows, fmt.Sprintf("%d|%s|%s", i+1, w, w))
	}
	rec := drivertest.Batch(t, s, rows...)
	loadOnceByEitherMode(t, f, s, rec, "id, coalesce(at, 'NULL'), coalesce(wall, 'NULL')", wantRows)
}

// TestWriterProbesStoredKeys: by one key column of integers or of text, a
// batch whose first or last key is stored (a delta's changed rows) is
// staged and merged at once, one load, not first loaded into the table
// and undone; a batch whose first and last keys are new, whatever it
// holds between them, is still tried there first, and every batch lands
// exact. The same holds whichever end of the batch is stored.
func TestWriterProbesStoredKeys(t *testing.T) {
	f := writerFx(t)
	for _, c := range []struct {
		name string
		key  arrow.Field
		k    func(i int) any
	}{
		{"int", drivertest.I64("k"), func(i int) any { return i }},
		{"text", drivertest.Str("k"), func(i int) any { return fmt.Sprintf("key %02d", i) }},
	} {
		s := drivertest.Schema(c.key, drivertest.Str("v"))
		tg := sink.Target{Table: "probe_" + c.name, Key: []string{"k"}}
		f.MustEnsure(tg, s)
		w := f.Writer(tg, s)
		stored := map[int]string{}
		ord := int64(1) // the rows are one file's, in file order
		for _, step := range []struct {
			what  string
			keys  []int
			loads int64
			rc    idemtype.Rows
		}{
			{"new keys", []int{1, 2, 3, 4}, 1, idemtype.Rows{Read: 4, Inserted: 4}},
			{"first key stored", []int{2, 5, 6}, 1, idemtype.Rows{Read: 3, Inserted: 2, Updated: 1}},
			// A merge that inserted every row lets the next batch be tried.
			{"all new", []int{7, 8}, 1, idemtype.Rows{Read: 2, Inserted: 2}},
			{"last key stored", []int{9, 10, 3}, 1, idemtype.Rows{Read: 3, Inserted: 2, Updated: 1}},
			{"all new again", []int{11, 12}, 1, idemtype.Rows{Read: 2, Inserted: 2}},
			{"inner key stored", []int{13, 4, 14}, 2, idemtype.Rows{Read: 3, Inserted: 2, Updated: 1}},
		} {
			var rows [][]any
			for _, k := range step.keys {
				v := step.what + fmt.Sprint(k)
				rows = append(rows, []any{c.k(k), v})
				stored[k] = v
			}
			count := statements(f)
			drivertest.WantRows(t, tg.Table+" "+step.what, f.Write(w, 1, drivertest.Batch(t, s, rows...), drivertest.Seq(ord, ord+int64(len(rows))-1)), step.rc)
			ord += int64(len(rows))
			if loads, inserts := count(); loads != step.loads || inserts != 0 {
				t.Errorf("%s %s: %d loads and %d INSERT statements, want %d loads and none", tg.Table, step.what, loads, inserts, step.loads)
			}
			var want []string
			for k := 1; k <= 14; k++ {
				if v, ok := stored[k]; ok {
					want = append(want, fmt.Sprintf("%v|%s", c.k(k), v))
				}
			}
			drivertest.WantTable(t, tg.Table+" "+step.what, drivertest.Strings(t, f.Env.DB, `SELECT CONCAT(k, '|', v) FROM `+q(tg.Table)+` ORDER BY k`), want...)
		}
	}
}

// loadOnceByEitherMode writes rec into a new table of schema s in ordinal
// mode and by the key id, and checks each: every row inserted by one load
// and no INSERT, the table's rows as `concat_ws('|', cols)` exactly
// wantRows (in id order), and the same rows written again all unchanged.
func loadOnceByEitherMode(t *testing.T, f *drivertest.Fx, s *arrow.Schema, rec arrow.RecordBatch, cols string, wantRows []string) {
	t.Helper()
	n := rec.NumRows()
	for _, tg := range []sink.Target{{Table: "ord"}, {Table: "nat", Key: []string{"id"}}} {
		f.MustEnsure(tg, s)
		w := f.Writer(tg, s)
		count := statements(f)
		drivertest.WantRows(t, tg.Table, f.Write(w, 1, rec, drivertest.Seq(1, n)), idemtype.Rows{Read: n, Inserted: n})
		if loads, inserts := count(); loads != 1 || inserts != 0 {
			t.Errorf("%s: %d loads and %d INSERT statements, want one load", tg.Table, loads, inserts)
		}
		got := drivertest.Strings(t, f.Env.DB, `SELECT concat_ws('|', `+cols+`) FROM `+q(tg.Table)+` ORDER BY id`)
		drivertest.WantTable(t, tg.Table, got, wantRows...)
		drivertest.WantRows(t, tg.Table+" again", f.Write(w, 1, rec, drivertest.Seq(1, n)), idemtype.Rows{Read: n, Unchanged: n})
	}
}

// TestWriterLoadsANewBatchInOneCommand: a batch of new rows, under the
// savepoint of WriteUnder as the pipeline writes it, is one command to the
// server, in ordinal mode and by a key of integers or of text (one with a
// quote): the look-up of its range or of its first and last keys rides in
// the load's message, where a round trip of its own cost each batch of a
// first import one more wait on a loaded server. A batch whose last key
// is stored is still not loaded into the table (one load, the staging
// table's) and is merged exact.
func TestWriterLoadsANewBatchInOneCommand(t *testing.T) {
	_, dsn := openTarget(t, sink.Settings{})
	through, commands := commandProxy(t, dsn)
	db, err := Driver{}.Open(t.Context(), through, sink.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.DB.Close() })
	f := drivertest.Open(t, drivertest.Env{DB: db.DB, Driver: Driver{}})
	for _, c := range []struct {
		name string
		key  arrow.Field
		k    func(i int) any
	}{
		{"ord", drivertest.I64("k"), func(i int) any { return i }},
		{"int", drivertest.I64("k"), func(i int) any { return i }},
		{"text", drivertest.Str("k"), func(i int) any { return fmt.Sprintf("it's %02d", i) }},
	} {
		s := drivertest.Schema(c.key, drivertest.Str("v"))
		tg := sink.Target{Table: "one_" + c.name, Key: []string{"k"}}
		if c.name == "ord" {
			tg.Key = nil
		}
		f.MustEnsure(tg, s)
		w := f.Writer(tg, s).(sink.SavepointWriter)
		ord := int64(1)
		for _, step := range []struct {
			keys     []int
			commands int64 // of WriteUnder
			loads    int64
			rc       idemtype.Rows
		}{
			{[]int{1, 2, 3}, 1, 1, idemtype.Rows{Read: 3, Inserted: 3}},
			{[]int{4, 5, 6}, 1, 1, idemtype.Rows{Read: 3, Inserted: 3}},
			{[]int{7, 3}, 0, 1, idemtype.Rows{Read: 2, Inserted: 1, Updated: 1}},
		} {
			if c.name == "ord" && step.commands == 0 {
				continue // a range of the file is new: a stored key is not the look-up's
			}
			var rows [][]any
			for _, k := range step.keys {
				rows = append(rows, []any{c.k(k), fmt.Sprint("v", k, "@", ord)})
			}
			count := statements(f)
			tx, err := f.Conn.BeginTx(f.Ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			before := commands()
			got, err := w.WriteUnder(f.Ctx, tx, "idemport_batch", 1, drivertest.Batch(t, s, rows...), drivertest.Seq(ord, ord+int64(len(rows))-1))
			sent := commands() - before
			if err != nil {
				t.Fatalf("%s: %v", tg.Table, err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			ord += int64(len(rows))
			drivertest.WantRows(t, tg.Table, got, step.rc)
			if step.commands != 0 && sent != step.commands {
				t.Errorf("%s %v: WriteUnder sent %d commands, want %d", tg.Table, step.keys, sent, step.commands)
			}
			if loads, _ := count(); loads != step.loads {
				t.Errorf("%s %v: %d loads, want %d", tg.Table, step.keys, loads, step.loads)
			}
		}
		want := []string{"1|v1@1", "2|v2@1", "3|v3@1", "4|v4@4", "5|v5@4", "6|v6@4"}
		if c.name != "ord" {
			want = []string{"1|v1@1", "2|v2@1", "3|v3@7", "4|v4@4", "5|v5@4", "6|v6@4", "7|v7@7"}
		}
		for i, r := range want {
			k, v, _ := strings.Cut(r, "|")
			n, _ := strconv.Atoi(k)
			want[i] = fmt.Sprint(c.k(n)) + "|" + v
		}
		drivertest.WantTable(t, tg.Table, drivertest.Strings(t, f.Env.DB, `SELECT CONCAT(k, '|', v) FROM `+q(tg.Table)+` ORDER BY k`), want...)
	}
}
