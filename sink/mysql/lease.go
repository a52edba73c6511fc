package mysql

import (
	"context"
	"database/sql"
	"errors"
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

// ClaimPartition implements checkpoint.Ops: the shared statements (the
// SELECT … FOR UPDATE SKIP LOCKED of the lowest partition free to claim,
// the UPDATE that leases it, the SELECT of its boundaries), in one
// message, one round trip where there were three, paid by every partition
// transaction: the server runs them in order, the claimed partition's
// index and holder kept in session variables from the first to the
// others (none found: the UPDATE and the last SELECT find nothing), so
// the rows are locked as the three statements sent apart locked them.
func (c checkpointOps) ClaimPartition(ctx context.Context, tx *sql.Tx, op checkpoint.Op, attempt string, leaseMs int64) (*checkpoint.Partition, string, error) {
	p, now := c.Prefix, c.S.Now()
	rows, err := tx.QueryContext(ctx, `SET @idemport_claim = NULL, @idemport_holder = NULL;
		SELECT idx, coalesce(lease_attempt, '') INTO @idemport_claim, @idemport_holder FROM `+p+`partitions
			WHERE table_name = ? AND file_id = ? AND done = 0 AND (lease_attempt IS NULL OR lease_expires <= `+now+`)
			ORDER BY idx LIMIT 1 FOR UPDATE SKIP LOCKED;
		UPDATE `+p+`partitions SET lease_attempt = ?, lease_expires = `+now+` + ?
			WHERE table_name = ? AND file_id = ? AND idx = @idemport_claim;
		SELECT idx, first_row, row_count, rejected, byte_offset, byte_length, crc, superseded_rows, @idemport_holder
			FROM `+p+`partitions WHERE table_name = ? AND file_id = ? AND idx = @idemport_claim`,
		op.Table, op.FileID, attempt, leaseMs, op.Table, op.FileID, op.Table, op.FileID)
	if err != nil {
		return nil, "", fmt.Errorf("claim partition: %w", err)
	}
	defer rows.Close()
	// The statements before the last SELECT return no rows.
	for cols, err := rows.Columns(); len(cols) == 0; cols, err = rows.Columns() {
		if err == nil && !rows.NextResultSet() {
			err = rows.Err()
			if err == nil {
				err = errors.New("no result of its last statement")
			}
		}
		if err != nil {
			return nil, "", fmt.Errorf("claim partition: %w", err)
		}
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, "", fmt.Errorf("claim partition: %w", err)
		}
		return nil, "", rows.Close() // none free to claim
	}
	var part checkpoint.Partition
	var crc int64
	var sup []byte
	var holder string
	if err := rows.Scan(&part.Index, &part.First, &part.Rows, &part.Rejected, &part.Offset, &part.Length, &crc, &sup, &holder); err != nil {
		return nil, "", fmt.Errorf("read the claimed partition: %w", err)
	}
	if err := rows.Close(); err != nil {
		return nil, "", fmt.Errorf("claim partition %d: %w", part.Index, err)
	}
	part.CRC = uint32(crc)
	if part.Superseded, err = checkpoint.DecodeOrdinals(part.First, sup); err != nil {
		return nil, "", fmt.Errorf("read partition %d: %w", part.Index, err)
	}
	part.LeaseAttempt = attempt
	return &part, holder, nil
}
