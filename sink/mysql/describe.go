package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
)

// kindOf maps a column's type, as information_schema.columns gives its
// data_type and column_type, to a kind. A JSON column is a LONGTEXT that a
// CHECK (json_valid(…)) constraint keeps to JSON on MariaDB, and the type
// json on MySQL: json says which (Describe). TINYINT(1) is BOOLEAN's
// spelling. DATETIME holds what the session's time zone, UTC, made of a
// point in time, as TIMESTAMP does.
func kindOf(dataType, columnType string, json bool) idemtype.Type {
	switch dataType {
	case "tinyint":
		if strings.HasPrefix(columnType, "tinyint(1)") {
			return idemtype.Bool
		}
		return idemtype.Int64
	case "smallint", "mediumint", "int", "bigint":
		if strings.Contains(columnType, "unsigned") && dataType == "bigint" {
			return idemtype.Unknown // beyond int64
		}
		return idemtype.Int64
	case "float", "double":
		return idemtype.Float64
	case "decimal":
		return idemtype.Decimal
	case "datetime", "timestamp":
		return idemtype.Timestamp
	case "date":
		return idemtype.Date
	case "json":
		return idemtype.JSON
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
		if json {
			return idemtype.JSON
		}
		return idemtype.String
	}
	return idemtype.Unknown
}

// limits sets what column c holds beyond its kind: the width of a narrower
// integer (an unsigned one's range is not a signed width: none is set, as
// for MEDIUMINT's 24 bits, and the database refuses what does not fit), a
// VARCHAR's or CHAR's characters, and a DECIMAL's precision and scale.
func limits(c *sink.Column, dataType, columnType string, chars, precision, scale sql.NullInt64) {
	unsigned := strings.Contains(columnType, "unsigned")
	switch {
	case dataType == "smallint" && !unsigned:
		c.IntBits = 16
	case dataType == "int" && !unsigned:
		c.IntBits = 32
	case (dataType == "varchar" || dataType == "char") && chars.Valid:
		c.MaxChars = int(chars.Int64)
	case dataType == "decimal":
		c.Numeric = true
		c.Precision, c.Scale = int(precision.Int64), int(scale.Int64)
	case dataType == "datetime" || dataType == "timestamp":
		// DATETIME(p) and TIMESTAMP(p) truncate to p digits of a second.
		digits := 0
		if i := strings.IndexByte(columnType, '('); i >= 0 {
			fmt.Sscanf(columnType[i:], "(%d)", &digits)
		}
		if digits < 6 {
			c.TimeUnit, c.TimeTruncates = 1, true
			for range 6 - digits {
				c.TimeUnit *= 10
			}
		}
	}
}

// marked sets the kind of a column Ensure made whose SQL type does not say
// it (see markDecimal): a text column marked a decimal holds decimals, a
// DATETIME marked local holds local timestamps.
func marked(c *sink.Column, comment string) {
	switch {
	case comment == markDecimal && c.Kind == idemtype.String:
		c.Kind = idemtype.Decimal
	case comment == markLocal && c.Kind == idemtype.Timestamp && strings.HasPrefix(c.SQLType, "datetime"):
		c.Kind = idemtype.LocalTimestamp
	}
}

// describeAttempts bounds how many times Describe reads a table that
// changes while it reads it before it gives up.
const describeAttempts = 50

// Describe implements sink.Driver: an unqualified name is in the
// connection's database. The number columns that key a decimal column
// (markKey) are not listed: a key on one is listed as on its decimal
// column. A name qualified by a database that does not
// exist is ErrNoSchema.
//
// The columns, checks and keys come from information_schema, which does
// not hold the table's metadata lock from one of its reads to the next,
// and may pass a table over: inside a transaction that holds another
// table's lock, the server does not wait for the exclusive lock of an
// ALTER TABLE in its last step but skips the table (with a warning no
// one reads), and elsewhere it can miss the table's files while a copying
// ALTER renames them. A table being altered then looked absent, keyless,
// or with its JSON columns as text, or its columns came from before an
// ALTER and its keys from after. So Describe checks what it read against
// the table's definition, read next with SHOW CREATE TABLE: that
// statement waits for an ALTER in its last step (its lock jumps the queue
// of waiting ALTERs, as information_schema's does, so it waits for none
// that has not got that far), and lets the lock go when it ends, in a
// transaction too, so Describe holds no lock on the table afterwards. Only
// its "no such table" says a table is absent; the answer is taken when
// the definition shows the same columns in the same order, with the same
// types and JSON checks, the same primary and unique keys, and checks
// when and only when information_schema found some. Otherwise the table
// changed or was passed over, and Describe reads it again. The check
// costs one statement that reads the definition from the server's cache,
// a fraction of information_schema's reads. The four statements of a
// read go to the server in one message (read), one round trip where
// there were four.
func (d Driver) Describe(ctx context.Context, qr sink.Querier, name string) (*sink.Table, error) {
	db, table, err := readName(name)
	if err != nil {
		return nil, err
	}
	var last string // what the last attempt read, and the definition it was checked against
	for range describeAttempts {
		t, saw, def, err := d.read(ctx, qr, name, db, table)
		if err != nil {
			return nil, err
		}
		if def == "" {
			return nil, d.noDatabase(ctx, qr, name, db)
		}
		if saw.shows(def) {
			return t, nil
		}
		// A definition that information_schema disagrees with in the
		// same way twice running is not a race but a form shows does not
		// know: Describe says what information_schema says, as before,
		// unless information_schema passed over a part of the table (an
		// ALTER TABLE holds the exclusive lock briefly as it starts, too,
		// without changing the definition).
		this := fmt.Sprint(saw, def)
		if this == last && saw.whole(def) {
			return t, nil
		}
		last = this
	}
	return nil, fmt.Errorf("describe table %s: it changed each of the %d times it was read", name, describeAttempts)
}

// withoutCounter returns def, a table's definition, without the
// auto-increment counter among its options, which inserts move and which
// is not part of its columns.
func withoutCounter(def string) string {
	i := strings.LastIndex(def, "\n) ")
	if i < 0 {
		return def
	}
	opts := slices.DeleteFunc(strings.Split(def[i+3:], " "), func(o string) bool { return strings.HasPrefix(o, "AUTO_INCREMENT=") })
	return def[:i+3] + strings.Join(opts, " ")
}

// definition returns table's CREATE statement as SHOW CREATE TABLE gives
// it (the auto-increment counter left out), or "" when no table (or view)
// has that name, in that case. It waits for an ALTER TABLE in its last
// step, and takes no lock that lasts beyond it.
func (d Driver) definition(ctx context.Context, qr sink.Querier, db, table string) (string, error) {
	ref := tableRef(db, table)
	rows, err := qr.QueryContext(ctx, `SHOW CREATE TABLE `+ref)
	if n := number(err); n == erNoTable || n == erBadDB {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("describe table %s: %w", ref, err)
	}
	defer rows.Close()
	return readDefinition(rows, ref, table)
}

// tableRef is table, in database db when db is not "", quoted.
func tableRef(db, table string) string {
	if db != "" {
		return q(db) + "." + q(table)
	}
	return q(table)
}

// readDefinition reads from rows, the result of SHOW CREATE TABLE ref,
// the definition of table as definition returns it.
func readDefinition(rows *sql.Rows, ref, table string) (string, error) {
	cols, err := rows.Columns()
	if err != nil {
		return "", fmt.Errorf("describe table %s: %w", ref, err)
	}
	got := make([]sql.NullString, len(cols)) // a view's has four
	dest := make([]any, len(cols))
	for i := range got {
		dest[i] = &got[i]
	}
	if !rows.Next() || len(cols) < 2 {
		if err := rows.Err(); err != nil {
			return "", fmt.Errorf("describe table %s: %w", ref, err)
		}
		return "", fmt.Errorf("describe table %s: SHOW CREATE TABLE gave no definition", ref)
	}
	if err := rows.Scan(dest...); err != nil {
		return "", fmt.Errorf("describe table %s: %w", ref, err)
	}
	if got[0].String != table {
		return "", nil // another case of the name, where names do not keep case
	}
	return withoutCounter(got[1].String), rows.Close()
}

// found is what information_schema showed Describe of a table: its
// columns, how many checks it has, and its primary and unique keys, each
// as its columns' names joined by commas, sorted.
type found struct {
	columns []foundColumn
	checks  int
	keys    []string
}

// foundColumn is a column's name, type (column_type), and whether a
// json_valid check keeps it JSON.
type foundColumn struct {
	name, sqlType string
	json          bool
}

// shows reports whether def, the table's definition as SHOW CREATE TABLE
// gives it, has the columns, JSON checks and keys that information_schema
// showed, and checks when and only when it showed some.
func (f found) shows(def string) bool {
	var cols []foundColumn
	var keys []string
	for _, line := range strings.Split(def, "\n") {
		if rest, ok := strings.CutPrefix(line, `  "`); ok {
			name, rest := ident(`"` + rest)
			i := len(cols)
			if i >= len(f.columns) {
				return false
			}
			// The type is column_type, then a space or the line's end.
			typ := f.columns[i].sqlType
			after, ok := strings.CutPrefix(rest, " "+typ)
			if !ok || (after != "" && after[0] != ' ' && after[0] != ',') {
				return false
			}
			cols = append(cols, foundColumn{name, typ, strings.Contains(after, ` CHECK (json_valid("`+name+`"))`)})
			continue
		}
		for _, p := range []string{"  PRIMARY KEY (", "  UNIQUE KEY "} {
			rest, ok := strings.CutPrefix(line, p)
			if !ok {
				continue
			}
			if p != "  PRIMARY KEY (" {
				_, rest = ident(rest)
				rest = strings.TrimPrefix(rest, " (")
			}
			var names []string
			for strings.HasPrefix(rest, `"`) {
				var n string
				n, rest = ident(rest)
				names = append(names, n)
				rest = strings.TrimLeft(rest, "0123456789() ADESC,") // a prefix's length, DESC, the comma
			}
			keys = append(keys, strings.Join(names, ","))
		}
	}
	slices.Sort(keys)
	return slices.Equal(cols, f.columns) && slices.Equal(keys, f.keys) && f.whole(def)
}

// whole reports whether information_schema showed each part of the table
// that def has: columns, checks, primary or unique keys. It passes a table
// over in each of its views whole or not at all.
func (f found) whole(def string) bool {
	unique := strings.Contains(def, "\n  PRIMARY KEY (") || strings.Contains(def, "\n  UNIQUE KEY ")
	return len(f.columns) > 0 && (f.checks > 0) == strings.Contains(def, " CHECK (") && (len(f.keys) > 0) == unique
}

// ident returns the name s begins with, quoted with " (its "" one "),
// and what follows it.
func ident(s string) (name, rest string) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '"' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '"' {
			b.WriteByte('"')
			i++
			continue
		}
		return b.String(), s[i+1:]
	}
	return b.String(), ""
}

// read reads table's columns, checks and keys from information_schema,
// then its definition as definition does (def, "" when no such table), in
// one message of four statements, which the server runs in order. The
// table's JSON columns are those with a json_valid check, listed once,
// not per column: a subquery on information_schema correlated with each
// column's row is run again for each, each time through on-disk temporary
// tables.
func (d Driver) read(ctx context.Context, qr sink.Querier, name, db, table string) (t *sink.Table, f found, def string, err error) {
	ref := tableRef(db, table)
	rows, err := qr.QueryContext(ctx, checksQuery+"; "+columnsQuery+"; "+keysQuery+"; SHOW CREATE TABLE "+ref, db, table, db, table, db, table)
	if err != nil {
		return nil, f, "", fmt.Errorf("describe table %s: %w", name, err)
	}
	defer rows.Close()
	// next moves rows to the result of the next statement.
	next := func() error {
		if rows.NextResultSet() {
			return nil
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return errors.New("fewer results than statements")
	}
	checks, err := readChecks(rows, &f)
	if err == nil {
		err = next()
	}
	var keyOf map[string]string
	if err == nil {
		t, keyOf, err = readColumns(rows, name, checks, &f)
	}
	if err == nil {
		err = next()
	}
	if err == nil {
		err = readKeys(rows, t, keyOf, &f)
	}
	if err != nil {
		return nil, f, "", fmt.Errorf("describe table %s: %w", name, err)
	}
	if len(f.columns) == 0 {
		t = nil
	}
	if err := next(); err != nil {
		if n := number(err); n == erNoTable || n == erBadDB {
			return t, f, "", nil
		}
		return nil, f, "", fmt.Errorf("describe table %s: %w", ref, err)
	}
	def, err = readDefinition(rows, ref, table)
	return t, f, def, err
}

// The statements of read before SHOW CREATE TABLE, each with the
// arguments database (or "": the connection's) and table.
const (
	checksQuery = `SELECT k.check_clause FROM information_schema.check_constraints k
		WHERE k.constraint_schema = coalesce(nullif(?, ''), DATABASE()) AND CAST(k.table_name AS BINARY) = CAST(? AS BINARY)`
	columnsQuery = `SELECT c.column_name, c.column_type, c.data_type, c.is_nullable = 'NO',
		c.column_default IS NOT NULL OR c.extra LIKE '%auto_increment%' OR c.extra LIKE '%GENERATED%',
		c.character_maximum_length, c.numeric_precision, c.numeric_scale, c.column_comment, coalesce(c.collation_name, '')
		FROM information_schema.columns c
		WHERE c.table_schema = coalesce(nullif(?, ''), DATABASE()) AND CAST(c.table_name AS BINARY) = CAST(? AS BINARY)
		ORDER BY c.ordinal_position`
	// Keys are the primary key and the unique indexes on whole columns:
	// a prefix index (sub_part) does not make its columns unique.
	keysQuery = `SELECT s.index_name, s.column_name, s.sub_part IS NOT NULL FROM information_schema.statistics s
		WHERE s.table_schema = coalesce(nullif(?, ''), DATABASE()) AND CAST(s.table_name AS BINARY) = CAST(? AS BINARY)
		AND s.non_unique = 0
		ORDER BY s.index_name <> 'PRIMARY', s.index_name, s.seq_in_index`
)

// readChecks returns the check clauses in rows (checksQuery's result),
// counting them in f.
func readChecks(rows *sql.Rows, f *found) (map[string]bool, error) {
	checks := map[string]bool{}
	for rows.Next() {
		var clause string
		if err := rows.Scan(&clause); err != nil {
			return nil, fmt.Errorf("checks: %w", err)
		}
		checks[clause] = true
		f.checks++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("checks: %w", err)
	}
	return checks, nil
}

// readColumns returns the table name's columns in rows (columnsQuery's
// result), and for each number key column (markKey) the column it keys;
// it lists every column found in f.
func readColumns(rows *sql.Rows, name string, checks map[string]bool, f *found) (*sink.Table, map[string]string, error) {
	t := &sink.Table{Name: name}
	keyOf := map[string]string{} // a number key column (markKey): the column it keys
	for rows.Next() {
		var c sink.Column
		var dataType, comment string
		var chars, precision, scale sql.NullInt64
		if err := rows.Scan(&c.Name, &c.SQLType, &dataType, &c.NotNull, &c.Default, &chars, &precision, &scale, &comment, &c.Collation); err != nil {
			return nil, nil, err
		}
		json := checks[`json_valid("`+c.Name+`")`]
		f.columns = append(f.columns, foundColumn{c.Name, c.SQLType, json})
		if of, ok := strings.CutPrefix(comment, markKey); ok && c.Default {
			keyOf[c.Name] = of
			continue
		}
		c.Kind = kindOf(dataType, c.SQLType, json)
		limits(&c, dataType, c.SQLType, chars, precision, scale)
		marked(&c, comment)
		t.Columns = append(t.Columns, c)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	return t, keyOf, nil
}

// readKeys sets t's keys from rows (keysQuery's result), naming a number
// key column by the column it keys (keyOf), and lists the keys found in f.
func readKeys(rows *sql.Rows, t *sink.Table, keyOf map[string]string, f *found) error {
	indexes, err := readUniqueIndexes(rows)
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	for _, u := range indexes {
		f.keys = append(f.keys, strings.Join(u.columns, ","))
		if !u.prefix {
			t.Keys = append(t.Keys, u.keyed(keyOf))
		}
	}
	slices.Sort(f.keys)
	return nil
}

// uniqueIndex is a unique index of a table, or its primary key, as
// keysQuery reads it.
type uniqueIndex struct {
	name    string   // PRIMARY for the primary key
	columns []string // as information_schema names them, in the index's order
	prefix  bool     // a column is indexed by a prefix (sub_part): the index does not make its columns unique
}

// keyed returns u's columns, a number key column (markKey) named by the
// column it keys (keyOf).
func (u uniqueIndex) keyed(keyOf map[string]string) []string {
	out := make([]string, len(u.columns))
	for i, c := range u.columns {
		if of, ok := keyOf[c]; ok {
			c = of
		}
		out[i] = c
	}
	return out
}

// uniqueIndexes reads, inside qr, the unique indexes of table (keysQuery),
// the primary key first.
func uniqueIndexes(ctx context.Context, qr sink.Querier, table string) ([]uniqueIndex, error) {
	db, name := splitName(table)
	rows, err := qr.QueryContext(ctx, keysQuery, db, name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return readUniqueIndexes(rows)
}

// readUniqueIndexes returns the unique indexes in rows (keysQuery's
// result), in its order.
func readUniqueIndexes(rows *sql.Rows) ([]uniqueIndex, error) {
	var out []uniqueIndex
	for rows.Next() {
		var index, col string
		var part bool
		if err := rows.Scan(&index, &col, &part); err != nil {
			return nil, err
		}
		if len(out) == 0 || out[len(out)-1].name != index {
			out = append(out, uniqueIndex{name: index})
		}
		u := &out[len(out)-1]
		u.columns = append(u.columns, col)
		u.prefix = u.prefix || part
	}
	return out, rows.Err()
}

// noDatabase returns, for a table name found to have no columns, an
// error wrapping ErrNoSchema when it is qualified by a database that does
// not exist, and nil otherwise.
func (Driver) noDatabase(ctx context.Context, qr sink.Querier, name, db string) error {
	if db == "" {
		return nil
	}
	var n int
	if err := qr.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.schemata
		WHERE CAST(schema_name AS BINARY) = CAST(? AS BINARY)`, db).Scan(&n); err != nil {
		return fmt.Errorf("look up database %s: %w", db, err)
	}
	if n == 0 {
		return fmt.Errorf("--table %s: %w %q on this server; create it first (CREATE DATABASE %s), or name another", name, sink.ErrNoSchema, db, q(db))
	}
	return nil
}

// HoldColumns implements sink.Driver: a statement that locks rows of
// table takes the shared metadata lock of a writer, which lasts until tx
// ends, and ALTER TABLE needs the exclusive one, so it waits for tx (and
// tx's statement waits for an ALTER TABLE under way). The writer's lock,
// not a reader's: an ALTER TABLE that copies the table blocks writers
// while it copies, which a reader's lock lets it begin, and tx's first
// write would then wait for it while it waits for tx
// (TestHoldColumnsThenWrite).
func (Driver) HoldColumns(ctx context.Context, tx *sql.Tx, table string) error {
	if _, err := tx.ExecContext(ctx, holdColumnsSQL(tableRef(splitName(table)))); err != nil {
		return fmt.Errorf("lock the columns of %s: %w", table, err)
	}
	return nil
}

// holdColumnsSQL is HoldColumns's statement on the table ref names
// (tableRef), which HoldColumnsVersion sends too.
func holdColumnsSQL(ref string) string { return `SELECT 1 FROM ` + ref + ` WHERE 1 = 0 FOR UPDATE` }

// ColumnsVersion returns, inside tx after HoldColumns, a value that
// changes whenever the table's columns or keys as Describe reads them may
// have changed: the table's definition as SHOW CREATE TABLE gives it (the
// auto-increment counter left out: definition), which spells every column
// with its type, NOT NULL, default, generation, collation where it is not
// the table's and comment, every check and every primary and unique key:
// all that Describe reads from information_schema, and checks against
// that same statement. The metadata lock HoldColumns took keeps any ALTER
// TABLE from ending before tx does, so the definition read after it is the
// table's for the rest of tx. One statement answered from the server's
// table cache, where Describe runs three on information_schema before it,
// each a round trip: a partition transaction of a first import ran 14
// statements before its first row, 11 now. "" means no such table.
func (d Driver) ColumnsVersion(ctx context.Context, tx *sql.Tx, table string) (string, error) {
	db, name := splitName(table)
	return d.definition(ctx, tx, db, name)
}

// HoldColumnsVersion does, inside the transaction open on conn, what
// HoldColumns and ColumnsVersion do, in that order, and returns the
// version: one message of the two statements, one round trip where there
// were two. The server runs them in order and stops at the first that
// fails (a lock not granted within the busy timeout, a table that does
// not exist: an error, as HoldColumns's), so the definition is read once
// the lock is held. Each partition transaction of an import takes it
// (pipeline: the partition writer's ready).
func (Driver) HoldColumnsVersion(ctx context.Context, conn *sql.Conn, table string) (string, error) {
	db, name := splitName(table)
	ref := tableRef(db, name)
	rows, err := conn.QueryContext(ctx, holdColumnsSQL(ref)+`; SHOW CREATE TABLE `+ref)
	if err != nil {
		return "", fmt.Errorf("lock the columns of %s and read their version: %w", table, err)
	}
	defer rows.Close()
	for rows.Next() { // the lock's statement returns no row
	}
	if !rows.NextResultSet() {
		if err := rows.Err(); err != nil {
			return "", fmt.Errorf("lock the columns of %s and read their version: %w", table, err)
		}
		return "", fmt.Errorf("lock the columns of %s and read their version: no result of SHOW CREATE TABLE", table)
	}
	return readDefinition(rows, ref, name)
}

// DeleteFile implements sink.Driver.
func (d Driver) DeleteFile(ctx context.Context, tx *sql.Tx, table string, fileKey int64) (int64, error) {
	t, err := d.Describe(ctx, tx, table)
	if err != nil || t == nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM `+d.QuoteTable(table)+` WHERE `+q(sink.FileColumn)+` = ?`, fileKey)
	if err != nil {
		return 0, fmt.Errorf("delete rows of file %d from %s: %w", fileKey, table, err)
	}
	return res.RowsAffected()
}
