package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Snapshot is a snapshot applied to a table's scope: the record its
// sweep made, one per operation.
type Snapshot struct {
	Scope     string // the scope's canonical text
	AsOf      int64  // Unix milliseconds: what the snapshot's data was as of
	FileID    string
	AppliedAt int64 // Unix milliseconds
	// MarkedAt is the deletion mark its soft sweep set, in Unix
	// microseconds; 0 for a hard sweep, or one recorded before marks were.
	MarkedAt int64
}

const snapshotColumns = `scope, as_of, file_id, applied_at, coalesce(marked_at, 0)`

func scanSnapshot(row *sql.Row, table string) (*Snapshot, error) {
	var s Snapshot
	err := row.Scan(&s.Scope, &s.AsOf, &s.FileID, &s.AppliedAt, &s.MarkedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read snapshots of %s: %w", table, err)
	}
	return &s, nil
}

// LastSnapshot returns the snapshot current for a scope of table: of those
// recorded under any of scopes (one scope spelt as this version and as
// earlier ones did), the one with the latest as-of time, the last applied
// among equals; nil when there is none. Undone snapshots are not recorded
// (ForgetSnapshot), so undoing the current one makes the one before it
// current again.
func (l *Ledger) LastSnapshot(ctx context.Context, q Querier, table string, scopes ...string) (*Snapshot, error) {
	if len(scopes) == 0 {
		scopes = []string{""}
	}
	in := strings.TrimSuffix(strings.Repeat("?, ", len(scopes)), ", ")
	args := []any{table}
	for _, s := range scopes {
		args = append(args, s)
	}
	return scanSnapshot(q.QueryRowContext(ctx, l.q(`SELECT `+snapshotColumns+` FROM `+l.prefix+`snapshots
		WHERE table_name = ? AND scope IN (`+in+`) ORDER BY as_of DESC, applied_at DESC, file_id DESC LIMIT 1`), args...), table)
}

// SnapshotOf returns the snapshot that the operation of fileID applied to
// table, or nil when it applied none (it never swept, or was undone).
func (l *Ledger) SnapshotOf(ctx context.Context, q Querier, table, fileID string) (*Snapshot, error) {
	return scanSnapshot(q.QueryRowContext(ctx, l.q(`SELECT `+snapshotColumns+` FROM `+l.prefix+`snapshots
		WHERE table_name = ? AND file_id = ? ORDER BY as_of DESC, applied_at DESC LIMIT 1`), table, fileID), table)
}

// RecordSnapshot records, inside tx, that the snapshot of fileID as of asOf
// (Unix milliseconds) was applied to scope of table, its soft sweep having
// marked rows with markedAt (Unix microseconds; 0 for a hard sweep). A
// snapshot applied again (--reapply) replaces its record.
func (l *Ledger) RecordSnapshot(ctx context.Context, tx *sql.Tx, table, scope string, asOf int64, fileID string, markedAt int64) error {
	var mark any
	if markedAt != 0 {
		mark = markedAt
	}
	_, err := tx.ExecContext(ctx, l.q(`INSERT INTO `+l.prefix+`snapshots (table_name, scope, file_id, as_of, applied_at, marked_at)
		VALUES (?, ?, ?, ?, `+l.d.Now()+`, ?)
		ON CONFLICT (table_name, scope, file_id) DO UPDATE SET as_of = excluded.as_of, applied_at = excluded.applied_at, marked_at = excluded.marked_at`),
		table, scope, fileID, asOf, mark)
	if err != nil {
		return fmt.Errorf("record snapshot of %s: %w", table, err)
	}
	return nil
}

// ForgetSnapshot removes, inside tx, the record of the snapshot the
// operation of fileID applied to table (under whatever scope), so that it
// no longer counts as applied.
func (l *Ledger) ForgetSnapshot(ctx context.Context, tx *sql.Tx, table, fileID string) error {
	if _, err := tx.ExecContext(ctx, l.q(`DELETE FROM `+l.prefix+`snapshots WHERE table_name = ? AND file_id = ?`), table, fileID); err != nil {
		return fmt.Errorf("forget snapshot %s of %s: %w", fileID, table, err)
	}
	return nil
}

// ScopeRows returns the live rows the snapshot scope of operation k held
// before the operation wrote any, as RecordScopeRows stored them; ok is
// false when none is stored.
func (l *Ledger) ScopeRows(ctx context.Context, q Querier, k Key) (n int64, ok bool, err error) {
	var v sql.NullInt64
	err = q.QueryRowContext(ctx, l.q(`SELECT scope_rows FROM `+l.prefix+`operations WHERE table_name = ? AND file_id = ?`),
		k.Table, k.FileID).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read the rows in scope before %s: %w", k, err)
	}
	return v.Int64, v.Valid, nil
}

// RecordScopeRows stores, inside tx, n as the live rows the snapshot scope
// of operation k held before it wrote any, unless a number is stored
// already: the first transaction to write counts, and the count commits
// with its writes.
func (l *Ledger) RecordScopeRows(ctx context.Context, tx *sql.Tx, k Key, n int64) error {
	if _, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.prefix+`operations SET scope_rows = ?
		WHERE table_name = ? AND file_id = ? AND scope_rows IS NULL`), n, k.Table, k.FileID); err != nil {
		return fmt.Errorf("record the rows in scope before %s: %w", k, err)
	}
	return nil
}

// Swept records, inside tx, that attempt's snapshot sweep removed n rows.
func (l *Ledger) Swept(ctx context.Context, tx *sql.Tx, attempt string, n int64) error {
	if _, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.prefix+`attempts SET rows_deleted = rows_deleted + ? WHERE attempt_id = ?`), n, attempt); err != nil {
		return fmt.Errorf("record sweep: %w", err)
	}
	return nil
}

// SchemaChanged records, inside tx, the schema changes attempt made, in
// words.
func (l *Ledger) SchemaChanged(ctx context.Context, tx *sql.Tx, attempt, changes string) error {
	if _, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.prefix+`attempts SET schema_changes = ? WHERE attempt_id = ?`), changes, attempt); err != nil {
		return fmt.Errorf("record schema changes: %w", err)
	}
	return nil
}
