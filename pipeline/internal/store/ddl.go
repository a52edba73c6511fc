package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/idemport/idemport/ledger"
)

// DDLCommits reports whether the database commits, at each DDL statement,
// the transaction it runs in (sink.Limits.DDLCommits): an import then
// runs each of its DDL steps alone, before the transaction that needs
// them (Create), and drops what it made when that transaction never
// commits (DropCreated), as a rollback would.
func (s *Store) DDLCommits() bool { return s.Driver.Limits().DDLCommits }

// Create runs, on a database whose DDL commits (DDLCommits), the DDL step
// ensure that makes table for operation k, outside any transaction of
// rows. A table that does not exist yet is first recorded as k's
// (Ledger.RecordCreated), in a transaction that commits before ensure
// runs, so that no kill leaves a table k made unrecorded; a table that
// exists is never recorded, so never dropped. ensure must be idempotent
// (IF NOT EXISTS): a rerun after a kill runs it again. The failpoint
// "after-ddl" follows it.
func (s *Store) Create(ctx context.Context, k ledger.Key, table string, ensure func(tx *sql.Tx) error) error {
	exists, err := s.Driver.TableExists(ctx, s.DB, table)
	if err != nil {
		return err
	}
	if !exists {
		if err := s.inTx(ctx, func(tx *sql.Tx) error { return s.Ledger.RecordCreated(ctx, tx, k, table) }); err != nil {
			return err
		}
		if err := s.Hit("after-ddl-record"); err != nil {
			return err
		}
	}
	if err := s.inTx(ctx, ensure); err != nil {
		return err
	}
	return s.Hit("after-ddl")
}

// Alter runs, on a database whose DDL commits, the idempotent DDL step
// alter (columns added or widened, never dropped) outside any transaction
// of rows; the failpoint "after-ddl" follows it.
func (s *Store) Alter(ctx context.Context, alter func(tx *sql.Tx) error) error {
	if err := s.inTx(ctx, alter); err != nil {
		return err
	}
	return s.Hit("after-ddl")
}

// DropCreated drops the tables operation k is recorded to have created
// (Create) that which selects (nil: all of them), and forgets them, each drop a step of its own, and returns
// those it dropped. A table that another operation also recorded, or that
// an operation other than k still writes or holds rows in (table is k's
// target table and one is processing, failed or completed), is kept and
// only forgotten for k. The drops run before their records are forgotten,
// so a kill between leaves a record whose drop, run again, finds nothing.
func (s *Store) DropCreated(ctx context.Context, k ledger.Key, which func(ledger.CreatedTable) bool) ([]string, error) {
	created, err := s.Ledger.Created(ctx, s.DB, k)
	if err != nil || len(created) == 0 {
		return nil, err
	}
	var dropped []string
	for _, c := range created {
		if which != nil && !which(c) {
			continue
		}
		table := c.Name
		keep, err := s.usedByOthers(ctx, k, table)
		if err != nil {
			return dropped, err
		}
		if !keep {
			if err := s.inTx(ctx, func(tx *sql.Tx) error { return s.Driver.DropTable(ctx, tx, table) }); err != nil {
				return dropped, fmt.Errorf("drop %s, which %s created: %w", table, k, err)
			}
			dropped = append(dropped, table)
		}
		if err := s.inTx(ctx, func(tx *sql.Tx) error { return s.Ledger.ForgetCreated(ctx, tx, k, table) }); err != nil {
			return dropped, err
		}
	}
	return dropped, nil
}

// usedByOthers reports whether table, which operation k created, is also
// another operation's: recorded as created by one, or the target table of
// one whose rows it may hold.
func (s *Store) usedByOthers(ctx context.Context, k ledger.Key, table string) (bool, error) {
	n, err := s.Ledger.CreatedByOthers(ctx, s.DB, k, table)
	if err != nil || n > 0 || table != k.Table {
		return n > 0, err
	}
	ops, err := s.Ledger.List(ctx, ledger.Filter{Table: table})
	if err != nil {
		return false, err
	}
	for _, op := range ops {
		if op.Key == k {
			continue
		}
		switch op.State {
		case ledger.Processing, ledger.Failed, ledger.Completed:
			return true, nil
		}
	}
	return false, nil
}

// inTx runs f in a transaction of its own and commits it.
func (s *Store) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := BeginTx(ctx, s.DB)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f(tx.Tx); err != nil {
		return err
	}
	return tx.Commit()
}
