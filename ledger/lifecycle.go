package ledger

import (
	"context"
	"database/sql"
	"fmt"
)

// pastColumns are the columns an operation keeps among past operations.
const pastColumns = `table_name, file_id, file_key, state, content_digest, mapping_digest, mapping, file_path, file_size,
	created_at, updated_at, completed_at, completed_by, outcome, attempts,
	rows_read, rows_inserted, rows_updated, rows_unchanged, rows_stale, rows_superseded, rows_rejected`

// Replace moves operation k, if there is one, to the past operations, so a
// new operation for k can be created in the same transaction. The past
// record keeps k's state when it is undone or abandoned; with by (the
// content digest of the version replacing it, --replace) a completed one
// becomes replaced, by that version; any other is superseded. Its
// quarantined rows go with it: they belonged to a file that is no longer
// k's.
func (l *Ledger) Replace(ctx context.Context, tx *sql.Tx, k Key, by string) error {
	sel := `SELECT table_name, file_id, file_key,
		CASE WHEN state IN ('undone', 'abandoned') THEN state WHEN state = 'completed' AND ? <> '' THEN 'replaced' ELSE 'superseded' END,
		content_digest, mapping_digest, mapping, file_path, file_size,
		created_at, updated_at, completed_at, completed_by, outcome, attempts,
		rows_read, rows_inserted, rows_updated, rows_unchanged, rows_stale, rows_superseded, rows_rejected, ` + l.d.Now() + `,
		CASE WHEN state = 'completed' AND ? <> '' THEN ? END
		FROM ` + l.prefix + `operations WHERE table_name = ? AND file_id = ?`
	if _, err := tx.ExecContext(ctx, l.q(`INSERT INTO `+l.prefix+`operations_past (`+pastColumns+`, replaced_at, replaced_by) `+sel),
		by, by, by, k.Table, k.FileID); err != nil {
		return fmt.Errorf("keep operation %s among past operations: %w", k, err)
	}
	if _, err := tx.ExecContext(ctx, l.q(`DELETE FROM `+l.prefix+`rejects WHERE table_name = ? AND file_id = ?`), k.Table, k.FileID); err != nil {
		return fmt.Errorf("drop rejects of %s: %w", k, err)
	}
	if _, err := tx.ExecContext(ctx, l.q(`DELETE FROM `+l.prefix+`operations WHERE table_name = ? AND file_id = ?`), k.Table, k.FileID); err != nil {
		return fmt.Errorf("replace operation %s: %w", k, err)
	}
	return nil
}

// MarkReplaces records that operation k, just created, replaces the
// completed version of its file ID whose content digest is digest
// (Operation.Replaces).
func (l *Ledger) MarkReplaces(ctx context.Context, tx *sql.Tx, k Key, digest string) error {
	if _, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.prefix+`operations SET replaces = ? WHERE table_name = ? AND file_id = ?`),
		digest, k.Table, k.FileID); err != nil {
		return fmt.Errorf("record that %s replaces %s: %w", k, digest, err)
	}
	return nil
}

// Close sets operation k to state (Undone or Abandoned), ends any planning
// lease and drops its quarantined rows. Its identity and counters stay. A
// completed operation can be undone, never abandoned: Close to Abandoned
// fails with ErrCompleted, changing nothing.
func (l *Ledger) Close(ctx context.Context, tx *sql.Tx, k Key, state State) error {
	fence := ``
	if state != Undone {
		fence = ` AND state <> 'completed'`
	}
	res, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.prefix+`operations SET state = ?, lease_attempt = NULL, lease_expires = NULL,
		updated_at = `+l.d.Now()+` WHERE table_name = ? AND file_id = ?`+fence), string(state), k.Table, k.FileID)
	if err != nil {
		return fmt.Errorf("mark %s %s: %w", k, state, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("mark %s %s: %w", k, state, err)
	} else if n == 0 && fence != "" {
		return fmt.Errorf("mark %s %s: %w", k, state, ErrCompleted)
	}
	if _, err := tx.ExecContext(ctx, l.q(`DELETE FROM `+l.prefix+`rejects WHERE table_name = ? AND file_id = ?`), k.Table, k.FileID); err != nil {
		return fmt.Errorf("drop rejects of %s: %w", k, err)
	}
	return nil
}

// Record records a, an attempt that did its work within the caller's
// transaction (an undo), as started and ended with outcome.
func (l *Ledger) Record(ctx context.Context, tx *sql.Tx, k Key, a Attempt, outcome string) error {
	if err := l.insertAttempt(ctx, tx, k, a); err != nil {
		return err
	}
	return l.End(ctx, tx, a.ID, outcome, "", 0, 0)
}

// Reset prepares completed operation k to be applied again by a new
// attempt: it becomes processing with its counters at zero, keeping its
// stored plan; the rows its snapshot scope held are counted again. Applied
// again, it is no replacement any more (Operation.Replaces is cleared):
// what it replaced is gone.
func (l *Ledger) Reset(ctx context.Context, tx *sql.Tx, k Key) error {
	if _, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.prefix+`operations SET state = 'processing', outcome = NULL,
		completed_at = NULL, completed_by = NULL, updated_at = `+l.d.Now()+`, scope_rows = NULL, replaces = NULL,
		rows_read = 0, rows_inserted = 0, rows_updated = 0, rows_unchanged = 0, rows_stale = 0, rows_superseded = 0, rows_rejected = 0
		WHERE table_name = ? AND file_id = ?`), k.Table, k.FileID); err != nil {
		return fmt.Errorf("reset operation %s: %w", k, err)
	}
	return nil
}

// Restore sets operation k back to completed when it completed once (it
// records the attempt that completed it) but is processing or failed: a run
// of an earlier version that had decided to join it before it completed
// moved it back. Nothing of it is applied again; its stored outcome and
// counters are those of its completion. It reports whether it restored k.
// Reset clears the completer, so an operation applied again (--reapply) is
// never restored.
func (l *Ledger) Restore(ctx context.Context, tx *sql.Tx, k Key) (bool, error) {
	res, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.prefix+`operations SET state = 'completed', lease_attempt = NULL, lease_expires = NULL,
		updated_at = `+l.d.Now()+` WHERE table_name = ? AND file_id = ? AND state IN ('processing', 'failed')
		AND completed_by IS NOT NULL AND completed_at IS NOT NULL`), k.Table, k.FileID)
	if err != nil {
		return false, fmt.Errorf("restore %s to completed: %w", k, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Died records that attempt was found dead (its process gone, or its lease
// taken over), unless it already recorded how it ended.
func (l *Ledger) Died(ctx context.Context, q Querier, attempt string) error {
	if _, err := q.ExecContext(ctx, l.q(`UPDATE `+l.prefix+`attempts SET ended_at = `+l.d.Now()+`, outcome = 'died'
		WHERE attempt_id = ? AND ended_at IS NULL`), attempt); err != nil {
		return fmt.Errorf("record attempt %s died: %w", attempt, err)
	}
	return nil
}

// Past returns the past operations matching f (superseded, replaced, undone
// or abandoned operations that a newer one, or gc, replaced), newest first.
// Their UpdatedAt is when they were replaced.
func (l *Ledger) Past(ctx context.Context, f Filter) ([]Operation, error) {
	if ok, err := l.d.TableExists(ctx, l.db, l.prefix+"operations_past"); err != nil || !ok {
		return nil, err
	}
	where, args := f.where(l.prefix, l.prefix+"operations_past")
	replacedBy := `coalesce(replaced_by, '')`
	if ok, err := l.hasReplaceCols(ctx); err != nil {
		return nil, err
	} else if !ok {
		replacedBy = `''`
	}
	rows, err := l.db.QueryContext(ctx, l.q(`SELECT table_name, file_id, file_key, state, content_digest, mapping_digest, mapping,
		file_path, file_size, created_at, replaced_at, coalesce(completed_at, 0), coalesce(completed_by, ''), coalesce(outcome, ''),
		attempts, rows_read, rows_inserted, rows_updated, rows_unchanged, rows_stale, rows_superseded, rows_rejected,
		`+replacedBy+`
		FROM `+l.prefix+`operations_past`+where+` ORDER BY created_at DESC, table_name, file_id`), args...)
	if err != nil {
		return nil, fmt.Errorf("list past operations: %w", err)
	}
	defer rows.Close()
	var out []Operation
	for rows.Next() {
		var o Operation
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

// Seen records path as the last path operation k was seen under (a
// duplicate run of a file moved or renamed since it was imported), so that
// status shows the name a user knows it by. Its attempts keep the paths
// they ran on.
func (l *Ledger) Seen(ctx context.Context, q Querier, k Key, path string) error {
	if _, err := q.ExecContext(ctx, l.q(`UPDATE `+l.prefix+`operations SET file_path = ?
		WHERE table_name = ? AND file_id = ? AND file_path <> ?`), path, k.Table, k.FileID, path); err != nil {
		return fmt.Errorf("record the path of %s: %w", k, err)
	}
	return nil
}
