package sink

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/secret"
	"github.com/idemport/idemport/ledger"
)

// Querier is what *sql.DB, *sql.Conn and *sql.Tx have in common.
//
// It is an alias of an unnamed interface so that packages which declare
// the part of Driver they use (ledger, checkpoint) can spell the same type
// without importing sink: a sink.Driver then satisfies their interfaces.
type Querier = idemtype.Querier

var (
	_ Querier = (*sql.DB)(nil)
	_ Querier = (*sql.Conn)(nil)
	_ Querier = (*sql.Tx)(nil)
)

// Driver is everything about one database that idemport needs: the target
// database holds the imported rows, the ledger and the checkpoints, and
// only its driver knows how that database differs from the others. Code
// outside the drivers never asks which database it is; it asks the driver.
//
// The contract is moving from SQL spelling to database operations: the
// checkpoints' operations (Checkpoints), the ledger's quick checks and
// replay (Ledger), savepoints, DropTable, the merge of an atomic import's stage,
// the snapshot's sweep, verify's reads (CountFile, Compare) and the
// migrations' table of versions (CreateVersions, Versions…) are
// operations, and their statements live in the drivers; the rest of the
// ledger still builds its statements above the drivers from the spelling
// methods (the arch test's sqlAllowed lists
// where, in internal/archtest).
//
// How to add a database (MariaDB, say) — one new package under sink/:
//
//  1. Create sink/<name> with a Driver type that holds no state and
//     embeds the shared operations in its own spelling, "type Driver
//     struct{ stdsql.Operations[Driver] }", and assert "var _
//     sink.Driver = Driver{}".
//  2. Write its migrations (ledger, checkpoint) as numbered .sql files
//     embedded in the package, each "{{prefix}}" placing a table, and
//     serve them from Migrations.
//  3. Implement connecting (Claims, Forms, Redact, Open), the spelling,
//     the locking and the target-table methods below, and the Limits.
//  4. The operations (Ledger, Checkpoints, the savepoints, DropTable,
//     Merge, Classify, Sweep…, CountFile, Compare…) come from the
//     embedded stdsql.Operations, spelled by Driver's own methods
//     (Rebind, Quote, KeyValue…). Declare on Driver only those the
//     database spells apart: the method replaces the embedded one, and
//     the embedded ones call it. It may call stdsql's functions
//     (stdsql.Merge, stdsql.SweepApply…) for the part it keeps.
//  5. Pass the conformance suite from the package's tests against a real
//     server: drivertest.RunTarget, drivertest.RunLedger and
//     drivertest.RunCheckpoint, skipped with a message when its test DSN
//     is unset.
//  6. Add it to the Registry in pipeline.Drivers (and to the rules of
//     internal/archtest that name the drivers).
//
// Such a driver must provide:
//
//   - Connecting: which DSNs are its own (Claims, Forms, Redact), Open
//     with the Settings (its connection string, its session settings,
//     creating the schema that holds idemport's tables), and a Database
//     naming where idemport's tables go (Prefix), how users see it, and
//     its batch size.
//   - Migrations: the ledger's and the checkpoints' numbered migration
//     files in its SQL (Migrations), each "{{prefix}}" placing a table.
//   - Operations on idemport's own state: the checkpoints' (Checkpoints:
//     save and load a plan, claim, fence and complete a partition, leases)
//     and the ledger's (Ledger: the local and remote quick checks, the
//     replay of rejects).
//     Drivers embed the shared implementation, stdsql.Operations, and
//     override what their database spells apart.
//   - SQL spelling: placeholders (Rebind), the database clock in Unix
//     milliseconds (Now), quoting of names and table names (Quote,
//     QuoteTable), row comparison (Distinct), how key values are compared
//     (KeyValue) and stored values told apart (Exact), how idemport's own
//     timestamps are declared and bound (TimeType, TimeValue), how a key
//     value is bound to be compared with a column (KeyParam, KeyArg), and
//     catalogue lookups (TableExists, Tables, CurrentSchema).
//   - Locking: the operation lock a deciding transaction takes (Lock), the
//     clause that makes a claim skip rows other transactions hold
//     (SkipLocked), whether an error says another connection held a
//     lock too long (Locked), and whether it says the transaction was a
//     deadlock's victim (Deadlock).
//   - Target tables: Describe, HoldColumns, Ensure, DeleteFile, AddColumn and Widen, the
//     database's Limits, and the batch Writer, which upserts rows with
//     their lineage and counts what happened to them. Staging tables of
//     --atomic imports are target tables named StagePrefix…, written by the
//     same Writer and merged by Merge; a snapshot's sweep (Sweep…,
//     EnsureDeleted, EnsureSeen) and --replace's ForgetOrdinals; verify's
//     CountFile and Compare; the
//     savepoints that let a transaction go on after a row was refused
//     (Savepoint, ReleaseSavepoint, RollbackToSavepoint), and DropTable.
//
// A Driver holds no state of its own; its methods are safe for concurrent
// use.
type Driver interface {
	// Claims reports whether dsn is one of the driver's own forms (a URL
	// scheme, a key=value string, a path prefix). A Registry asks its
	// drivers in order and gives a DSN no driver claims, that is not a
	// URL, to its first.
	Claims(dsn string) bool
	// Forms describes, for an error message, the DSNs the driver takes.
	Forms() string
	// Redact returns dsn as users may see it, its password masked.
	Redact(dsn string) string
	// Open opens the database named by dsn with s, checks that it answers,
	// and, unless s.ReadOnly, creates what must exist before migrations
	// run. A read-only Open of a database that does not exist fails with
	// an error wrapping ErrNoDatabase; a DSN or a build that cannot serve
	// fails with a *ConfigError.
	Open(ctx context.Context, dsn string, s Settings) (*Database, error)
	// Migrations returns the numbered migrations (NNNN_name.up.sql) of
	// component ("ledger", "checkpoint") in the driver's SQL.
	Migrations(component string) (fs.FS, error)
	// CreateVersions creates table, which records the migrations applied
	// (Migrations), when it does not exist. Concurrent callers are safe
	// where the database makes them (CREATE TABLE IF NOT EXISTS); the
	// caller checks with TableExists after an error.
	CreateVersions(ctx context.Context, q Querier, table string) error
	// Versions returns the versions of component that table records.
	Versions(ctx context.Context, q Querier, table, component string) ([]int, error)
	// VersionRecorded reports whether table records version of component.
	VersionRecorded(ctx context.Context, q Querier, table, component string, version int) (bool, error)
	// RecordVersion records in table, inside q (the migration's
	// transaction), version of component as applied at at. A version
	// recorded already fails on the table's primary key.
	RecordVersion(ctx context.Context, q Querier, table, component string, version int, at time.Time) error
	// Checkpoints returns the checkpoint store's operations on the tables
	// prefix places (Database.Prefix), as its migrations create them.
	Checkpoints(prefix string) checkpoint.Ops
	// Ledger returns the ledger's operations on the tables prefix places
	// (Database.Prefix), as its migrations create them: every statement
	// the ledger runs (operations, attempts, leases, rejects, quick
	// checks, lifecycle, snapshots, the outbox).
	Ledger(prefix string) ledger.Ops

	// Rebind rewrites the ? placeholders of query into the database's
	// style. Question marks inside quoted strings or names are left alone.
	Rebind(query string) string
	// Now is an SQL expression for the database's current time in Unix
	// milliseconds. Leases are judged by the database's clock, so that
	// hosts whose clocks disagree still agree on who holds a lease.
	Now() string
	// Quote quotes one name (a column, a table part), dots included.
	Quote(name string) string
	// QuoteTable quotes a table name as the driver names tables: a dotted
	// name is schema.table where Limits().QualifiedNames, else one name.
	QuoteTable(name string) string
	// Distinct is an SQL condition true when the row of expressions a
	// differs from the row b (as IS DISTINCT FROM: null equals null).
	Distinct(a, b []string) string
	// KeyValue is the SQL expression by which expr, a value of a key
	// column holding kind, is compared: two values are one key when their
	// KeyValues are equal. Numbers are one key when they are equal in
	// value, on every database: 1.5 and 1.50, 1 and 1.0. A database
	// whose decimals are their text (SQLite) spells the number out of the
	// text; its key index is on that expression, so with expr a bare
	// quoted column, KeyValue also names the column in an upsert's
	// conflict target. Elsewhere it is expr.
	KeyValue(expr string, kind idemtype.Type) string
	// Exact is the SQL expression of expr, a value of a column holding
	// kind, whose equality says that two stored values are the same, where
	// the column's own equality is looser: PostgreSQL's numeric finds 1.5
	// and 1.50 equal, but stores and prints them apart. Upserts compare
	// with it whether a row changes. Elsewhere it is expr.
	Exact(expr string, kind idemtype.Type) string
	// TimeType is the column type of the timestamps idemport itself
	// writes (DeletedColumn), and TimeValue the value it binds for t.
	TimeType() string
	TimeValue(t time.Time) any
	// KeyParam is the placeholder that binds a key value compared with a
	// column of type sqlType ("" when unknown), and KeyArg the argument it
	// binds for the value v a key column of a file holds (nil for null).
	KeyParam(sqlType string) string
	KeyArg(v any) any
	// TableExists reports whether the table named by a possibly quoted,
	// possibly schema-qualified name exists.
	TableExists(ctx context.Context, q Querier, name string) (bool, error)
	// Tables returns the names, schema-qualified where the database has
	// schemas, of the tables whose name begins with one of prefixes, each
	// as Limits().SplitTable reads it back (Limits().JoinTable).
	Tables(ctx context.Context, q Querier, prefixes ...string) ([]string, error)
	// CurrentSchema returns the schema an unqualified table name resolves
	// to on q, as Tables names it; "" where the database has no schemas.
	CurrentSchema(ctx context.Context, q Querier) (string, error)

	// Lock makes tx, until it ends, the only transaction deciding for
	// key: two transactions that both find nothing recorded for key
	// cannot both record it.
	Lock(ctx context.Context, tx *sql.Tx, key string) error
	// LockTable is Lock for a key about a table: what the lock is for
	// ("evolve") and the table's name as given (Target.Table). Where a
	// lock is held across the database while an unqualified name means
	// a table of the session's schema, the key names the table the name
	// resolves to in tx's session, so that sessions that mean one table
	// lock each other out and sessions whose same name means tables of
	// different schemas do not.
	LockTable(ctx context.Context, tx *sql.Tx, what, table string) error
	// SkipLocked returns the clause ending a SELECT … LIMIT 1 that locks
	// the selected row of table alias of ("" for the only one) and skips
	// rows other transactions hold, so that concurrent claims take
	// different rows. ok is false when the database has no row locks and
	// its transactions exclude each other instead; clause is then "".
	SkipLocked(of string) (clause string, ok bool)
	// Locked reports whether err says another connection holds a lock the
	// operation needed and did not release within the wait the database
	// allows (Settings.BusyTimeout), as a writer frozen inside its
	// transaction does.
	Locked(err error) bool
	// Full reports whether err says the database found no space left to
	// write in (a full disk): a failure a rerun resumes once space is freed.
	Full(err error) bool
	// Deadlock reports whether err says the database failed a statement
	// to break a deadlock between transactions (or a serialization
	// failure): rolled back and run again from its start, the transaction
	// may succeed. Where write transactions exclude each other (SQLite)
	// there are none.
	Deadlock(err error) bool

	// HoldColumns makes the columns of table, as a Describe inside tx
	// then reads them, the columns tx writes until it ends: another
	// transaction changing them (AddColumn, Widen) waits for tx, and tx
	// waits for one changing them now. A database whose write
	// transactions exclude each other (SQLite) has nothing to do.
	HoldColumns(ctx context.Context, tx *sql.Tx, table string) error
	// Describe returns the table named name, or nil when it does not exist;
	// an error wrapping ErrNoSchema when name is qualified by a schema that
	// does not exist.
	Describe(ctx context.Context, q Querier, name string) (*Table, error)
	// Ensure creates the target table for schema inside tx when it does not
	// exist, and otherwise checks it with Check and adds missing lineage
	// columns.
	Ensure(ctx context.Context, tx *sql.Tx, t Target, schema *arrow.Schema) error
	// DeleteFile deletes, inside tx, the rows of table that the file with
	// key fileKey last wrote (by the lineage column), and returns how many
	// it deleted. A table that does not exist has none.
	DeleteFile(ctx context.Context, tx *sql.Tx, table string, fileKey int64) (int64, error)
	// AddColumn adds the nullable column f to table.
	AddColumn(ctx context.Context, tx *sql.Tx, table string, f arrow.Field) error
	// Widen changes column of table to hold kind (idemtype.Decimal or
	// idemtype.String), keeping every stored value exactly (as its decimal
	// or its text). A driver whose Limits say FixedKeys refuses a column
	// of a key with a *ConfigError.
	Widen(ctx context.Context, tx *sql.Tx, table, column string, kind idemtype.Type) error
	// Writer returns a Writer bound to conn for batches of schema. The
	// table must exist (Ensure it first), and Write must be given
	// transactions begun on conn. Writer may be called inside such a
	// transaction, before its first Write (to write to a table that
	// transaction changed): what it prepares on conn then lasts only if
	// the transaction commits, and after a rollback the Writer may only
	// be closed. The Writer is not safe for concurrent use.
	Writer(ctx context.Context, conn *sql.Conn, t Target, schema *arrow.Schema) (Writer, error)
	// Limits returns the database's limits on tables.
	Limits() Limits

	// Savepoint marks a point in tx, named name, that RollbackToSavepoint
	// returns to (undoing what tx did since, keeping the transaction
	// usable after a statement failed) and ReleaseSavepoint forgets.
	Savepoint(ctx context.Context, tx *sql.Tx, name string) error
	ReleaseSavepoint(ctx context.Context, tx *sql.Tx, name string) error
	RollbackToSavepoint(ctx context.Context, tx *sql.Tx, name string) error
	// DropTable drops, inside tx, the table named name (a staging table,
	// a table of seen keys) if it exists.
	DropTable(ctx context.Context, tx *sql.Tx, name string) error

	// Merge moves, inside tx, the rows of the staging table stage (written
	// by a Writer for a Target like tg but naming stage) into tg's table:
	// an upsert on tg's key with the lineage columns, that leaves
	// unchanged rows untouched and, with a version column, does not apply
	// a row older than the stored one. Keys compare as KeyValue compares
	// them, and a changed row takes the staged row's values, the text of
	// its decimal key columns included (Rewritten). columns are the file's
	// columns. It returns the rows of the stage and how many of them it
	// inserted and how many it wrote (inserted plus changed): what it did,
	// whatever another transaction committed since Classify read the
	// stage. The stage is left for the caller to drop. A key of the stage that
	// another transaction stored and committed while Merge ran, failing
	// its insert on the table's key (where Merge inserts apart from its
	// update), fails it with an error wrapping ErrKeyStoredMeanwhile. A
	// driver whose Merge is more than one statement passes the points
	// between them (Point).
	Merge(ctx context.Context, tx *sql.Tx, tg Target, stage string, columns []string) (staged, fresh, written int64, err error)
	// Classify says, before Merge moves the staged rows of stage into tg's
	// table in the same transaction, what the move does to each of them,
	// by group: Read counts the group's staged rows, each of which is new
	// to the table (Inserted), changed (Updated), identical in the file's
	// columns (Unchanged) or, by tg.Version, older than the stored row
	// (Stale). group is an SQL expression over the staged row (alias s)
	// giving an integer; columns are the file's columns. It judges as
	// Merge's upsert does.
	Classify(ctx context.Context, tx *sql.Tx, tg Target, stage string, columns []string, group string) (map[int64]idemtype.Rows, error)
	// SweepCount, SweepLive, SweepApply and SweepUnmark are the
	// operations of a snapshot's Sweep, whose methods say what they do.
	SweepCount(ctx context.Context, q Querier, s Sweep) (missing, live int64, err error)
	SweepLive(ctx context.Context, q Querier, s Sweep) (int64, error)
	SweepApply(ctx context.Context, tx *sql.Tx, s Sweep, now any) (int64, error)
	SweepUnmark(ctx context.Context, tx *sql.Tx, s Sweep, mark any) (int64, error)
	// SweepKeys calls each, inside q, with the key (s.Key) of every live
	// row of s's scope, each value cast to text; an error each returns
	// stops it. verify and a dry run's snapshot read them.
	SweepKeys(ctx context.Context, q Querier, s Sweep, each func(key []sql.NullString) error) error
	// CountFile returns, inside q, how many rows of table the file with
	// key fileKey (FileColumn) last wrote: verify's count of an ordinal
	// import.
	CountFile(ctx context.Context, q Querier, table string, fileKey int64) (int64, error)
	// Compare looks up, inside q, the rows of c in c.Target's table by
	// their key, compared as KeyValue compares keys (1.5 finds a stored
	// 1.50), and returns how many of them the table holds (a key c has
	// twice counts twice). With c.Columns it also calls each with every
	// stored row that the file with key c.FileKey last wrote whose value
	// in one of c.Columns is not that of c's row of the same key, compared
	// as an upsert finds a row changed (Distinct of Exact: 1.50 and 1.5
	// differ, as do NULL and an empty string); an error each returns
	// stops it; the Differing is valid only during the call. Each value
	// of c is bound as KeyParam and KeyArg bind a key. It is verify's comparison of a natural-key import.
	Compare(ctx context.Context, q Querier, c Comparison, each func(Differing) error) (present int64, err error)
	// EnsureDeleted adds DeletedColumn to table inside tx when it lacks it.
	EnsureDeleted(ctx context.Context, tx *sql.Tx, table string) error
	// EnsureSeen creates, inside tx, the table a Sweep by key reads as
	// Seen: the key columns of schema, keyed by row ordinal (a Writer of
	// an ordinal Target copies batches into it without an upsert), with an
	// index on the key as KeyValue compares it, for the sweep's anti-join.
	// Its text key columns compare as those of target (the table whose
	// keys it holds, when it exists) do: by their Collation, so that the
	// sweep finds a stored 'A' in a file's 'a' where the table's key holds
	// them as one.
	EnsureSeen(ctx context.Context, tx *sql.Tx, table, target string, key []string, schema *arrow.Schema) error
	// ForgetOrdinals clears, inside tx, the ordinal (RowColumn) of the
	// rows of table that the file with key fileKey last wrote, keeping
	// their file key, and returns how many it changed. A new version of
	// the file (--replace) then writes over them whatever its rows'
	// ordinals, as over rows of unknown lineage, instead of finding them
	// written by a later row of the same file; and a Sweep scoped to their
	// file key still finds those the new version lacks. A table that does
	// not exist has none.
	ForgetOrdinals(ctx context.Context, tx *sql.Tx, table string, fileKey int64) (int64, error)
}

// Settings are how a driver opens its database.
type Settings struct {
	// ReadOnly opens the database without creating anything; a database
	// that does not exist is ErrNoDatabase.
	ReadOnly bool
	// BusyTimeout is how long a statement waits for a lock another
	// transaction holds before failing (SQLite's busy timeout, PostgreSQL's
	// lock_timeout): the error is then one Locked recognises. 0: no limit
	// where the database allows.
	BusyTimeout time.Duration
	// StateSchema is the schema that holds idemport's own tables, where
	// the database has schemas (PostgreSQL).
	StateSchema string
}

// Database is a database a Driver opened.
type Database struct {
	DB *sql.DB
	// Name is the database as shown to users, never with a password.
	Name string
	// Disk names, for a user told to free space, where the database keeps
	// its data: a directory, a server. Name when empty.
	Disk string
	// Prefix places idemport's tables: it comes before their names in
	// statements and migrations ("idemport_", or a quoted schema and a dot).
	Prefix string
	// BatchRows is how many rows a batch handed to a Writer should have;
	// 0 means a partition's.
	BatchRows int
	// KeyOrder says a natural key's rows are written faster in the order
	// of the key than in the file's (a B-tree whose pages the rows then
	// reach one after another): the pipeline then hands a Writer each
	// partition's rows (up to a bound of memory at a time) sorted by
	// key, stably, each with its ordinal, so that a Writer must not take
	// a batch's ordinals to be increasing. Ordinal mode keeps file order.
	KeyOrder bool
	// GroupCommits says that committing rows whose keys are out of order
	// rewrites most of a table's pages at each commit (a B-tree whose
	// pages each commit writes whole to a log): the pipeline then lets
	// one transaction hold the partitions of a run of them (pipeline's
	// partition groups, docs/internals.md), so that a page is written
	// once for many partitions' rows. The database must have one writer
	// at a time, so that a longer transaction only makes others wait.
	GroupCommits bool
}

// Traits is implemented by a driver whose databases' KeyOrder and
// GroupCommits are known before one is opened: a read-only open of a
// database that does not exist yet (a dry run before the first import)
// takes them from it, so that it plans as the import will (pipeline's
// growing partitions follow GroupCommits).
type Traits interface {
	// Traits returns a Database with only KeyOrder and GroupCommits set.
	Traits() Database
}

// StageConstrainer is implemented by a driver that gives the staging
// table of an --atomic import the target's own CHECK and NOT NULL
// constraints, so that a row the target would refuse is refused as it is
// staged, where a plain import refuses it (a bad row, quarantined within
// --max-rejects), not at the move into the target. It carries each
// constraint over the columns the stage shares with the target, of the
// same type; the others it leaves to the move.
type StageConstrainer interface {
	// ConstrainStage adds to the staging table stage, inside tx, the
	// constraints of the table target it can carry (none when target
	// does not exist).
	ConstrainStage(ctx context.Context, tx *sql.Tx, target, stage string) error
}

// RowRewriter is implemented by a driver whose tables may change or skip
// the rows they are given (PostgreSQL: a BEFORE INSERT or UPDATE trigger
// FOR EACH ROW, of the table or a partition of it, which may rewrite a
// row or return NULL; SQLite: a trigger, which may RAISE(IGNORE)), so
// that the move of an --atomic import's staged rows may do other than
// their classification says without another import writing the file's
// keys.
type RowRewriter interface {
	// RewritesRows reports, inside tx, whether the table may change or
	// skip the rows an INSERT or UPDATE gives it (false when it does not
	// exist).
	RewritesRows(ctx context.Context, tx *sql.Tx, table string) (bool, error)
}

// RowErrorer is implemented by a driver that tells, of a failed
// statement over many rows (the move of an --atomic import's staged rows
// into its target), a refusal of the rows' values by the table (a CHECK,
// a foreign key, a unique index, NOT NULL, a trigger, a value the column
// cannot hold) from every other failure, as its writer does for a batch.
type RowErrorer interface {
	// RowError returns err as a *RowError when the database refused the
	// rows' values, else err unchanged.
	RowError(err error) error
}

// Denier is implemented by a driver that tells a failure to create
// idemport's tables (its migrations, or what Open creates before them)
// for want of a privilege from other failures, and says what to grant:
// the one home of that fact for every database, asked by the pipeline's
// store for each migration and by the driver's own Open.
type Denier interface {
	// Denied returns err, met creating idemport's tables in schema
	// (Settings.StateSchema; a driver that keeps them in the DSN's
	// database ignores it), as one line naming the GRANT that gives the
	// user on db what the server says it lacks, and what else to do:
	// a rerun would meet it again. nil when err is not such a refusal,
	// or the user lacks none of the privileges idemport's tables need.
	Denied(ctx context.Context, db *sql.DB, schema string, err error) error
}

// ErrNoDatabase means a read-only open found no database at the DSN.
var ErrNoDatabase = errors.New("no database")

// ErrKeyStoredMeanwhile means Merge failed because another transaction
// stored and committed a key of the staged rows while it ran, or that
// Merge inserted or updated other rows than Classify, read before it,
// said, because another transaction wrote one of the keys in between: not
// a refusal of the rows, since the move run again in a new transaction
// finds the key stored and writes over it as over any stored key, and
// counts what it does.
var ErrKeyStoredMeanwhile = errors.New("a key of the staged rows was stored by another transaction during the move")

// ErrKeysOneToTable marks the table's refusal of a move whose staged rows
// hold two keys that the plan, and the stage, told apart but that the
// table's key columns compare as one (their collation: 'a' and 'A' to a
// case-insensitive one, 'b ' and 'b' to one that pads): the file repeats
// a key in the table's eyes. A plain import of the file writes the later
// of the two rows, and counts the earlier one superseded (or what it
// did, when it was written first), so it quarantines nothing.
var ErrKeysOneToTable = errors.New("the file repeats a key in the table's eyes")

// ConfigError is a DSN or a build that cannot serve the request whatever
// the database holds: the user's to fix, not a failure to retry.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Registry chooses a driver by the DSN's form, as database/sql chooses one
// by name; its first driver is the default, given DSNs that are not URLs
// and that no driver claims (a bare path).
type Registry []Driver

// Lookup returns the driver for dsn, or a *ConfigError naming the forms
// the registry's drivers take.
func (r Registry) Lookup(dsn string) (Driver, error) {
	for _, d := range r {
		if d.Claims(dsn) {
			return d, nil
		}
	}
	if len(r) > 0 && !strings.Contains(dsn, "://") {
		return r[0], nil
	}
	forms := make([]string, len(r))
	for i, d := range r {
		forms[i] = d.Forms()
	}
	return nil, &ConfigError{Err: fmt.Errorf("unsupported target %q (want %s)", RedactURL(dsn), strings.Join(forms, ", "))}
}

// RedactURL returns a database URL as users may see it: its password
// and every query value masked (secret.DSN). A DSN that is not a URL is
// returned as it is.
func RedactURL(dsn string) string { return secret.DSN(dsn) }
