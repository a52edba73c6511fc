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
// takes; and, when begun with BeginAfter, the savepoint an earlier batch
// left taken, which that statement's message releases first. The zero
// value is outside any WriteUnder.
type BatchSavepoint struct {
	// Under names the savepoint of the batch being written, "" outside
	// WriteUnder.
	Under   string
	pending string // Under, until a statement has taken it
	release string // the savepoint to release before taking pending, or ""
}

// Begin starts a batch written under the savepoint name, not yet taken.
func (s *BatchSavepoint) Begin(name string) { s.Under, s.pending, s.release = name, name, "" }

// BeginAfter is Begin where the savepoint release (unless "") is still
// taken, left so by an earlier batch of the transaction: the statement
// that takes name releases it first, in the same message.
func (s *BatchSavepoint) BeginAfter(release, name string) {
	s.Begin(name)
	s.release = release
}

// End ends the batch.
func (s *BatchSavepoint) End() { s.Under, s.pending, s.release = "", "", "" }

// Taken reports whether no savepoint waits to be taken: one was, or
// none was begun.
func (s *BatchSavepoint) Taken() bool { return s.pending == "" }

// Claim returns the name of the savepoint no statement has taken yet, ""
// if none, and the savepoint to release before it ("" if none), and counts
// both done: the caller sends RELEASE SAVEPOINT release (when not "") and
// SAVEPOINT name, in that order, before its statement, in the same message
// or pipeline.
func (s *BatchSavepoint) Claim() (release, name string) {
	name, release = s.pending, s.release
	s.pending, s.release = "", ""
	if name == "" {
		release = ""
	}
	return release, name
}

// Prefix is Claim as the statements to send before another in its
// message ("RELEASE SAVEPOINT release; SAVEPOINT name; "), or "".
func (s *BatchSavepoint) Prefix() string {
	release, name := s.Claim()
	switch {
	case name == "":
		return ""
	case release != "":
		return "RELEASE SAVEPOINT " + release + "; SAVEPOINT " + name + "; "
	}
	return "SAVEPOINT " + name + "; "
}

// Take takes the savepoint no statement has taken yet, if any (releasing
// the one to release first, in the same message), in a round trip of its
// own: for a statement that cannot carry it.
func (s *BatchSavepoint) Take(ctx context.Context, tx *sql.Tx) error {
	release, name := s.Claim()
	switch {
	case name == "":
		return nil
	case release != "":
		if _, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT "+release+"; SAVEPOINT "+name); err != nil {
			return fmt.Errorf("savepoint: %w", err)
		}
		return nil
	}
	return Savepoint(ctx, tx, name)
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
