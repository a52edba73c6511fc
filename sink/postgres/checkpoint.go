package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/idemport/idemport/checkpoint"
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
