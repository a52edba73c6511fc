//go:build !cgo

package sqlite

import (
	"context"
	"database/sql"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
)

// In a build without cgo, which has no SQLite, Open and every method that
// needs the engine fail with ErrNoSQLite.

// Available reports ErrNoSQLite: this build has no SQLite.
func Available() error { return ErrNoSQLite }

// Describe implements sink.Driver; it fails with ErrNoSQLite.
func (Driver) Describe(context.Context, sink.Querier, string) (*sink.Table, error) {
	return nil, ErrNoSQLite
}

// Ensure implements sink.Driver; it fails with ErrNoSQLite.
func (Driver) Ensure(context.Context, *sql.Tx, sink.Target, *arrow.Schema) error {
	return ErrNoSQLite
}

// DeleteFile implements sink.Driver; it fails with ErrNoSQLite.
func (Driver) DeleteFile(context.Context, *sql.Tx, string, int64) (int64, error) {
	return 0, ErrNoSQLite
}

// AddColumn implements sink.Driver; it fails with ErrNoSQLite.
func (Driver) AddColumn(context.Context, *sql.Tx, string, arrow.Field) error {
	return ErrNoSQLite
}

// Widen implements sink.Driver; it fails with ErrNoSQLite.
func (Driver) Widen(context.Context, *sql.Tx, string, string, idemtype.Type) error {
	return ErrNoSQLite
}

// Writer implements sink.Driver; it fails with ErrNoSQLite.
func (Driver) Writer(context.Context, *sql.Conn, sink.Target, *arrow.Schema) (sink.Writer, error) {
	return nil, ErrNoSQLite
}

// Locked implements sink.Driver: without SQLite nothing is locked.
func (Driver) Locked(error) bool { return false }

// Full implements sink.Driver: without SQLite nothing is written.
func (Driver) Full(error) bool { return false }

// RowError implements sink.RowErrorer: without SQLite nothing is written.
func (Driver) RowError(err error) error { return err }
