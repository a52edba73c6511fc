package pipeline

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/pipeline/internal/store"
	"github.com/idemport/idemport/sink"
)

// DefaultDSN is the target used when none is given.
const DefaultDSN = "idemport.db"

// Errors callers branch on.
var (
	// ErrNoDatabase means a read-only command found no database at the DSN.
	ErrNoDatabase = sink.ErrNoDatabase
	// ErrInterrupted means the run was cancelled (SIGINT, SIGTERM): the open
	// partition was rolled back and the claims released.
	ErrInterrupted = errors.New("interrupted; rerun to resume")
)

// Options configure an Engine.
type Options struct {
	// ReadOnly opens the target without creating or migrating anything.
	ReadOnly bool
	// AllowMissing, with ReadOnly, accepts a database that does not exist
	// yet: Open then returns an Engine without one ([Engine.DB] is nil)
	// instead of ErrNoDatabase, and creates nothing. Such an Engine
	// plans every file as one never imported ([PlanFile]), with the
	// driver's rules and limits; it finds no ledger numbers
	// ([Engine.LedgerMetrics]); its other methods return ErrNoDatabase.
	// ops.Open takes the same option (such an Operator finds no operations
	// and no events).
	AllowMissing bool
	// Logger receives the engine's logs; nil discards them.
	Logger *slog.Logger
	// Failpoints, when not nil, arms failure injection (tests only).
	Failpoints Failpoints
	// BusyTimeout is how long a statement waits for a lock another
	// transaction holds (SQLite's write lock; a PostgreSQL row, table or
	// advisory lock) before the run is busy; 0 means 30s.
	BusyTimeout time.Duration
	// StateSchema is the PostgreSQL schema of idemport's own tables; empty
	// means DefaultStateSchema. SQLite keeps them beside the target tables.
	StateSchema string
	// Notify are the sinks each event recorded by this engine is owed to,
	// and that Deliver delivers to. The engine does not close them.
	Notify []idemtype.EventSink
	// Drivers chooses the target database's driver by the DSN; nil means
	// Drivers().
	Drivers sink.Registry
}

// Failpoints is told each time the engine passes a named point of the
// pipeline (the points internal/failpoint lists), so that tests can make
// the process fail there on purpose. Hit returns nil to go on; an error,
// which the engine returns as it would any failure at that point; or does
// not return at all, as when it kills the process. It is called from
// several goroutines at once.
type Failpoints interface {
	Hit(name string) error
}

// DefaultStateSchema is the PostgreSQL schema idemport keeps its ledger and
// checkpoints in, unless told otherwise.
const DefaultStateSchema = "idemport"

// Engine is an open target database with its ledger and checkpoints. It is
// safe for concurrent use by several imports.
type Engine struct {
	st *store.Store

	// overlapWait, when set, is how long an overlap waits for the plan
	// pass in place of overlapTime's bound: tests whose loaded machine
	// writes a large file's partitions slowly raise it, so that what they
	// prove does not hang on the clock. Set before the first import.
	overlapWait time.Duration
}

// Redact returns dsn as users may see it, its password masked.
func Redact(dsn string) string {
	if d, err := Drivers().Lookup(dsn); err == nil {
		return d.Redact(dsn)
	}
	return sink.RedactURL(dsn)
}

// Open opens the target named by dsn (DefaultDSN when empty) through the
// driver o.Drivers chooses for it and, unless o.ReadOnly, creates or
// upgrades idemport's tables there. A DSN or build no driver can serve is
// a *UsageError; a read-only open of a missing database is ErrNoDatabase,
// unless o.AllowMissing. On a fresh PostgreSQL state schema Open returns
// once it has found the schema without tables, and creates them while
// the first import hashes its file: the Engine's methods (DB among them)
// wait for them, and a failure to create them is the first import's
// error (the file is then Failed, nothing of it recorded or written).
// ctx bounds Open alone: the tables' creation outlives it, and Close
// ends it.
func Open(ctx context.Context, dsn string, o Options) (*Engine, error) {
	st, err := store.Open(ctx, cmp.Or(dsn, DefaultDSN), o.store())
	if err != nil {
		return nil, usage(err)
	}
	return &Engine{st: st}, nil
}

// store returns what store.Open is told for o, its defaults filled in.
func (o Options) store() store.Options {
	so := store.Options{ReadOnly: o.ReadOnly, AllowMissing: o.AllowMissing, Logger: o.Logger, Failpoints: o.Failpoints,
		BusyTimeout: o.BusyTimeout, StateSchema: cmp.Or(o.StateSchema, DefaultStateSchema), Notify: o.Notify, Drivers: o.Drivers,
		Early: true}
	if so.Drivers == nil {
		so.Drivers = Drivers()
	}
	return so
}

// usage makes a driver's *sink.ConfigError a *UsageError.
func usage(err error) error {
	var ce *sink.ConfigError
	if errors.As(err, &ce) {
		return &UsageError{Err: ce.Err}
	}
	return err
}

// diskFull returns err saying what to do when it says the disk is full
// (store.Store.DiskFull).
func (e *Engine) diskFull(err error) error { return e.st.DiskFull(err) }

// Close closes the database.
func (e *Engine) Close() error { return e.st.Close() }

// DB returns the engine's database handle, for callers that query the
// target tables themselves; nil when the database does not exist. It
// returns once idemport's tables are created.
func (e *Engine) DB() *sql.DB {
	e.st.Ready(context.Background()) // a failed migration is the next import's error
	return e.st.DB
}

// Name returns the target as shown to users.
func (e *Engine) Name() string { return e.st.Name }

// UsageError is a request that is wrong whatever the file holds: a flag
// that names a column the file does not have, an unusable target. Callers
// find it with errors.As; its Err says what is wrong.
type UsageError = store.UsageError

func usagef(format string, args ...any) error { return store.Usagef(format, args...) }
