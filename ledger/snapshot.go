package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Snapshot is the last snapshot applied to a table's scope.
type Snapshot struct {
	AsOf      int64 // Unix milliseconds: what the snapshot's data was as of
	FileID    string
	AppliedAt int64 // Unix milliseconds
}

// LastSnapshot returns the last snapshot applied to a scope of table, as
// recorded under any of scopes (one scope spelt as this version and as
// earlier ones did), or nil when there is none.
func (l *Ledger) LastSnapshot(ctx context.Context, q Querier, table string, scopes ...string) (*Snapshot, error) {
	if len(scopes) == 0 {
		scopes = []string{""}
	}
	in := strings.TrimSuffix(strings.Repeat("?, ", len(scopes)), ", ")
	args := []any{table}
	for _, s := range scopes {
		args = append(args, s)
	}
	var s Snapshot
	err := q.QueryRowContext(ctx, l.q(`SELECT as_of, file_id, applied_at FROM `+l.prefix+`snapshots
		WHERE table_name = ? AND scope IN (`+in+`) ORDER BY as_of DESC, applied_at DESC LIMIT 1`), args...).Scan(&s.AsOf, &s.FileID, &s.AppliedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read last snapshot of %s: %w", table, err)
	}
	return &s, nil
}

// RecordSnapshot records, inside tx, that the snapshot of fileID as of asOf
// (Unix milliseconds) was applied to scope of table.
func (l *Ledger) RecordSnapshot(ctx context.Context, tx *sql.Tx, table, scope string, asOf int64, fileID string) error {
	_, err := tx.ExecContext(ctx, l.q(`INSERT INTO `+l.prefix+`snapshots (table_name, scope, as_of, file_id, applied_at)
		VALUES (?, ?, ?, ?, `+l.d.Now()+`)
		ON CONFLICT (table_name, scope) DO UPDATE SET as_of = excluded.as_of, file_id = excluded.file_id, applied_at = excluded.applied_at`),
		table, scope, asOf, fileID)
	if err != nil {
		return fmt.Errorf("record snapshot of %s: %w", table, err)
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
