package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/internal/dialect"
	"github.com/idemport/idemport/sink"
)

var _ sink.Evolver = Dialect{}

// AddColumn implements sink.Evolver.
func (Dialect) AddColumn(ctx context.Context, tx *sql.Tx, table string, f arrow.Field) error {
	if _, err := tx.ExecContext(ctx, `ALTER TABLE `+dialect.Quote(table)+` ADD COLUMN IF NOT EXISTS `+q(f.Name)+` `+sqlType(sink.KindOf(f))); err != nil {
		return fmt.Errorf("add column %s to %s: %w", f.Name, table, err)
	}
	return nil
}

// WidenToText implements sink.Evolver. The cast renders bigint exactly and
// double precision in its shortest exact form (PostgreSQL 12 and later).
func (Dialect) WidenToText(ctx context.Context, tx *sql.Tx, table, column string) error {
	if _, err := tx.ExecContext(ctx, `ALTER TABLE `+dialect.Quote(table)+` ALTER COLUMN `+q(column)+` TYPE text USING `+q(column)+`::text`); err != nil {
		return fmt.Errorf("widen column %s of %s to text: %w", column, table, err)
	}
	return nil
}
