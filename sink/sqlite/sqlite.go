// Package sqlite is the SQLite dialect of package sink.
//
// Ordinal-mode tables are WITHOUT ROWID tables clustered on (file key, row
// ordinal), so a file's rows are written in key order; natural-key tables
// use the key as INTEGER PRIMARY KEY when it is one integer column. Rows are
// upserted with multi-row INSERT … ON CONFLICT DO UPDATE … WHERE statements,
// whose WHERE leaves unchanged and stale rows untouched.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/idemport/idemport/internal/counter"
	"github.com/idemport/idemport/internal/dialect"
	"github.com/idemport/idemport/sink"
)

// Dialect implements sink.Dialect for SQLite.
type Dialect struct{}

var _ sink.Dialect = Dialect{}

// maxVariables is SQLite's default bound on bound parameters per statement.
const maxVariables = 32766

// rowsPerStatement is how many rows one INSERT carries at most: enough to
// amortise the per-statement cost, which dominates SQLite writes.
const rowsPerStatement = 100

func q(name string) string { return dialect.QuoteOne(name) }

// sqlType is the declared type for a kind. TIMESTAMP and BOOLEAN keep their
// meaning visible to readers of the table; timestamps are stored as
// fixed-width UTC text, booleans as 0 and 1.
func sqlType(kind string) string {
	switch kind {
	case sink.KindBool:
		return "BOOLEAN"
	case sink.KindInt64:
		return "INTEGER"
	case sink.KindFloat64:
		return "REAL"
	case sink.KindTimestamp:
		return "TIMESTAMP"
	}
	return "TEXT"
}

// kindOf maps a declared SQLite type to a kind, following SQLite's own
// affinity rules where they decide.
func kindOf(decl string) string {
	t := strings.ToUpper(decl)
	switch {
	case strings.Contains(t, "BOOL"):
		return sink.KindBool
	case strings.Contains(t, "INT"):
		return sink.KindInt64
	case strings.Contains(t, "JSON"):
		return sink.KindJSON
	case strings.Contains(t, "CHAR"), strings.Contains(t, "CLOB"), strings.Contains(t, "TEXT"):
		return sink.KindString
	case strings.Contains(t, "REAL"), strings.Contains(t, "FLOA"), strings.Contains(t, "DOUB"):
		return sink.KindFloat64
	case strings.Contains(t, "TIMESTAMP"), strings.Contains(t, "DATETIME"):
		return sink.KindTimestamp
	}
	return ""
}

// Describe implements sink.Dialect.
func (Dialect) Describe(ctx context.Context, qr dialect.Querier, name string) (*sink.Table, error) {
	rows, err := qr.QueryContext(ctx, `SELECT name, type, "notnull", dflt_value IS NOT NULL, pk FROM pragma_table_info(?) ORDER BY cid`, name)
	if err != nil {
		return nil, fmt.Errorf("describe table %s: %w", name, err)
	}
	t := &sink.Table{Name: name}
	var pk []string
	pkPos := map[int]string{}
	for rows.Next() {
		var c sink.Column
		var pos int
		if err := rows.Scan(&c.Name, &c.SQLType, &c.NotNull, &c.Default, &pos); err != nil {
			rows.Close()
			return nil, fmt.Errorf("describe table %s: %w", name, err)
		}
		c.Kind = kindOf(c.SQLType)
		if pos > 0 {
			pkPos[pos] = c.Name
		}
		t.Columns = append(t.Columns, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("describe table %s: %w", name, err)
	}
	if len(t.Columns) == 0 {
		return nil, nil
	}
	for i := 1; i <= len(pkPos); i++ {
		pk = append(pk, pkPos[i])
	}
	if len(pk) > 0 {
		t.Keys = append(t.Keys, pk)
	}
	idx, err := qr.QueryContext(ctx, `SELECT name, origin = 'pk' FROM pragma_index_list(?) WHERE "unique" = 1 AND partial = 0`, name)
	if err != nil {
		return nil, fmt.Errorf("describe indexes of %s: %w", name, err)
	}
	var names []string
	pkIndex := false
	for idx.Next() {
		var n string
		var isPK bool
		if err := idx.Scan(&n, &isPK); err != nil {
			idx.Close()
			return nil, err
		}
		names = append(names, n)
		pkIndex = pkIndex || isPK
	}
	idx.Close()
	// A primary key that is one INTEGER column and has no index of its own
	// is the rowid, which SQLite assigns when a row gives none.
	if len(pk) == 1 && !pkIndex {
		if c := t.Column(pk[0]); strings.EqualFold(c.SQLType, "INTEGER") {
			c.Default = true
		}
	}
	for _, n := range names {
		cols, err := qr.QueryContext(ctx, `SELECT coalesce(name, '') FROM pragma_index_info(?) ORDER BY seqno`, n)
		if err != nil {
			return nil, fmt.Errorf("describe index %s: %w", n, err)
		}
		var key []string
		for cols.Next() {
			var c string
			if err := cols.Scan(&c); err != nil {
				cols.Close()
				return nil, err
			}
			key = append(key, c)
		}
		cols.Close()
		t.Keys = append(t.Keys, key)
	}
	return t, nil
}

// Ensure implements sink.Dialect.
func (d Dialect) Ensure(ctx context.Context, tx *sql.Tx, tg sink.Target, schema *arrow.Schema) error {
	t, err := d.Describe(ctx, tx, tg.Table)
	if err != nil {
		return err
	}
	if t == nil {
		if _, err := tx.ExecContext(ctx, createSQL(tg, schema)); err != nil {
			return fmt.Errorf("create table %s: %w", tg.Table, err)
		}
		return nil
	}
	if err := sink.Check(t, tg, schema); err != nil {
		return err
	}
	for _, name := range []string{sink.FileColumn, sink.RowColumn} {
		if t.Column(name) == nil {
			if _, err := tx.ExecContext(ctx, `ALTER TABLE `+q(tg.Table)+` ADD COLUMN `+q(name)+` INTEGER`); err != nil {
				return fmt.Errorf("add lineage column %s to %s: %w", name, tg.Table, err)
			}
		}
	}
	return nil
}

func createSQL(tg sink.Target, schema *arrow.Schema) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE " + q(tg.Table) + " (\n")
	intKey := len(tg.Key) == 1 && sink.KindOf(schema.Field(schema.FieldIndices(tg.Key[0])[0])) == sink.KindInt64
	if tg.Ordinal() {
		fmt.Fprintf(&b, "  %s INTEGER NOT NULL,\n  %s INTEGER NOT NULL,\n", q(sink.FileColumn), q(sink.RowColumn))
	}
	for _, f := range schema.Fields() {
		fmt.Fprintf(&b, "  %s %s", q(f.Name), sqlType(sink.KindOf(f)))
		if intKey && f.Name == tg.Key[0] {
			b.WriteString(" PRIMARY KEY")
		} else if !tg.Ordinal() && contains(tg.Key, f.Name) {
			b.WriteString(" NOT NULL")
		}
		b.WriteString(",\n")
	}
	if tg.Ordinal() {
		fmt.Fprintf(&b, "  PRIMARY KEY (%s, %s)\n) WITHOUT ROWID", q(sink.FileColumn), q(sink.RowColumn))
		return b.String()
	}
	fmt.Fprintf(&b, "  %s INTEGER,\n  %s INTEGER", q(sink.FileColumn), q(sink.RowColumn))
	if intKey {
		b.WriteString("\n)")
		return b.String()
	}
	fmt.Fprintf(&b, ",\n  PRIMARY KEY (%s)\n) WITHOUT ROWID", quoteList(tg.Key, ""))
	return b.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func quoteList(names []string, prefix string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + q(n)
	}
	return strings.Join(out, ", ")
}

// writer upserts batches through statements prepared on one connection.
type writer struct {
	conn    *sql.Conn
	tg      sink.Target
	kinds   []string
	keyIdx  []int // schema positions of the key columns
	verIdx  int   // schema position of the version column, or -1
	perStmt int
	upsert  string // INSERT prefix up to VALUES
	suffix  string // ON CONFLICT … clause
	tuple   string // one row's placeholders
	stmts   map[int]*sql.Stmt
	probe   string // natural-key mode: pre-count statement prefix
	args    []any
	keys    map[string]struct{}
	keyBuf  []byte
}

// Writer implements sink.Dialect.
func (Dialect) Writer(ctx context.Context, conn *sql.Conn, tg sink.Target, schema *arrow.Schema) (sink.Writer, error) {
	w := &writer{conn: conn, tg: tg, verIdx: -1, stmts: map[int]*sql.Stmt{}, keys: map[string]struct{}{}}
	var cols, data []string
	cols = append(cols, q(sink.FileColumn), q(sink.RowColumn))
	for i, f := range schema.Fields() {
		w.kinds = append(w.kinds, sink.KindOf(f))
		cols = append(cols, q(f.Name))
		if contains(tg.Key, f.Name) {
			continue
		}
		data = append(data, f.Name)
		if f.Name == tg.Version {
			w.verIdx = i
		}
	}
	for _, k := range tg.Key {
		w.keyIdx = append(w.keyIdx, schema.FieldIndices(k)[0])
	}
	w.perStmt = min(rowsPerStatement, maxVariables/len(cols))
	w.tuple = "(" + strings.TrimSuffix(strings.Repeat("?,", len(cols)), ",") + ")"
	table := q(tg.Table)
	w.upsert = "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES "

	conflict := []string{sink.FileColumn, sink.RowColumn}
	if !tg.Ordinal() {
		conflict = tg.Key
	}
	var set []string
	for _, c := range data {
		set = append(set, q(c)+" = excluded."+q(c))
	}
	var guard []string
	if !tg.Ordinal() {
		set = append(set, q(sink.FileColumn)+" = excluded."+q(sink.FileColumn), q(sink.RowColumn)+" = excluded."+q(sink.RowColumn))
		guard = append(guard, "NOT "+staleSQL(table, "excluded", tg.Version))
	}
	if len(data) > 0 {
		guard = append(guard, "("+quoteList(data, table+".")+") IS NOT ("+quoteList(data, "excluded.")+")")
		w.suffix = " ON CONFLICT (" + quoteList(conflict, "") + ") DO UPDATE SET " + strings.Join(set, ", ") + " WHERE " + strings.Join(guard, " AND ")
	} else {
		w.suffix = " ON CONFLICT (" + quoteList(conflict, "") + ") DO NOTHING"
	}

	if !tg.Ordinal() {
		// b holds, per row of a statement, its key, its version and its ordinal.
		names := make([]string, 0, len(tg.Key)+2)
		for i := range tg.Key {
			names = append(names, fmt.Sprintf("k%d", i))
		}
		names = append(names, "v", "r")
		var on []string
		for i, k := range tg.Key {
			on = append(on, fmt.Sprintf("%s.%s = b.k%d", table, q(k), i))
		}
		stale := staleSQL(table, "b", tg.Version)
		w.probe = "WITH b(" + strings.Join(names, ", ") + ") AS (VALUES {{values}}) SELECT count(*), coalesce(sum(CASE WHEN " + stale +
			" THEN 1 ELSE 0 END), 0) FROM b JOIN " + table + " ON " + strings.Join(on, " AND ")
	}
	return w, nil
}

// staleSQL is the condition under which row src (excluded, or the probe's
// b) is older than the stored row: the stored version is newer, or (with
// equal versions, or no version column) a later row of the same file was
// already applied.
func staleSQL(table, src, version string) string {
	row := "b.r"
	if src == "excluded" {
		row = "excluded." + q(sink.RowColumn)
	}
	file := "{{file}}"
	if src == "excluded" {
		file = "excluded." + q(sink.FileColumn)
	}
	// Never NULL: the probe and the upsert's guard must agree, and rows
	// already in an existing table have NULL lineage.
	cond := "coalesce(" + table + "." + q(sink.FileColumn) + " = " + file + " AND " + table + "." + q(sink.RowColumn) + " > " + row + ", 0)"
	if version != "" {
		v := "b.v"
		if src == "excluded" {
			v = "excluded." + q(version)
		}
		stored := table + "." + q(version)
		// The version decides; the position in the file only between equal
		// versions (NULL is older than any), so that the outcome does not
		// depend on the order in which a file's partitions commit.
		cond = "((" + stored + " IS NOT NULL AND (" + v + " IS NULL OR " + v + " < " + stored + ")) OR (" + v + " IS " + stored + " AND " + cond + "))"
	}
	return cond
}

func (w *writer) stmt(ctx context.Context, tx *sql.Tx, n int) (*sql.Stmt, error) {
	s, ok := w.stmts[n]
	if !ok {
		var err error
		s, err = w.conn.PrepareContext(ctx, w.upsert+strings.TrimSuffix(strings.Repeat(w.tuple+",", n), ",")+w.suffix)
		if err != nil {
			return nil, fmt.Errorf("prepare upsert into %s: %w", w.tg.Table, err)
		}
		w.stmts[n] = s
	}
	return tx.StmtContext(ctx, s), nil
}

// Write implements sink.Writer.
func (w *writer) Write(ctx context.Context, tx *sql.Tx, fileKey int64, rec arrow.RecordBatch, ordinals []int64) (counter.Rows, error) {
	var total counter.Rows
	n := int(rec.NumRows())
	if n == 0 {
		return total, nil
	}
	total.Read = int64(n)
	if w.tg.Ordinal() {
		existing, err := w.existing(ctx, tx, fileKey, ordinals)
		if err != nil {
			return total, err
		}
		var affected int64
		for start := 0; start < n; start += w.perStmt {
			end := min(start+w.perStmt, n)
			a, err := w.exec(ctx, tx, fileKey, rec, ordinals, start, end)
			if err != nil {
				return total, err
			}
			affected += a
		}
		total.Inserted = int64(n) - existing
		total.Updated = affected - total.Inserted
		total.Unchanged = existing - total.Updated
		return total, nil
	}
	// Natural keys: statements never hold the same key twice, so that the
	// probe before each statement sees exactly the rows it will conflict with.
	start := 0
	clear(w.keys)
	for i := 0; i <= n; i++ {
		if i < n {
			k := w.key(rec, i)
			_, dup := w.keys[k]
			if !dup && i-start < w.perStmt {
				w.keys[k] = struct{}{}
				continue
			}
		}
		if i > start {
			c, err := w.natural(ctx, tx, fileKey, rec, ordinals, start, i)
			if err != nil {
				return total, err
			}
			total.Inserted += c.Inserted
			total.Updated += c.Updated
			total.Unchanged += c.Unchanged
			total.Stale += c.Stale
		}
		if i < n {
			clear(w.keys)
			w.keys[w.key(rec, i)] = struct{}{}
			start = i
		}
	}
	return total, nil
}

// natural writes rows [start, end) with distinct keys and counts them.
func (w *writer) natural(ctx context.Context, tx *sql.Tx, fileKey int64, rec arrow.RecordBatch, ordinals []int64, start, end int) (counter.Rows, error) {
	var c counter.Rows
	w.args = w.args[:0]
	for i := start; i < end; i++ {
		for _, k := range w.keyIdx {
			w.args = append(w.args, value(rec.Column(k), w.kinds[k], i))
		}
		if w.verIdx >= 0 {
			w.args = append(w.args, value(rec.Column(w.verIdx), w.kinds[w.verIdx], i))
		} else {
			w.args = append(w.args, nil)
		}
		w.args = append(w.args, ordinals[i])
	}
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?,", len(w.keyIdx)+2), ",") + ")"
	probe := strings.Replace(w.probe, "{{values}}", strings.TrimSuffix(strings.Repeat(tuple+",", end-start), ","), 1)
	probe = strings.ReplaceAll(probe, "{{file}}", strconv.FormatInt(fileKey, 10))
	var existing, stale int64
	if err := tx.QueryRowContext(ctx, probe, w.args...).Scan(&existing, &stale); err != nil {
		return c, fmt.Errorf("probe %s: %w", w.tg.Table, err)
	}
	affected, err := w.exec(ctx, tx, fileKey, rec, ordinals, start, end)
	if err != nil {
		return c, err
	}
	c.Inserted = int64(end-start) - existing
	c.Updated = affected - c.Inserted
	c.Stale = stale
	c.Unchanged = existing - stale - c.Updated
	if c.Updated < 0 || c.Unchanged < 0 {
		return c, fmt.Errorf("write %s: counts do not add up (existing %d, stale %d, changed %d)", w.tg.Table, existing, stale, affected)
	}
	return c, nil
}

func (w *writer) key(rec arrow.RecordBatch, i int) string {
	w.keyBuf = w.keyBuf[:0]
	for _, k := range w.keyIdx {
		w.keyBuf = fmt.Append(w.keyBuf, value(rec.Column(k), w.kinds[k], i), "\x00")
	}
	return string(w.keyBuf)
}

// existing counts the target rows already present for these ordinals.
func (w *writer) existing(ctx context.Context, tx *sql.Tx, fileKey int64, ordinals []int64) (int64, error) {
	first, last := ordinals[0], ordinals[len(ordinals)-1]
	base := `SELECT count(*) FROM ` + q(w.tg.Table) + ` WHERE ` + q(sink.FileColumn) + ` = ? AND ` + q(sink.RowColumn)
	var n int64
	if last-first+1 == int64(len(ordinals)) {
		err := tx.QueryRowContext(ctx, base+` BETWEEN ? AND ?`, fileKey, first, last).Scan(&n)
		if err != nil {
			return 0, fmt.Errorf("count existing rows: %w", err)
		}
		return n, nil
	}
	for start := 0; start < len(ordinals); start += 500 {
		chunk := ordinals[start:min(start+500, len(ordinals))]
		args := []any{fileKey}
		for _, o := range chunk {
			args = append(args, o)
		}
		var m int64
		err := tx.QueryRowContext(ctx, base+` IN (`+strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ",")+`)`, args...).Scan(&m)
		if err != nil {
			return 0, fmt.Errorf("count existing rows: %w", err)
		}
		n += m
	}
	return n, nil
}

// exec runs one upsert of rows [start, end) and returns the rows it changed.
func (w *writer) exec(ctx context.Context, tx *sql.Tx, fileKey int64, rec arrow.RecordBatch, ordinals []int64, start, end int) (int64, error) {
	st, err := w.stmt(ctx, tx, end-start)
	if err != nil {
		return 0, err
	}
	w.args = w.args[:0]
	cols := rec.Columns()
	for i := start; i < end; i++ {
		w.args = append(w.args, fileKey, ordinals[i])
		for c, col := range cols {
			w.args = append(w.args, value(col, w.kinds[c], i))
		}
	}
	res, err := st.ExecContext(ctx, w.args...)
	if err != nil {
		return 0, fmt.Errorf("upsert into %s (rows %d-%d): %w", w.tg.Table, ordinals[start], ordinals[end-1], err)
	}
	return res.RowsAffected()
}

// value returns the SQLite value of row i of a.
func value(a arrow.Array, kind string, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.Int64:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Boolean:
		if a.Value(i) {
			return int64(1)
		}
		return int64(0)
	case *array.Timestamp:
		return sink.FormatTimestamp(int64(a.Value(i)))
	case *array.String:
		return a.Value(i)
	}
	return fmt.Sprint(a.GetOneForMarshal(i))
}

// Close implements sink.Writer.
func (w *writer) Close() error {
	var errs []error
	for _, s := range w.stmts {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
