package idemtype

import (
	"context"
	"database/sql"
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
