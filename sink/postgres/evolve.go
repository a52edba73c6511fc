package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
)

// AddColumn implements sink.Driver.
func (Driver) AddColumn(ctx context.Context, tx *sql.Tx, table string, f arrow.Field) error {
	if _, err := tx.ExecContext(ctx, `ALTER TABLE `+quoteTable(table)+` ADD COLUMN IF NOT EXISTS `+q(f.Name)+` `+sqlType(idemtype.TypeOf(f))); err != nil {
		return fmt.Errorf("add column %s to %s: %w", f.Name, table, err)
	}
	return nil
}

// Widen implements sink.Driver. The casts are exact: bigint to numeric,
// and to text bigint, numeric (its canonical text) and double precision
// (its shortest exact form, PostgreSQL 12 and later).
func (Driver) Widen(ctx context.Context, tx *sql.Tx, table, column string, kind idemtype.Type) error {
	typ := sqlType(kind)
	if _, err := tx.ExecContext(ctx, `ALTER TABLE `+quoteTable(table)+` ALTER COLUMN `+q(column)+` TYPE `+typ+` USING `+q(column)+`::`+typ); err != nil {
		return fmt.Errorf("widen column %s of %s to %s: %w", column, table, typ, err)
	}
	return nil
}

// HoldColumns implements sink.Driver with the lock every write takes
// (ROW EXCLUSIVE), taken before the transaction's first write: ALTER
// TABLE needs ACCESS EXCLUSIVE, so it waits for tx, and the Describe that
// follows the lock, with a snapshot taken after it, reads the columns of
// any ALTER TABLE that committed while tx waited.
func (Driver) HoldColumns(ctx context.Context, tx *sql.Tx, table string) error {
	if _, err := tx.ExecContext(ctx, `LOCK TABLE `+quoteTable(table)+` IN ROW EXCLUSIVE MODE`); err != nil {
		return fmt.Errorf("lock the columns of %s: %w", table, err)
	}
	return nil
}
