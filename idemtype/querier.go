package idemtype

import (
	"context"
	"database/sql"
	"io/fs"
	"time"
)

// Querier is what *sql.DB, *sql.Conn and *sql.Tx have in common: the
// handle every store and driver runs its statements on, inside or outside
// a transaction. sink, ledger, checkpoint and migrate alias it, so a
// sink.Driver satisfies the parts of it they declare.
type Querier = interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Migrator is what applying idemport's own migrations needs of the target
// database's driver: its migration files, its placeholders, its catalogue
// and the operations on the table recording the applied versions. Every sink.Driver is one; the methods mean what sink.Driver
// says.
type Migrator interface {
	Migrations(component string) (fs.FS, error)
	Rebind(query string) string
	TableExists(ctx context.Context, q Querier, name string) (bool, error)
	CreateVersions(ctx context.Context, q Querier, table string) error
	Versions(ctx context.Context, q Querier, table, component string) ([]int, error)
	VersionRecorded(ctx context.Context, q Querier, table, component string, version int) (bool, error)
	RecordVersion(ctx context.Context, q Querier, table, component string, version int, at time.Time) error
}

// StateDriver is what the ledger, the store of idemport's operations in
// the target database, needs of its driver (the checkpoints now take
// their operations from the driver instead, checkpoint.Ops): a Migrator that places
// and finds their tables, the database's clock, by which leases are
// judged (Now), and the clause that keeps two claimers from claiming one
// row (SkipLocked). Every sink.Driver is one; the methods mean what
// sink.Driver says.
type StateDriver interface {
	Migrator
	Now() string
	SkipLocked(of string) (clause string, ok bool)
}
