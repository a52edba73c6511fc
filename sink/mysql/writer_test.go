package mysql

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// writerFx returns a fixture on a database of its own.
func writerFx(t *testing.T) *drivertest.Fx {
	t.Helper()
	db, _ := openTarget(t, sink.Settings{})
	return drivertest.Open(t, drivertest.Env{DB: db, Driver: Driver{}})
}

// TestWriterExactValues writes the values that lose something on the way
// when bound or cast carelessly, in both modes, and reads back their
// text as the server stores it: BIGINT's edges, decimals longer than a
// float or DECIMAL(65,30) holds, 4-byte UTF-8, the empty string apart
// from NULL, times to the microsecond in UTC whatever the zone they were
// written in, a local time as its wall clock, and floats as DOUBLE holds
// them. A second write of the same rows changes nothing.
func TestWriterExactValues(t *testing.T) {
	f := writerFx(t)
	local := arrow.Field{Name: "wall", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true}
	s := drivertest.Schema(drivertest.I64("id"), drivertest.I64("n"), drivertest.Dec("d"), drivertest.Str("s"),
		drivertest.TS("at"), local, drivertest.F64("x"))
	longDec := "-" + strings.Repeat("9", 40) + "." + strings.Repeat("0", 34) + "1"
	at := time.Date(2026, 3, 29, 2, 30, 0, 999999000, time.FixedZone("x", 5*3600+1800))
	rows := [][]any{
		{1, math.MaxInt64, longDec, "𝄞 😀 ünï", at, at, 0.1},
		{2, math.MinInt64, "1.50", "", time.UnixMicro(-1), time.UnixMicro(0), 1e300},
		{3, nil, "0.000", nil, nil, nil, nil},
		{4, math.MaxInt64 - 1, "0", nil, nil, nil, nil},
		{5, 1<<53 + 1, "0", nil, nil, nil, nil},
		{6, math.MinInt64 + 1, "0", nil, nil, nil, nil},
	}
	want := []string{
		"1|9223372036854775807|" + longDec + "|𝄞 😀 ünï|2026-03-28 21:00:00.999999|2026-03-28 21:00:00.999999|0.1",
		"2|-9223372036854775808|1.50||1969-12-31 23:59:59.999999|1970-01-01 00:00:00.000000|1e300",
		"3|NULL|0.000|NULL|NULL|NULL|NULL",
		"4|9223372036854775806|0|NULL|NULL|NULL|NULL",
		"5|9007199254740993|0|NULL|NULL|NULL|NULL",
		"6|-9223372036854775807|0|NULL|NULL|NULL|NULL",
	}
	for _, tg := range []sink.Target{{Table: "ord"}, {Table: "nat", Key: []string{"id"}}} {
		f.MustEnsure(tg, s)
		w := f.Writer(tg, s)
		rec := drivertest.Batch(t, s, rows...)
		drivertest.WantRows(t, tg.Table, f.Write(w, 1, rec, drivertest.Seq(1, 6)), idemtype.Rows{Read: 6, Inserted: 6})
		got := drivertest.Strings(t, f.Env.DB, `SELECT concat_ws('|', id, coalesce(n, 'NULL'), d, coalesce(s, 'NULL'),
			coalesce(at, 'NULL'), coalesce(wall, 'NULL'), coalesce(x, 'NULL')) FROM `+q(tg.Table)+` ORDER BY id`)
		if !slices.Equal(got, want) {
			t.Errorf("%s holds\n\t%s\nwant\n\t%s", tg.Table, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
		}
		drivertest.WantRows(t, tg.Table+" again", f.Write(w, 1, rec, drivertest.Seq(1, 6)), idemtype.Rows{Read: 6, Unchanged: 6})
	}
}

// TestWriterStatementLimits writes batches beyond what one statement
// holds: more values than a prepared statement's 65,535 placeholders, and
// more bytes than the server's max_allowed_packet; the Writer splits
// them, in order, into statements the server takes.
func TestWriterStatementLimits(t *testing.T) {
	f := writerFx(t)
	var packet int64 = f.Int(`SELECT @@max_allowed_packet`)

	var fields []arrow.Field
	for i := range 40 {
		fields = append(fields, drivertest.I64(fmt.Sprintf("c%d", i)))
	}
	wide := arrow.NewSchema(fields, nil)
	const n = 2000 // 2,000 rows of 42 values: 84,000 placeholders
	var rows [][]any
	for r := range n {
		row := make([]any, len(fields))
		for i := range row {
			row[i] = r*100 + i
		}
		rows = append(rows, row)
	}
	for _, tg := range []sink.Target{{Table: "wide_ord"}, {Table: "wide_nat", Key: []string{"c0"}}} {
		f.MustEnsure(tg, wide)
		w := f.Writer(tg, wide)
		rec := drivertest.Batch(t, wide, rows...)
		drivertest.WantRows(t, tg.Table, f.Write(w, 1, rec, drivertest.Seq(1, n)), idemtype.Rows{Read: n, Inserted: n})
		drivertest.WantRows(t, tg.Table+" again", f.Write(w, 1, rec, drivertest.Seq(1, n)), idemtype.Rows{Read: n, Unchanged: n})
		if got := f.Int(`SELECT sum(c39 - c0) FROM ` + q(tg.Table)); got != 39*n {
			t.Errorf("%s: columns do not line up: %d", tg.Table, got)
		}
	}

	// Rows of ten 40 KiB strings, together twice the packet the server
	// takes: each value short enough to go inside the statement's packet.
	const cols, width = 10, 40 << 10
	fields = []arrow.Field{drivertest.I64("id")}
	for i := range cols {
		fields = append(fields, drivertest.Str(fmt.Sprintf("s%d", i)))
	}
	s := arrow.NewSchema(fields, nil)
	big := int(2*packet/(cols*width)) + 1
	rows = nil
	for r := range big {
		row := []any{r}
		for range cols {
			row = append(row, strings.Repeat(string(rune('a'+r%26)), width))
		}
		rows = append(rows, row)
	}
	for _, tg := range []sink.Target{{Table: "big_ord"}, {Table: "big_nat", Key: []string{"id"}}} {
		f.MustEnsure(tg, s)
		w := f.Writer(tg, s)
		rec := drivertest.Batch(t, s, rows...)
		drivertest.WantRows(t, tg.Table, f.Write(w, 1, rec, drivertest.Seq(1, int64(big))), idemtype.Rows{Read: int64(big), Inserted: int64(big)})
		if got := f.Int(`SELECT count(*) FROM `+q(tg.Table)+` WHERE length(s9) = ? AND s0 LIKE concat(char(97 + mod(id, 26)), '%')`, width); got != int64(big) {
			t.Errorf("%s: %d of %d rows stored whole", tg.Table, got, big)
		}
	}
}

// TestWriterRowErrors: a value the column cannot hold (strict mode makes
// it an error, not a truncation) and a row a constraint refuses fail the
// Write with a *sink.RowError naming the reason and, where the server
// says, the column; the transaction goes on, without the failed
// statement's rows.
func TestWriterRowErrors(t *testing.T) {
	f := writerFx(t)
	f.Exec(`CREATE TABLE t (id BIGINT PRIMARY KEY, small SMALLINT, code VARCHAR(3), u INT, UNIQUE KEY t_u (u))`)
	s := drivertest.Schema(drivertest.I64("id"), drivertest.I64("small"), drivertest.Str("code"), drivertest.I64("u"))
	tg := sink.Target{Table: "t", Key: []string{"id"}}
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	cases := []struct {
		name   string
		row    []any
		code   string
		column string
	}{
		{"out of range", []any{2, 40000, "ok", 2}, sink.CodeRefused, "small"},
		{"too long", []any{2, 1, "long", 2}, sink.CodeRefused, "code"},
		{"unique", []any{2, 1, "ok", 1}, sink.CodeConstraint, ""},
	}
	tx, err := f.Conn.BeginTx(f.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	f.WriteIn(tx, w, 1, drivertest.Batch(t, s, []any{1, 1, "ok", 1}), drivertest.Ords(1))
	for _, c := range cases {
		_, err := w.Write(f.Ctx, tx, 1, drivertest.Batch(t, s, c.row), drivertest.Ords(2))
		var re *sink.RowError
		if !errors.As(err, &re) {
			t.Errorf("%s: %v, want a *sink.RowError", c.name, err)
			continue
		}
		if re.Code != c.code || re.Column != c.column || re.Reason == "" {
			t.Errorf("%s: code %q, column %q, reason %q; want %q, %q and a reason", c.name, re.Code, re.Column, re.Reason, c.code, c.column)
		}
	}
	f.WriteIn(tx, w, 1, drivertest.Batch(t, s, []any{3, 3, "ok", 3}), drivertest.Ords(3))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	drivertest.WantTable(t, "after the refused rows", drivertest.Strings(t, f.Env.DB, `SELECT concat_ws('|', id, small, code, u) FROM t ORDER BY id`),
		"1|1|ok|1", "3|3|ok|3")
}

// TestWriterInsideATransaction: a Writer made inside a transaction (to
// write to a table that transaction changed) commits nothing of it: its
// staging table is TEMPORARY, whose creation is not DDL that ends the
// transaction.
func TestWriterInsideATransaction(t *testing.T) {
	f := writerFx(t)
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("name"))
	tg := sink.Target{Table: "t", Key: []string{"id"}}
	f.MustEnsure(tg, s)
	tx, err := f.Conn.BeginTx(f.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(f.Ctx, `INSERT INTO t (id, name) VALUES (1, 'before the writer')`); err != nil {
		t.Fatal(err)
	}
	w := f.Writer(tg, s)
	f.WriteIn(tx, w, 1, drivertest.Batch(t, s, []any{2, "b"}), drivertest.Ords(1))
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if n := f.Int(`SELECT count(*) FROM t`); n != 0 {
		t.Errorf("%d rows after the rollback", n)
	}
}

// TestWriterForDoesNotDescribe: WriterFor prepares a writer from the
// table as Describe returned it, without describing the table again (no
// SHOW CREATE TABLE, where Writer's describe runs one), and the writer
// writes as Writer's does.
func TestWriterForDoesNotDescribe(t *testing.T) {
	f := writerFx(t)
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("name"))
	tg := sink.Target{Table: "t", Key: []string{"id"}}
	f.MustEnsure(tg, s)
	shows := func() int64 {
		return f.Int(`SELECT variable_value FROM information_schema.session_status WHERE variable_name = 'Com_show_create_table'`)
	}
	table, err := Driver{}.Describe(f.Ctx, f.Conn, "t")
	if err != nil {
		t.Fatal(err)
	}
	before := shows()
	w, err := Driver{}.WriterFor(f.Ctx, f.Conn, tg, s, table)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if n := shows() - before; n != 0 {
		t.Errorf("WriterFor ran %d SHOW CREATE TABLE statements, want none", n)
	}
	f.Write(w, 1, drivertest.Batch(t, s, []any{1, "one"}, []any{2, "two"}), drivertest.Ords(1, 2))
	drivertest.WantTable(t, "t", drivertest.Strings(t, f.Env.DB, `SELECT CONCAT_WS('|', id, name) FROM t ORDER BY id`), "1|one", "2|two")
}

// TestWriterDecimalKeyUsesItsIndex: a batch into a table keyed by a
// decimal finds its stored rows through the index on the key's number,
// not by reading the table: the rows the server reads in table order
// (Handler_read_rnd_next) stay far below the table's rows. (Without the
// index, each statement of the batch reads the whole table.)
func TestWriterDecimalKeyUsesItsIndex(t *testing.T) {
	f := writerFx(t)
	s := drivertest.Schema(drivertest.Dec("k"), drivertest.Str("v"))
	tg := sink.Target{Table: "t", Key: []string{"k"}}
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	const n = 3000
	var rows [][]any
	for i := range n {
		rows = append(rows, []any{fmt.Sprintf("%d.5", i), "a"})
	}
	f.Write(w, 1, drivertest.Batch(t, s, rows...), drivertest.Seq(1, n))
	scanned := func() int64 {
		var name string
		var v int64
		if err := f.Conn.QueryRowContext(f.Ctx, `SHOW SESSION STATUS LIKE 'Handler_read_rnd_next'`).Scan(&name, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	w = f.Writer(tg, s) // whose staging table holds no earlier batch to clear
	before := scanned()
	drivertest.WantRows(t, "one row", f.Write(w, 2, drivertest.Batch(t, s, []any{"1500.50", "b"}, []any{"-1", "c"}), drivertest.Seq(1, 2)),
		idemtype.Rows{Read: 2, Inserted: 1, Updated: 1})
	if read := scanned() - before; read >= n {
		t.Errorf("a batch of 2 rows read %d rows in table order, the table has %d", read, n)
	}
}

// TestWriterRepeatedKeysInANewBatch: a batch of keys none of which is
// stored, some repeated in it, is first loaded straight into the table
// (the Writer numbers a batch's keys only when it takes the staging
// path), where the key's unique index finds the repeats: the load is
// undone and the batch applied a round at a time, last row wins. Keys
// that only look alike stay apart (case and a trailing space in text),
// and decimals that are one number are one key. The same batch again
// changes nothing: each key's last row is unchanged, the others stale.
func TestWriterRepeatedKeysInANewBatch(t *testing.T) {
	f := writerFx(t)
	cases := []struct {
		name string
		key  arrow.Field
		rows [][]any // key, v
		want idemtype.Rows
		rest []string // v by key order
	}{
		{"int", drivertest.I64("k"), [][]any{{1, "a"}, {2, "b"}, {1, "c"}, {3, "d"}, {2, "e"}, {1, "f"}},
			idemtype.Rows{Read: 6, Inserted: 3, Updated: 3}, []string{"f", "e", "d"}},
		{"text", drivertest.Str("k"), [][]any{{"a", "a"}, {"A", "b"}, {"a ", "c"}, {"a", "d"}},
			idemtype.Rows{Read: 4, Inserted: 3, Updated: 1}, []string{"b", "d", "c"}},
		{"decimal", drivertest.Dec("k"), [][]any{{"1.5", "a"}, {"2", "b"}, {"1.50", "c"}, {"3", "d"}},
			idemtype.Rows{Read: 4, Inserted: 3, Updated: 1}, []string{"c", "b", "d"}},
	}
	for _, c := range cases {
		s := drivertest.Schema(c.key, drivertest.Str("v"))
		tg := sink.Target{Table: "rep_" + c.name, Key: []string{"k"}}
		f.MustEnsure(tg, s)
		w := f.Writer(tg, s)
		drivertest.WantRows(t, tg.Table, f.Write(w, 1, drivertest.Batch(t, s, c.rows...), drivertest.Seq(1, int64(len(c.rows)))), c.want)
		if got := drivertest.Strings(t, f.Env.DB, `SELECT v FROM `+q(tg.Table)+` ORDER BY k`); !slices.Equal(got, c.rest) {
			t.Errorf("%s holds %q, want %q", tg.Table, got, c.rest)
		}
		drivertest.WantRows(t, tg.Table+" again", f.Write(w, 1, drivertest.Batch(t, s, c.rows...), drivertest.Seq(1, int64(len(c.rows)))),
			idemtype.Rows{Read: c.want.Read, Unchanged: int64(len(c.rest)), Stale: c.want.Read - int64(len(c.rest))})
	}
}

// TestWriterKeyStoredBetweenItsStatements: a key another transaction
// stores and commits after the Writer's update looked for it, and before
// its insert does, is found by the insert, which skips it; the Writer's
// newer row must still be written. A trigger on the update of the batch's
// other row holds the Writer between its statements (on a row lock the
// test holds) while another connection stores the key.
func TestWriterKeyStoredBetweenItsStatements(t *testing.T) {
	f := writerFx(t)
	s := drivertest.Schema(drivertest.I64("id"), drivertest.I64("v"), drivertest.Str("n"))
	tg := sink.Target{Table: "t", Key: []string{"id"}, Version: "v"}
	f.MustEnsure(tg, s)
	f.Exec(`CREATE TABLE gate (k INT PRIMARY KEY)`)
	f.Exec(`INSERT INTO gate VALUES (1)`)
	f.Exec(`INSERT INTO t (id, v, n) VALUES (2, 1, 'stored')`)
	f.Exec(`CREATE TRIGGER hold AFTER UPDATE ON t FOR EACH ROW UPDATE gate SET k = k WHERE k = 1`)
	w := f.Writer(tg, s)
	writer := f.Int(`SELECT CONNECTION_ID()`)

	gate, err := f.Env.DB.BeginTx(f.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Rollback()
	if _, err := gate.ExecContext(f.Ctx, `UPDATE gate SET k = k WHERE k = 1`); err != nil {
		t.Fatal(err)
	}
	done := writeAside(f, w, drivertest.Batch(t, s, []any{1, 2, "new"}, []any{2, 2, "changed"}))
	// The Writer's update has changed key 2 and waits, in the trigger,
	// for the gate.
	awaitStatement(t, f, writer, done, "UPDATE gate%", "wait for the gate")
	if _, err := f.Env.DB.ExecContext(f.Ctx, `INSERT INTO t (id, v, n) VALUES (1, 1, 'meanwhile')`); err != nil {
		t.Fatal(err)
	}
	if err := gate.Rollback(); err != nil {
		t.Fatal(err)
	}
	res := receive(t, done, "the Writer, after the gate rolled back,")
	if res.err != nil {
		t.Fatalf("write: %v", res.err)
	}
	drivertest.WantRows(t, "write", res.c, idemtype.Rows{Read: 2, Updated: 2})
	if got, want := drivertest.Strings(t, f.Env.DB, `SELECT CONCAT(id, '|', v, '|', n) FROM t ORDER BY id`), []string{"1|2|new", "2|2|changed"}; !slices.Equal(got, want) {
		t.Errorf("t holds %q, want %q", got, want)
	}
}

// TestWriterStoredRoundSkipsTheInsert: a staged batch (or, by natural key,
// a round of it) whose every row the update rewrote runs no INSERT …
// SELECT, which would only look every key up again; a batch with some
// keys new still inserts them, and unchanged rows are still told from
// new ones. Both modes; the natural-key table has a trigger, which keeps
// it on the UPDATE and the INSERT (TestWriterMergesADeltaInOneStatement).
func TestWriterStoredRoundSkipsTheInsert(t *testing.T) {
	f := writerFx(t)
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("v"))
	insertSelects := func() int64 {
		return f.Int(`SELECT variable_value FROM information_schema.session_status WHERE variable_name = 'Com_insert_select'`)
	}
	for _, tg := range []sink.Target{{Table: "ord"}, {Table: "nat", Key: []string{"id"}}} {
		f.MustEnsure(tg, s)
		if !tg.Ordinal() {
			f.Exec(`CREATE TRIGGER nat_noop AFTER UPDATE ON nat FOR EACH ROW SET @idemport_test_noop = 1`)
		}
		w := f.Writer(tg, s)
		for _, step := range []struct {
			what    string
			rows    [][]any
			ords    []int64
			rc      idemtype.Rows
			inserts int64
			want    []string
		}{
			{"first", [][]any{{1, "a"}, {2, "b"}, {3, "c"}}, drivertest.Seq(1, 3), idemtype.Rows{Read: 3, Inserted: 3}, 0,
				[]string{"1|a", "2|b", "3|c"}},
			{"all changed", [][]any{{1, "A"}, {2, "B"}, {3, "C"}}, drivertest.Seq(1, 3), idemtype.Rows{Read: 3, Updated: 3}, 0,
				[]string{"1|A", "2|B", "3|C"}},
			{"some unchanged", [][]any{{1, "A"}, {2, "bb"}, {3, "C"}}, drivertest.Seq(1, 3), idemtype.Rows{Read: 3, Updated: 1, Unchanged: 2}, 1,
				[]string{"1|A", "2|bb", "3|C"}},
			{"a repeated key, all changed", [][]any{{1, "x"}, {2, "y"}, {1, "z"}}, drivertest.Seq(1, 3), idemtype.Rows{Read: 3, Updated: 3}, 0,
				[]string{"1|z", "2|y", "3|C"}},
		} {
			if tg.Ordinal() && step.what == "a repeated key, all changed" {
				step.rc, step.want = idemtype.Rows{Read: 3, Updated: 3}, []string{"1|x", "2|y", "1|z"}
			}
			before := insertSelects()
			drivertest.WantRows(t, tg.Table+" "+step.what, f.Write(w, 1, drivertest.Batch(t, s, step.rows...), step.ords), step.rc)
			if n := insertSelects() - before; n != step.inserts {
				t.Errorf("%s %s: %d INSERT … SELECT statements, want %d", tg.Table, step.what, n, step.inserts)
			}
			order := "id"
			if tg.Ordinal() {
				order = q(sink.RowColumn)
			}
			drivertest.WantTable(t, tg.Table+" "+step.what, drivertest.Strings(t, f.Env.DB, `SELECT CONCAT(id, '|', v) FROM `+q(tg.Table)+` ORDER BY `+order), step.want...)
		}
	}
}

// TestWriterMergesADeltaInOneStatement: a staged round of natural keys
// goes into a table keyed by its one unique key in one INSERT … SELECT …
// ON DUPLICATE KEY UPDATE, with no UPDATE statement, and the server
// rewrites the rows counted updated and no other (Handler_update). The
// same writes into a table with a trigger, which takes the UPDATE and the
// INSERT instead (a trigger would see every stored row the merge meets
// updated), land the same values and counts: DeltaExact checks both
// against the same text, lineage included.
func TestWriterMergesADeltaInOneStatement(t *testing.T) {
	f := writerFx(t)
	status := func(name string) int64 {
		return f.Int(`SELECT variable_value FROM information_schema.session_status WHERE variable_name = ?`, name)
	}
	for _, c := range []struct {
		table      string
		setup      func(table string)
		statements int64 // INSERT … SELECT
		merged     bool
	}{
		{"one_pass", nil, 3, true},
		{"two_statements", func(table string) {
			f.Exec(`CREATE TRIGGER ` + q(table+"_noop") + ` AFTER UPDATE ON ` + q(table) + ` FOR EACH ROW SET @idemport_test_noop = 1`)
		}, 0, false},
	} {
		names := []string{"Com_insert_select", "Com_update", "Com_update_multi", "Handler_update"}
		before := map[string]int64{}
		for _, n := range names {
			before[n] = status(n)
		}
		var setup func()
		if c.setup != nil {
			setup = func() { c.setup(c.table) }
		}
		drivertest.DeltaExact(t, f, c.table, setup)
		d := map[string]int64{}
		for _, n := range names {
			d[n] = status(n) - before[n]
		}
		if c.merged && (d["Com_insert_select"] != c.statements || d["Com_update"]+d["Com_update_multi"] != 0) {
			t.Errorf("%s: %d INSERT … SELECT and %d UPDATE statements, want %d and none", c.table, d["Com_insert_select"], d["Com_update"]+d["Com_update_multi"], c.statements)
		}
		if !c.merged && d["Com_update_multi"] == 0 {
			t.Errorf("%s: no UPDATE … JOIN: the table with a trigger was merged", c.table)
		}
		// 6 rows of the delta and then the earlier row of the file.
		if d["Handler_update"] != 7 {
			t.Errorf("%s: the server rewrote %d rows, want the 7 updated", c.table, d["Handler_update"])
		}
	}
}

// TestWriterStaleRowsKeepTheirValues: rows older than the stored ones by
// the version column (an older version, or NULL over a version) are
// counted stale, also when their values are the stored ones, and leave the
// stored rows as they were, lineage included, with no row rewritten: in
// one statement, and by the UPDATE and the INSERT (a table with a
// trigger).
func TestWriterStaleRowsKeepTheirValues(t *testing.T) {
	f := writerFx(t)
	s := drivertest.Schema(drivertest.I64("id"), drivertest.I64("v"), drivertest.Str("name"))
	for _, table := range []string{"merged", "two_statements"} {
		tg := sink.Target{Table: table, Key: []string{"id"}, Version: "v"}
		f.MustEnsure(tg, s)
		if table == "two_statements" {
			f.Exec(`CREATE TRIGGER two_noop AFTER UPDATE ON two_statements FOR EACH ROW SET @idemport_test_noop = 1`)
		}
		w := f.Writer(tg, s)
		drivertest.WantRows(t, table+" stored", f.Write(w, 1, drivertest.Batch(t, s, []any{1, 5, "a"}, []any{2, 5, "b"}, []any{3, 5, "c"}), drivertest.Seq(1, 3)),
			idemtype.Rows{Read: 3, Inserted: 3})
		rewritten := f.Int(`SELECT variable_value FROM information_schema.session_status WHERE variable_name = 'Handler_update'`)
		drivertest.WantRows(t, table+" older", f.Write(w, 2, drivertest.Batch(t, s, []any{1, 4, "older"}, []any{2, nil, "null version"}, []any{3, 4, "c"}), drivertest.Seq(1, 3)),
			idemtype.Rows{Read: 3, Stale: 3})
		if n := f.Int(`SELECT variable_value FROM information_schema.session_status WHERE variable_name = 'Handler_update'`) - rewritten; n != 0 {
			t.Errorf("%s: %d rows rewritten by stale rows", table, n)
		}
		drivertest.WantTable(t, table, drivertest.Strings(t, f.Env.DB, `SELECT concat_ws('|', id, v, name, `+q(sink.FileColumn)+`, `+q(sink.RowColumn)+`) FROM `+table+` ORDER BY id`),
			"1|5|a|1|1", "2|5|b|1|2", "3|5|c|1|3")
	}
}

// TestWriterMergeMeetsAKeyCommittedMeanwhile: a key another transaction
// stores after the Writer looked its batch's keys up, and commits while
// the Writer's merge runs, is met, not inserted: the merge waits for that
// transaction's row lock, and once it commits, writes the Writer's newer
// row over it and counts it updated.
func TestWriterMergeMeetsAKeyCommittedMeanwhile(t *testing.T) {
	f := writerFx(t)
	s := drivertest.Schema(drivertest.I64("id"), drivertest.I64("v"), drivertest.Str("n"))
	tg := sink.Target{Table: "t", Key: []string{"id"}, Version: "v"}
	f.MustEnsure(tg, s)
	f.Exec(`INSERT INTO t (id, v, n) VALUES (2, 1, 'stored')`)
	w := f.Writer(tg, s)
	writer := f.Int(`SELECT CONNECTION_ID()`)

	other, err := f.Env.DB.BeginTx(f.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback()
	if _, err := other.ExecContext(f.Ctx, `INSERT INTO t (id, v, n) VALUES (1, 1, 'meanwhile')`); err != nil {
		t.Fatal(err)
	}
	done := writeAside(f, w, drivertest.Batch(t, s, []any{1, 2, "new"}, []any{2, 2, "changed"}))
	// (innodb_trx tells this lock wait as RUNNING, on MariaDB 10.11.)
	awaitStatement(t, f, writer, done, "INSERT INTO%ON DUPLICATE KEY UPDATE%", "run its merge")
	if err := other.Commit(); err != nil {
		t.Fatal(err)
	}
	res := receive(t, done, "the Writer, after the other transaction committed,")
	if res.err != nil {
		t.Fatalf("write: %v", res.err)
	}
	drivertest.WantRows(t, "write", res.c, idemtype.Rows{Read: 2, Updated: 2})
	drivertest.WantTable(t, "t", drivertest.Strings(t, f.Env.DB, `SELECT concat_ws('|', id, v, n, `+q(sink.FileColumn)+`, `+q(sink.RowColumn)+`) FROM t ORDER BY id`),
		"1|2|new|1|1", "2|2|changed|1|2")
}

// written is what a Writer's Write in a transaction of its own returned.
type written struct {
	c   idemtype.Rows
	err error
}

// writeAside writes batch (its rows the file's 1 and 2) with w in a
// transaction of its own on f's connection, in another goroutine, and
// commits it; the channel receives what the Write returned, or the
// failure of its BEGIN or COMMIT.
func writeAside(f *drivertest.Fx, w sink.Writer, batch arrow.RecordBatch) <-chan written {
	done := make(chan written, 1)
	go func() {
		tx, err := f.Conn.BeginTx(f.Ctx, nil)
		if err != nil {
			done <- written{err: err}
			return
		}
		c, err := w.Write(f.Ctx, tx, 1, batch, drivertest.Seq(1, 2))
		if err == nil {
			err = tx.Commit()
		} else {
			tx.Rollback()
		}
		done <- written{c, err}
	}()
	return done
}

// awaitStatement waits, at most a minute, until connection writer runs a
// statement LIKE like (the Writer waits inside it for a lock the test
// holds); it fails t if the Write ends first (done) or the minute passes,
// naming what the Writer should have done (what).
func awaitStatement(t *testing.T, f *drivertest.Fx, writer int64, done <-chan written, like, what string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		select {
		case res := <-done:
			t.Fatalf("the Writer ended before it would %s: %+v, %v", what, res.c, res.err)
		default:
		}
		var running int64
		if err := f.Env.DB.QueryRowContext(f.Ctx, `SELECT count(*) FROM information_schema.processlist WHERE id = ? AND info LIKE ?`, writer, like).Scan(&running); err != nil {
			t.Fatal(err)
		}
		if running > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Writer never came to %s", what)
		}
	}
}
