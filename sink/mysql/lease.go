package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink/internal/stdsql"
)

// Checkpoints implements sink.Driver: the shared statements, but for the
// renewal and the expiry of leases (checkpointOps).
func (d Driver) Checkpoints(prefix string) checkpoint.Ops {
	return checkpointOps{stdsql.Checkpoints{S: d, Prefix: prefix}}
}

// checkpointOps is the checkpoint store's operations on MariaDB: stdsql's,
// but Renew and Expire read the partitions by the primary key, and Renew
// retries when InnoDB chose it to break a deadlock (1213) or it waited too
// long for a row (1205). The renewal's UPDATE locks every
// unfinished partition the attempt holds, in key order, while the
// attempt's workers each lock theirs in their partition transactions, so
// a renewal meeting a worker's transaction that reaches for another row
// (the next partition's claim, the operation's) can deadlock, and InnoDB
// rolls back the renewal, which changed least. On PostgreSQL and SQLite
// the same renewal waits instead.
type checkpointOps struct{ stdsql.Checkpoints }

// Renew implements checkpoint.Ops: the shared statement, but reading the
// partitions by the primary key, as Expire does and for the same reason: a
// claim of one of the attempt's partitions whose lease ran out locks its
// row and then changes its holder, which needs the attempt's entry in
// partitions_lease, the entry a renewal through that index locks before
// waiting for the row (InnoDB rolled back the claim). It is retried on a
// deadlock or a lock wait timeout when q is not a transaction
// (renewLocked).
func (c checkpointOps) Renew(ctx context.Context, q idemtype.Querier, op checkpoint.Op, attempt string, leaseMs int64) (int64, error) {
	var n int64
	err := renewLocked(ctx, q, func() error {
		res, err := q.ExecContext(ctx, `UPDATE `+c.Prefix+`partitions FORCE INDEX (PRIMARY) SET lease_expires = `+c.S.Now()+` + ?
			WHERE table_name = ? AND file_id = ? AND lease_attempt = ? AND done = 0`, leaseMs, op.Table, op.FileID, attempt)
		if err != nil {
			return fmt.Errorf("renew partition leases: %w", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// renewRetries is how many times renewLocked runs a renewal InnoDB
// rolled back, at most; renewBackoff the pause before the first retry,
// doubled before each next.
const (
	renewRetries = 5
	renewBackoff = 10 * time.Millisecond
)

// renewLocked runs renew, a renewal of leases whose statements each set an
// expiry from the database's clock (so running them again is harmless),
// and runs it again while it fails with a deadlock or a lock wait timeout,
// up to renewRetries times or until ctx ends. In a transaction (q a
// *sql.Tx) it runs once: a deadlock rolled the whole transaction back, and
// only its owner may decide what to do then.
func renewLocked(ctx context.Context, q idemtype.Querier, renew func() error) error {
	if _, ok := q.(*sql.Tx); ok {
		return renew()
	}
	wait := renewBackoff
	for i := 1; ; i++ {
		err := renew()
		if n := number(err); err == nil || n != erLockDeadlock && n != erLockWait || i == renewRetries {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// Expire implements checkpoint.Ops: the shared statement, but reading the
// partitions by the primary key. Through the index of holders
// (partitions_lease), which the optimizer picks for a selective holder,
// it locks the dead attempt's entry there before the partition's row,
// while a claim of that partition, whose lease ran out, locks the row
// before changing its holder, which needs that entry: InnoDB then rolls
// one of them back. By the primary key it waits for the row holding
// nothing the claim needs (READ COMMITTED releases the rows it passes
// over), and changes no indexed column.
func (c checkpointOps) Expire(ctx context.Context, q idemtype.Querier, op checkpoint.Op, attempt string) error {
	if _, err := q.ExecContext(ctx, `UPDATE `+c.Prefix+`partitions FORCE INDEX (PRIMARY) SET lease_expires = 0
		WHERE table_name = ? AND file_id = ? AND lease_attempt = ? AND done = 0`, op.Table, op.FileID, attempt); err != nil {
		return fmt.Errorf("expire leases: %w", err)
	}
	return nil
}
