package mysql

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/internal/stdsql"
)

// Driver is the MariaDB and MySQL driver. Idemport's own tables live in
// the database the DSN names, prefixed "idemport_" (Prefix), as on SQLite:
// a MariaDB database is what PostgreSQL calls a schema, and a user who may
// create tables in one may not be allowed to create another.
type Driver struct {
	// The operations written once in sink/internal/stdsql, in this
	// driver's spelling; those MariaDB spells apart are declared below
	// and in ledger.go.
	stdsql.Operations[Driver]
}

var _ sink.Driver = Driver{}

// Prefix places idemport's tables in the DSN's database.
const Prefix = "idemport_"

// lockTable holds one row per key that Lock has locked: a transaction
// locks a key by writing its row, and holds it until it ends. GET_LOCK
// would outlive a rolled-back transaction.
const lockTable = Prefix + "locks"

//go:embed migrations
var migrations embed.FS

// Migrations implements sink.Driver.
func (Driver) Migrations(component string) (fs.FS, error) {
	return fs.Sub(migrations, "migrations/"+component)
}

// Open implements sink.Driver: it connects with the session settings of
// session on every connection and, unless s.ReadOnly, creates the table
// Lock writes: a user who may not is told what to grant (Denied), a
// *sink.ConfigError. s.StateSchema is not used: idemport's tables are in
// the DSN's database (Prefix). A read-only Open's sessions are read-only.
func (d Driver) Open(ctx context.Context, dsn string, s sink.Settings) (*sink.Database, error) {
	cfg, err := parseDSN(dsn)
	if err != nil {
		return nil, &sink.ConfigError{Err: fmt.Errorf("%s: %w", d.Redact(dsn), err)}
	}
	c, err := newConnector(cfg, s)
	if err != nil {
		return nil, &sink.ConfigError{Err: fmt.Errorf("%s: %w", d.Redact(dsn), err)}
	}
	db := sql.OpenDB(c)
	// KeyOrder: InnoDB keeps a table's rows in its primary key's B-tree,
	// and a natural key's rows in random order land each on a random
	// page of it; in key order, one page after another (1M rows of
	// shuffled ids: the server's CPU about 0.8x of file order's, the
	// same as the mariadb client's LOAD DATA of the file; docs/internals.md).
	out := &sink.Database{DB: db, Name: name(cfg), Prefix: Prefix, KeyOrder: true}
	out.Disk = "the server's disk (" + out.Name + ")"
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == erBadDB && s.ReadOnly {
			return nil, fmt.Errorf("open %s: %w", out.Name, sink.ErrNoDatabase)
		}
		return nil, connectError(out.Name, cfg, err)
	}
	if !s.ReadOnly {
		if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+lockTable+` (k BINARY(32) NOT NULL PRIMARY KEY) ENGINE = InnoDB`); err != nil {
			derr := d.Denied(ctx, db, s.StateSchema, err)
			db.Close()
			if derr != nil { // a missing privilege: the user's to give
				return nil, &sink.ConfigError{Err: fmt.Errorf("in %s: %w", out.Name, derr)}
			}
			return nil, fmt.Errorf("create %s in %s: %w", lockTable, out.Name, err)
		}
	}
	return out, nil
}

// name names a database for messages, never with the password.
func name(cfg *mysql.Config) string {
	return fmt.Sprintf("MariaDB/MySQL database %q on %s as %s", cfg.DBName, cfg.Addr, cfg.User)
}

// Rebind implements sink.Driver: MariaDB's placeholders are ?.
func (Driver) Rebind(query string) string { return query }

// Now implements sink.Driver: NOW(6) is the statement's start, to the
// microsecond, in Unix milliseconds.
func (Driver) Now() string { return "CAST(FLOOR(UNIX_TIMESTAMP(NOW(6)) * 1000) AS SIGNED)" }

// Quote implements sink.Driver: the session's sql_mode has ANSI_QUOTES, so
// a double-quoted string is a name, as in standard SQL.
func (Driver) Quote(name string) string { return q(name) }

// QuoteTable implements sink.Driver: "sales.orders" names table orders in
// database sales. The name is read as splitName reads it (a part may be
// quoted, and a quoted part may hold a dot), so that every statement on a
// table names the table Describe, ColumnsVersion and HoldColumnsVersion
// name.
func (Driver) QuoteTable(name string) string { return tableRef(splitName(name)) }

// q quotes one name, dots included.
func q(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// Distinct implements sink.Driver with the null-safe equality <=>, which
// compares rows too.
func (Driver) Distinct(a, b []string) string {
	if len(a) == 1 {
		return "NOT ((" + a[0] + ") <=> (" + b[0] + "))"
	}
	return "NOT ((" + strings.Join(a, ", ") + ") <=> (" + strings.Join(b, ", ") + "))"
}

// KeyValue implements sink.Driver: a decimal is compared by its number,
// spelled out of its text by keyExpr, as the number column that keys a
// decimal column Ensure made holds it (1.50 is 1.5). A DECIMAL column's
// text, which has its scale's zeros, is spelled out alike.
func (Driver) KeyValue(expr string, kind idemtype.Type) string {
	if kind == idemtype.Decimal {
		return keyExpr(expr)
	}
	return expr
}

// Exact implements sink.Driver: DECIMAL's equality ignores the scale its
// text keeps, and a type idemport does not know may have looser equality
// than its text: both compare as text.
func (Driver) Exact(expr string, kind idemtype.Type) string {
	if kind == idemtype.Decimal || kind == idemtype.Unknown {
		return "CAST(" + expr + " AS CHAR)"
	}
	return expr
}

// TimeType implements sink.Driver: the session's time zone is UTC, so a
// DATETIME holds UTC.
func (Driver) TimeType() string { return "DATETIME(6)" }

// TimeValue implements sink.Driver.
func (Driver) TimeValue(t time.Time) any { return t.UTC() }

// KeyParam implements sink.Driver: the value goes as text cast to the
// column's type (in the spelling CAST takes), so that the comparison is
// the column's whatever type the file's values have.
func (Driver) KeyParam(sqlType string) string {
	t := strings.ToLower(strings.TrimSpace(sqlType))
	base, _, _ := strings.Cut(t, "(")
	base = strings.TrimSpace(strings.TrimSuffix(base, " unsigned"))
	switch base {
	case "":
		return "?"
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "bool", "boolean":
		if strings.Contains(t, "unsigned") {
			return "CAST(? AS UNSIGNED)"
		}
		return "CAST(? AS SIGNED)"
	case "decimal", "numeric":
		return "CAST(? AS " + strings.ToUpper(t) + ")"
	case "double", "float", "real", "double precision":
		return "CAST(? AS DOUBLE)"
	case "datetime", "timestamp":
		return "CAST(? AS DATETIME(6))"
	case "date":
		return "CAST(? AS DATE)"
	}
	return "CAST(? AS CHAR)"
}

// KeyArg implements sink.Driver: the value's text.
func (Driver) KeyArg(v any) any {
	if v == nil {
		return nil
	}
	return fmt.Sprint(v)
}

// nameQuotes quote a part of a table name: "a.b" and `a.b` are one name.
const nameQuotes = "\"`"

// readName is how every statement reads a table name: its database
// (empty for the current one) and table, unquoted (sink.SplitTable), or
// why the name is refused.
func readName(name string) (db, table string, err error) {
	return sink.SplitTable(name, nameQuotes)
}

// splitName is readName for a statement's text: a name readName refuses,
// which Describe and TableExists report and the import refused before
// any statement, is read as one table name, naming no other table.
func splitName(name string) (db, table string) {
	db, table, err := readName(name)
	if err != nil {
		return "", name
	}
	return db, table
}

// TableExists implements sink.Driver. Names compare byte by byte, as the
// server finds tables on a file system that tells case apart.
func (Driver) TableExists(ctx context.Context, qr sink.Querier, name string) (bool, error) {
	db, table, err := readName(name)
	if err != nil {
		return false, err
	}
	var n int
	err = qr.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = coalesce(nullif(?, ''), DATABASE()) AND CAST(table_name AS BINARY) = CAST(? AS BINARY)`, db, table).Scan(&n)
	return n > 0, err
}

// Tables implements sink.Driver: in the DSN's database only, where
// idemport keeps its own tables (Prefix) and its staging tables. Another
// database on the server is another idemport's, or no idemport's, and
// what Tables lists may be dropped (gc).
func (d Driver) Tables(ctx context.Context, qr sink.Querier, prefixes ...string) ([]string, error) {
	var like []string
	var args []any
	for _, p := range prefixes {
		like = append(like, `CAST(table_name AS BINARY) LIKE CAST(? AS BINARY) ESCAPE '!'`)
		args = append(args, strings.NewReplacer(`!`, `!!`, `%`, `!%`, `_`, `!_`).Replace(p)+"%")
	}
	if len(like) == 0 {
		return nil, nil
	}
	rows, err := qr.QueryContext(ctx, `SELECT table_schema, table_name FROM information_schema.tables
		WHERE table_schema = DATABASE() AND (`+strings.Join(like, " OR ")+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	return stdsql.TableNames(rows, d.Limits())
}

// CurrentSchema implements sink.Driver: the DSN's database.
func (Driver) CurrentSchema(ctx context.Context, qr sink.Querier) (string, error) {
	var s sql.NullString
	if err := qr.QueryRowContext(ctx, `SELECT DATABASE()`).Scan(&s); err != nil {
		return "", fmt.Errorf("read the current database: %w", err)
	}
	return s.String, nil
}

// Lock implements sink.Driver by writing the key's row of the lock table
// (its SHA-256): the row lock lasts until tx ends, whether it commits or
// rolls back. An update that changes nothing still takes the row's lock.
func (Driver) Lock(ctx context.Context, tx *sql.Tx, key string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO `+lockTable+` (k) VALUES (UNHEX(SHA2(?, 256))) ON DUPLICATE KEY UPDATE k = k`, key)
	return err
}

// LockTable implements sink.Driver: the lock table is the database's,
// where an unqualified name means one table to every session. Once it
// holds the key, it waits until no session alters the table's columns
// (waitAlters): the ALTER of a process killed while it held the key ends
// after the key is free, and what is looked at under the key must be the
// table as that ALTER leaves it.
func (d Driver) LockTable(ctx context.Context, tx *sql.Tx, what, table string) error {
	if err := d.Lock(ctx, tx, what+" "+table); err != nil {
		return err
	}
	return waitAlters(ctx, tx, table)
}

// SkipLocked implements sink.Driver. MariaDB has no FOR UPDATE OF: the
// clause locks the rows of every table the SELECT reads, and of is not
// used (the outbox's claim, which joins, is spelled apart: ledger.go).
func (Driver) SkipLocked(string) (string, bool) { return " FOR UPDATE SKIP LOCKED", true }

// The server's error numbers the driver tells apart.
const (
	erDiskFull     = 1021 // ER_DISK_FULL
	erBadDB        = 1049 // ER_BAD_DB_ERROR
	erDupEntry     = 1062 // ER_DUP_ENTRY
	erNoTable      = 1146 // ER_NO_SUCH_TABLE
	erRecordFull   = 1114 // ER_RECORD_FILE_FULL: the table is full
	erLockWait     = 1205 // ER_LOCK_WAIT_TIMEOUT
	erLockDeadlock = 1213 // ER_LOCK_DEADLOCK
)

// number returns the server's error number of err, or 0.
func number(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// Locked implements sink.Driver: a row lock (innodb_lock_wait_timeout) or
// a table's metadata lock (lock_wait_timeout) waited for too long; both
// end with error 1205.
func (Driver) Locked(err error) bool {
	return number(err) == erLockWait
}

// Full implements sink.Driver.
func (Driver) Full(err error) bool {
	n := number(err)
	return n == erDiskFull || n == erRecordFull
}

// Deadlock implements sink.Driver: InnoDB rolled the transaction back to
// break a deadlock.
func (Driver) Deadlock(err error) bool { return number(err) == erLockDeadlock }

// CreateVersions implements sink.Driver: TEXT cannot be a key here.
func (Driver) CreateVersions(ctx context.Context, qr sink.Querier, table string) error {
	_, err := qr.ExecContext(ctx, createVersions(table))
	return err
}

// createVersions is the statement of CreateVersions.
func createVersions(table string) string {
	return `CREATE TABLE IF NOT EXISTS ` + table + ` (
		component  VARCHAR(64) NOT NULL,
		version    INT         NOT NULL,
		applied_at VARCHAR(32) NOT NULL,
		PRIMARY KEY (component, version)
	) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin`
}
