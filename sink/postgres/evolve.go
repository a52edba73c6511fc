package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
)

// AddColumn implements sink.Driver. See alter for how it waits for the
// table's lock.
func (Driver) AddColumn(ctx context.Context, tx *sql.Tx, table string, f arrow.Field) error {
	if err := alter(ctx, tx, `ALTER TABLE `+quoteTable(table)+` ADD COLUMN IF NOT EXISTS `+q(f.Name)+` `+sqlType(idemtype.TypeOf(f))); err != nil {
		return fmt.Errorf("add column %s to %s: %w", f.Name, table, err)
	}
	return nil
}

// Widen implements sink.Driver. The casts are exact: bigint to numeric,
// and to text bigint, numeric (its canonical text) and double precision
// (its shortest exact form, PostgreSQL 12 and later). See alter for how it
// waits for the table's lock.
func (Driver) Widen(ctx context.Context, tx *sql.Tx, table, column string, kind idemtype.Type) error {
	typ := sqlType(kind)
	if err := alter(ctx, tx, `ALTER TABLE `+quoteTable(table)+` ALTER COLUMN `+q(column)+` TYPE `+typ+` USING `+q(column)+`::`+typ); err != nil {
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

// alterTry is how long one try of a schema change waits for its table's
// lock, and so at most how long a reader queues behind it.
const alterTry = time.Second

// alterSavepoint names the savepoint each try of a schema change runs under.
const alterSavepoint = "idemport_alter"

// alter runs stmt, an ALTER TABLE, inside tx. Its lock (ACCESS EXCLUSIVE)
// must wait for every transaction using the table, and while it waits
// every later statement on the table, a plain SELECT too, queues behind
// it: behind a transaction that does not end (a frozen import), readers
// would wait for ever. So each try waits at most alterTry (lock_timeout,
// under a savepoint, which a timed-out try is rolled back to), letting the
// queue through between tries, until the session's own lock_timeout (the
// busy timeout) has passed; then it fails with that try's lock_not_available
// (Locked). A session without a lock_timeout tries until ctx ends.
func alter(ctx context.Context, tx *sql.Tx, stmt string) error {
	var setting string
	var budgetMs int64
	if err := tx.QueryRowContext(ctx, `SELECT current_setting('lock_timeout'), setting::bigint FROM pg_settings WHERE name = 'lock_timeout'`).Scan(&setting, &budgetMs); err != nil {
		return fmt.Errorf("read lock_timeout: %w", err)
	}
	budget := time.Duration(budgetMs) * time.Millisecond
	try := alterTry
	if budget > 0 {
		try = min(try, budget)
	}
	start := time.Now()
	for {
		if _, err := tx.ExecContext(ctx, `SAVEPOINT `+alterSavepoint); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `SELECT set_config('lock_timeout', $1, true)`, fmt.Sprintf("%dms", try.Milliseconds())); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, stmt)
		if err == nil {
			if _, err := tx.ExecContext(ctx, `RELEASE SAVEPOINT `+alterSavepoint); err != nil {
				return err
			}
			// The try's lock_timeout outlives the savepoint: back to the session's.
			_, err := tx.ExecContext(ctx, `SELECT set_config('lock_timeout', $1, true)`, setting)
			return err
		}
		if !lockNotAvailable(err) || (budget > 0 && time.Since(start) >= budget) || ctx.Err() != nil {
			return err
		}
		// ROLLBACK TO also undoes the try's lock_timeout.
		if _, err := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT `+alterSavepoint); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `RELEASE SAVEPOINT `+alterSavepoint); err != nil {
			return err
		}
	}
}
