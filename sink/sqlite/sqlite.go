package sqlite

import "C"

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
)

// Available reports whether this build has SQLite: nil here; ErrNoSQLite
// in a build without cgo.
func Available() error { return nil }

// sqlType is the declared type for a kind. TIMESTAMP and BOOLEAN keep their
// meaning visible to readers of the table; timestamps are stored as
// fixed-width UTC text, booleans as 0 and 1. Decimals are DECIMAL TEXT:
// TEXT affinity keeps their canonical text as it is (NUMERIC affinity would
// round it to 15 digits), and the name says what the text holds.
func sqlType(kind idemtype.Type) string {
	switch kind {
	case idemtype.Decimal:
		return "DECIMAL TEXT"
	case idemtype.Bool:
		return "BOOLEAN"
	case idemtype.Int64:
		return "INTEGER"
	case idemtype.Float64:
		return "REAL"
	case idemtype.Timestamp:
		return "TIMESTAMP"
	case idemtype.LocalTimestamp:
		return "TIMESTAMP WITHOUT TIME ZONE"
	case idemtype.Date:
		return "DATE"
	}
	return "TEXT"
}

// kindOf maps a declared SQLite type to a kind, following SQLite's own
// affinity rules where they decide.
func kindOf(decl string) idemtype.Type {
	t := strings.ToUpper(decl)
	switch {
	case strings.Contains(t, "DECIMAL") && strings.Contains(t, "TEXT"):
		return idemtype.Decimal
	case strings.Contains(t, "BOOL"):
		return idemtype.Bool
	case strings.Contains(t, "INT"):
		return idemtype.Int64
	case strings.Contains(t, "JSON"):
		return idemtype.JSON
	case strings.Contains(t, "CHAR"), strings.Contains(t, "CLOB"), strings.Contains(t, "TEXT"):
		return idemtype.String
	case strings.Contains(t, "REAL"), strings.Contains(t, "FLOA"), strings.Contains(t, "DOUB"):
		return idemtype.Float64
	case strings.Contains(t, "WITHOUT TIME ZONE"):
		return idemtype.LocalTimestamp
	case strings.Contains(t, "TIMESTAMP"), strings.Contains(t, "DATETIME"):
		return idemtype.Timestamp
	case t == "DATE":
		return idemtype.Date
	}
	return idemtype.Unknown
}

// Describe implements sink.Driver.
func (Driver) Describe(ctx context.Context, qr sink.Querier, name string) (*sink.Table, error) {
	t, _, err := describe(ctx, qr, name)
	return t, err
}

// index is a unique index of a table as describe read it: its columns, in
// order, and which of them it holds as numberExpr of the column (a decimal
// key compared by its number) rather than as stored. A column it holds as
// another expression is "".
type index struct {
	columns []string
	number  []bool
	colls   []string // each column's collation in the index
}

// describe returns the table named name (nil when it does not exist) and
// its unique indexes, the primary key's among them.
func describe(ctx context.Context, qr sink.Querier, name string) (*sink.Table, []index, error) {
	t, pkPos, err := tableColumns(ctx, qr, name)
	if err != nil || t == nil {
		return nil, nil, err
	}
	var pk []string
	for i := 1; i <= len(pkPos); i++ {
		pk = append(pk, pkPos[i])
	}
	var indexes []index
	if len(pk) > 0 {
		t.Keys = append(t.Keys, pk)
		indexes = append(indexes, index{columns: pk, number: make([]bool, len(pk))})
	}
	list, pkIndex, err := uniqueIndexes(ctx, qr, name)
	if err != nil {
		return nil, nil, err
	}
	// A primary key that is one INTEGER column and has no index of its own
	// is the rowid, which SQLite assigns when a row gives none.
	if len(pk) == 1 && !pkIndex {
		if c := t.Column(pk[0]); strings.EqualFold(c.SQLType, "INTEGER") {
			c.Default = true
		}
	}
	for _, l := range list {
		ix, exprs, err := indexColumns(ctx, qr, l)
		if err != nil {
			return nil, nil, err
		}
		numbered(&ix, exprs, l.sql, t)
		for i, name := range ix.columns {
			if c := t.Column(name); c != nil && c.Collation == "" && !strings.EqualFold(ix.colls[i], "BINARY") {
				c.Collation = ix.colls[i]
			}
		}
		t.Keys = append(t.Keys, ix.columns)
		indexes = append(indexes, ix)
	}
	return t, indexes, nil
}

// tableColumns returns the table named name with its columns (nil when it
// does not exist), and the names of its primary key's columns by their
// positions in the key, from 1.
func tableColumns(ctx context.Context, qr sink.Querier, name string) (*sink.Table, map[int]string, error) {
	rows, err := qr.QueryContext(ctx, `SELECT name, type, "notnull", dflt_value IS NOT NULL, pk FROM pragma_table_info(?) ORDER BY cid`, name)
	if err != nil {
		return nil, nil, fmt.Errorf("describe table %s: %w", name, err)
	}
	t := &sink.Table{Name: name}
	pkPos := map[int]string{}
	for rows.Next() {
		var c sink.Column
		var pos int
		if err := rows.Scan(&c.Name, &c.SQLType, &c.NotNull, &c.Default, &pos); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("describe table %s: %w", name, err)
		}
		c.Kind = kindOf(c.SQLType)
		if pos > 0 {
			pkPos[pos] = c.Name
		}
		t.Columns = append(t.Columns, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("describe table %s: %w", name, err)
	}
	if len(t.Columns) == 0 {
		return nil, nil, nil
	}
	return t, pkPos, nil
}

// listed is a unique index of a table: its name and its statement.
type listed struct {
	name, sql string
}

// uniqueIndexes lists the full unique indexes of the table named name, and
// reports whether its primary key has an index of its own.
func uniqueIndexes(ctx context.Context, qr sink.Querier, name string) ([]listed, bool, error) {
	idx, err := qr.QueryContext(ctx, `SELECT l.name, l.origin = 'pk', coalesce(m.sql, '') FROM pragma_index_list(?) l
		LEFT JOIN sqlite_master m ON m.type = 'index' AND m.name = l.name
		WHERE l."unique" = 1 AND l.partial = 0`, name)
	if err != nil {
		return nil, false, fmt.Errorf("describe indexes of %s: %w", name, err)
	}
	var list []listed
	pkIndex := false
	for idx.Next() {
		var l listed
		var isPK bool
		if err := idx.Scan(&l.name, &isPK, &l.sql); err != nil {
			idx.Close()
			return nil, false, err
		}
		list = append(list, l)
		pkIndex = pkIndex || isPK
	}
	idx.Close()
	if err := idx.Err(); err != nil {
		return nil, false, fmt.Errorf("describe indexes of %s: %w", name, err)
	}
	return list, pkIndex, nil
}

// indexColumns returns the columns of the index l, and the positions of
// the expressions among them.
func indexColumns(ctx context.Context, qr sink.Querier, l listed) (index, []int, error) {
	cols, err := qr.QueryContext(ctx, `SELECT cid, coalesce(name, ''), coalesce(coll, 'BINARY') FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno`, l.name)
	if err != nil {
		return index{}, nil, fmt.Errorf("describe index %s: %w", l.name, err)
	}
	var ix index
	var exprs []int // positions of the expressions among the columns
	for cols.Next() {
		var cid int
		var c, coll string
		if err := cols.Scan(&cid, &c, &coll); err != nil {
			cols.Close()
			return index{}, nil, err
		}
		if cid == -2 {
			exprs = append(exprs, len(ix.columns))
		}
		ix.columns = append(ix.columns, c)
		ix.number = append(ix.number, false)
		ix.colls = append(ix.colls, coll)
	}
	cols.Close()
	if err := cols.Err(); err != nil {
		return index{}, nil, fmt.Errorf("describe index %s: %w", l.name, err)
	}
	return ix, exprs, nil
}

// numbered names the columns of ix that are expressions (at the positions
// exprs), when each is numberExpr of a column of t: its statement, sql,
// holds those expressions in the order of its columns. Other expressions
// stay "", so that the index is no key of the file's columns.
func numbered(ix *index, exprs []int, sql string, t *sink.Table) {
	if len(exprs) == 0 {
		return
	}
	type found struct {
		at   int
		name string
	}
	var all []found
	for _, c := range t.Columns {
		e := numberExpr(q(c.Name))
		for from := 0; ; {
			i := strings.Index(sql[from:], e)
			if i < 0 {
				break
			}
			all = append(all, found{from + i, c.Name})
			from += i + len(e)
		}
	}
	if len(all) != len(exprs) {
		return
	}
	slices.SortFunc(all, func(a, b found) int { return a.at - b.at })
	for i, at := range exprs {
		ix.columns[at], ix.number[at] = all[i].name, true
	}
}

// numberKey reports whether t has a unique index on key (its columns in
// any order) that holds its decimal columns by number and the others as
// stored: the index of keyIndexSQL, which makes decimals that are equal in
// value one key.
func numberKey(t *sink.Table, indexes []index, key []string) bool {
	for _, ix := range indexes {
		if len(ix.columns) != len(key) {
			continue
		}
		ok := true
		for i, c := range ix.columns {
			ok = ok && slices.Contains(key, c) && ix.number[i] == (t.Kind(c) == idemtype.Decimal)
		}
		if ok {
			return true
		}
	}
	return false
}

// decimalKey reports whether a column of key holds decimals in t.
func decimalKey(t *sink.Table, key []string) bool {
	for _, k := range key {
		if t.Kind(k) == idemtype.Decimal {
			return true
		}
	}
	return false
}

// keyIndexSQL is the CREATE UNIQUE INDEX of the natural key of a table
// with a decimal key column: on numberExpr of each decimal column and on
// the other columns as stored, so that 1.5 and 1.50 are one key. (A table
// constraint cannot hold an expression.) kind gives the kind of a column.
func keyIndexSQL(table string, key []string, kind func(string) idemtype.Type) string {
	cols := make([]string, len(key))
	for i, k := range key {
		cols[i] = Driver{}.KeyValue(q(k), kind(k))
	}
	return "CREATE UNIQUE INDEX " + q(table+"_idemport_key") + " ON " + q(table) + " (" + strings.Join(cols, ", ") + ")"
}

// Ensure implements sink.Driver.
func (d Driver) Ensure(ctx context.Context, tx *sql.Tx, tg sink.Target, schema *arrow.Schema) error {
	t, indexes, err := describe(ctx, tx, tg.Table)
	if err != nil {
		return err
	}
	if t == nil {
		for _, stmt := range createSQL(tg, schema) {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("create table %s: %w", tg.Table, err)
			}
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
	return ensureNumberKey(ctx, tx, tg, t, indexes)
}

// ensureNumberKey gives the existing table t, keyed by tg's natural key
// with a decimal column, the key index that compares decimals by number
// (keyIndexSQL) when it lacks one: a table an older version made, or one
// whose int64 key column was just widened to decimal. Rows whose keys are
// equal in value but stored apart (1.5 and 1.50, which an older version
// kept as two keys) keep the index from being made: the error names some
// and what to do.
func ensureNumberKey(ctx context.Context, tx *sql.Tx, tg sink.Target, t *sink.Table, indexes []index) error {
	if tg.Ordinal() || !decimalKey(t, tg.Key) || numberKey(t, indexes, tg.Key) {
		return nil
	}
	_, err := tx.ExecContext(ctx, keyIndexSQL(tg.Table, tg.Key, t.Kind))
	if err == nil {
		return nil
	}
	if se := (sqlite3.Error{}); !errors.As(err, &se) || se.Code != sqlite3.ErrConstraint {
		return fmt.Errorf("index the key of %s by value: %w", tg.Table, err)
	}
	numbers := make([]string, len(tg.Key))
	texts := make([]string, len(tg.Key))
	for i, k := range tg.Key {
		numbers[i] = Driver{}.KeyValue(q(k), t.Kind(k))
		texts[i] = "CAST(" + q(k) + " AS TEXT)"
	}
	var pairs []string
	rows, err := tx.QueryContext(ctx, `SELECT group_concat('('||`+strings.Join(texts, `||', '||`)+`||')', ' and ') FROM `+q(tg.Table)+
		` GROUP BY `+strings.Join(numbers, ", ")+` HAVING count(*) > 1 LIMIT 3`)
	if err == nil {
		for rows.Next() {
			var p string
			if rows.Scan(&p) == nil {
				pairs = append(pairs, p)
			}
		}
		rows.Close()
	}
	return fmt.Errorf("table %s holds rows whose keys (%s) are equal in value but written apart, as %s: an older version of idemport kept such keys apart; they are one key now, so delete all but one row of each, then rerun",
		tg.Table, strings.Join(tg.Key, ", "), strings.Join(pairs, "; "))
}

// createSQL is the CREATE TABLE of a new target table: a rowid table,
// keyed by a unique index on (file key, row ordinal) in ordinal mode and on
// the natural key otherwise, unless that key is one integer column, which
// is then the rowid itself. It is never a WITHOUT ROWID table clustered on
// its key, as older versions made: SQLite keeps at most about a quarter of
// a page of a WITHOUT ROWID row in its B-tree and puts the rest on an
// overflow page of its own, so rows of 1 KiB took 4.7 KB each and three
// times as long to write, where a rowid table holds rows of up to a page.
// Narrow rows take the same time either way, in a file 7-10% larger. A
// file's rows get increasing rowids, so they are appended to the table.
// Tables made by older versions keep their layout and are written the same
// way. A natural key with a decimal column is a unique index on an
// expression (keyIndexSQL), the second statement.
func createSQL(tg sink.Target, schema *arrow.Schema) []string {
	kind := func(name string) idemtype.Type { return idemtype.TypeOf(schema.Field(schema.FieldIndices(name)[0])) }
	var b strings.Builder
	b.WriteString("CREATE TABLE " + q(tg.Table) + " (\n")
	intKey := len(tg.Key) == 1 && idemtype.TypeOf(schema.Field(schema.FieldIndices(tg.Key[0])[0])) == idemtype.Int64
	if tg.Ordinal() {
		fmt.Fprintf(&b, "  %s INTEGER NOT NULL,\n  %s INTEGER NOT NULL,\n", q(sink.FileColumn), q(sink.RowColumn))
	}
	for _, f := range schema.Fields() {
		fmt.Fprintf(&b, "  %s %s", q(f.Name), sqlType(idemtype.TypeOf(f)))
		if intKey && f.Name == tg.Key[0] {
			b.WriteString(" PRIMARY KEY")
		} else if !tg.Ordinal() && slices.Contains(tg.Key, f.Name) {
			b.WriteString(" NOT NULL")
		}
		b.WriteString(",\n")
	}
	if tg.Ordinal() {
		fmt.Fprintf(&b, "  UNIQUE (%s, %s)\n)", q(sink.FileColumn), q(sink.RowColumn))
		return []string{b.String()}
	}
	fmt.Fprintf(&b, "  %s INTEGER,\n  %s INTEGER", q(sink.FileColumn), q(sink.RowColumn))
	if intKey {
		b.WriteString("\n)")
		return []string{b.String()}
	}
	if slices.ContainsFunc(tg.Key, func(k string) bool { return kind(k) == idemtype.Decimal }) {
		b.WriteString("\n)")
		return []string{b.String(), keyIndexSQL(tg.Table, tg.Key, kind)}
	}
	fmt.Fprintf(&b, ",\n  UNIQUE (%s)\n)", quoteList(tg.Key, ""))
	return []string{b.String()}
}

// writer upserts batches through statements it prepares once on the
// connection's SQLite handle and steps from C, reading the Arrow buffers
// directly: no per-value allocation or cgo call, and no statement
// re-prepared per transaction. In ordinal mode one step of
// INSERT … SELECT … FROM the batch table writes a whole batch; natural keys
// go one row per step: a plain insert first while most rows are new, and
// for a row whose key is stored, a probe that classifies it, then the upsert;
// while every row of the last batch was new, a batch is first inserted whole
// in one step, as in ordinal mode.
type writer struct {
	conn    *sql.Conn // the connection the statements are prepared on
	tg      sink.Target
	keyCols []C.int // schema positions of the key columns
	verCol  int     // schema position of the version column, or -1
	upsert  *stmt
	insert  *stmt // a plain INSERT: ordinal mode, for batches none of whose keys is stored; natural keys, tried first
	// insertAll is natural-key mode's plain INSERT of a whole batch from
	// the batch table, tried while allNew holds: a stored key (or any row
	// the table refuses) fails the statement, which changes nothing, and
	// the batch goes row by row.
	insertAll *stmt
	// smallCache: sizeCache gave conn appendCacheKiB, which Close gives
	// back.
	smallCache bool
	probe      *stmt // natural-key mode: is the key stored, is the stored row newer, and (with rekey) is its key written otherwise?
	// rekey is the upsert that also writes the key's text, for a row whose
	// key is stored as a decimal equal in value but written otherwise (1.5
	// for the row's 1.50); nil unless a key column holds decimals. The
	// upsert leaves the key as it is, and so its index: SQLite rewrites
	// the index entries of every column an UPDATE sets.
	rekey *stmt
	// relin gives an unchanged stored row of another file the row's
	// lineage (sink.Target.Loose); nil without it.
	relin *stmt
	cols  *colBuffers
	batch batch // what the batch table reads
	// floatText gives, for each float64 column of the file going into a
	// decimal or text column, that column's kind (else Unknown): such
	// floats are bound as their text (sink.FloatText), which SQLite would
	// otherwise make of the REAL its own way (4.0).
	floatText []idemtype.Type
	// stored is whether most rows of the last natural-key batch had their
	// key stored already: then the next batch skips the plain insert,
	// which would fail for most of its rows.
	stored bool
	// allNew is whether every row of the last natural-key batch was new
	// (at first: true): then the next is tried with insertAll. A batch
	// with one stored key costs its failed statement and is written again
	// row by row, and the batches after it go row by row until one is all
	// new again, so that a delta of new and stored keys pays that once.
	allNew bool
	// ckpt runs the automatic checkpoints of the connection's write-ahead
	// log on a thread of its own while the writer lives (ckpt.c).
	ckpt *checkpointer
	db   *rawHandle
}

// Writer implements sink.Driver. The returned Writer must be used only on
// conn, inside transactions begun on conn.
func (Driver) Writer(ctx context.Context, conn *sql.Conn, tg sink.Target, schema *arrow.Schema) (sink.Writer, error) {
	db, err := handle(conn)
	if err != nil {
		return nil, fmt.Errorf("writer for %s: %w", tg.Table, err)
	}
	t, indexes, err := describe(ctx, conn, tg.Table)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, fmt.Errorf("write %s: no such table", tg.Table)
	}
	small, err := sizeCache(ctx, conn, tg)
	if err != nil {
		return nil, err
	}
	w := &writer{conn: conn, tg: tg, verCol: -1, smallCache: small}
	cols, names := w.columns(t, schema)
	table := q(tg.Table)
	key, rekey := keyForm(tg, t, indexes)
	onConflict := upsertClause(tg, table, conflictTarget(tg, key))
	data := dataColumns(tg, names)
	insert := "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") "
	st := statements{table: table, insert: insert, cols: cols, key: key, rekey: rekey, onConflict: onConflict, data: data}
	var sw sink.Writer
	if tg.Ordinal() {
		sw, err = w.prepareOrdinal(ctx, conn, db, schema, st)
	} else {
		sw, err = w.prepareNatural(ctx, conn, db, schema, st)
	}
	if err != nil {
		return sw, err
	}
	w.db = db
	if w.ckpt, err = startCheckpointer(ctx, conn, db); err != nil {
		w.Close()
		return nil, err
	}
	return sw, nil
}

// sizeCache sets the page cache of conn for writes to tg: appendCacheKiB
// of clean pages when they append (small), else cacheKiB, and dirty pages
// up to spillKiB either way. The writer's Close gives a small cache back
// its cacheKiB: the connection goes back to the pool, and the next
// statement on it (an --atomic move's INSERT … SELECT into a table with
// indexes of its own, say) needs the larger one.
func sizeCache(ctx context.Context, conn *sql.Conn, tg sink.Target) (small bool, err error) {
	kib := cacheKiB
	if tg.Ordinal() {
		var n int
		if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM pragma_index_list(?)`, tg.Table).Scan(&n); err != nil {
			return false, fmt.Errorf("indexes of %s: %w", tg.Table, err)
		}
		if n <= 1 {
			kib = appendCacheKiB
		}
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA cache_size = -%d; PRAGMA cache_spill = -%d", kib, spillKiB)); err != nil {
		return false, fmt.Errorf("page cache for %s: %w", tg.Table, err)
	}
	return kib == appendCacheKiB, nil
}

// statements is what the writer's statements are built from.
type statements struct {
	table, insert string
	cols          []string
	key           func(k, expr string) string
	rekey         []string
	onConflict    func([]string) string
	data          []string
}

// columns names the columns the writer inserts (quoted, and as the schema
// has them) and notes the version column, the key columns and the floats
// bound as text.
func (w *writer) columns(t *sink.Table, schema *arrow.Schema) (cols, names []string) {
	tg := w.tg
	cols = append(cols, q(sink.FileColumn), q(sink.RowColumn))
	for i, f := range schema.Fields() {
		cols = append(cols, q(f.Name))
		names = append(names, f.Name)
		if f.Name == tg.Version {
			w.verCol = i
		}
		if k := t.Kind(f.Name); idemtype.TypeOf(f) == idemtype.Float64 && (k == idemtype.Decimal || k == idemtype.String) {
			if w.floatText == nil {
				w.floatText = make([]idemtype.Type, len(schema.Fields()))
			}
			w.floatText[i] = k
		}
	}
	for _, k := range tg.Key {
		w.keyCols = append(w.keyCols, C.int(schema.FieldIndices(k)[0]))
	}
	return cols, names
}

// keyForm is the key as its index holds it: decimals by number (KeyValue),
// unless the table has only an older version's index on their text, which
// a plan by this version replaces (ensureNumberKey); and rekey, the decimal
// key columns, compared by number.
func keyForm(tg sink.Target, t *sink.Table, indexes []index) (key func(k, expr string) string, rekey []string) {
	key = func(k, expr string) string { return expr }
	if !tg.Ordinal() && numberKey(t, indexes, tg.Key) {
		key = func(k, expr string) string { return Driver{}.KeyValue(expr, t.Kind(k)) }
		for _, k := range tg.Key {
			if t.Kind(k) == idemtype.Decimal {
				rekey = append(rekey, k)
			}
		}
	}
	return key, rekey
}

// conflictTarget is the upsert's conflict target: the ordinal columns in
// ordinal mode, then the key as its index holds it.
func conflictTarget(tg sink.Target, key func(k, expr string) string) []string {
	var conflict []string
	if tg.Ordinal() {
		conflict = []string{q(sink.FileColumn), q(sink.RowColumn)}
	}
	for _, k := range tg.Key {
		conflict = append(conflict, key(k, q(k)))
	}
	return conflict
}

// upsertClause returns onConflict, the upsert's clause that writes the
// columns data over a stored row that differs in them and is not newer.
func upsertClause(tg sink.Target, table string, conflict []string) func(data []string) string {
	return func(data []string) string {
		var set, guard []string
		for _, c := range data {
			set = append(set, q(c)+" = excluded."+q(c))
		}
		if !tg.Ordinal() {
			set = append(set, q(sink.FileColumn)+" = excluded."+q(sink.FileColumn), q(sink.RowColumn)+" = excluded."+q(sink.RowColumn))
			guard = append(guard, "NOT "+staleSQL(table, "excluded."+q(sink.FileColumn), "excluded."+q(sink.RowColumn), "excluded."+q(tg.Version), tg.Version))
		}
		if len(data) == 0 {
			return " ON CONFLICT (" + strings.Join(conflict, ", ") + ") DO NOTHING"
		}
		guard = append(guard, "("+quoteList(data, table+".")+") IS NOT ("+quoteList(data, "excluded.")+")")
		return " ON CONFLICT (" + strings.Join(conflict, ", ") + ") DO UPDATE SET " + strings.Join(set, ", ") + " WHERE " + strings.Join(guard, " AND ")
	}
}

// dataColumns are the columns a changed row writes: a changed row is
// written whole: the columns that are not the key, and, where it is written
// otherwise (rekey), the decimal key columns, whose stored text (1.5) the
// new row's (1.50) replaces, the two being one key (the rule of
// sink.Rewritten).
func dataColumns(tg sink.Target, names []string) []string {
	var data []string
	for _, c := range names {
		if !slices.Contains(tg.Key, c) {
			data = append(data, c)
		}
	}
	return data
}

// prepareOrdinal prepares the ordinal mode's statements: one statement step
// writes a whole batch, read from the batch table.
func (w *writer) prepareOrdinal(ctx context.Context, conn *sql.Conn, db *rawHandle, schema *arrow.Schema, st statements) (sink.Writer, error) {
	var err error
	insert, onConflict, data := st.insert, st.onConflict, st.data
	n := len(schema.Fields())
	if err := register(ctx, conn, db, n); err != nil {
		return nil, err
	}
	insert += batchSelect(n)
	if w.insert, err = prepare(conn, db, insert); err != nil {
		return nil, err
	}
	if w.upsert, err = prepare(conn, db, insert+onConflict(data)); err != nil {
		w.insert.close()
		return nil, err
	}
	w.cols, w.batch = newColBuffers(n), newBatch()
	return w, nil
}

// batchSelect is the SELECT of a batch of ncols columns from the batch
// table, in the order of the writer's INSERT: file key, ordinal, columns.
func batchSelect(ncols int) string {
	sel := []string{"f", "r"}
	for i := range ncols {
		sel = append(sel, fmt.Sprintf("c%d", i))
	}
	return "SELECT " + strings.Join(sel, ", ") + " FROM " + batchTable(ncols) + " WHERE batch = ?1"
}

// prepareNatural prepares the natural keys' statements: one row per step,
// each counted exactly, and the insert of a whole batch of new keys.
func (w *writer) prepareNatural(ctx context.Context, conn *sql.Conn, db *rawHandle, schema *arrow.Schema, st statements) (sink.Writer, error) {
	var err error
	tg, table, insert, cols, key, rekey, onConflict, data := w.tg, st.table, st.insert, st.cols, st.key, st.rekey, st.onConflict, st.data
	if err := register(ctx, conn, db, len(schema.Fields())); err != nil {
		return nil, err
	}
	if w.insertAll, err = prepare(conn, db, insert+batchSelect(len(schema.Fields()))); err != nil {
		return nil, err
	}
	insert += "VALUES (" + strings.TrimSuffix(strings.Repeat("?,", len(cols)), ",") + ")"
	if w.insert, err = prepare(conn, db, insert); err != nil {
		w.insertAll.close()
		return nil, err
	}
	if w.upsert, err = prepare(conn, db, insert+onConflict(data)); err != nil {
		w.insertAll.close()
		w.insert.close()
		return nil, err
	}
	// The probe's parameters: the key columns, then the file key, ordinal
	// and version of the incoming row.
	n := len(tg.Key)
	var where, stored, incoming []string
	for i, k := range tg.Key {
		param := fmt.Sprintf("?%d", i+1)
		where = append(where, key(k, table+"."+q(k))+" = "+key(k, param))
		if slices.Contains(rekey, k) {
			// As the column's TEXT affinity would store the value.
			stored, incoming = append(stored, table+"."+q(k)), append(incoming, "CAST("+param+" AS TEXT)")
		}
	}
	sel := staleSQL(table, fmt.Sprintf("?%d", n+1), fmt.Sprintf("?%d", n+2), fmt.Sprintf("?%d", n+3), tg.Version)
	if len(rekey) > 0 {
		sel += ", (" + strings.Join(stored, ", ") + ") IS NOT (" + strings.Join(incoming, ", ") + ")"
		if w.rekey, err = prepare(conn, db, insert+onConflict(append(slices.Clone(data), rekey...))); err != nil {
			w.insertAll.close()
			w.insert.close()
			w.upsert.close()
			return nil, err
		}
	}
	if w.probe, err = prepare(conn, db, "SELECT "+sel+" FROM "+table+" WHERE "+strings.Join(where, " AND ")); err != nil {
		w.insertAll.close()
		w.insert.close()
		w.upsert.close()
		w.rekey.close()
		return nil, err
	}
	if tg.Loose {
		file := table + "." + q(sink.FileColumn)
		relin := "UPDATE " + table + " SET " + q(sink.FileColumn) + fmt.Sprintf(" = ?%d, ", n+1) + q(sink.RowColumn) + fmt.Sprintf(" = ?%d", n+2) +
			" WHERE " + strings.Join(where, " AND ") + " AND NOT coalesce(" + file + fmt.Sprintf(" = ?%d, 0)", n+1)
		if w.relin, err = prepare(conn, db, relin); err != nil {
			w.insertAll.close()
			w.insert.close()
			w.upsert.close()
			w.rekey.close()
			w.probe.close()
			return nil, err
		}
	}
	w.cols, w.batch, w.allNew = newColBuffers(len(schema.Fields())), newBatch(), true
	return w, nil
}

// staleSQL is the condition under which the incoming row (its file key,
// ordinal and version given as SQL expressions) is older than the stored
// row: the stored version is newer, or (with equal versions, or no version
// column) a later row of the same file was already applied.
func staleSQL(table, file, row, v, version string) string {
	// Never NULL: the probe and the upsert's guard must agree, and rows
	// already in an existing table have NULL lineage.
	cond := "coalesce(" + table + "." + q(sink.FileColumn) + " = " + file + " AND " + table + "." + q(sink.RowColumn) + " > " + row + ", 0)"
	if version != "" {
		stored := table + "." + q(version)
		// The version decides; the position in the file only between equal
		// versions (NULL is older than any), so that the outcome does not
		// depend on the order in which a file's partitions commit.
		cond = "((" + stored + " IS NOT NULL AND (" + v + " IS NULL OR " + v + " < " + stored + ")) OR (" + v + " IS " + stored + " AND " + cond + "))"
	}
	return cond
}

// Write implements sink.Writer.
func (w *writer) Write(ctx context.Context, tx *sql.Tx, fileKey int64, rec arrow.RecordBatch, ordinals []int64) (idemtype.Rows, error) {
	var total idemtype.Rows
	n := int(rec.NumRows())
	if n == 0 {
		return total, nil
	}
	total.Read = int64(n)
	rec = sink.Textual(rec) // zone-less timestamps are stored as their text (dates too: colBuffers)
	defer rec.Release()
	if w.floatText != nil {
		rec = sink.FloatText(rec, w.floatText)
		defer rec.Release()
	}
	if err := w.cols.set(rec); err != nil {
		w.cols.release()
		return total, err
	}
	defer w.cols.release()
	if w.tg.Ordinal() {
		existing, err := w.existing(ctx, tx, fileKey, ordinals)
		if err != nil {
			return total, err
		}
		st := w.upsert
		if existing == 0 {
			st = w.insert
		}
		var changed int64
		err = st.inTx(ctx, w.conn, func() error {
			var failed int
			var err error
			if changed, failed, err = st.run(w.batch, w.cols, fileKey, ordinals); err != nil {
				return fmt.Errorf("write row %d into %s: %w", ordinals[failed], w.tg.Table, err)
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total.Inserted = int64(n) - existing
		if existing == 0 {
			// Of new rows, those a trigger skipped (RAISE(IGNORE)) are
			// unchanged.
			total.Inserted = changed
		}
		total.Updated = changed - total.Inserted
		total.Unchanged = int64(n) - total.Inserted - total.Updated
		if total.Updated < 0 || total.Unchanged < 0 {
			return total, fmt.Errorf("write %s: counts do not add up (existing %d, changed %d)", w.tg.Table, existing, changed)
		}
		return total, nil
	}
	if w.allNew {
		switch inserted, err := w.insertBatch(ctx, fileKey, ordinals); {
		case err == nil:
			total.Inserted, total.Unchanged = inserted, int64(n)-inserted
			return total, nil
		case !errors.As(err, new(*sink.RowError)):
			return total, err
		}
		// A stored key, or a row the table refuses: row by row, which
		// counts each and names the row.
	}
	ins := w.insert
	if w.stored {
		ins = nil
	}
	var c [4]int64
	err := w.upsert.inTx(ctx, w.conn, func() error {
		var failed int
		var err error
		if c, failed, err = w.upsert.natural(ins, w.probe, w.rekey, w.relin, w.keyCols, w.verCol, w.cols, fileKey, ordinals); err != nil {
			return fmt.Errorf("write row %d into %s: %w", ordinals[failed], w.tg.Table, err)
		}
		return nil
	})
	if err != nil {
		return total, err
	}
	total.Inserted, total.Updated, total.Unchanged, total.Stale = c[0], c[1], c[2], c[3]
	w.stored = 2*total.Inserted < int64(n)
	w.allNew = total.Inserted == int64(n)
	return total, nil
}

// insertBatch inserts the natural-key batch of w.cols whole, in one step of
// insertAll, and returns the rows inserted: all of them but those a trigger
// skipped (RAISE(IGNORE), which the row-by-row insert counts unchanged too),
// or none (a failed statement changes nothing).
func (w *writer) insertBatch(ctx context.Context, fileKey int64, ordinals []int64) (int64, error) {
	var inserted int64
	err := w.insertAll.inTx(ctx, w.conn, func() error {
		var failed int
		var err error
		if inserted, failed, err = w.insertAll.run(w.batch, w.cols, fileKey, ordinals); err != nil {
			return fmt.Errorf("write row %d into %s: %w", ordinals[failed], w.tg.Table, err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return inserted, nil
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

// Close implements sink.Writer. It may be called again (a deferred Close
// after an explicit one): a closed writer frees nothing twice.
func (w *writer) Close() error {
	w.ckpt.stop(w.conn, w.db)
	w.ckpt = nil
	w.upsert.close()
	w.insert.close()
	w.insertAll.close()
	w.probe.close()
	w.rekey.close()
	w.relin.close()
	if w.cols != nil {
		w.cols.free()
	}
	w.batch.free()
	if w.smallCache {
		// Best effort: a connection its user closed first (after a
		// failure) has no cache left to give back.
		w.smallCache = false
		w.conn.ExecContext(context.Background(), fmt.Sprintf("PRAGMA cache_size = -%d", cacheKiB))
	}
	return nil
}

// Detach implements sink.Detacher: it does what Close does but wait for a
// checkpoint the writer's thread runs (the one its last COMMIT handed it,
// after syncing the log: ckpt.c); wait waits for that and joins the
// thread.
func (w *writer) Detach() (wait func()) {
	wait = w.ckpt.detach(w.conn, w.db)
	w.ckpt = nil
	w.Close()
	return wait
}

// DeleteFile implements sink.Driver.
func (d Driver) DeleteFile(ctx context.Context, tx *sql.Tx, table string, fileKey int64) (int64, error) {
	t, err := d.Describe(ctx, tx, table)
	if err != nil || t == nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM `+q(table)+` WHERE `+q(sink.FileColumn)+` = ?`, fileKey)
	if err != nil {
		return 0, fmt.Errorf("delete rows of file %d from %s: %w", fileKey, table, err)
	}
	return res.RowsAffected()
}
