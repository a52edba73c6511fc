package pipeline

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"syscall"
	"time"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
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
	// yet: Open then returns an Engine without one ([Engine.Exists] reports
	// false) instead of ErrNoDatabase, and creates nothing. Such an Engine
	// plans every file as one never imported ([PlanFile]), with the
	// driver's rules and limits; it finds no operations ([Engine.Status]),
	// no events ([Engine.Outbox]) and no ledger numbers
	// ([Engine.LedgerMetrics]); its other methods return ErrNoDatabase.
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

// failpoints holds an engine's Failpoints; its zero value, like a nil
// Failpoints, lets every point pass.
type failpoints struct{ f Failpoints }

// Hit tells f that the engine passed point name.
func (fp failpoints) Hit(name string) error {
	if fp.f == nil {
		return nil
	}
	return fp.f.Hit(name)
}

// DefaultStateSchema is the PostgreSQL schema idemport keeps its ledger and
// checkpoints in, unless told otherwise.
const DefaultStateSchema = "idemport"

// Engine is an open target database with its ledger and checkpoints. It is
// safe for concurrent use by several imports.
type Engine struct {
	db     *sql.DB // nil when the database does not exist yet (Options.AllowMissing)
	prefix string
	name   string // the target as shown to users
	disk   string // where the target keeps its data, for a user told to free space
	ledger *ledger.Ledger
	cp     *checkpoint.Store
	sink   sink.Driver
	log    *slog.Logger
	fp     failpoints
	batch  int // rows per batch handed to the sink; 0 means a partition's
	sinks  []idemtype.EventSink
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
// unless o.AllowMissing.
func Open(ctx context.Context, dsn string, o Options) (*Engine, error) {
	if dsn == "" {
		dsn = DefaultDSN
	}
	if o.Drivers == nil {
		o.Drivers = Drivers()
	}
	if o.Logger == nil {
		o.Logger = discardLogger()
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 30 * time.Second
	}
	if o.StateSchema == "" {
		o.StateSchema = DefaultStateSchema
	}
	drv, err := o.Drivers.Lookup(dsn)
	if err != nil {
		return nil, usage(err)
	}
	db, err := drv.Open(ctx, dsn, sink.Settings{ReadOnly: o.ReadOnly, BusyTimeout: o.BusyTimeout, StateSchema: o.StateSchema})
	if errors.Is(err, ErrNoDatabase) && o.ReadOnly && o.AllowMissing {
		name := drv.Redact(dsn)
		return &Engine{name: name, disk: name, sink: drv, log: o.Logger, fp: failpoints{o.Failpoints}, sinks: o.Notify}, nil
	}
	if err != nil {
		return nil, usage(err)
	}
	e := &Engine{db: db.DB, prefix: db.Prefix, name: db.Name, disk: cmp.Or(db.Disk, db.Name), sink: drv, batch: db.BatchRows,
		log: o.Logger, fp: failpoints{o.Failpoints}, sinks: o.Notify}
	e.ledger = ledger.New(e.db, drv, e.prefix)
	e.cp = checkpoint.New(e.db, drv, e.prefix)
	if !o.ReadOnly {
		if err := e.ledger.Migrate(ctx); err != nil {
			e.db.Close()
			return nil, e.diskFull(err)
		}
		if err := e.cp.Migrate(ctx); err != nil {
			e.db.Close()
			return nil, e.diskFull(err)
		}
	}
	return e, nil
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
// (the database's, or the spool's): free space and rerun, which resumes
// from what was committed. Other errors are returned as they are.
func (e *Engine) diskFull(err error) error {
	switch {
	case e.sink.Full(err):
		return fmt.Errorf("%w: free space on %s and rerun; it resumes", err, e.disk)
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("%w: free space and rerun; it resumes", err)
	}
	return err
}

// Close closes the database.
func (e *Engine) Close() error {
	if e.db == nil {
		return nil
	}
	return e.db.Close()
}

// Exists reports whether the engine's database exists: false only for an
// Engine opened with Options.AllowMissing where there was none.
func (e *Engine) Exists() bool { return e.db != nil }

// present returns ErrNoDatabase for an Engine without a database, for the
// methods that need one.
func (e *Engine) present() error {
	if e.db == nil {
		return fmt.Errorf("%w at %s", ErrNoDatabase, e.name)
	}
	return nil
}

// DB returns the engine's database handle, for callers that query the
// target tables themselves; nil when the database does not exist.
func (e *Engine) DB() *sql.DB { return e.db }

// Name returns the target as shown to users.
func (e *Engine) Name() string { return e.name }

// UsageError is a request that is wrong whatever the file holds: a flag
// that names a column the file does not have, an unusable target.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
