package pipeline

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the PostgreSQL target, as database/sql driver "pgx"
	_ "github.com/mattn/go-sqlite3"    // the embedded default target

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/internal/dialect"
	"github.com/idemport/idemport/internal/failpoint"
	"github.com/idemport/idemport/internal/notify"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/postgres"
	"github.com/idemport/idemport/sink/sqlite"
)

// DefaultDSN is the target used when none is given.
const DefaultDSN = "idemport.db"

// Errors callers branch on.
var (
	// ErrNoDatabase means a read-only command found no database at the DSN.
	ErrNoDatabase = errors.New("no database")
	// ErrInterrupted means the run was cancelled (SIGINT, SIGTERM): the open
	// partition was rolled back and the claims released.
	ErrInterrupted = errors.New("interrupted; rerun to resume")
)

// Options configure an Engine.
type Options struct {
	// ReadOnly opens the target without creating or migrating anything.
	ReadOnly bool
	// Logger receives the engine's logs; nil discards them.
	Logger *slog.Logger
	// Failpoints, when not nil, arms failure injection (tests only).
	Failpoints *failpoint.Set
	// BusyTimeout is how long SQLite waits for another writer's lock before
	// failing; 0 means 30s.
	BusyTimeout time.Duration
	// StateSchema is the PostgreSQL schema of idemport's own tables; empty
	// means DefaultStateSchema. SQLite keeps them beside the target tables.
	StateSchema string
	// Notify are the sinks each event recorded by this engine is owed to,
	// and that Deliver delivers to. The engine does not close them.
	Notify []notify.Sink
}

// DefaultStateSchema is the PostgreSQL schema idemport keeps its ledger and
// checkpoints in, unless told otherwise.
const DefaultStateSchema = "idemport"

// Engine is an open target database with its ledger and checkpoints. It is
// safe for concurrent use by several imports.
type Engine struct {
	db     *sql.DB
	d      dialect.Dialect
	prefix string
	name   string // the target as shown to users
	ledger *ledger.Ledger
	cp     *checkpoint.Store
	sink   sink.Dialect
	log    *slog.Logger
	fp     *failpoint.Set
	batch  int // rows per batch handed to the sink; 0 means a partition's
	sinks  []notify.Sink
}

// Target is a parsed DSN.
type Target struct {
	Dialect dialect.Dialect
	Path    string // SQLite file
	URL     string // PostgreSQL connection string
}

// ParseDSN reads a target. SQLite: sqlite://PATH (sqlite:///abs/path is
// absolute, sqlite://rel/path relative), sqlite:PATH, file:PATH (a query
// string is dropped) or a bare path. PostgreSQL: postgres://…,
// postgresql://… or a libpq key=value string (host=… dbname=…); what it
// leaves out is filled from the PG* environment variables, as psql does.
func ParseDSN(dsn string) (Target, error) {
	if dsn == "" {
		dsn = DefaultDSN
	}
	sqlitePath := func(p string) (Target, error) {
		if p == "" {
			return Target{}, usagef("%q names no file", dsn)
		}
		return Target{Dialect: dialect.SQLite, Path: p}, nil
	}
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"), keyValueDSN(dsn):
		return Target{Dialect: dialect.Postgres, URL: dsn}, nil
	case strings.HasPrefix(dsn, "sqlite://"):
		return sqlitePath(strings.TrimPrefix(dsn, "sqlite://"))
	case strings.HasPrefix(dsn, "sqlite:"):
		return sqlitePath(strings.TrimPrefix(dsn, "sqlite:"))
	case strings.HasPrefix(dsn, "file:"):
		p, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
		return sqlitePath(p)
	case strings.Contains(dsn, "://"):
		return Target{}, usagef("unsupported target %q (want a SQLite path, sqlite://PATH, postgres://… or host=… dbname=…)", Redact(dsn))
	}
	return Target{Dialect: dialect.SQLite, Path: dsn}, nil
}

// libpqKeys are the connection parameters that start a libpq key=value
// string.
var libpqKeys = []string{"host", "hostaddr", "port", "dbname", "user", "password", "passfile", "sslmode", "service",
	"application_name", "connect_timeout", "options", "target_session_attrs", "sslrootcert", "sslcert", "sslkey"}

// keyValueDSN reports whether dsn is a libpq key=value string: its first
// word is KEY=… with KEY a connection parameter.
func keyValueDSN(dsn string) bool {
	word, _, _ := strings.Cut(strings.TrimSpace(dsn), " ")
	key, _, ok := strings.Cut(word, "=")
	return ok && slices.Contains(libpqKeys, strings.TrimSpace(key))
}

// Redact returns dsn as users may see it: a URL's password and a key=value
// string's password masked.
func Redact(dsn string) string {
	switch {
	case strings.Contains(dsn, "://"):
		return redact(dsn)
	case keyValueDSN(dsn):
		fields := strings.Fields(dsn)
		for i, f := range fields {
			if k, _, ok := strings.Cut(f, "="); ok && k == "password" {
				fields[i] = "password=xxxxx"
			}
		}
		return strings.Join(fields, " ")
	}
	return dsn
}

// postgresName names a PostgreSQL target for messages: host, port,
// database and user as the driver resolved them (PG* variables included),
// never the password.
func postgresName(dsn string) string {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return Redact(dsn)
	}
	return fmt.Sprintf("PostgreSQL database %q on %s:%d as %s", cfg.Database, cfg.Host, cfg.Port, cfg.User)
}

// Open opens the target named by dsn and, unless o.ReadOnly, creates or
// upgrades idemport's tables there.
func Open(ctx context.Context, dsn string, o Options) (*Engine, error) {
	t, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = discardLogger()
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 30 * time.Second
	}
	e := &Engine{d: t.Dialect, log: o.Logger, fp: o.Failpoints, sinks: o.Notify}
	switch t.Dialect {
	case dialect.SQLite:
		if err := sqlite.Available(); err != nil {
			return nil, &UsageError{Err: err}
		}
		if o.ReadOnly {
			if _, err := os.Stat(t.Path); errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("%w at %s", ErrNoDatabase, t.Path)
			}
		}
		e.db, err = sql.Open("sqlite3", sqliteDSN(t.Path, o))
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", t.Path, err)
		}
		e.prefix, e.name, e.sink, e.batch = "idemport_", t.Path, sqlite.Dialect{}, 1024
	case dialect.Postgres:
		e.db, err = sql.Open("pgx", t.URL)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", Redact(t.URL), err)
		}
		schema := o.StateSchema
		if schema == "" {
			schema = DefaultStateSchema
		}
		// A batch is one COPY and one merge: a batch per partition (batch
		// 0) makes one of each per partition.
		e.prefix, e.name, e.sink, e.batch = dialect.SchemaPrefix(schema), postgresName(t.URL), postgres.Dialect{}, 0
		if err := e.db.PingContext(ctx); err != nil {
			e.db.Close()
			return nil, fmt.Errorf("connect to %s: %w", e.name, err)
		}
		if !o.ReadOnly {
			if err := e.d.CreateSchema(ctx, e.db, schema); err != nil {
				e.db.Close()
				return nil, fmt.Errorf("in %s: %w", e.name, err)
			}
		}
	}
	e.ledger = ledger.New(e.db, e.d, e.prefix)
	e.cp = checkpoint.New(e.db, e.d, e.prefix)
	if err := e.db.PingContext(ctx); err != nil {
		e.db.Close()
		return nil, fmt.Errorf("open %s: %w", e.name, err)
	}
	if !o.ReadOnly {
		if err := e.ledger.Migrate(ctx); err != nil {
			e.db.Close()
			return nil, err
		}
		if err := e.cp.Migrate(ctx); err != nil {
			e.db.Close()
			return nil, err
		}
	}
	return e, nil
}

// sqliteDSN builds the driver DSN: WAL so readers never block the writer,
// synchronous=NORMAL (durable at each checkpoint of the WAL, and safe
// against corruption), BEGIN IMMEDIATE so a transaction that will write
// takes the write lock first, and a busy timeout for other writers.
func sqliteDSN(path string, o Options) string {
	v := url.Values{}
	v.Set("_busy_timeout", fmt.Sprint(o.BusyTimeout.Milliseconds()))
	if o.ReadOnly {
		v.Set("mode", "ro")
	} else {
		v.Set("_journal_mode", "WAL")
		v.Set("_synchronous", "NORMAL")
		v.Set("_txlock", "immediate")
		v.Set("_cache_size", "-65536")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + v.Encode()
}

// Close closes the database.
func (e *Engine) Close() error { return e.db.Close() }

// DB returns the engine's database handle, for callers that query the
// target tables themselves.
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

// redact hides the password of a connection URL shown to users.
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "postgres://…"
	}
	return p.Redacted()
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
