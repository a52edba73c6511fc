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
