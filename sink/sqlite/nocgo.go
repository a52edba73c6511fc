//go:build !cgo

package sqlite

import (
	"context"
	"database/sql"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/internal/dialect"
	"github.com/idemport/idemport/sink"
)

// Dialect stands in for the SQLite dialect in a build without cgo, which
// has no SQLite: each method fails with ErrNoSQLite.
type Dialect struct{}

var _ sink.Dialect = Dialect{}

// Available reports ErrNoSQLite: this build has no SQLite.
func Available() error { return ErrNoSQLite }

// Describe implements sink.Dialect; it fails with ErrNoSQLite.
func (Dialect) Describe(context.Context, dialect.Querier, string) (*sink.Table, error) {
	return nil, ErrNoSQLite
}

// Ensure implements sink.Dialect; it fails with ErrNoSQLite.
func (Dialect) Ensure(context.Context, *sql.Tx, sink.Target, *arrow.Schema) error {
	return ErrNoSQLite
}

// DeleteFile implements sink.Dialect; it fails with ErrNoSQLite.
func (Dialect) DeleteFile(context.Context, *sql.Tx, string, int64) (int64, error) {
	return 0, ErrNoSQLite
}

// Writer implements sink.Dialect; it fails with ErrNoSQLite.
func (Dialect) Writer(context.Context, *sql.Conn, sink.Target, *arrow.Schema) (sink.Writer, error) {
	return nil, ErrNoSQLite
}

// Locked implements sink.Dialect: without SQLite nothing is locked.
func (Dialect) Locked(error) bool { return false }
