package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink/internal/stdsql"
)

// Checkpoints implements sink.Driver: the shared statements, with a
// partition's claim in one statement (checkpoints.ClaimPartition).
func (Driver) Checkpoints(prefix string) checkpoint.Ops {
	return checkpoints{Checkpoints: stdsql.Checkpoints{S: Driver{}, Prefix: prefix}}
}

// checkpoints are the shared checkpoint statements, but for the claim.
type checkpoints struct {
	stdsql.Checkpoints
}

// ClaimPartition implements checkpoint.Ops as the shared one does (the
// lowest-numbered partition not done and not under a live lease, locked,
// skipping those other transactions hold), in one statement where the
// shared one takes three (find it, lease it, read it back): every
// partition transaction claims the next partition, so the two round trips
// saved are paid per partition. The locking SELECT in the WITH runs first
// and locks the row it returns (reading its latest version, on which the
// condition is checked again); the UPDATE leases that row, and the holder
// returned is the lease's attempt before the update, read by that SELECT.
func (c checkpoints) ClaimPartition(ctx context.Context, tx *sql.Tx, op checkpoint.Op, attempt string, leaseMs int64) (*checkpoint.Partition, string, error) {
	t := c.Prefix + "partitions"
	row := tx.QueryRowContext(ctx, `WITH free AS (
			SELECT idx, coalesce(lease_attempt, '') AS holder FROM `+t+`
			WHERE table_name = $3 AND file_id = $4 AND done = 0
			AND (lease_attempt IS NULL OR lease_expires <= `+Driver{}.Now()+`)
			ORDER BY idx LIMIT 1 FOR UPDATE SKIP LOCKED)
		UPDATE `+t+` p SET lease_attempt = $1, lease_expires = `+Driver{}.Now()+` + $2
		FROM free WHERE p.table_name = $3 AND p.file_id = $4 AND p.idx = free.idx
		RETURNING p.idx, p.first_row, p.row_count, p.rejected, p.byte_offset, p.byte_length, p.crc, p.superseded_rows, free.holder`,
		attempt, leaseMs, op.Table, op.FileID)
	var p checkpoint.Partition
	var crc int64
	var sup []byte
	var holder string
	err := row.Scan(&p.Index, &p.First, &p.Rows, &p.Rejected, &p.Offset, &p.Length, &crc, &sup, &holder)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("claim partition: %w", err)
	}
	p.CRC = uint32(crc)
	if p.Superseded, err = checkpoint.DecodeOrdinals(p.First, sup); err != nil {
		return nil, "", fmt.Errorf("read partition %d: %w", p.Index, err)
	}
	p.LeaseAttempt = attempt
	return &p, holder, nil
}

// CompletePartition marks partition idx of op done by attempt with the
// counters r, as checkpoint.Ops.Complete does, and then adds r, and one
// partition committed, to the counters of attempt and of operation op, as
// ledger.Ops.Count does, on the tables prefix places (the ledger's and the
// checkpoints' share it): one statement, a WITH of each of their three
// (stdsql's CompleteStatement, CountAttemptStatement and
// CountOperationStatement), where there were three, paid by every
// partition transaction. It returns how many partitions it marked:
// the mark is made only if attempt holds the partition's lease and it is
// not done (the fence checked once more before the commit), and nothing is
// counted unless it was. The statement's SELECT reads the three in order,
// each WITH runs when first read and the counts' read the mark's, so the
// rows are locked in the order the three statements locked them: the
// partition, the attempt, the operation (two transactions that lock them
// in other orders could deadlock).
func (Driver) CompletePartition(ctx context.Context, tx *sql.Tx, prefix string, op checkpoint.Op, idx int, attempt string, r idemtype.Rows) (int64, error) {
	mark, args := stdsql.CompleteStatement(Driver{}, prefix, op, idx, attempt, r)
	countAttempt, attemptArgs := stdsql.CountAttemptStatement(Driver{}, prefix, attempt, r, 1)
	countOperation, operationArgs := stdsql.CountOperationStatement(Driver{}, prefix, ledger.Key{Table: op.Table, FileID: op.FileID}, r)
	var marked, attempts, operations int64
	err := tx.QueryRowContext(ctx, Rebind(`WITH marked AS (
			`+mark+`
			RETURNING idx),
		attempt_counted AS (
			`+countAttempt+` AND EXISTS (SELECT FROM marked)
			RETURNING attempt_id),
		operation_counted AS (
			`+countOperation+` AND EXISTS (SELECT FROM marked)
			RETURNING file_id)
		SELECT (SELECT count(*) FROM marked), (SELECT count(*) FROM attempt_counted), (SELECT count(*) FROM operation_counted)`),
		append(append(args, attemptArgs...), operationArgs...)...).
		Scan(&marked, &attempts, &operations)
	if err != nil {
		return 0, fmt.Errorf("mark partition done and count it: %w", err)
	}
	return marked, nil
}
