package stdsql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
)

// Checkpoints implements checkpoint.Ops in the SQL S spells, on the
// tables Prefix places. The value is safe for concurrent use.
type Checkpoints struct {
	S      Spelling
	Prefix string
}

var _ checkpoint.Ops = Checkpoints{}

func (c Checkpoints) q(x string) string { return c.S.Rebind(x) }

// SavePlan implements checkpoint.Ops.
func (c Checkpoints) SavePlan(ctx context.Context, tx *sql.Tx, op checkpoint.Op, attempt string, body []byte, rows int64, parts []checkpoint.Partition) error {
	if _, err := tx.ExecContext(ctx, c.q(`INSERT INTO `+c.Prefix+`plans (table_name, file_id, body, row_count, partitions, attempt_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, `+c.S.Now()+`)`), op.Table, op.FileID, string(body), rows, len(parts), attempt); err != nil {
		return fmt.Errorf("store plan: %w", err)
	}
	stmt, err := tx.PrepareContext(ctx, c.q(`INSERT INTO `+c.Prefix+`partitions
		(table_name, file_id, idx, first_row, row_count, rejected, byte_offset, byte_length, crc, superseded, superseded_rows)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`))
	if err != nil {
		return fmt.Errorf("store partitions: %w", err)
	}
	defer stmt.Close()
	for _, p := range parts {
		if _, err := stmt.ExecContext(ctx, op.Table, op.FileID, p.Index, p.First, p.Rows, p.Rejected, p.Offset, p.Length, int64(p.CRC),
			len(p.Superseded), checkpoint.EncodeOrdinals(p.First, p.Superseded)); err != nil {
			return fmt.Errorf("store partition %d: %w", p.Index, err)
		}
	}
	return nil
}

// Plan implements checkpoint.Ops.
func (c Checkpoints) Plan(ctx context.Context, q idemtype.Querier, op checkpoint.Op) ([]byte, bool, error) {
	var body string
	err := q.QueryRowContext(ctx, c.q(`SELECT body FROM `+c.Prefix+`plans WHERE table_name = ? AND file_id = ?`), op.Table, op.FileID).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("load plan: %w", err)
	}
	return []byte(body), true, nil
}

// Partitions implements checkpoint.Ops.
func (c Checkpoints) Partitions(ctx context.Context, q idemtype.Querier, op checkpoint.Op) ([]checkpoint.Partition, error) {
	rows, err := q.QueryContext(ctx, c.q(`SELECT idx, first_row, row_count, rejected, byte_offset, byte_length, crc, superseded_rows, done,
		coalesce(done_by, ''), coalesce(lease_attempt, ''), coalesce(lease_expires, 0),
		rows_inserted, rows_updated, rows_unchanged, rows_stale
		FROM `+c.Prefix+`partitions WHERE table_name = ? AND file_id = ? ORDER BY idx`), op.Table, op.FileID)
	if err != nil {
		return nil, fmt.Errorf("load partitions: %w", err)
	}
	defer rows.Close()
	var out []checkpoint.Partition
	for rows.Next() {
		var p checkpoint.Partition
		var crc, done int64
		var sup []byte
		if err := rows.Scan(&p.Index, &p.First, &p.Rows, &p.Rejected, &p.Offset, &p.Length, &crc, &sup, &done,
			&p.DoneBy, &p.LeaseAttempt, &p.LeaseExpires,
			&p.Counts.Inserted, &p.Counts.Updated, &p.Counts.Unchanged, &p.Counts.Stale); err != nil {
			return nil, fmt.Errorf("load partitions: %w", err)
		}
		p.CRC = uint32(crc)
		p.Done = done != 0
		if p.Superseded, err = checkpoint.DecodeOrdinals(p.First, sup); err != nil {
			return nil, fmt.Errorf("load partition %d: %w", p.Index, err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// ClaimPartition implements checkpoint.Ops: the SELECT and the UPDATE are
// one step because tx holds the database's write lock, or a row lock that
// other claims skip (SkipLocked).
func (c Checkpoints) ClaimPartition(ctx context.Context, tx *sql.Tx, op checkpoint.Op, attempt string, leaseMs int64) (*checkpoint.Partition, string, error) {
	lock, _ := c.S.SkipLocked("")
	row := tx.QueryRowContext(ctx, c.q(`SELECT idx, coalesce(lease_attempt, '') FROM `+c.Prefix+`partitions
		WHERE table_name = ? AND file_id = ? AND done = 0
		AND (lease_attempt IS NULL OR lease_expires <= `+c.S.Now()+`)
		ORDER BY idx LIMIT 1`+lock), op.Table, op.FileID)
	var idx int
	var holder string
	if err := row.Scan(&idx, &holder); errors.Is(err, sql.ErrNoRows) {
		return nil, "", nil
	} else if err != nil {
		return nil, "", fmt.Errorf("claim partition: %w", err)
	}
	if _, err := tx.ExecContext(ctx, c.q(`UPDATE `+c.Prefix+`partitions SET lease_attempt = ?, lease_expires = `+c.S.Now()+` + ?
		WHERE table_name = ? AND file_id = ? AND idx = ?`), attempt, leaseMs, op.Table, op.FileID, idx); err != nil {
		return nil, "", fmt.Errorf("claim partition %d: %w", idx, err)
	}
	var p checkpoint.Partition
	var crc int64
	var sup []byte
	if err := tx.QueryRowContext(ctx, c.q(`SELECT idx, first_row, row_count, rejected, byte_offset, byte_length, crc, superseded_rows
		FROM `+c.Prefix+`partitions WHERE table_name = ? AND file_id = ? AND idx = ?`), op.Table, op.FileID, idx).
		Scan(&p.Index, &p.First, &p.Rows, &p.Rejected, &p.Offset, &p.Length, &crc, &sup); err != nil {
		return nil, "", fmt.Errorf("read partition %d: %w", idx, err)
	}
	p.CRC = uint32(crc)
	sups, err := checkpoint.DecodeOrdinals(p.First, sup)
	if err != nil {
		return nil, "", fmt.Errorf("read partition %d: %w", idx, err)
	}
	p.Superseded = sups
	p.LeaseAttempt = attempt
	return &p, holder, nil
}

// InTransaction implements checkpoint.Ops: a probe that skips locked rows
// does not find a partition another transaction holds.
func (c Checkpoints) InTransaction(ctx context.Context, db *sql.DB, op checkpoint.Op, idx int) (bool, error) {
	lock, ok := c.S.SkipLocked("")
	if !ok {
		return false, nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("probe partition %d: %w", idx, err)
	}
	defer tx.Rollback()
	var got int
	err = tx.QueryRowContext(ctx, c.q(`SELECT idx FROM `+c.Prefix+`partitions WHERE table_name = ? AND file_id = ? AND idx = ?`+lock), op.Table, op.FileID, idx).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("probe partition %d: %w", idx, err)
	}
	return false, nil
}

// Fence implements checkpoint.Ops.
func (c Checkpoints) Fence(ctx context.Context, tx *sql.Tx, op checkpoint.Op, idx int, attempt string, leaseMs int64) (int64, error) {
	return affected(tx.ExecContext(ctx, c.q(`UPDATE `+c.Prefix+`partitions SET lease_expires = `+c.S.Now()+` + ?
		WHERE table_name = ? AND file_id = ? AND idx = ? AND lease_attempt = ? AND done = 0`), leaseMs, op.Table, op.FileID, idx, attempt))
}

// Complete implements checkpoint.Ops.
func (c Checkpoints) Complete(ctx context.Context, tx *sql.Tx, op checkpoint.Op, idx int, attempt string, r idemtype.Rows) (int64, error) {
	stmt, args := CompleteStatement(c.S, c.Prefix, op, idx, attempt, r)
	return affected(tx.ExecContext(ctx, c.q(stmt), args...))
}

// CompleteStatement is Complete's statement on the partitions table
// prefix places, with ? placeholders (not rebound), and its arguments: it
// marks partition idx of op done by attempt with the counters r, ending
// its lease, if attempt holds the lease and the partition is not done. It
// ends with its WHERE clause, so that a driver that runs it with the
// ledger's counts (CountAttemptStatement, CountOperationStatement) in one
// message may add a condition (AND …) or a RETURNING.
func CompleteStatement(s Spelling, prefix string, op checkpoint.Op, idx int, attempt string, r idemtype.Rows) (string, []any) {
	return `UPDATE ` + prefix + `partitions SET done = 1, done_by = ?, done_at = ` + s.Now() + `,
		lease_attempt = NULL, lease_expires = NULL,
		rows_inserted = ?, rows_updated = ?, rows_unchanged = ?, rows_stale = ?, rejected = ?
		WHERE table_name = ? AND file_id = ? AND idx = ? AND lease_attempt = ? AND done = 0`,
		[]any{attempt, r.Inserted, r.Updated, r.Unchanged, r.Stale, r.Rejected, op.Table, op.FileID, idx, attempt}
}

// DoneBy implements checkpoint.Ops: an update that changes nothing waits
// for the row lock of any transaction holding the partition.
func (c Checkpoints) DoneBy(ctx context.Context, tx *sql.Tx, op checkpoint.Op, idx int) (string, error) {
	if _, err := tx.ExecContext(ctx, c.q(`UPDATE `+c.Prefix+`partitions SET done = done
		WHERE table_name = ? AND file_id = ? AND idx = ?`), op.Table, op.FileID, idx); err != nil {
		return "", err
	}
	var by string
	err := tx.QueryRowContext(ctx, c.q(`SELECT coalesce(done_by, '') FROM `+c.Prefix+`partitions
		WHERE table_name = ? AND file_id = ? AND idx = ? AND done = 1`), op.Table, op.FileID, idx).Scan(&by)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return by, err
}

// Rejected implements checkpoint.Ops.
func (c Checkpoints) Rejected(ctx context.Context, q idemtype.Querier, op checkpoint.Op) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, c.q(`SELECT coalesce(sum(rejected), 0) FROM `+c.Prefix+`partitions
		WHERE table_name = ? AND file_id = ?`), op.Table, op.FileID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count rejected rows: %w", err)
	}
	return n, nil
}

// Release implements checkpoint.Ops.
func (c Checkpoints) Release(ctx context.Context, q idemtype.Querier, op checkpoint.Op, attempt string) error {
	if _, err := q.ExecContext(ctx, c.q(`UPDATE `+c.Prefix+`partitions SET lease_attempt = NULL, lease_expires = NULL
		WHERE table_name = ? AND file_id = ? AND lease_attempt = ? AND done = 0`), op.Table, op.FileID, attempt); err != nil {
		return fmt.Errorf("release partitions: %w", err)
	}
	return nil
}

// Renew implements checkpoint.Ops.
func (c Checkpoints) Renew(ctx context.Context, q idemtype.Querier, op checkpoint.Op, attempt string, leaseMs int64) (int64, error) {
	res, err := q.ExecContext(ctx, c.q(`UPDATE `+c.Prefix+`partitions SET lease_expires = `+c.S.Now()+` + ?
		WHERE table_name = ? AND file_id = ? AND lease_attempt = ? AND done = 0`), leaseMs, op.Table, op.FileID, attempt)
	if err != nil {
		return 0, fmt.Errorf("renew partition leases: %w", err)
	}
	return res.RowsAffected()
}

// Progress implements checkpoint.Ops.
func (c Checkpoints) Progress(ctx context.Context, q idemtype.Querier, op checkpoint.Op, attempt string) (checkpoint.Progress, error) {
	var p checkpoint.Progress
	err := q.QueryRowContext(ctx, c.q(`SELECT count(*),
		coalesce(sum(done), 0),
		coalesce(sum(CASE WHEN done = 0 AND (lease_attempt IS NULL OR lease_attempt = ? OR lease_expires <= `+c.S.Now()+`) THEN 1 ELSE 0 END), 0),
		coalesce(sum(CASE WHEN done = 0 AND lease_attempt IS NOT NULL AND lease_attempt <> ? AND lease_expires > `+c.S.Now()+` THEN 1 ELSE 0 END), 0)
		FROM `+c.Prefix+`partitions WHERE table_name = ? AND file_id = ?`), attempt, attempt, op.Table, op.FileID).
		Scan(&p.Total, &p.Done, &p.Claimable, &p.Held)
	if err != nil {
		return p, fmt.Errorf("read progress: %w", err)
	}
	return p, nil
}

// Totals implements checkpoint.Ops.
func (c Checkpoints) Totals(ctx context.Context, q idemtype.Querier, op checkpoint.Op) (idemtype.Rows, error) {
	var r idemtype.Rows
	err := q.QueryRowContext(ctx, c.q(`SELECT coalesce(sum(row_count), 0), coalesce(sum(rows_inserted), 0), coalesce(sum(rows_updated), 0),
		coalesce(sum(rows_unchanged), 0), coalesce(sum(rows_stale), 0), coalesce(sum(superseded), 0), coalesce(sum(rejected), 0)
		FROM `+c.Prefix+`partitions WHERE table_name = ? AND file_id = ? AND done = 1`), op.Table, op.FileID).
		Scan(&r.Read, &r.Inserted, &r.Updated, &r.Unchanged, &r.Stale, &r.Superseded, &r.Rejected)
	if err != nil {
		return r, fmt.Errorf("sum partitions: %w", err)
	}
	return r, nil
}

// Holders implements checkpoint.Ops.
func (c Checkpoints) Holders(ctx context.Context, q idemtype.Querier, op checkpoint.Op) ([]string, error) {
	rows, err := q.QueryContext(ctx, c.q(`SELECT DISTINCT lease_attempt FROM `+c.Prefix+`partitions
		WHERE table_name = ? AND file_id = ? AND done = 0 AND lease_attempt IS NOT NULL AND lease_expires > `+c.S.Now()+`
		ORDER BY lease_attempt`), op.Table, op.FileID)
	if err != nil {
		return nil, fmt.Errorf("read lease holders: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// Expire implements checkpoint.Ops.
func (c Checkpoints) Expire(ctx context.Context, q idemtype.Querier, op checkpoint.Op, attempt string) error {
	if _, err := q.ExecContext(ctx, c.q(`UPDATE `+c.Prefix+`partitions SET lease_expires = 0
		WHERE table_name = ? AND file_id = ? AND lease_attempt = ? AND done = 0`), op.Table, op.FileID, attempt); err != nil {
		return fmt.Errorf("expire leases: %w", err)
	}
	return nil
}

// Drop implements checkpoint.Ops.
func (c Checkpoints) Drop(ctx context.Context, tx *sql.Tx, op checkpoint.Op) (plans, parts int64, err error) {
	res, err := tx.ExecContext(ctx, c.q(`DELETE FROM `+c.Prefix+`partitions WHERE table_name = ? AND file_id = ?`), op.Table, op.FileID)
	if err != nil {
		return 0, 0, fmt.Errorf("drop partitions: %w", err)
	}
	parts, _ = res.RowsAffected()
	res, err = tx.ExecContext(ctx, c.q(`DELETE FROM `+c.Prefix+`plans WHERE table_name = ? AND file_id = ?`), op.Table, op.FileID)
	if err != nil {
		return 0, 0, fmt.Errorf("drop plan: %w", err)
	}
	plans, _ = res.RowsAffected()
	return plans, parts, nil
}

// affected returns the rows an Exec changed.
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
