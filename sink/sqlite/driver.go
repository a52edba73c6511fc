// Package sqlite is the SQLite driver of package sink: everything about
// SQLite that idemport needs, from the connection string (Open) and the
// migrations of the ledger and the checkpoints to the batch writer.
//
// One file holds the target tables and idemport's own, whose names begin
// with "idemport_". SQLite has one writer: Open's connections begin every
// transaction with BEGIN IMMEDIATE, which takes the write lock at once and
// so serializes deciding and claiming transactions without further locks.
// A build without cgo has no SQLite: every method that needs the engine
// fails with ErrNoSQLite (nocgo.go).
//
// Target tables are rowid tables with a unique index on their key: (file
// key, row ordinal) in ordinal mode, the natural key otherwise, which is
// the INTEGER PRIMARY KEY itself when it is one integer column, and an
// index on the number each decimal column's text spells when it has one,
// so that decimals equal in value are one key (KeyValue; older versions
// made WITHOUT ROWID tables clustered on the key, which are written the
// same way; see createSQL). Rows are
// upserted with INSERT … ON CONFLICT DO UPDATE … WHERE statements, whose
// WHERE leaves unchanged and stale rows untouched; a batch none of whose
// keys is stored is written with a plain INSERT.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/mattn/go-sqlite3" // database/sql driver "sqlite3"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/internal/stdsql"
)

// Driver is the SQLite driver: one file holds the target tables and
// idemport's own (named with the prefix "idemport_"). SQLite has one
// writer: every transaction of a connection Open makes begins with BEGIN
// IMMEDIATE, taking the write lock at once, which is what serializes
// deciding transactions (Lock) and claims (SkipLocked).
type Driver struct {
	// The operations written once in sink/internal/stdsql (the
	// ledger's, the checkpoints', savepoints, the merge, the sweep,
	// verify's reads), in this driver's spelling.
	stdsql.Operations[Driver]
}

var _ sink.Driver = Driver{}
var _ stdsql.Collator = Driver{}

//go:embed migrations
var migrations embed.FS

// Claims implements sink.Driver: sqlite://PATH (sqlite:///abs/path is
// absolute, sqlite://rel/path relative), sqlite:PATH and file:PATH (a
// query string is dropped). A Registry also gives SQLite bare paths when
// it is its first driver.
func (Driver) Claims(dsn string) bool {
	return strings.HasPrefix(dsn, "sqlite:") || strings.HasPrefix(dsn, "file:")
}

// Forms implements sink.Driver.
func (Driver) Forms() string { return "a SQLite path, sqlite://PATH" }

// Redact implements sink.Driver: a SQLite DSN holds no password.
func (Driver) Redact(dsn string) string { return sink.RedactURL(dsn) }

// Path returns the file a DSN names.
func Path(dsn string) (string, error) {
	p := dsn
	switch {
	case strings.HasPrefix(dsn, "sqlite://"):
		p = strings.TrimPrefix(dsn, "sqlite://")
	case strings.HasPrefix(dsn, "sqlite:"):
		p = strings.TrimPrefix(dsn, "sqlite:")
	case strings.HasPrefix(dsn, "file:"):
		p, _, _ = strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	}
	if p == "" {
		return "", &sink.ConfigError{Err: fmt.Errorf("%q names no file", dsn)}
	}
	return p, nil
}

// Open implements sink.Driver. The connection string is written here
// only: WAL so readers never block the writer, synchronous=NORMAL
// (durable at each checkpoint of the WAL, and safe against corruption; a
// writer's connection syncs the log in the COMMIT that would have
// checkpointed and checkpoints on a thread of its own, ckpt.c),
// BEGIN IMMEDIATE so a transaction that will write takes the write lock
// first, and s.BusyTimeout for other writers. A read-only Open opens the
// file read-only and fails with sink.ErrNoDatabase when it does not exist.
func (Driver) Open(ctx context.Context, dsn string, s sink.Settings) (*sink.Database, error) {
	path, err := Path(dsn)
	if err != nil {
		return nil, err
	}
	if err := Available(); err != nil {
		return nil, &sink.ConfigError{Err: err}
	}
	if s.ReadOnly {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w at %s", sink.ErrNoDatabase, path)
		}
	}
	db, err := sql.Open("sqlite3", ConnString(path, s))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := ping(ctx, db, s.BusyTimeout); err != nil {
		db.Close()
		if !s.ReadOnly || walInUse(path) {
			return nil, openError(path, s, err)
		}
		// A WAL database in a directory this user may not write: a
		// read-only connection cannot create the WAL index beside it. No
		// one without that right can change the file either (a writer
		// creates a journal or a WAL there first), and no WAL holds
		// commits the file lacks: it is read as immutable.
		db, err = sql.Open("sqlite3", ConnString(path, s)+"&immutable=1")
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		if err := db.PingContext(ctx); err != nil {
			db.Close()
			return nil, openError(path, s, err)
		}
	}
	disk := filepath.Dir(path)
	if abs, err := filepath.Abs(disk); err == nil {
		disk = abs
	}
	t := Driver{}.Traits()
	return &sink.Database{DB: db, Name: path, Disk: disk, Prefix: "idemport_", BatchRows: batchRows, KeyOrder: t.KeyOrder, GroupCommits: t.GroupCommits}, nil
}

// Traits implements sink.Traits.
//
// KeyOrder: a natural key's rows in random order land each on a
// random page of the table's B-tree; in key order, one page after
// another (1M rows of shuffled integer keys: 9.7 s of CPU in file
// order, 5.5 s in key order, pipeline/keyorder.go). GroupCommits:
// each commit of rows in random key order writes nearly every leaf
// of a large table to the log, and the checkpoint copies them again
// (10M rows of shuffled keys in partitions of 100,000: 92 GB written
// for a 714 MB database).
func (Driver) Traits() sink.Database { return sink.Database{KeyOrder: true, GroupCommits: true} }

// ping opens db's first connection. A connection's first statement turns
// a new file to WAL, which takes the file's exclusive lock; of two
// connections upgrading their lock at once SQLite answers one "database
// is locked" at once, without calling the busy handler (it would wait for
// the other forever), so a locked answer is retried here, as the busy
// timeout would, until busy has passed.
func ping(ctx context.Context, db *sql.DB, busy time.Duration) error {
	deadline := time.Now().Add(busy)
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		err := db.PingContext(ctx)
		if err == nil || !(Driver{}).Locked(err) || time.Now().Add(wait).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// walInUse reports whether the database at path has a write-ahead log
// with content: commits that may not be in the file yet.
func walInUse(path string) bool {
	st, err := os.Stat(path + "-wal")
	return err == nil && st.Size() > 0
}

// openError is the error of opening the database at path, which failed
// with err. A directory that does not exist, or in which this user may not
// create the database or the write-ahead log beside it, is a
// *sink.ConfigError naming that cause (SQLite itself, having tried to open
// the file read-only as well, may report another).
func openError(path string, s sink.Settings, err error) error {
	dir := filepath.Dir(path)
	if st, serr := os.Stat(dir); errors.Is(serr, os.ErrNotExist) {
		return &sink.ConfigError{Err: fmt.Errorf("open %s: directory %s does not exist: create it, or check --into", path, dir)}
	} else if serr == nil && !st.IsDir() {
		return &sink.ConfigError{Err: fmt.Errorf("open %s: %s is not a directory: check --into", path, dir)}
	}
	if !s.ReadOnly {
		probe, perr := os.CreateTemp(dir, ".idemport-probe-*")
		if perr == nil {
			probe.Close()
			os.Remove(probe.Name())
		} else if errors.Is(perr, os.ErrPermission) {
			return &sink.ConfigError{Err: fmt.Errorf("open %s: cannot create files in %s: permission denied (SQLite writes the database and its write-ahead log there): make the directory writable to this user, or give --into a path in one that is", path, dir)}
		}
	}
	return fmt.Errorf("open %s: %w", path, err)
}

// batchRows is the rows of a batch handed to the writer: one statement step
// writes a batch in ordinal mode, and bigger batches spread its fixed cost
// (the count of stored keys, the step, the call into C) over more rows.
const batchRows = 8192

// The write connection's page cache, in KiB. A transaction's dirty pages
// stay in the cache up to spillKiB before SQLite writes them to the log
// ahead of the COMMIT (spills them), whatever the cache's size. The clean
// pages it keeps are cacheKiB, but appendCacheKiB for a writer that
// appends (an ordinal import into a table whose only index is the file's
// rows'): it touches only the last pages of the table and of that index,
// and a larger cache is memory faulted in for pages never read again
// (a 1M-row import filled 64 MiB). A natural key's rows, or an index of
// the table's own, land on any page, and a small cache there reads pages
// back from the OS again and again: 1M rows of shuffled ids took 1.85 s of
// system time with 8 MiB instead of 1.5 s. The spill stays at 64 MiB for
// all: a partition's pages past the cache spilled and were written twice
// (10M rows with an 8 MiB spill: 1.94M pwrite calls instead of 1.14M).
const (
	cacheKiB       = 64 << 10
	appendCacheKiB = 8 << 10
	spillKiB       = 64 << 10
)

// ConnString is the database/sql connection string of driver "sqlite3"
// that Open uses for the file at path.
func ConnString(path string, s sink.Settings) string {
	v := url.Values{}
	v.Set("_busy_timeout", fmt.Sprint(s.BusyTimeout.Milliseconds()))
	// Without SQLite's per-connection mutex (SQLITE_OPEN_NOMUTEX): a
	// connection is used by one goroutine at a time, database/sql's under
	// its lock and the writer's raw calls inside conn.Raw, and locking
	// that mutex on every call took several percent of an import's CPU.
	v.Set("_mutex", "no")
	// The log's frames gathered into large writes (walbuf.c).
	if name := walVFS(); name != "" {
		v.Set("vfs", name)
	}
	if s.ReadOnly {
		v.Set("mode", "ro")
	} else {
		v.Set("_journal_mode", "WAL")
		v.Set("_synchronous", "NORMAL")
		v.Set("_txlock", "immediate")
		v.Set("_cache_size", fmt.Sprint(-cacheKiB)) // until a writer sizes it (sizeCache)
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + v.Encode()
}

// Migrations implements sink.Driver.
func (Driver) Migrations(component string) (fs.FS, error) {
	return fs.Sub(migrations, "migrations/"+component)
}

// Rebind implements sink.Driver: SQLite takes ? as it is.
func (Driver) Rebind(query string) string { return query }

// Now implements sink.Driver.
func (Driver) Now() string { return "CAST(unixepoch('subsec') * 1000 AS INTEGER)" }

// Quote implements sink.Driver.
func (Driver) Quote(name string) string { return q(name) }

// QuoteTable implements sink.Driver: SQLite has no schemas here, so a
// dotted name is one table.
func (Driver) QuoteTable(name string) string { return q(name) }

// q quotes one name.
func q(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// quoteList quotes each name, prefixed (e.g. "excluded."), and joins them
// with commas.
func quoteList(names []string, prefix string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + q(n)
	}
	return strings.Join(out, ", ")
}

// Distinct implements sink.Driver: SQLite's IS NOT compares rows with
// null equal to null.
func (Driver) Distinct(a, b []string) string {
	return "(" + strings.Join(a, ", ") + ") IS NOT (" + strings.Join(b, ", ") + ")"
}

// KeyValue implements sink.Driver. A decimal is its canonical text
// (DECIMAL TEXT), which keeps the scale written: a decimal key is compared
// by its number, spelled out of the text by numberExpr, and its key index
// is on that expression.
func (Driver) KeyValue(expr string, kind idemtype.Type) string {
	if kind == idemtype.Decimal {
		return numberExpr(expr)
	}
	return expr
}

// Collate implements stdsql.Collator: expr compared by the collation of
// the key column c (Collation: its unique index's, a column's COLLATE
// NOCASE), which a comparison of two columns takes from the left one
// only; expr as it is for a column of BINARY or none.
func (d Driver) Collate(expr string, c *sink.Column) string {
	if c == nil || c.Collation == "" {
		return expr
	}
	return expr + " COLLATE " + d.Quote(c.Collation)
}

// numberExpr is the SQL expression that spells out the number of expr, a
// decimal's canonical text (or an integer or real SQLite renders as text):
// the text less the zeros that end its fraction and then a point with
// nothing after it, as reader.AppendDecimalKey keys it in a file. 1.50 is
// 1.5, 1.0 and 1 are 1, 100 stays 100, 0.00 is 0 (canonical text gives
// zero no sign). The expression uses only built-in deterministic
// functions, so an index on it needs nothing registered: any program may
// write the table.
func numberExpr(expr string) string {
	t := "CAST(" + expr + " AS TEXT)"
	return "CASE WHEN instr(" + t + ", '.') THEN rtrim(rtrim(" + t + ", '0'), '.') ELSE " + t + " END"
}

// Exact implements sink.Driver: SQLite compares stored values as they are
// stored (decimals as their text).
func (Driver) Exact(expr string, _ idemtype.Type) string { return expr }

// TimeType implements sink.Driver: timestamps are fixed-width UTC text
// (sink.FormatTimestamp), whose order is time order.
func (Driver) TimeType() string { return "TEXT" }

// TimeValue implements sink.Driver.
func (Driver) TimeValue(t time.Time) any { return sink.FormatTimestamp(t.UnixMicro()) }

// KeyParam implements sink.Driver: SQLite compares by the column's
// affinity.
func (Driver) KeyParam(string) string { return "?" }

// KeyArg implements sink.Driver.
func (Driver) KeyArg(v any) any { return v }

// TableExists implements sink.Driver.
func (Driver) TableExists(ctx context.Context, qr sink.Querier, name string) (bool, error) {
	var ok bool
	err := qr.QueryRowContext(ctx, `SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?`, strings.Trim(name, `"`)).Scan(&ok)
	return ok, err
}

// Tables implements sink.Driver.
func (Driver) Tables(ctx context.Context, qr sink.Querier, prefixes ...string) ([]string, error) {
	var like []string
	var args []any
	for _, p := range prefixes {
		like = append(like, `name LIKE ? ESCAPE '\'`)
		args = append(args, likePrefix(p))
	}
	return names(ctx, qr, `SELECT name FROM sqlite_master WHERE type = 'table' AND (`+strings.Join(like, " OR ")+`)`, args...)
}

// CurrentSchema implements sink.Driver: SQLite has no schemas here.
func (Driver) CurrentSchema(context.Context, sink.Querier) (string, error) { return "", nil }

// likePrefix is a LIKE pattern (escape \) matching what begins with p.
func likePrefix(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(p) + "%"
}

// names returns the single text column of the rows query selects.
func names(ctx context.Context, qr sink.Querier, query string, args ...any) ([]string, error) {
	rows, err := qr.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	return stdsql.Strings(rows)
}

// Lock implements sink.Driver. It takes nothing more: a transaction on a
// connection Open made began with BEGIN IMMEDIATE and so already holds the
// database's one write lock, which no other deciding transaction can hold
// at the same time.
func (Driver) Lock(context.Context, *sql.Tx, string) error { return nil }

// LockTable implements sink.Driver, as Lock.
func (Driver) LockTable(context.Context, *sql.Tx, string, string) error { return nil }

// SkipLocked implements sink.Driver: SQLite has no row locks; a claiming
// transaction holds the write lock (BEGIN IMMEDIATE) instead.
func (Driver) SkipLocked(string) (string, bool) { return "", false }

// HoldColumns implements sink.Driver: a write transaction (BEGIN
// IMMEDIATE) holds the write lock, so no other connection changes a
// table's columns while it runs.
func (Driver) HoldColumns(context.Context, *sql.Tx, string) error { return nil }

// Deadlock implements sink.Driver: SQLite's write transactions exclude
// each other (BEGIN IMMEDIATE), so none waits for another while holding
// what that one needs.
func (Driver) Deadlock(error) bool { return false }

// Limits implements sink.Driver: SQLITE_MAX_COLUMN (2000, as compiled)
// columns per table, of which idemport needs 3 (the lineage columns, and
// the batch table's batch column beside its copies of them), names of any
// length, compared without regard to ASCII case, and a held transaction's
// writes bounded by what the log holds before a COMMIT checkpoints it
// (sink.Limits.HeldBytes; walLimit).
func (Driver) Limits() sink.Limits {
	return sink.Limits{MaxColumns: 2000, Reserved: 3, FoldsCase: true, HeldBytes: 24 << 20}
}
