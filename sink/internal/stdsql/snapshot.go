package stdsql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
)

const snapshotColumns = `scope, as_of, file_id, applied_at, coalesce(marked_at, 0)`

func scanSnapshot(row *sql.Row, table string) (ledger.Snapshot, bool, error) {
	var s ledger.Snapshot
	err := row.Scan(&s.Scope, &s.AsOf, &s.FileID, &s.AppliedAt, &s.MarkedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Snapshot{}, false, nil
	}
	if err != nil {
		return ledger.Snapshot{}, false, fmt.Errorf("read snapshots of %s: %w", table, err)
	}
	return s, true, nil
}

// LastSnapshot implements ledger.Ops.
func (l Ledger) LastSnapshot(ctx context.Context, q idemtype.Querier, table string, scopes []string) (ledger.Snapshot, bool, error) {
	in := strings.TrimSuffix(strings.Repeat("?, ", len(scopes)), ", ")
	args := []any{table}
	for _, s := range scopes {
		args = append(args, s)
	}
	return scanSnapshot(q.QueryRowContext(ctx, l.q(`SELECT `+snapshotColumns+` FROM `+l.Prefix+`snapshots
		WHERE table_name = ? AND scope IN (`+in+`) ORDER BY as_of DESC, applied_at DESC, file_id DESC LIMIT 1`), args...), table)
}

// SnapshotOf implements ledger.Ops.
func (l Ledger) SnapshotOf(ctx context.Context, q idemtype.Querier, table, fileID string) (ledger.Snapshot, bool, error) {
	return scanSnapshot(q.QueryRowContext(ctx, l.q(`SELECT `+snapshotColumns+` FROM `+l.Prefix+`snapshots
		WHERE table_name = ? AND file_id = ? ORDER BY as_of DESC, applied_at DESC LIMIT 1`), table, fileID), table)
}

// RecordSnapshot implements ledger.Ops.
func (l Ledger) RecordSnapshot(ctx context.Context, tx *sql.Tx, table, scope string, asOf int64, fileID string, markedAt int64) error {
	var mark any
	if markedAt != 0 {
		mark = markedAt
	}
	_, err := tx.ExecContext(ctx, l.q(`INSERT INTO `+l.Prefix+`snapshots (table_name, scope, file_id, as_of, applied_at, marked_at)
		VALUES (?, ?, ?, ?, `+l.S.Now()+`, ?)
		ON CONFLICT (table_name, scope, file_id) DO UPDATE SET as_of = excluded.as_of, applied_at = excluded.applied_at, marked_at = excluded.marked_at`),
		table, scope, fileID, asOf, mark)
	if err != nil {
		return fmt.Errorf("record snapshot of %s: %w", table, err)
	}
	return nil
}

// ForgetSnapshot implements ledger.Ops.
func (l Ledger) ForgetSnapshot(ctx context.Context, tx *sql.Tx, table, fileID string) error {
	if _, err := tx.ExecContext(ctx, l.q(`DELETE FROM `+l.Prefix+`snapshots WHERE table_name = ? AND file_id = ?`), table, fileID); err != nil {
		return fmt.Errorf("forget snapshot %s of %s: %w", fileID, table, err)
	}
	return nil
}

// ScopeRows implements ledger.Ops.
func (l Ledger) ScopeRows(ctx context.Context, q idemtype.Querier, k ledger.Key) (int64, bool, error) {
	var v sql.NullInt64
	err := q.QueryRowContext(ctx, l.q(`SELECT scope_rows FROM `+l.Prefix+`operations WHERE table_name = ? AND file_id = ?`),
		k.Table, k.FileID).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read the rows in scope before %s: %w", k, err)
	}
	return v.Int64, v.Valid, nil
}

// RecordScopeRows implements ledger.Ops.
func (l Ledger) RecordScopeRows(ctx context.Context, tx *sql.Tx, k ledger.Key, n int64) error {
	if _, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`operations SET scope_rows = ?
		WHERE table_name = ? AND file_id = ? AND scope_rows IS NULL`), n, k.Table, k.FileID); err != nil {
		return fmt.Errorf("record the rows in scope before %s: %w", k, err)
	}
	return nil
}

// AddSwept implements ledger.Ops.
func (l Ledger) AddSwept(ctx context.Context, tx *sql.Tx, attempt string, n int64) error {
	if _, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`attempts SET rows_deleted = rows_deleted + ? WHERE attempt_id = ?`), n, attempt); err != nil {
		return fmt.Errorf("record sweep: %w", err)
	}
	return nil
}

// RecordSchemaChanges implements ledger.Ops.
func (l Ledger) RecordSchemaChanges(ctx context.Context, tx *sql.Tx, attempt, changes string) error {
	if _, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`attempts SET schema_changes = ? WHERE attempt_id = ?`), changes, attempt); err != nil {
		return fmt.Errorf("record schema changes: %w", err)
	}
	return nil
}

// Created implements ledger.Ops.
func (l Ledger) Created(ctx context.Context, q idemtype.Querier, k ledger.Key) ([]ledger.CreatedTable, error) {
	rows, err := q.QueryContext(ctx, l.q(`SELECT created, planned FROM `+l.Prefix+`created WHERE table_name = ? AND file_id = ? ORDER BY created`), k.Table, k.FileID)
	if err != nil {
		return nil, fmt.Errorf("read the tables %s created: %w", k, err)
	}
	defer rows.Close()
	var out []ledger.CreatedTable
	for rows.Next() {
		var c ledger.CreatedTable
		var planned int64
		if err := rows.Scan(&c.Name, &planned); err != nil {
			return nil, fmt.Errorf("read the tables %s created: %w", k, err)
		}
		c.Planned = planned != 0
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the tables %s created: %w", k, err)
	}
	return out, nil
}

// CreatedByOthers implements ledger.Ops.
func (l Ledger) CreatedByOthers(ctx context.Context, q idemtype.Querier, k ledger.Key, table string) (int64, error) {
	var n int64
	if err := q.QueryRowContext(ctx, l.q(`SELECT count(*) FROM `+l.Prefix+`created WHERE created = ? AND NOT (table_name = ? AND file_id = ?)`),
		table, k.Table, k.FileID).Scan(&n); err != nil {
		return 0, fmt.Errorf("read who created %s: %w", table, err)
	}
	return n, nil
}

// RecordCreated implements ledger.Ops.
func (l Ledger) RecordCreated(ctx context.Context, tx *sql.Tx, k ledger.Key, table string) error {
	if _, err := tx.ExecContext(ctx, l.q(`INSERT INTO `+l.Prefix+`created (table_name, file_id, created) VALUES (?, ?, ?)`), k.Table, k.FileID, table); err != nil {
		return fmt.Errorf("record that %s creates %s: %w", k, table, err)
	}
	return nil
}

// ForgetCreated implements ledger.Ops.
func (l Ledger) ForgetCreated(ctx context.Context, tx *sql.Tx, k ledger.Key, table string) error {
	if _, err := tx.ExecContext(ctx, l.q(`DELETE FROM `+l.Prefix+`created WHERE table_name = ? AND file_id = ? AND created = ?`), k.Table, k.FileID, table); err != nil {
		return fmt.Errorf("forget that %s created %s: %w", k, table, err)
	}
	return nil
}

// PlanCreated implements ledger.Ops.
func (l Ledger) PlanCreated(ctx context.Context, tx *sql.Tx, k ledger.Key) error {
	if _, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`created SET planned = 1 WHERE table_name = ? AND file_id = ? AND planned = 0`), k.Table, k.FileID); err != nil {
		return fmt.Errorf("record the tables %s created as planned: %w", k, err)
	}
	return nil
}
