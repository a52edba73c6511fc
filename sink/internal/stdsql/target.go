package stdsql

import (
	"context"
	"database/sql"
	"fmt"
)

// Savepoint implements sink.Driver.Savepoint in standard SQL.
func Savepoint(ctx context.Context, tx *sql.Tx, name string) error {
	if _, err := tx.ExecContext(ctx, "SAVEPOINT "+name); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	return nil
}

// A BatchSavepoint is the savepoint a sink.SavepointWriter's batch is written
// under, which the first statement able to carry it in its own message
// takes. The zero value is outside any WriteUnder.
type BatchSavepoint struct {
	// Under names the savepoint of the batch being written, "" outside
	// WriteUnder.
	Under   string
	pending string // Under, until a statement has taken it
}

// Begin starts a batch written under the savepoint name, not yet taken.
func (s *BatchSavepoint) Begin(name string) { s.Under, s.pending = name, name }

// End ends the batch.
func (s *BatchSavepoint) End() { s.Under, s.pending = "", "" }

// Taken reports whether no savepoint waits to be taken: one was, or
// none was begun.
func (s *BatchSavepoint) Taken() bool { return s.pending == "" }

// Claim returns the name of the savepoint no statement has taken yet, ""
// if none, and counts it taken: the caller sends SAVEPOINT name before
// its statement, in the same message or pipeline.
func (s *BatchSavepoint) Claim() string {
	name := s.pending
	s.pending = ""
	return name
}

// Prefix is Claim as the statement to send before another in its
// message ("SAVEPOINT name; "), or "".
func (s *BatchSavepoint) Prefix() string {
	if name := s.Claim(); name != "" {
		return "SAVEPOINT " + name + "; "
	}
	return ""
}

// Take takes the savepoint no statement has taken yet, if any, in a round
// trip of its own: for a statement that cannot carry it.
func (s *BatchSavepoint) Take(ctx context.Context, tx *sql.Tx) error {
	if name := s.Claim(); name != "" {
		return Savepoint(ctx, tx, name)
	}
	return nil
}

// ReleaseSavepoint implements sink.Driver.ReleaseSavepoint in standard SQL.
func ReleaseSavepoint(ctx context.Context, tx *sql.Tx, name string) error {
	if _, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT "+name); err != nil {
		return fmt.Errorf("release savepoint: %w", err)
	}
	return nil
}

// RollbackToSavepoint implements sink.Driver.RollbackToSavepoint in
// standard SQL.
func RollbackToSavepoint(ctx context.Context, tx *sql.Tx, name string) error {
	if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT "+name); err != nil {
		return fmt.Errorf("roll back to savepoint: %w", err)
	}
	return nil
}

// DropTable implements sink.Driver.DropTable in standard SQL; quoted is
// the table's name as the driver's QuoteTable quotes it.
func DropTable(ctx context.Context, tx *sql.Tx, quoted string) error {
	_, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS `+quoted)
	return err
}
