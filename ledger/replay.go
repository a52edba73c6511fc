package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/idemport/idemport/idemtype"
)

// NotRejected returns those of ordinals that are not stored rejects of
// operation k: replay applies only rows that were quarantined.
func (l *Ledger) NotRejected(ctx context.Context, q Querier, k Key, ordinals []int64) ([]int64, error) {
	have := map[int64]bool{}
	for start := 0; start < len(ordinals); start += 500 {
		chunk := ordinals[start:min(start+500, len(ordinals))]
		args := []any{k.Table, k.FileID}
		for _, o := range chunk {
			args = append(args, o)
		}
		rows, err := q.QueryContext(ctx, l.q(`SELECT ordinal FROM `+l.prefix+`rejects WHERE table_name = ? AND file_id = ?
			AND ordinal IN (`+strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ",")+`)`), args...)
		if err != nil {
			return nil, fmt.Errorf("read rejects: %w", err)
		}
		for rows.Next() {
			var o int64
			if err := rows.Scan(&o); err != nil {
				rows.Close()
				return nil, err
			}
			have[o] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	var missing []int64
	for _, o := range ordinals {
		if !have[o] {
			missing = append(missing, o)
		}
	}
	return missing, nil
}

// StartReplay records a as an attempt on the completed operation k that
// applies corrected rejects; the operation's state and outcome stay.
func (l *Ledger) StartReplay(ctx context.Context, tx *sql.Tx, k Key, a Attempt) error {
	return l.insertAttempt(ctx, tx, k, a)
}

// Replayed marks the rejects at ordinals of k as applied by attempt and
// adds the replay's counters to the attempt (not to the operation, whose
// counters describe the import of the file).
func (l *Ledger) Replayed(ctx context.Context, tx *sql.Tx, k Key, attempt string, ordinals []int64, r idemtype.Rows) error {
	stmt, err := tx.PrepareContext(ctx, l.q(`UPDATE `+l.prefix+`rejects SET replayed_by = ?, replayed_at = `+l.d.Now()+`
		WHERE table_name = ? AND file_id = ? AND ordinal = ?`))
	if err != nil {
		return fmt.Errorf("mark rejects replayed: %w", err)
	}
	defer stmt.Close()
	for _, o := range ordinals {
		if _, err := stmt.ExecContext(ctx, attempt, k.Table, k.FileID, o); err != nil {
			return fmt.Errorf("mark reject %d replayed: %w", o, err)
		}
	}
	if _, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.prefix+`attempts SET rows_read = rows_read + ?, rows_inserted = rows_inserted + ?,
		rows_updated = rows_updated + ?, rows_unchanged = rows_unchanged + ?, rows_stale = rows_stale + ?,
		heartbeat_at = `+l.d.Now()+` WHERE attempt_id = ?`), r.Read, r.Inserted, r.Updated, r.Unchanged, r.Stale, attempt); err != nil {
		return fmt.Errorf("count replay: %w", err)
	}
	return nil
}

// DropRejectPayloads clears the raw values and rows of k's rejects, keeping
// their ordinals, codes and reasons. It returns how many it cleared.
func (l *Ledger) DropRejectPayloads(ctx context.Context, tx *sql.Tx, k Key) (int64, error) {
	res, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.prefix+`rejects SET raw_value = NULL, raw_row = NULL, raw_fields = NULL
		WHERE table_name = ? AND file_id = ? AND (raw_value IS NOT NULL OR raw_row IS NOT NULL OR raw_fields IS NOT NULL)`), k.Table, k.FileID)
	if err != nil {
		return 0, fmt.Errorf("drop reject payloads: %w", err)
	}
	return res.RowsAffected()
}
