package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	_ "github.com/mattn/go-sqlite3"

	"github.com/idemport/idemport/internal/counter"
	"github.com/idemport/idemport/sink"
)

// ---- fixtures ------------------------------------------------------------

// fx is a real SQLite file in a temporary directory and one connection to
// it, used for every write so that total_changes() can be compared.
type fx struct {
	t    *testing.T
	ctx  context.Context
	db   *sql.DB
	conn *sql.Conn
}

func open(t *testing.T) *fx {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "target.db")
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_txlock=immediate&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() }) // runs before db.Close
	return &fx{t: t, ctx: ctx, db: db, conn: conn}
}

func (f *fx) exec(query string, args ...any) {
	f.t.Helper()
	if _, err := f.conn.ExecContext(f.ctx, query, args...); err != nil {
		f.t.Fatalf("%s: %v", query, err)
	}
}

func (f *fx) int(query string, args ...any) int64 {
	f.t.Helper()
	var n int64
	if err := f.conn.QueryRowContext(f.ctx, query, args...).Scan(&n); err != nil {
		f.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// ensure runs Ensure in its own transaction, committed on success.
func (f *fx) ensure(tg sink.Target, schema *arrow.Schema) error {
	f.t.Helper()
	tx, err := f.conn.BeginTx(f.ctx, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := (Dialect{}).Ensure(f.ctx, tx, tg, schema); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		f.t.Fatal(err)
	}
	return nil
}

func (f *fx) mustEnsure(tg sink.Target, schema *arrow.Schema) {
	f.t.Helper()
	if err := f.ensure(tg, schema); err != nil {
		f.t.Fatalf("ensure %s: %v", tg.Table, err)
	}
}

func (f *fx) writer(tg sink.Target, schema *arrow.Schema) sink.Writer {
	f.t.Helper()
	w, err := (Dialect{}).Writer(f.ctx, f.conn, tg, schema)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		if err := w.Close(); err != nil {
			f.t.Errorf("close writer: %v", err)
		}
	})
	return w
}

// write runs one Write in its own committed transaction and checks that its
// counts account for every row exactly once.
func (f *fx) write(w sink.Writer, fileKey int64, rec arrow.RecordBatch, ordinals []int64) counter.Rows {
	f.t.Helper()
	tx, err := f.conn.BeginTx(f.ctx, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	c, err := w.Write(f.ctx, tx, fileKey, rec, ordinals)
	if err != nil {
		tx.Rollback()
		f.t.Fatalf("write: %v", err)
	}
	if err := tx.Commit(); err != nil {
		f.t.Fatal(err)
	}
	if c.Read != rec.NumRows() || c.Rejected != 0 {
		f.t.Errorf("write of %d rows read %d, rejected %d", rec.NumRows(), c.Read, c.Rejected)
	}
	if !c.Balanced() || c.Read != c.Inserted+c.Updated+c.Unchanged+c.Stale {
		f.t.Errorf("write counts do not balance: %+v", c)
	}
	return c
}

// table returns the rows of table ordered by order, each as the SQL
// literals (quote()) of cols joined by "|": storage class and value exact.
func (f *fx) table(name, order string, cols ...string) []string {
	f.t.Helper()
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = "quote(" + q(c) + ")"
	}
	query := "SELECT " + strings.Join(parts, " || '|' || ") + " FROM " + q(name) + " ORDER BY " + order
	rows, err := f.conn.QueryContext(f.ctx, query)
	if err != nil {
		f.t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// updateCounter installs a trigger that counts the rows of table that are
// updated; the returned function reads the count.
func (f *fx) updateCounter(table string) func() int64 {
	f.t.Helper()
	f.exec(`CREATE TABLE IF NOT EXISTS updates (tbl TEXT PRIMARY KEY, n INTEGER NOT NULL)`)
	f.exec(`INSERT INTO updates VALUES (?, 0)`, table)
	f.exec(`CREATE TRIGGER ` + q(table+"_count_updates") + ` AFTER UPDATE ON ` + q(table) +
		` BEGIN UPDATE updates SET n = n + 1 WHERE tbl = ` + fmt.Sprintf("'%s'", table) + `; END`)
	return func() int64 { return f.int(`SELECT n FROM updates WHERE tbl = ?`, table) }
}

func wantRows(t *testing.T, what string, got, want counter.Rows) {
	t.Helper()
	if got != want {
		t.Errorf("%s: counted %+v, want %+v", what, got, want)
	}
}

func wantTable(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: table holds\n\t%s\nwant\n\t%s", what, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// ---- Arrow batches -------------------------------------------------------

var tsType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

func i64(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64, Nullable: true}
}
func f64(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Float64, Nullable: true}
}
func str(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true}
}
func boolean(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.FixedWidthTypes.Boolean, Nullable: true}
}
func ts(name string) arrow.Field {
	return arrow.Field{Name: name, Type: tsType, Nullable: true}
}
func jsonField(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true,
		Metadata: arrow.NewMetadata([]string{"idemport.type"}, []string{"json"})}
}

func schemaOf(fields ...arrow.Field) *arrow.Schema { return arrow.NewSchema(fields, nil) }

// batch builds a record batch of schema from rows of Go values: nil is
// null, int goes to int64 columns, time.Time to timestamp columns.
func batch(t *testing.T, schema *arrow.Schema, rows ...[]any) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for r, row := range rows {
		if len(row) != len(schema.Fields()) {
			t.Fatalf("row %d has %d values for %d columns", r, len(row), len(schema.Fields()))
		}
		for i, v := range row {
			fb := b.Field(i)
			if v == nil {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.Int64Builder:
				fb.Append(int64(v.(int)))
			case *array.Float64Builder:
				fb.Append(v.(float64))
			case *array.BooleanBuilder:
				fb.Append(v.(bool))
			case *array.StringBuilder:
				fb.Append(v.(string))
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(v.(time.Time).UnixMicro()))
			default:
				t.Fatalf("no builder for %T", fb)
			}
		}
	}
	rec := b.NewRecordBatch()
	t.Cleanup(rec.Release)
	return rec
}

func ords(o ...int64) []int64 { return o }

func seq(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// ---- ordinal mode --------------------------------------------------------

var people = schemaOf(i64("id"), str("name"), f64("score"))

func TestOrdinalTableIsWithoutRowidKeyedByLineage(t *testing.T) {
	f := open(t)
	f.mustEnsure(sink.Target{Table: "people"}, people)

	if wr := f.int(`SELECT wr FROM pragma_table_list WHERE name = 'people'`); wr != 1 {
		t.Errorf("people is not a WITHOUT ROWID table (wr = %d)", wr)
	}
	var pk []string
	rows, err := f.conn.QueryContext(f.ctx, `SELECT name FROM pragma_table_info('people') WHERE pk > 0 ORDER BY pk`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		pk = append(pk, n)
	}
	rows.Close()
	if !slices.Equal(pk, []string{sink.FileColumn, sink.RowColumn}) {
		t.Errorf("primary key is %v, want (%s, %s)", pk, sink.FileColumn, sink.RowColumn)
	}
	// Ensure on the table it created is accepted as is.
	f.mustEnsure(sink.Target{Table: "people"}, people)
}

func TestOrdinalInsertUnchangedUpdated(t *testing.T) {
	f := open(t)
	tg := sink.Target{Table: "people"}
	f.mustEnsure(tg, people)
	w := f.writer(tg, people)
	cols := []string{sink.FileColumn, sink.RowColumn, "id", "name", "score"}
	order := q(sink.FileColumn) + ", " + q(sink.RowColumn)

	first := batch(t, people, []any{1, "ann", 1.5}, []any{2, "bob", nil}, []any{3, nil, 3.0})
	wantRows(t, "first write", f.write(w, 7, first, seq(1, 3)), counter.Rows{Read: 3, Inserted: 3})
	want := []string{"7|1|1|'ann'|1.5", "7|2|2|'bob'|NULL", "7|3|3|NULL|3.0"}
	wantTable(t, "after first write", f.table("people", order, cols...), want...)

	// The same batch again changes nothing, not even by rewriting rows.
	updates := f.updateCounter("people")
	before := f.int(`SELECT total_changes()`)
	wantRows(t, "same batch again", f.write(w, 7, first, seq(1, 3)), counter.Rows{Read: 3, Unchanged: 3})
	if after := f.int(`SELECT total_changes()`); after != before {
		t.Errorf("rewriting the same batch changed %d rows", after-before)
	}
	if n := updates(); n != 0 {
		t.Errorf("rewriting the same batch updated %d rows", n)
	}
	wantTable(t, "after same batch", f.table("people", order, cols...), want...)

	// Row 2 gains a score, row 3 loses its score: exactly those two update,
	// including changes to and from NULL.
	changed := batch(t, people, []any{1, "ann", 1.5}, []any{2, "bob", 2.0}, []any{3, nil, nil})
	wantRows(t, "changed batch", f.write(w, 7, changed, seq(1, 3)), counter.Rows{Read: 3, Updated: 2, Unchanged: 1})
	if n := updates(); n != 2 {
		t.Errorf("changed batch updated %d rows, want 2", n)
	}
	wantTable(t, "after changed batch", f.table("people", order, cols...),
		"7|1|1|'ann'|1.5", "7|2|2|'bob'|2.0", "7|3|3|NULL|NULL")
}

func TestOrdinalGaps(t *testing.T) {
	f := open(t)
	tg := sink.Target{Table: "people"}
	f.mustEnsure(tg, people)
	w := f.writer(tg, people)
	order := q(sink.RowColumn)
	cols := []string{sink.RowColumn, "id", "name"}

	rows := [][]any{{1, "a", nil}, {2, "b", nil}, {4, "d", nil}, {5, "e", nil}}
	wantRows(t, "gapped insert", f.write(w, 9, batch(t, people, rows...), ords(1, 2, 4, 5)), counter.Rows{Read: 4, Inserted: 4})
	wantRows(t, "gapped again", f.write(w, 9, batch(t, people, rows...), ords(1, 2, 4, 5)), counter.Rows{Read: 4, Unchanged: 4})

	rows[2] = []any{4, "D", nil}
	wantRows(t, "gapped, one changed", f.write(w, 9, batch(t, people, rows...), ords(1, 2, 4, 5)), counter.Rows{Read: 4, Updated: 1, Unchanged: 3})

	// A contiguous run over the gap: 3 is new, 1, 2, 4 and 5 exist.
	all := batch(t, people, []any{1, "a", nil}, []any{2, "b", nil}, []any{3, "c", nil}, []any{4, "D", nil}, []any{5, "E", nil})
	wantRows(t, "contiguous over the gap", f.write(w, 9, all, seq(1, 5)), counter.Rows{Read: 5, Inserted: 1, Updated: 1, Unchanged: 3})

	// A gapped batch whose ordinals span rows it does not carry.
	mixed := batch(t, people, []any{2, "b", nil}, []any{5, "E", nil}, []any{8, "h", nil})
	wantRows(t, "gapped, mixed", f.write(w, 9, mixed, ords(2, 5, 8)), counter.Rows{Read: 3, Inserted: 1, Unchanged: 2})

	wantTable(t, "after gaps", f.table("people", order, cols...),
		"1|1|'a'", "2|2|'b'", "3|3|'c'", "4|4|'D'", "5|5|'E'", "8|8|'h'")
}

func TestOrdinalFileKeysDoNotCollide(t *testing.T) {
	f := open(t)
	tg := sink.Target{Table: "people"}
	f.mustEnsure(tg, people)
	w := f.writer(tg, people)

	a := batch(t, people, []any{1, "a1", nil}, []any{2, "a2", nil})
	b := batch(t, people, []any{1, "b1", nil}, []any{2, "b2", nil})
	wantRows(t, "file A", f.write(w, 1001, a, seq(1, 2)), counter.Rows{Read: 2, Inserted: 2})
	wantRows(t, "file B, same ordinals", f.write(w, -1001, b, seq(1, 2)), counter.Rows{Read: 2, Inserted: 2})
	wantRows(t, "file A again", f.write(w, 1001, a, seq(1, 2)), counter.Rows{Read: 2, Unchanged: 2})
	wantTable(t, "two files", f.table("people", q(sink.FileColumn)+", "+q(sink.RowColumn), sink.FileColumn, sink.RowColumn, "name"),
		"-1001|1|'b1'", "-1001|2|'b2'", "1001|1|'a1'", "1001|2|'a2'")
}

func TestOrdinalBatchLargerThanOneStatement(t *testing.T) {
	f := open(t)
	tg := sink.Target{Table: "people"}
	f.mustEnsure(tg, people)
	w := f.writer(tg, people)

	const n = 2*rowsPerStatement + 37
	build := func(changeEvery int) arrow.RecordBatch {
		var rows [][]any
		for i := 1; i <= n; i++ {
			name := fmt.Sprintf("p%d", i)
			if changeEvery > 0 && i%changeEvery == 0 {
				name += "!"
			}
			rows = append(rows, []any{i, name, float64(i) / 4})
		}
		return batch(t, people, rows...)
	}
	wantRows(t, "insert", f.write(w, 5, build(0), seq(1, n)), counter.Rows{Read: n, Inserted: n})
	wantRows(t, "again", f.write(w, 5, build(0), seq(1, n)), counter.Rows{Read: n, Unchanged: n})
	wantRows(t, "every 7th changed", f.write(w, 5, build(7), seq(1, n)), counter.Rows{Read: n, Updated: n / 7, Unchanged: n - n/7})
	if got := f.int(`SELECT count(*) FROM people WHERE name LIKE '%!'`); got != n/7 {
		t.Errorf("%d rows changed, want %d", got, n/7)
	}
}

// ---- natural-key mode ----------------------------------------------------

var named = schemaOf(i64("id"), str("name"))

func lineageCols(cols ...string) []string {
	return append(cols, sink.FileColumn, sink.RowColumn)
}

func TestNaturalKeyUpsertKeepsLineageOfUnchangedRows(t *testing.T) {
	f := open(t)
	tg := sink.Target{Table: "t", Key: []string{"id"}}
	f.mustEnsure(tg, named)
	w := f.writer(tg, named)
	updates := f.updateCounter("t")
	cols := lineageCols("id", "name")

	a := batch(t, named, []any{1, "one"}, []any{2, "two"}, []any{3, "three"})
	wantRows(t, "file A", f.write(w, 100, a, seq(1, 3)), counter.Rows{Read: 3, Inserted: 3})
	wantTable(t, "after file A", f.table("t", "id", cols...),
		"1|'one'|100|1", "2|'two'|100|2", "3|'three'|100|3")

	// File B: id 1 unchanged, id 2 changed, id 4 new.
	b := batch(t, named, []any{1, "one"}, []any{2, "TWO"}, []any{4, "four"})
	before := f.int(`SELECT total_changes()`)
	wantRows(t, "file B", f.write(w, 200, b, seq(1, 3)), counter.Rows{Read: 3, Inserted: 1, Updated: 1, Unchanged: 1})
	if n := updates(); n != 1 {
		t.Errorf("file B updated %d rows, want 1", n)
	}
	// One insert, one update, plus the trigger's one update of its counter.
	if d := f.int(`SELECT total_changes()`) - before; d != 3 {
		t.Errorf("file B made %d changes, want 3", d)
	}
	wantTable(t, "after file B", f.table("t", "id", cols...),
		"1|'one'|100|1", "2|'TWO'|200|2", "3|'three'|100|3", "4|'four'|200|3")

	// File B again: nothing changes.
	wantRows(t, "file B again", f.write(w, 200, b, seq(1, 3)), counter.Rows{Read: 3, Unchanged: 3})
	if n := updates(); n != 1 {
		t.Errorf("file B again updated rows: %d in all, want 1", n)
	}
}

func TestNaturalKeyDuplicatesInOneBatch(t *testing.T) {
	f := open(t)
	tg := sink.Target{Table: "t", Key: []string{"id"}}
	f.mustEnsure(tg, named)
	w := f.writer(tg, named)
	cols := lineageCols("id", "name")

	f.write(w, 100, batch(t, named, []any{1, "one"}), ords(1))
	rec := batch(t, named,
		[]any{5, "a"},   // insert
		[]any{5, "b"},   // update of the row just inserted
		[]any{5, "b"},   // unchanged: keeps ordinal 2's lineage
		[]any{1, "uno"}, // update of a row of another file
		[]any{1, "uno"}, // unchanged
		[]any{6, "x"},   // insert
	)
	wantRows(t, "duplicates", f.write(w, 300, rec, seq(1, 6)), counter.Rows{Read: 6, Inserted: 2, Updated: 2, Unchanged: 2})
	wantTable(t, "after duplicates", f.table("t", "id", cols...),
		"1|'uno'|300|4", "5|'b'|300|2", "6|'x'|300|6")
}

func TestNaturalCompositeKey(t *testing.T) {
	f := open(t)
	s := schemaOf(str("a"), i64("b"), str("val"))
	tg := sink.Target{Table: "c", Key: []string{"a", "b"}}
	f.mustEnsure(tg, s)
	w := f.writer(tg, s)
	cols := lineageCols("a", "b", "val")

	first := batch(t, s, []any{"x", 1, "x1"}, []any{"x", 2, "x2"}, []any{"y", 1, "y1"})
	wantRows(t, "insert", f.write(w, 1, first, seq(1, 3)), counter.Rows{Read: 3, Inserted: 3})

	second := batch(t, s,
		[]any{"x", 1, "X1"}, // update
		[]any{"x", 2, "x2"}, // unchanged
		[]any{"y", 2, "y2"}, // insert: shares a with one key, b with another
		[]any{"x", 1, "X1"}, // duplicate in the batch: unchanged
		[]any{"y", 1, "Y1"}, // update
	)
	wantRows(t, "upsert", f.write(w, 2, second, seq(1, 5)), counter.Rows{Read: 5, Inserted: 1, Updated: 2, Unchanged: 2})
	wantTable(t, "composite", f.table("c", "a, b", cols...),
		"'x'|1|'X1'|2|1", "'x'|2|'x2'|1|2", "'y'|1|'Y1'|2|5", "'y'|2|'y2'|2|3")
	if wr := f.int(`SELECT wr FROM pragma_table_list WHERE name = 'c'`); wr != 1 {
		t.Errorf("composite-key table is not WITHOUT ROWID")
	}
}

// ---- version and order guards --------------------------------------------

var versioned = schemaOf(i64("id"), i64("v"), str("name"))

func TestVersionGuard(t *testing.T) {
	f := open(t)
	tg := sink.Target{Table: "t", Key: []string{"id"}, Version: "v"}
	f.mustEnsure(tg, versioned)
	w := f.writer(tg, versioned)
	updates := f.updateCounter("t")
	cols := lineageCols("id", "v", "name")

	wantRows(t, "file 10", f.write(w, 10, batch(t, versioned,
		[]any{1, 5, "a"},
		[]any{2, nil, "b"},
		[]any{3, 5, "c"},
		[]any{4, 5, "d"},
		[]any{5, 5, "e"},
	), seq(1, 5)), counter.Rows{Read: 5, Inserted: 5})

	wantRows(t, "file 20", f.write(w, 20, batch(t, versioned,
		[]any{1, 4, "older"},   // older v: stale
		[]any{2, 1, "b1"},      // stored NULL v is overwritten
		[]any{3, nil, "null"},  // NULL v over a stored v: stale
		[]any{4, 5, "d-equal"}, // equal v applies
		[]any{5, 6, "e"},       // newer v applies
	), seq(1, 5)), counter.Rows{Read: 5, Updated: 3, Stale: 2})
	if n := updates(); n != 3 {
		t.Errorf("file 20 updated %d rows, want 3", n)
	}
	wantTable(t, "after file 20", f.table("t", "id", cols...),
		"1|5|'a'|10|1",
		"2|1|'b1'|20|2",
		"3|5|'c'|10|3",
		"4|5|'d-equal'|20|4",
		"5|6|'e'|20|5")

	// Equal v and equal values: unchanged, lineage kept.
	wantRows(t, "file 30", f.write(w, 30, batch(t, versioned,
		[]any{4, 5, "d-equal"},
		[]any{1, 3, "stale again"},
	), seq(1, 2)), counter.Rows{Read: 2, Unchanged: 1, Stale: 1})
	wantTable(t, "after file 30", f.table("t", "id", cols...),
		"1|5|'a'|10|1",
		"2|1|'b1'|20|2",
		"3|5|'c'|10|3",
		"4|5|'d-equal'|20|4",
		"5|6|'e'|20|5")
}

func TestSameFileOrderGuard(t *testing.T) {
	f := open(t)
	tg := sink.Target{Table: "t", Key: []string{"id"}}
	f.mustEnsure(tg, named)
	w := f.writer(tg, named)
	cols := lineageCols("id", "name")

	// Partitions of one file committed out of order: row 20 first.
	wantRows(t, "row 20", f.write(w, 50, batch(t, named, []any{9, "twenty"}), ords(20)), counter.Rows{Read: 1, Inserted: 1})
	wantRows(t, "row 10, same file", f.write(w, 50, batch(t, named, []any{9, "ten"}), ords(10)), counter.Rows{Read: 1, Stale: 1})
	wantTable(t, "after row 10", f.table("t", "id", cols...), "9|'twenty'|50|20")

	// The same row again is not older than itself.
	wantRows(t, "row 20 again", f.write(w, 50, batch(t, named, []any{9, "twenty"}), ords(20)), counter.Rows{Read: 1, Unchanged: 1})

	// Another file's smaller ordinal is not older.
	wantRows(t, "row 5 of another file", f.write(w, 60, batch(t, named, []any{9, "five"}), ords(5)), counter.Rows{Read: 1, Updated: 1})
	wantTable(t, "after another file", f.table("t", "id", cols...), "9|'five'|60|5")

	// Within one batch too, duplicates obey the guard after an update.
	wantRows(t, "mixed batch", f.write(w, 60, batch(t, named, []any{9, "four"}, []any{9, "six"}), ords(4, 6)),
		counter.Rows{Read: 2, Updated: 1, Stale: 1})
	wantTable(t, "after mixed batch", f.table("t", "id", cols...), "9|'six'|60|6")
}

func TestSameFileOrderGuardWithEqualVersions(t *testing.T) {
	f := open(t)
	tg := sink.Target{Table: "t", Key: []string{"id"}, Version: "v"}
	f.mustEnsure(tg, versioned)
	w := f.writer(tg, versioned)
	cols := lineageCols("id", "v", "name")

	f.write(w, 50, batch(t, versioned, []any{1, 3, "twenty"}, []any{2, nil, "twenty"}), ords(20, 21))
	wantRows(t, "earlier rows, equal versions", f.write(w, 50,
		batch(t, versioned, []any{1, 3, "ten"}, []any{2, nil, "ten"}), ords(10, 11)), counter.Rows{Read: 2, Stale: 2})
	wantTable(t, "equal versions", f.table("t", "id", cols...), "1|3|'twenty'|50|20", "2|NULL|'twenty'|50|21")
}

// TestVersionOrderDoesNotDependOnCommitOrder writes two rows of one file
// with the same key, in file order and in reverse (as partitions may
// commit): the stored row must be the same both ways. The earlier row has
// the newer version, so it wins in file order; it must win in reverse too.
func TestVersionOrderDoesNotDependOnCommitOrder(t *testing.T) {
	rows := []struct {
		ord int64
		v   any
		val string
	}{{10, 2, "ten"}, {20, 1, "twenty"}, {30, nil, "thirty"}}
	final := func(order []int) ([]string, counter.Rows) {
		f := open(t)
		tg := sink.Target{Table: "t", Key: []string{"id"}, Version: "v"}
		f.mustEnsure(tg, versioned)
		w := f.writer(tg, versioned)
		var total counter.Rows
		for _, i := range order {
			r := rows[i]
			total.Add(f.write(w, 70, batch(t, versioned, []any{1, r.v, r.val}), ords(r.ord)))
		}
		return f.table("t", "id", lineageCols("id", "v", "name")...), total
	}
	inOrder, c := final([]int{0, 1, 2})
	wantTable(t, "in file order", inOrder, "1|2|'ten'|70|10")
	wantRows(t, "in file order", c, counter.Rows{Read: 3, Inserted: 1, Stale: 2})
	for _, order := range [][]int{{2, 1, 0}, {1, 0, 2}, {2, 0, 1}, {1, 2, 0}} {
		got, c := final(order)
		wantTable(t, fmt.Sprintf("commit order %v", order), got, inOrder...)
		if c.Inserted != 1 || c.Read != 3 {
			t.Errorf("commit order %v: counted %+v", order, c)
		}
	}
}

// TestWriteBalancedMixed puts every outcome in one Write.
func TestWriteBalancedMixed(t *testing.T) {
	f := open(t)
	tg := sink.Target{Table: "t", Key: []string{"id"}, Version: "v"}
	f.mustEnsure(tg, versioned)
	w := f.writer(tg, versioned)
	f.write(w, 1, batch(t, versioned, []any{1, 1, "a"}, []any{2, 1, "b"}, []any{3, 9, "c"}), seq(1, 3))

	rec := batch(t, versioned,
		[]any{1, 1, "a"}, // unchanged
		[]any{2, 2, "B"}, // updated
		[]any{3, 1, "c"}, // stale
		[]any{4, 1, "d"}, // inserted
		[]any{4, 2, "D"}, // updated (duplicate)
		[]any{4, 1, "x"}, // stale (duplicate, older version)
		[]any{2, 2, "B"}, // unchanged (duplicate)
	)
	wantRows(t, "mixed", f.write(w, 2, rec, seq(1, 7)), counter.Rows{Read: 7, Inserted: 1, Updated: 2, Unchanged: 2, Stale: 2})
	wantTable(t, "mixed", f.table("t", "id", lineageCols("id", "v", "name")...),
		"1|1|'a'|1|1", "2|2|'B'|2|2", "3|9|'c'|1|3", "4|2|'D'|2|5")

	// An empty batch counts nothing.
	empty := batch(t, versioned)
	wantRows(t, "empty", f.write(w, 2, empty, nil), counter.Rows{})
}

// ---- existing tables -----------------------------------------------------

func columns(t *testing.T, f *fx, table string) []string {
	t.Helper()
	rows, err := f.conn.QueryContext(f.ctx, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		out = append(out, n)
	}
	return out
}

func TestExistingTableWithNaturalKey(t *testing.T) {
	f := open(t)
	f.exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)`)
	f.exec(`INSERT INTO t VALUES (1, 'one'), (2, 'two')`)
	tg := sink.Target{Table: "t", Key: []string{"id"}}

	tbl, err := (Dialect{}).Describe(f.ctx, f.conn, "t")
	if err != nil || tbl == nil {
		t.Fatalf("describe: %v, %v", tbl, err)
	}
	if err := sink.Check(tbl, tg, named); err != nil {
		t.Fatalf("check: %v", err)
	}
	f.mustEnsure(tg, named)
	if got := columns(t, f, "t"); !slices.Equal(got, []string{"id", "name", sink.FileColumn, sink.RowColumn}) {
		t.Fatalf("columns after ensure: %v", got)
	}
	f.mustEnsure(tg, named) // again: nothing more to add

	// Rows the user wrote have no lineage; the sink must still update them.
	w := f.writer(tg, named)
	rec := batch(t, named, []any{1, "one"}, []any{2, "TWO"}, []any{3, "three"})
	wantRows(t, "first import", f.write(w, 40, rec, seq(1, 3)), counter.Rows{Read: 3, Inserted: 1, Updated: 1, Unchanged: 1})
	wantTable(t, "first import", f.table("t", "id", lineageCols("id", "name")...),
		"1|'one'|NULL|NULL", "2|'TWO'|40|2", "3|'three'|40|3")
}

func TestExistingTableWithVersionAndNoLineage(t *testing.T) {
	f := open(t)
	f.exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER, name TEXT)`)
	f.exec(`INSERT INTO t VALUES (1, 5, 'a'), (2, 5, 'b'), (3, NULL, 'c')`)
	tg := sink.Target{Table: "t", Key: []string{"id"}, Version: "v"}
	f.mustEnsure(tg, versioned)
	w := f.writer(tg, versioned)
	rec := batch(t, versioned, []any{1, 4, "older"}, []any{2, 6, "newer"}, []any{3, 1, "versioned"})
	wantRows(t, "over user rows", f.write(w, 40, rec, seq(1, 3)), counter.Rows{Read: 3, Updated: 2, Stale: 1})
	wantTable(t, "over user rows", f.table("t", "id", lineageCols("id", "v", "name")...),
		"1|5|'a'|NULL|NULL", "2|6|'newer'|40|2", "3|1|'versioned'|40|3")
}

func TestExistingTableWithoutLineageKeyRejectedInOrdinalMode(t *testing.T) {
	f := open(t)
	f.exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)`)
	err := f.ensure(sink.Target{Table: "t"}, named)
	if err == nil {
		t.Fatal("ordinal mode accepted a table keyed by id")
	}
	if want := "its primary key is not (_idemport_file, _idemport_row)"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if got := columns(t, f, "t"); !slices.Equal(got, []string{"id", "name"}) {
		t.Errorf("a rejected table was altered: %v", got)
	}
}

func TestCheckReportsEveryProblem(t *testing.T) {
	f := open(t)
	s := schemaOf(i64("id"), str("name"), str("note"))
	tg := sink.Target{Table: "t", Key: []string{"id"}}
	cases := []struct {
		name, ddl string
		want      []string // substrings of the error; none means accepted
	}{
		{"fits", `CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, note TEXT, extra TEXT, d TEXT NOT NULL DEFAULT 'x')`, nil},
		{"missing column", `CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)`,
			[]string{`it has no column "note"`}},
		{"not null without default", `CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, note TEXT, created TEXT NOT NULL)`,
			[]string{`column "created" is NOT NULL without a default and the file does not have it`}},
		{"incompatible type", `CREATE TABLE t (id INTEGER PRIMARY KEY, name INTEGER, note TEXT)`,
			[]string{`column "name" is INTEGER, the file's is string`}},
		{"key not unique", `CREATE TABLE t (id INTEGER, name TEXT, note TEXT)`,
			[]string{`(id) is not its primary key or a unique index`}},
		{"all at once", `CREATE TABLE t (id INTEGER PRIMARY KEY, name REAL, created TEXT NOT NULL)`,
			[]string{`it has no column "note"`, `column "name" is REAL, the file's is string`, `column "created" is NOT NULL without a default`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.exec(`DROP TABLE IF EXISTS t`)
			f.exec(c.ddl)
			tbl, err := (Dialect{}).Describe(f.ctx, f.conn, "t")
			if err != nil {
				t.Fatal(err)
			}
			checkErr := sink.Check(tbl, tg, s)
			ensureErr := f.ensure(tg, s)
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
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: error %q does not say %q", what, err, w)
					}
				}
			}
			if len(c.want) > 0 && slices.Contains(columns(t, f, "t"), sink.FileColumn) {
				t.Errorf("ensure altered a table it rejected")
			}
		})
	}
}

func TestUniqueIndexKey(t *testing.T) {
	f := open(t)
	// A surrogate rowid key the file does not carry, and the natural key
	// as a unique index only.
	f.exec(`CREATE TABLE t (rid INTEGER PRIMARY KEY, code TEXT NOT NULL, name TEXT)`)
	f.exec(`CREATE UNIQUE INDEX t_code ON t (code)`)
	f.exec(`INSERT INTO t (code, name) VALUES ('a', 'alpha')`)
	s := schemaOf(str("code"), str("name"))
	tg := sink.Target{Table: "t", Key: []string{"code"}}
	f.mustEnsure(tg, s)
	w := f.writer(tg, s)
	rec := batch(t, s, []any{"a", "ALPHA"}, []any{"b", "beta"})
	wantRows(t, "via unique index", f.write(w, 3, rec, seq(1, 2)), counter.Rows{Read: 2, Inserted: 1, Updated: 1})
	wantTable(t, "via unique index", f.table("t", "rid", lineageCols("rid", "code", "name")...),
		"1|'a'|'ALPHA'|3|1", "2|'b'|'beta'|3|2")

	// A composite unique index, declared in another column order.
	f.exec(`CREATE TABLE u (a TEXT, b INTEGER, val TEXT)`)
	f.exec(`CREATE UNIQUE INDEX u_ba ON u (b, a)`)
	us := schemaOf(str("a"), i64("b"), str("val"))
	utg := sink.Target{Table: "u", Key: []string{"a", "b"}}
	f.mustEnsure(utg, us)
	uw := f.writer(utg, us)
	wantRows(t, "composite index", f.write(uw, 3, batch(t, us, []any{"x", 1, "v"}, []any{"x", 1, "w"}), seq(1, 2)),
		counter.Rows{Read: 2, Inserted: 1, Updated: 1})

	// A partial unique index is not a key; neither is a plain index.
	f.exec(`CREATE TABLE p (k TEXT, val TEXT)`)
	f.exec(`CREATE UNIQUE INDEX p_k ON p (k) WHERE k IS NOT NULL`)
	f.exec(`CREATE INDEX p_val ON p (val)`)
	ps := schemaOf(str("k"), str("val"))
	for _, key := range []string{"k", "val"} {
		if err := f.ensure(sink.Target{Table: "p", Key: []string{key}}, ps); err == nil || !strings.Contains(err.Error(), "is not its primary key or a unique index") {
			t.Errorf("key %s on p: %v", key, err)
		}
	}
}

func TestDescribeMissingTable(t *testing.T) {
	f := open(t)
	tbl, err := (Dialect{}).Describe(f.ctx, f.conn, "nope")
	if err != nil || tbl != nil {
		t.Fatalf("describe of a missing table: %+v, %v", tbl, err)
	}
}

func TestDescribe(t *testing.T) {
	f := open(t)
	f.exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, flag BOOLEAN NOT NULL DEFAULT 0, at TIMESTAMP, doc JSON, x REAL, blob BLOB)`)
	f.exec(`CREATE UNIQUE INDEX t_at_x ON t (at, x)`)
	tbl, err := (Dialect{}).Describe(f.ctx, f.conn, "t")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range tbl.Columns {
		got = append(got, fmt.Sprintf("%s %s kind=%s notnull=%v default=%v", c.Name, c.SQLType, c.Kind, c.NotNull, c.Default))
	}
	wantTable(t, "columns", got,
		"id INTEGER kind=int64 notnull=false default=true",
		"flag BOOLEAN kind=bool notnull=true default=true",
		"at TIMESTAMP kind=timestamp notnull=false default=false",
		"doc JSON kind=json notnull=false default=false",
		"x REAL kind=float64 notnull=false default=false",
		"blob BLOB kind= notnull=false default=false")
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
		f.exec(ddl)
		name := strings.Fields(ddl)[2]
		tbl, err := (Dialect{}).Describe(f.ctx, f.conn, name)
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

// ---- stored values -------------------------------------------------------

func TestStoredValues(t *testing.T) {
	f := open(t)
	s := schemaOf(i64("id"), boolean("ok"), ts("at"), jsonField("doc"), f64("x"), str("s"))
	for _, tg := range []sink.Target{{Table: "ord"}, {Table: "nat", Key: []string{"id"}}} {
		f.mustEnsure(tg, s)
		w := f.writer(tg, s)
		rec := batch(t, s,
			[]any{1, true, time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC), `{"a":[1,2]}`, 1.25, ""},
			[]any{2, false, time.Date(2026, 11, 28, 10, 30, 0, 123456000, time.FixedZone("x", 3600)), `null`, 2.0, "two"},
			[]any{3, nil, nil, nil, nil, nil},
			[]any{4, true, time.UnixMicro(-1), `"s"`, -0.5, "-"},
		)
		wantRows(t, tg.Table, f.write(w, 1, rec, seq(1, 4)), counter.Rows{Read: 4, Inserted: 4})
		wantTable(t, tg.Table, f.table(tg.Table, "id", "id", "ok", "at", "doc", "x", "s"),
			`1|1|'2026-11-28T09:30:00.000000Z'|'{"a":[1,2]}'|1.25|''`,
			`2|0|'2026-11-28T09:30:00.123456Z'|'null'|2.0|'two'`,
			`3|NULL|NULL|NULL|NULL|NULL`,
			`4|1|'1969-12-31T23:59:59.999999Z'|'"s"'|-0.5|'-'`)
		if n := f.int(`SELECT count(*) FROM ` + q(tg.Table) + ` WHERE typeof(ok) NOT IN ('integer', 'null') OR typeof(at) NOT IN ('text', 'null')`); n != 0 {
			t.Errorf("%s: %d rows with bools not integers or timestamps not text", tg.Table, n)
		}
		wantRows(t, tg.Table+" again", f.write(w, 1, rec, seq(1, 4)), counter.Rows{Read: 4, Unchanged: 4})
	}
	var decl []string
	rows, err := f.conn.QueryContext(f.ctx, `SELECT name || ' ' || type FROM pragma_table_info('ord') ORDER BY cid`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var d string
		rows.Scan(&d)
		decl = append(decl, d)
	}
	rows.Close()
	wantTable(t, "declared types", decl,
		"_idemport_file INTEGER", "_idemport_row INTEGER", "id INTEGER", "ok BOOLEAN", "at TIMESTAMP", "doc TEXT", "x REAL", "s TEXT")
}

// A json column keeps its kind through the Arrow field metadata.
func TestKindOfJSONField(t *testing.T) {
	if k := sink.KindOf(jsonField("doc")); k != sink.KindJSON {
		t.Errorf("json field is %s", k)
	}
	if k := sink.KindOf(ts("at")); k != sink.KindTimestamp {
		t.Errorf("timestamp field is %s", k)
	}
}
