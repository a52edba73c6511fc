// Package store holds what import (package pipeline) and the operator's
// commands (package pipeline/ops) share: the open target database with
// its driver, ledger, checkpoints, logger, failpoints and event sinks, and
// the judgements both make of what the ledger records. It sits below both;
// neither of them is imported here.
package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"syscall"
	"time"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/proc"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink"
)

// Failpoints is told each time the engine passes a named point (see
// pipeline.Failpoints).
type Failpoints interface {
	Hit(name string) error
}

// Options are what Open is told; pipeline.Options documents each.
type Options struct {
	ReadOnly     bool
	AllowMissing bool
	Logger       *slog.Logger // nil discards
	Failpoints   Failpoints
	BusyTimeout  time.Duration // 0 means 30s
	StateSchema  string        // not empty
	Notify       []idemtype.EventSink
	Drivers      sink.Registry // not nil
	// Early lets Open return while the migrations of a fresh state run,
	// on a driver that applies them in one message (see Ready).
	Early bool
}

// Store is an open target database with its ledger and checkpoints. Its
// fields are set by Open and never change; it is safe for concurrent use.
type Store struct {
	// DB is the database; nil when it does not exist yet (AllowMissing).
	DB *sql.DB
	// Prefix names idemport's own tables (ledger, checkpoints, outbox).
	Prefix string
	// Name is the target as shown to users; Disk where it keeps its data,
	// for a user told to free space.
	Name, Disk string
	Ledger     *ledger.Ledger
	CP         *checkpoint.Store
	Driver     sink.Driver
	Log        *slog.Logger
	// Batch is the rows per batch handed to the driver's writer; 0 means a
	// partition's.
	Batch int
	// KeyOrder says the driver's writer takes a natural key's rows
	// faster in key order (sink.Database.KeyOrder).
	KeyOrder bool
	// GroupCommits says partitions whose keys came out of order may
	// commit together (sink.Database.GroupCommits).
	GroupCommits bool
	// Sinks are the event sinks each event recorded is owed to.
	Sinks []idemtype.EventSink
	// BusyTimeout is how long a statement waits for a lock another
	// transaction holds (Options.BusyTimeout, its default filled in).
	BusyTimeout time.Duration
	fp          Failpoints
	// deliveryMarks, when set, records deliveries' tries in place of
	// Ledger (see marks).
	deliveryMarks deliveryMarks
	// recordPause, when set, is the pause before a delivery's record is
	// written again for the n-th time, in place of the random one (see
	// record).
	recordPause func(n int) time.Duration
	// migrated is closed when the migrations Open left running end,
	// migrateErr their error; nil when Open left none running. They run
	// on a context of their own, which only Close (stop) ends: Open's
	// may end once Open has returned.
	migrated   chan struct{}
	migrateErr error
	stop       context.CancelFunc
	schema     string // Options.StateSchema
}

// Open opens the target named by dsn through the driver o.Drivers chooses
// for it and, unless o.ReadOnly, creates or upgrades idemport's tables
// there. The driver's errors are returned as they are (a *sink.ConfigError
// for a DSN or build it cannot serve, ErrNoDatabase for a read-only open
// of a missing database, unless o.AllowMissing).
func Open(ctx context.Context, dsn string, o Options) (*Store, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 30 * time.Second
	}
	drv, err := o.Drivers.Lookup(dsn)
	if err != nil {
		return nil, err
	}
	db, err := drv.Open(ctx, dsn, sink.Settings{ReadOnly: o.ReadOnly, BusyTimeout: o.BusyTimeout, StateSchema: o.StateSchema})
	if errors.Is(err, sink.ErrNoDatabase) && o.ReadOnly && o.AllowMissing {
		name := drv.Redact(dsn)
		s := &Store{Name: name, Disk: name, Driver: drv, Log: o.Logger, fp: o.Failpoints, Sinks: o.Notify}
		if t, ok := drv.(sink.Traits); ok {
			tr := t.Traits()
			s.KeyOrder, s.GroupCommits = tr.KeyOrder, tr.GroupCommits
		}
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	s := &Store{BusyTimeout: o.BusyTimeout, DB: db.DB, Prefix: db.Prefix, Name: db.Name, Disk: cmp.Or(db.Disk, db.Name), Driver: drv, Batch: db.BatchRows, KeyOrder: db.KeyOrder, GroupCommits: db.GroupCommits,
		Log: o.Logger, fp: o.Failpoints, Sinks: o.Notify, schema: o.StateSchema}
	s.Ledger = ledger.New(s.DB, drv, s.Prefix)
	s.CP = checkpoint.New(s.DB, drv, s.Prefix)
	if !o.ReadOnly {
		// The checkpoints' tables with the ledger's: on a fresh
		// PostgreSQL state schema, one transaction in one round trip; on
		// a fresh MariaDB database, one message.
		if err := s.migrate(ctx, o.Early); err != nil {
			s.DB.Close()
			return nil, err
		}
	}
	return s, nil
}

// migrate creates or upgrades idemport's tables. With early, on a driver
// that applies the migrations of a fresh state in one message, it
// returns once the first look-up has found the state fresh, leaving those
// statements to run (Ready waits for them): a fresh state holds no quick
// check, so the import's hash loses nothing by starting meanwhile, and
// on PostgreSQL the server's DDL (14 tables, 20 indexes) takes 60–300 ms,
// on MariaDB (each table a file of its own) as long or longer.
// A state that exists is upgraded before migrate returns, as without
// early, for its quick check is read before the hash. Until migrate
// returns, ctx ends the migrations; after, only Close does, for a
// caller's context may bound the opening alone.
func (s *Store) migrate(ctx context.Context, early bool) error {
	if !early || !s.Ledger.MigratesTogether() {
		if err := s.Ledger.MigrateWith(ctx, "checkpoint"); err != nil {
			return s.migrateError(ctx, err)
		}
		return nil
	}
	mctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	unhook := context.AfterFunc(ctx, stop)
	seen := make(chan bool, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := s.Ledger.MigrateSeen(mctx, func(exists bool) { seen <- exists }, "checkpoint")
		if err != nil {
			s.migrateErr = s.migrateError(mctx, err)
		}
	}()
	select {
	case exists := <-seen:
		if !exists && unhook() {
			s.migrated, s.stop = done, stop
			return nil
		}
	case <-done:
	}
	<-done
	unhook()
	stop()
	return s.migrateErr
}

// migrateError returns err, the migrations' failure, as a *UsageError
// saying what to grant when the user may not create idemport's tables (a
// rerun would meet it again), or saying what to do when the disk is full.
func (s *Store) migrateError(ctx context.Context, err error) error {
	if d, ok := s.Driver.(sink.Denier); ok {
		if derr := d.Denied(ctx, s.DB, s.schema, err); derr != nil {
			return &UsageError{Err: fmt.Errorf("in %s: %w", s.Name, derr)}
		}
	}
	return s.DiskFull(err)
}

// Migrating reports whether the migrations Open left running have not
// ended yet: idemport's tables may not exist, and nothing that reads or
// writes them may run before Ready.
func (s *Store) Migrating() bool {
	if s.migrated == nil {
		return false
	}
	select {
	case <-s.migrated:
		return false
	default:
		return true
	}
}

// Ready waits for the migrations Open left running, if any, and returns
// their error (a failed migration's, each time it is asked), or ctx's
// when it is done first. Every use of idemport's tables by a Store opened
// with Options.Early comes after Ready has returned nil.
func (s *Store) Ready(ctx context.Context) error {
	if s.migrated == nil {
		return nil
	}
	select {
	case <-s.migrated:
		return s.migrateErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close closes the database, if there is one, once the migrations Open
// left running have ended: it ends them if they have not (rolled back
// whole on PostgreSQL; on MariaDB with no version recorded, to be run
// again).
func (s *Store) Close() error {
	if s.DB == nil {
		return nil
	}
	if s.migrated != nil {
		s.stop()
		<-s.migrated
	}
	return s.DB.Close()
}

// Exists reports whether the database exists: false only for a Store
// opened with AllowMissing where there was none.
func (s *Store) Exists() bool { return s.DB != nil }

// Present returns an error wrapping sink.ErrNoDatabase for a Store without
// a database, for the methods that need one; nil otherwise.
func (s *Store) Present() error {
	if s.DB == nil {
		return fmt.Errorf("%w at %s", sink.ErrNoDatabase, s.Name)
	}
	return nil
}

// Hit tells the failpoints, if any, that the engine passed point name.
func (s *Store) Hit(name string) error {
	if s.fp == nil {
		return nil
	}
	return s.fp.Hit(name)
}

// DiskFull returns err saying what to do when it says the disk is full
// (the database's, or the spool's): free space and rerun, which resumes
// from what was committed. Other errors are returned as they are.
func (s *Store) DiskFull(err error) error {
	switch {
	case s.Driver.Full(err):
		return fmt.Errorf("%w: free space on %s and rerun; it resumes", err, s.Disk)
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("%w: free space and rerun; it resumes", err)
	}
	return err
}

// The states of an attempt that recorded no end, as an import judges a
// lease holder and status and history show it (pipeline.HolderRunning…).
const (
	HolderRunning = "running"
	HolderStopped = "stopped"
	HolderGone    = "gone"
)

// HolderState judges an attempt that recorded no end as an import judges a
// holder: its process, pid on host with start identity start, is gone
// (proc.Gone) or stopped when it runs on this host; whatever the host, an
// attempt whose lease has expired (live is false) is gone, for a rerun
// takes it over.
func HolderState(host string, pid int, start uint64, live bool) string {
	if here, _ := os.Hostname(); host == here {
		if proc.Gone(pid, start) {
			return HolderGone
		}
		if proc.IsStopped(pid) {
			return HolderStopped
		}
	}
	if !live {
		return HolderGone
	}
	return HolderRunning
}
