package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/go-sql-driver/mysql"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
)

// collation is the collation of the text columns of the tables Ensure
// makes, whatever the database's default, as of idemport's own: byte by
// byte and without padding, so that keys that differ in case or in
// trailing spaces are two keys, as a file's are.
const collation = "utf8mb4_nopad_bin"

// The comments that mark what a column Ensure made holds, where its SQL
// type alone cannot say (Describe reads them):
//   - markDecimal: a decimal's canonical text (MEDIUMTEXT, or VARCHAR in
//     a key), kept exactly as written: 1.50 stays 1.50, and a value
//     DECIMAL(65,30) would round or refuse is kept too;
//   - markLocal: a DATETIME(6) of a date and time of day without a zone
//     (LocalTimestamp); an unmarked DATETIME holds a point in time in UTC;
//   - markKey+name: the stored column that keys the decimal column name
//     by its number (keyExpr), not a column of the file.
const (
	markDecimal = "idemport:decimal"
	markLocal   = "idemport:local"
	markKey     = "idemport:key:"
)

// keyBytes is the most an InnoDB index key holds (innodb_large_prefix,
// DYNAMIC rows, MariaDB 10.3 and later), and charBytes the bytes of a
// utf8mb4 character, which VARCHAR key columns reserve for every
// character they may hold.
const (
	keyBytes  = 3072
	charBytes = 4
)

// sqlType is the column type Ensure creates for kind, outside a key.
// Strings are LONGTEXT and JSON a LONGTEXT with a json_valid check (added
// by columnSQL); decimals are text (markDecimal), since DECIMAL(65,30)
// neither keeps the scale written nor holds every decimal idemport does.
func sqlType(kind idemtype.Type) string {
	switch kind {
	case idemtype.Bool:
		return "BOOLEAN"
	case idemtype.Int64:
		return "BIGINT"
	case idemtype.Float64:
		return "DOUBLE"
	case idemtype.Timestamp:
		return "DATETIME(6)"
	case idemtype.LocalTimestamp:
		return "DATETIME(6)"
	case idemtype.Date:
		return "DATE"
	case idemtype.Decimal:
		return "MEDIUMTEXT"
	}
	return "LONGTEXT"
}

// columnDef is the definition of column name of kind: of sqlType, or of
// keyType(kind, chars) NOT NULL in a key (chars > 0); NOT NULL when
// notNull; JSON outside a key checked by json_valid; and the comment that
// marks a decimal or a local timestamp.
func columnDef(name string, kind idemtype.Type, chars int, notNull bool) string {
	def := q(name) + " " + sqlType(kind)
	if chars > 0 {
		def = q(name) + " " + keyType(kind, chars)
	}
	if notNull {
		def += " NOT NULL"
	}
	if chars == 0 && kind == idemtype.JSON {
		def += " CHECK (json_valid(" + q(name) + "))"
	}
	switch kind {
	case idemtype.Decimal:
		def += " COMMENT '" + markDecimal + "'"
	case idemtype.LocalTimestamp:
		def += " COMMENT '" + markLocal + "'"
	}
	return def
}

// keyChars is how many characters each text (string, decimal or JSON)
// column of key may hold, of the fields' kinds: its even share of the
// index's keyBytes (sink.Limits.KeyChars), whatever the kinds of the other
// key columns, as the plan pass checks a key before it knows them. Zero
// when the key has no text column. A decimal key column is indexed
// through its number column, as long as the text itself.
func keyChars(key []string, kind func(string) idemtype.Type) int {
	for _, k := range key {
		switch kind(k) {
		case idemtype.String, idemtype.Decimal, idemtype.JSON:
			return Driver{}.Limits().KeyChars(len(key))
		}
	}
	return 0
}

// keyType is the column type of a key column of kind that may hold chars
// characters (keyChars): text must be VARCHAR to be indexed whole.
func keyType(kind idemtype.Type, chars int) string {
	switch kind {
	case idemtype.String, idemtype.JSON, idemtype.Decimal:
		return fmt.Sprintf("VARCHAR(%d)", chars)
	}
	return sqlType(kind)
}

// keyExpr is the SQL expression that spells out the number of expr, a
// decimal's canonical text: the text less the zeros that end its fraction
// and then a point with nothing after it, as reader.AppendDecimalKey keys
// it in a file. 1.50 is 1.5, 1.0 and 1 are 1, 100 stays 100, 0.00 is 0
// (canonical text gives zero no sign). It is deterministic, so a stored
// generated column may hold it.
func keyExpr(expr string) string {
	return "CASE WHEN LOCATE('.', " + expr + ") > 0 THEN TRIM(TRAILING '.' FROM TRIM(TRAILING '0' FROM " + expr + ")) ELSE " + expr + " END"
}

// tableOptions end the CREATE TABLE of a target table.
const tableOptions = " ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = " + collation

// keyColumn names the stored column that keys the i-th key column by its
// number (markKey).
func keyColumn(i int) string { return fmt.Sprintf("idemport_key_%d", i+1) }

// createSQL is the CREATE TABLE of a new target table. In ordinal mode it
// is keyed by (file key, row ordinal). Otherwise by the natural key: its
// text columns are VARCHAR within InnoDB's key (keyChars), and a decimal
// key column is keyed by its number, through a stored generated column
// (keyColumn, keyExpr), so that 1.5 and 1.50 are one key, while the column
// keeps the text written. MariaDB takes no generated column in a primary
// key, so such a key is a UNIQUE index and InnoDB clusters the rows on a
// hidden row id; every other key is the primary key.
func createSQL(tg sink.Target, schema *arrow.Schema) string {
	kinds := map[string]idemtype.Type{}
	for _, f := range schema.Fields() {
		kinds[f.Name] = idemtype.TypeOf(f)
	}
	kind := func(name string) idemtype.Type { return kinds[name] }
	chars := keyChars(tg.Key, kind)
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS " + Driver{}.QuoteTable(tg.Table) + " (\n")
	if tg.Ordinal() {
		fmt.Fprintf(&b, "  %s BIGINT NOT NULL,\n  %s BIGINT NOT NULL,\n", q(sink.FileColumn), q(sink.RowColumn))
	}
	for _, f := range schema.Fields() {
		key := slices.Contains(tg.Key, f.Name)
		c := 0
		if key {
			c = chars
		}
		b.WriteString("  " + columnDef(f.Name, kind(f.Name), c, key) + ",\n")
	}
	if tg.Ordinal() {
		fmt.Fprintf(&b, "  PRIMARY KEY (%s, %s)\n)%s", q(sink.FileColumn), q(sink.RowColumn), tableOptions)
		return b.String()
	}
	fmt.Fprintf(&b, "  %s BIGINT,\n  %s BIGINT,\n", q(sink.FileColumn), q(sink.RowColumn))
	cols := make([]string, len(tg.Key))
	generated := false
	for i, k := range tg.Key {
		cols[i] = q(k)
		if kind(k) == idemtype.Decimal {
			generated = true
			cols[i] = q(keyColumn(i))
			fmt.Fprintf(&b, "  %s VARCHAR(%d) AS (%s) STORED COMMENT '%s',\n", cols[i], chars, keyExpr(q(k)), markKey+strings.ReplaceAll(k, "'", "''"))
		}
	}
	if generated {
		fmt.Fprintf(&b, "  UNIQUE KEY %s (%s)\n)%s", q("idemport_key"), strings.Join(cols, ", "), tableOptions)
	} else {
		fmt.Fprintf(&b, "  PRIMARY KEY (%s)\n)%s", strings.Join(cols, ", "), tableOptions)
	}
	return b.String()
}

// Ensure implements sink.Driver. CREATE TABLE IF NOT EXISTS lets
// concurrent imports into a new table both try to create it; the second
// then finds it. Any DDL commits tx (see the package documentation): the
// table and its lineage columns are made before any row is written, and a
// second Ensure finds them made.
func (d Driver) Ensure(ctx context.Context, tx *sql.Tx, tg sink.Target, schema *arrow.Schema) error {
	t, err := d.Describe(ctx, tx, tg.Table)
	if err != nil {
		return err
	}
	if t == nil {
		if _, err := tx.ExecContext(ctx, createSQL(tg, schema)); err != nil {
			return fmt.Errorf("create table %s: %w", tg.Table, err)
		}
		if t, err = d.Describe(ctx, tx, tg.Table); err != nil {
			return err
		}
		if t == nil {
			return fmt.Errorf("create table %s: it is not there once made", tg.Table)
		}
	}
	if err := sink.Check(t, tg, schema); err != nil {
		return err
	}
	for _, name := range []string{sink.FileColumn, sink.RowColumn} {
		if t.Column(name) == nil {
			if _, err := tx.ExecContext(ctx, `ALTER TABLE `+d.QuoteTable(tg.Table)+` ADD COLUMN IF NOT EXISTS `+q(name)+` BIGINT`); err != nil {
				return fmt.Errorf("add lineage column %s to %s: %w", name, tg.Table, err)
			}
		}
	}
	return nil
}

// alterLockName is the SQL expression of the name of the session lock
// (GET_LOCK) a session holds while it alters the columns of a table
// (holdAlters), of the arguments database (or "": the connection's) and
// table: a digest of the two, as the name may have 64 characters.
const alterLockName = `CONCAT('idemport alter ', LEFT(SHA2(CONCAT(coalesce(nullif(?, ''), DATABASE()), '.', ?), 256), 40))`

// holdAlters takes, in tx's session, the lock of the alterations of
// table's columns, and returns its release. AddColumn and Widen hold it
// through their ALTER TABLE, and LockTable waits for it to be free
// (waitAlters).
//
// --evolve looks at a table and changes it under a lock (LockTable) that
// is a row lock of a session of its own, since the ALTER commits the
// transaction it runs in. A process killed while its ALTER copies the
// table loses that session at once, and with it the lock, while its
// ALTER's session runs on on the server and ends the ALTER later: another
// process took the lock, looked at the table as it was before that ALTER,
// and queued an ALTER of its own behind it, made from what it had seen;
// one that widened n to a decimal after an ALTER that made n text
// narrowed n back to a decimal (a text file's import, which had read n as
// text, then failed, and a column marked a decimal held text). A session
// lock lasts, unlike a row lock, through the commit of the ALTER, until
// it is released or its session ends: the session of an ALTER whose
// process is gone holds it until that ALTER has ended.
func holdAlters(ctx context.Context, tx *sql.Tx, table string) (release func() error, err error) {
	db, name := splitName(table)
	var got sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT GET_LOCK(`+alterLockName+`, @@lock_wait_timeout)`, db, name).Scan(&got); err != nil {
		return nil, fmt.Errorf("wait for the alterations of %s under way: %w", table, err)
	}
	if got.Int64 != 1 {
		// As a metadata lock waited for too long: Locked.
		return nil, fmt.Errorf("wait for the alterations of %s under way: %w", table,
			&mysql.MySQLError{Number: erLockWait, Message: "another session altered the table's columns for longer than the lock wait timeout"})
	}
	return func() error {
		if _, err := tx.ExecContext(context.WithoutCancel(ctx), `DO RELEASE_LOCK(`+alterLockName+`)`, db, name); err != nil {
			return fmt.Errorf("release the lock of the alterations of %s: %w", table, err)
		}
		return nil
	}, nil
}

// waitAlters waits, in tx's session, until no session alters table's
// columns (holdAlters), and holds nothing after.
func waitAlters(ctx context.Context, tx *sql.Tx, table string) error {
	release, err := holdAlters(ctx, tx, table)
	if err != nil {
		return err
	}
	return release()
}

// AddColumn implements sink.Driver: the column is nullable, of sqlType.
// It holds the lock of the table's alterations (holdAlters).
func (d Driver) AddColumn(ctx context.Context, tx *sql.Tx, table string, f arrow.Field) (err error) {
	release, err := holdAlters(ctx, tx, table)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, release()) }()
	stmt := `ALTER TABLE ` + d.QuoteTable(table) + ` ADD COLUMN IF NOT EXISTS ` + columnDef(f.Name, idemtype.TypeOf(f), 0, false)
	if _, err := tx.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("add column %s to %s: %w", f.Name, table, err)
	}
	return nil
}

// Widen implements sink.Driver, for a column outside every key: MODIFY
// COLUMN gives it sqlType(kind), keeping NOT NULL. MariaDB's casts are
// exact: BIGINT to its digits, DOUBLE to its shortest text, a decimal's
// text as it is. A key column is not widened (its type is a VARCHAR of the
// key's share, or is part of a number key): a *sink.ConfigError, which
// the plan forestalls by refusing such a file (Limits.FixedKeys).
//
// It looks at the column and alters it holding the lock of the table's
// alterations (holdAlters), and leaves a column that holds kind already,
// or text, which holds any, as it is: the ALTER of another session may
// have widened it as far or further since the caller looked, and a
// MODIFY COLUMN to kind would narrow it back.
func (d Driver) Widen(ctx context.Context, tx *sql.Tx, table, column string, kind idemtype.Type) (err error) {
	release, err := holdAlters(ctx, tx, table)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, release()) }()
	t, err := d.Describe(ctx, tx, table)
	if err != nil {
		return err
	}
	if t == nil || t.Column(column) == nil {
		return fmt.Errorf("widen column %s of %s: no such column", column, table)
	}
	if k := t.Column(column).Kind; k == kind || k == idemtype.String {
		return nil
	}
	for _, k := range t.Keys {
		if slices.Contains(k, column) {
			return &sink.ConfigError{Err: fmt.Errorf("widen column %s of %s to %s: it is part of a key, which MariaDB/MySQL tables cannot widen yet", column, table, kind)}
		}
	}
	def := columnDef(column, kind, 0, t.Column(column).NotNull)
	if _, err := tx.ExecContext(ctx, `ALTER TABLE `+d.QuoteTable(table)+` MODIFY COLUMN `+def); err != nil {
		return fmt.Errorf("widen column %s of %s to %s: %w", column, table, kind, err)
	}
	return nil
}
