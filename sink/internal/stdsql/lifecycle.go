package stdsql

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
)

// pastColumns are the columns an operation keeps among past operations.
const pastColumns = `table_name, file_id, file_key, state, content_digest, mapping_digest, mapping, file_path, file_size,
	created_at, updated_at, completed_at, completed_by, outcome, attempts,
	rows_read, rows_inserted, rows_updated, rows_unchanged, rows_stale, rows_superseded, rows_rejected`

// MoveToPast implements ledger.Ops.
func (l Ledger) MoveToPast(ctx context.Context, tx *sql.Tx, k ledger.Key, by string) error {
	sel := `SELECT table_name, file_id, file_key,
		CASE WHEN state IN ('undone', 'abandoned') THEN state WHEN state = 'completed' AND ? <> '' THEN 'replaced' ELSE 'superseded' END,
		content_digest, mapping_digest, mapping, file_path, file_size,
		created_at, updated_at, completed_at, completed_by, outcome, attempts,
		rows_read, rows_inserted, rows_updated, rows_unchanged, rows_stale, rows_superseded, rows_rejected, ` + l.S.Now() + `,
		CASE WHEN state = 'completed' AND ? <> '' THEN ? END
		FROM ` + l.Prefix + `operations WHERE table_name = ? AND file_id = ?`
	if _, err := tx.ExecContext(ctx, l.q(`INSERT INTO `+l.Prefix+`operations_past (`+pastColumns+`, replaced_at, replaced_by) `+sel),
		by, by, by, k.Table, k.FileID); err != nil {
		return fmt.Errorf("keep operation %s among past operations: %w", k, err)
	}
	if err := l.DropRejects(ctx, tx, k); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, l.q(`DELETE FROM `+l.Prefix+`operations WHERE table_name = ? AND file_id = ?`), k.Table, k.FileID); err != nil {
		return fmt.Errorf("replace operation %s: %w", k, err)
	}
	return nil
}

// MarkReplaces implements ledger.Ops.
func (l Ledger) MarkReplaces(ctx context.Context, tx *sql.Tx, k ledger.Key, digest string) error {
	if _, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`operations SET replaces = ? WHERE table_name = ? AND file_id = ?`),
		digest, k.Table, k.FileID); err != nil {
		return fmt.Errorf("record that %s replaces %s: %w", k, digest, err)
	}
	return nil
}

// CloseOperation implements ledger.Ops.
func (l Ledger) CloseOperation(ctx context.Context, tx *sql.Tx, k ledger.Key, state ledger.State, evenCompleted bool) (bool, error) {
	fence := ``
	if !evenCompleted {
		fence = ` AND state <> 'completed'`
	}
	res, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`operations SET state = ?, lease_attempt = NULL, lease_expires = NULL,
		updated_at = `+l.S.Now()+` WHERE table_name = ? AND file_id = ?`+fence), string(state), k.Table, k.FileID)
	if err != nil {
		return false, fmt.Errorf("mark %s %s: %w", k, state, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("mark %s %s: %w", k, state, err)
	}
	return n > 0, nil
}

// DropRejects implements ledger.Ops.
func (l Ledger) DropRejects(ctx context.Context, tx *sql.Tx, k ledger.Key) error {
	if _, err := tx.ExecContext(ctx, l.q(`DELETE FROM `+l.Prefix+`rejects WHERE table_name = ? AND file_id = ?`), k.Table, k.FileID); err != nil {
		return fmt.Errorf("drop rejects of %s: %w", k, err)
	}
	return nil
}

// ResetOperation implements ledger.Ops.
func (l Ledger) ResetOperation(ctx context.Context, tx *sql.Tx, k ledger.Key) error {
	if _, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`operations SET state = 'processing', outcome = NULL,
		completed_at = NULL, completed_by = NULL, updated_at = `+l.S.Now()+`, scope_rows = NULL, replaces = NULL,
		rows_read = 0, rows_inserted = 0, rows_updated = 0, rows_unchanged = 0, rows_stale = 0, rows_superseded = 0, rows_rejected = 0
		WHERE table_name = ? AND file_id = ?`), k.Table, k.FileID); err != nil {
		return fmt.Errorf("reset operation %s: %w", k, err)
	}
	return nil
}

// RestoreCompleted implements ledger.Ops.
func (l Ledger) RestoreCompleted(ctx context.Context, tx *sql.Tx, k ledger.Key) (bool, error) {
	res, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`operations SET state = 'completed', lease_attempt = NULL, lease_expires = NULL,
		updated_at = `+l.S.Now()+` WHERE table_name = ? AND file_id = ? AND state IN ('processing', 'failed')
		AND completed_by IS NOT NULL AND completed_at IS NOT NULL`), k.Table, k.FileID)
	if err != nil {
		return false, fmt.Errorf("restore %s to completed: %w", k, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// RecordDied implements ledger.Ops.
func (l Ledger) RecordDied(ctx context.Context, q idemtype.Querier, attempt string) error {
	if _, err := q.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`attempts SET ended_at = `+l.S.Now()+`, outcome = 'died'
		WHERE attempt_id = ? AND ended_at IS NULL`), attempt); err != nil {
		return fmt.Errorf("record attempt %s died: %w", attempt, err)
	}
	return nil
}

// Past implements ledger.Ops.
func (l Ledger) Past(ctx context.Context, q idemtype.Querier, f ledger.Filter, withReplacedBy bool) ([]ledger.Operation, error) {
	where, args := where(f, l.Prefix, l.Prefix+"operations_past")
	replacedBy := `coalesce(replaced_by, '')`
	if !withReplacedBy {
		replacedBy = `''`
	}
	rows, err := q.QueryContext(ctx, l.q(`SELECT table_name, file_id, file_key, state, content_digest, mapping_digest, mapping,
		file_path, file_size, created_at, replaced_at, coalesce(completed_at, 0), coalesce(completed_by, ''), coalesce(outcome, ''),
		attempts, rows_read, rows_inserted, rows_updated, rows_unchanged, rows_stale, rows_superseded, rows_rejected,
		`+replacedBy+`
		FROM `+l.Prefix+`operations_past`+where+` ORDER BY created_at DESC, table_name, file_id`), args...)
	if err != nil {
		return nil, fmt.Errorf("list past operations: %w", err)
	}
	defer rows.Close()
	var out []ledger.Operation
	for rows.Next() {
		var o ledger.Operation
		if err := rows.Scan(&o.Table, &o.FileID, &o.FileKey, &o.State, &o.ContentDigest, &o.MappingDigest, &o.Mapping,
			&o.Path, &o.Size, &o.CreatedAt, &o.UpdatedAt, &o.CompletedAt, &o.CompletedBy, &o.Outcome,
			&o.Attempts, &o.Rows.Read, &o.Rows.Inserted, &o.Rows.Updated, &o.Rows.Unchanged, &o.Rows.Stale, &o.Rows.Superseded, &o.Rows.Rejected,
			&o.ReplacedBy); err != nil {
			return nil, fmt.Errorf("list past operations: %w", err)
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// RecordPath implements ledger.Ops.
func (l Ledger) RecordPath(ctx context.Context, q idemtype.Querier, k ledger.Key, path string) error {
	if _, err := q.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`operations SET file_path = ?
		WHERE table_name = ? AND file_id = ? AND file_path <> ?`), path, k.Table, k.FileID, path); err != nil {
		return fmt.Errorf("record the path of %s: %w", k, err)
	}
	return nil
}
