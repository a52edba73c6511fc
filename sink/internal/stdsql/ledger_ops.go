package stdsql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink"
)

const opColumns = `table_name, file_id, file_key, state, content_digest, mapping_digest, mapping,
	file_path, file_size, planned, coalesce(lease_attempt, ''), coalesce(lease_expires, 0),
	created_at, updated_at, coalesce(completed_at, 0), coalesce(completed_by, ''), coalesce(outcome, ''),
	attempts, rows_read, rows_inserted, rows_updated, rows_unchanged, rows_stale, rows_superseded, rows_rejected`

// opCols are the columns scanOp reads, for a ledger with or without the
// columns of replacements.
func opCols(replaces bool) string {
	if replaces {
		return opColumns + `, coalesce(replaces, '')`
	}
	return opColumns + `, ''`
}

func scanOp(sc interface{ Scan(...any) error }) (ledger.Operation, error) {
	var o ledger.Operation
	var planned int64
	err := sc.Scan(&o.Table, &o.FileID, &o.FileKey, &o.State, &o.ContentDigest, &o.MappingDigest, &o.Mapping,
		&o.Path, &o.Size, &planned, &o.LeaseAttempt, &o.LeaseExpires,
		&o.CreatedAt, &o.UpdatedAt, &o.CompletedAt, &o.CompletedBy, &o.Outcome,
		&o.Attempts, &o.Rows.Read, &o.Rows.Inserted, &o.Rows.Updated, &o.Rows.Unchanged, &o.Rows.Stale, &o.Rows.Superseded, &o.Rows.Rejected,
		&o.Replaces)
	o.Planned = planned != 0
	return o, err
}

// Clock implements ledger.Ops.
func (l Ledger) Clock(ctx context.Context, q idemtype.Querier) (int64, error) {
	var now int64
	if err := q.QueryRowContext(ctx, `SELECT `+l.S.Now()).Scan(&now); err != nil {
		return 0, fmt.Errorf("read clock: %w", err)
	}
	return now, nil
}

// Operation implements ledger.Ops.
func (l Ledger) Operation(ctx context.Context, q idemtype.Querier, k ledger.Key, replaces bool) (ledger.Operation, bool, error) {
	row := q.QueryRowContext(ctx, l.q(`SELECT `+opCols(replaces)+` FROM `+l.Prefix+`operations WHERE table_name = ? AND file_id = ?`), k.Table, k.FileID)
	op, err := scanOp(row)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Operation{}, false, nil
	}
	if err != nil {
		return ledger.Operation{}, false, fmt.Errorf("read operation %s: %w", k, err)
	}
	return op, true, nil
}

// RecordFileKey implements ledger.Ops.
func (l Ledger) RecordFileKey(ctx context.Context, tx *sql.Tx, fileKey int64, fileID string) (string, error) {
	if _, err := tx.ExecContext(ctx, l.q(`INSERT INTO `+l.Prefix+`files (file_key, file_id) VALUES (?, ?) ON CONFLICT (file_key) DO NOTHING`),
		fileKey, fileID); err != nil {
		return "", fmt.Errorf("record file key: %w", err)
	}
	var owner string
	if err := tx.QueryRowContext(ctx, l.q(`SELECT file_id FROM `+l.Prefix+`files WHERE file_key = ?`), fileKey).Scan(&owner); err != nil {
		return "", fmt.Errorf("read file key: %w", err)
	}
	return owner, nil
}

// CreateOperation implements ledger.Ops.
func (l Ledger) CreateOperation(ctx context.Context, tx *sql.Tx, id ledger.Identity, attempt string, leaseMs int64) error {
	now := l.S.Now()
	_, err := tx.ExecContext(ctx, l.q(`INSERT INTO `+l.Prefix+`operations
		(table_name, file_id, file_key, state, content_digest, mapping_digest, mapping, file_path, file_size,
		 lease_attempt, lease_expires, created_at, updated_at, attempts)
		VALUES (?, ?, ?, 'processing', ?, ?, ?, ?, ?, ?, `+now+` + ?, `+now+`, `+now+`, 1)`),
		id.Table, id.FileID, id.FileKey, id.ContentDigest, id.MappingDigest, id.Mapping, id.Path, id.Size, attempt, leaseMs)
	if err != nil {
		return fmt.Errorf("create operation %s: %w", id.Key, err)
	}
	return nil
}

// RecordAttempt implements ledger.Ops.
func (l Ledger) RecordAttempt(ctx context.Context, tx *sql.Tx, k ledger.Key, a ledger.Attempt) error {
	now := l.S.Now()
	var rec any
	if a.RecoveredFrom != "" {
		rec = a.RecoveredFrom
	}
	// The clock is read once: a new attempt's first heartbeat is its start
	// (PostgreSQL's clock_timestamp() read twice in one statement can differ).
	_, err := tx.ExecContext(ctx, l.q(`INSERT INTO `+l.Prefix+`attempts
		(attempt_id, table_name, file_id, trigger, host, pid, proc_start, file_path, started_at, heartbeat_at, recovered_from)
		SELECT ?, ?, ?, ?, ?, ?, ?, ?, clock.now, clock.now, ? FROM (SELECT `+now+` AS now) AS clock`),
		a.ID, k.Table, k.FileID, a.Trigger, a.Host, a.PID, int64(a.ProcStart), a.Path, rec)
	if err != nil {
		return fmt.Errorf("record attempt %s: %w", a.ID, err)
	}
	return nil
}

// StartOperation implements ledger.Ops.
func (l Ledger) StartOperation(ctx context.Context, tx *sql.Tx, k ledger.Key, attempt string, plan bool, leaseMs int64) (bool, error) {
	lease := ``
	args := []any{}
	if plan {
		// Nothing was applied before a plan exists: counters left by a
		// refusal start again from zero.
		lease = `, lease_attempt = ?, lease_expires = ` + l.S.Now() + ` + ?, outcome = NULL,
			rows_read = 0, rows_inserted = 0, rows_updated = 0, rows_unchanged = 0, rows_stale = 0, rows_superseded = 0, rows_rejected = 0`
		args = append(args, attempt, leaseMs)
	}
	args = append(args, k.Table, k.FileID)
	res, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`operations SET state = 'processing', attempts = attempts + 1,
		updated_at = `+l.S.Now()+lease+` WHERE table_name = ? AND file_id = ? AND state <> 'completed'`), args...)
	return one(res, err, "start attempt on "+k.String())
}

// MarkPlanned implements ledger.Ops.
func (l Ledger) MarkPlanned(ctx context.Context, tx *sql.Tx, k ledger.Key, attempt string) (bool, error) {
	res, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`operations SET planned = 1, lease_attempt = NULL, lease_expires = NULL,
		updated_at = `+l.S.Now()+` WHERE table_name = ? AND file_id = ? AND lease_attempt = ?`), k.Table, k.FileID, attempt)
	return one(res, err, "mark planned")
}

// RecordRefusal implements ledger.Ops.
func (l Ledger) RecordRefusal(ctx context.Context, tx *sql.Tx, k ledger.Key, attempt, report string, rows idemtype.Rows) (bool, error) {
	res, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`operations SET state = 'refused', outcome = ?,
		lease_attempt = NULL, lease_expires = NULL, rows_read = ?, rows_rejected = ?, updated_at = `+l.S.Now()+`
		WHERE table_name = ? AND file_id = ? AND lease_attempt = ?`), report, rows.Read, rows.Rejected, k.Table, k.FileID, attempt)
	return one(res, err, "record refusal")
}

// RecordLateRefusal implements ledger.Ops.
func (l Ledger) RecordLateRefusal(ctx context.Context, tx *sql.Tx, k ledger.Key, report string) (bool, error) {
	res, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`operations SET state = 'refused', outcome = ?,
		lease_attempt = NULL, lease_expires = NULL, updated_at = `+l.S.Now()+`
		WHERE table_name = ? AND file_id = ? AND state <> 'completed'`), report, k.Table, k.FileID)
	return one(res, err, "record refusal")
}

// Count implements ledger.Ops.
func (l Ledger) Count(ctx context.Context, tx *sql.Tx, k ledger.Key, attempt string, r idemtype.Rows, partitions int) error {
	stmt, args := CountAttemptStatement(l.S, l.Prefix, attempt, r, partitions)
	if _, err := tx.ExecContext(ctx, l.q(stmt), args...); err != nil {
		return fmt.Errorf("count attempt: %w", err)
	}
	stmt, args = CountOperationStatement(l.S, l.Prefix, k, r)
	if _, err := tx.ExecContext(ctx, l.q(stmt), args...); err != nil {
		return fmt.Errorf("count operation: %w", err)
	}
	return nil
}

// countSet is the SET list that adds the counters of rows to an attempt's
// or an operation's, and countArgs its arguments.
const countSet = `rows_read = rows_read + ?, rows_inserted = rows_inserted + ?, rows_updated = rows_updated + ?,
		rows_unchanged = rows_unchanged + ?, rows_stale = rows_stale + ?, rows_superseded = rows_superseded + ?, rows_rejected = rows_rejected + ?`

func countArgs(r idemtype.Rows) []any {
	return []any{r.Read, r.Inserted, r.Updated, r.Unchanged, r.Stale, r.Superseded, r.Rejected}
}

// CountAttemptStatement is Count's statement on attempt's row of the
// attempts table prefix places, with ? placeholders (not rebound), and its
// arguments: it adds r and partitions committed partitions to the
// attempt's counters and renews its heartbeat. It ends with its WHERE
// clause, so that a driver may add a condition (AND …) or a RETURNING (see
// CompleteStatement).
func CountAttemptStatement(s Spelling, prefix, attempt string, r idemtype.Rows, partitions int) (string, []any) {
	return `UPDATE ` + prefix + `attempts SET ` + countSet + `, partitions_committed = partitions_committed + ?,
		heartbeat_at = ` + s.Now() + ` WHERE attempt_id = ?`, append(countArgs(r), partitions, attempt)
}

// CountOperationStatement is Count's statement on operation k's row of the
// operations table prefix places, with ? placeholders (not rebound), and
// its arguments: it adds r to the operation's counters and renews its
// updated_at. It ends with its WHERE clause, as CountAttemptStatement.
func CountOperationStatement(s Spelling, prefix string, k ledger.Key, r idemtype.Rows) (string, []any) {
	return `UPDATE ` + prefix + `operations SET ` + countSet + `, updated_at = ` + s.Now() + `
		WHERE table_name = ? AND file_id = ?`, append(countArgs(r), k.Table, k.FileID)
}

// CompleteOperation implements ledger.Ops.
func (l Ledger) CompleteOperation(ctx context.Context, tx *sql.Tx, k ledger.Key, attempt, outcome string) (bool, error) {
	res, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`operations SET state = 'completed', outcome = ?, completed_by = ?,
		completed_at = `+l.S.Now()+`, updated_at = `+l.S.Now()+`, lease_attempt = NULL, lease_expires = NULL
		WHERE table_name = ? AND file_id = ? AND state <> 'completed'`), outcome, attempt, k.Table, k.FileID)
	if err != nil {
		return false, fmt.Errorf("complete operation: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// OperationState implements ledger.Ops.
func (l Ledger) OperationState(ctx context.Context, q idemtype.Querier, k ledger.Key) (ledger.State, error) {
	var state ledger.State
	err := q.QueryRowContext(ctx, l.q(`SELECT state FROM `+l.Prefix+`operations WHERE table_name = ? AND file_id = ?`), k.Table, k.FileID).Scan(&state)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("read operation %s: %w", k, err)
	}
	return state, nil
}

// ReleaseLease implements ledger.Ops.
func (l Ledger) ReleaseLease(ctx context.Context, q idemtype.Querier, k ledger.Key, attempt string) error {
	if _, err := q.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`operations SET lease_attempt = NULL, lease_expires = NULL,
		updated_at = `+l.S.Now()+` WHERE table_name = ? AND file_id = ? AND lease_attempt = ?`), k.Table, k.FileID, attempt); err != nil {
		return fmt.Errorf("release planning lease: %w", err)
	}
	return nil
}

// MarkFailed implements ledger.Ops.
func (l Ledger) MarkFailed(ctx context.Context, q idemtype.Querier, k ledger.Key) error {
	if _, err := q.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`operations SET state = 'failed', updated_at = `+l.S.Now()+`
		WHERE table_name = ? AND file_id = ? AND state = 'processing' AND (lease_attempt IS NULL OR lease_expires < `+l.S.Now()+`)`),
		k.Table, k.FileID); err != nil {
		return fmt.Errorf("mark failed: %w", err)
	}
	return nil
}

// EndAttempt implements ledger.Ops.
func (l Ledger) EndAttempt(ctx context.Context, q idemtype.Querier, attempt, outcome, errMsg string, skipped, recovered int64) (bool, error) {
	var e any
	fence := ``
	if errMsg != "" {
		e = errMsg
		fence = ` AND NOT EXISTS (SELECT 1 FROM ` + l.Prefix + `operations o WHERE o.table_name = ` + l.Prefix + `attempts.table_name
			AND o.file_id = ` + l.Prefix + `attempts.file_id AND o.state = 'completed' AND o.completed_by = ` + l.Prefix + `attempts.attempt_id)`
	}
	res, err := q.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`attempts SET ended_at = `+l.S.Now()+`, outcome = ?, error = ?,
		partitions_skipped = ?, recovered_leases = ? WHERE attempt_id = ?`+fence), outcome, e, skipped, recovered, attempt)
	if err != nil {
		return false, fmt.Errorf("end attempt: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("end attempt: %w", err)
	}
	return n > 0, nil
}

// AttemptExists implements ledger.Ops.
func (l Ledger) AttemptExists(ctx context.Context, q idemtype.Querier, attempt string) (bool, error) {
	var known int64
	if err := q.QueryRowContext(ctx, l.q(`SELECT count(*) FROM `+l.Prefix+`attempts WHERE attempt_id = ?`), attempt).Scan(&known); err != nil {
		return false, fmt.Errorf("end attempt: %w", err)
	}
	return known > 0, nil
}

// Heartbeat implements ledger.Ops.
func (l Ledger) Heartbeat(ctx context.Context, q idemtype.Querier, k ledger.Key, attempt string, leaseMs int64) error {
	if _, err := q.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`operations SET lease_expires = `+l.S.Now()+` + ?
		WHERE table_name = ? AND file_id = ? AND lease_attempt = ?`), leaseMs, k.Table, k.FileID, attempt); err != nil {
		return fmt.Errorf("renew planning lease: %w", err)
	}
	if _, err := q.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`attempts SET heartbeat_at = `+l.S.Now()+` WHERE attempt_id = ?`), attempt); err != nil {
		return fmt.Errorf("record heartbeat: %w", err)
	}
	return nil
}

// Retract implements ledger.Ops.
func (l Ledger) Retract(ctx context.Context, tx *sql.Tx, k ledger.Key, attempt string) (bool, error) {
	res, err := tx.ExecContext(ctx, l.q(`DELETE FROM `+l.Prefix+`operations
		WHERE table_name = ? AND file_id = ? AND planned = 0 AND lease_attempt = ?`), k.Table, k.FileID, attempt)
	if held, err := one(res, err, "retract operation"); err != nil || !held {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, l.q(`DELETE FROM `+l.Prefix+`attempts WHERE table_name = ? AND file_id = ?`), k.Table, k.FileID); err != nil {
		return false, fmt.Errorf("retract attempts: %w", err)
	}
	return true, nil
}

// Process implements ledger.Ops.
func (l Ledger) Process(ctx context.Context, q idemtype.Querier, attempt string) (host string, pid int, start uint64, found bool, err error) {
	var st int64
	err = q.QueryRowContext(ctx, l.q(`SELECT host, pid, proc_start FROM `+l.Prefix+`attempts WHERE attempt_id = ?`), attempt).Scan(&host, &pid, &st)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, 0, false, nil
	}
	if err != nil {
		return "", 0, 0, false, fmt.Errorf("read attempt %s: %w", attempt, err)
	}
	return host, pid, uint64(st), true, nil
}

// ExpireLease implements ledger.Ops.
func (l Ledger) ExpireLease(ctx context.Context, q idemtype.Querier, k ledger.Key, attempt string) error {
	if _, err := q.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`operations SET lease_expires = 0
		WHERE table_name = ? AND file_id = ? AND lease_attempt = ?`), k.Table, k.FileID, attempt); err != nil {
		return fmt.Errorf("expire planning lease: %w", err)
	}
	return nil
}

// Running implements ledger.Ops.
func (l Ledger) Running(ctx context.Context, q idemtype.Querier) ([]ledger.Attempt, error) {
	rows, err := q.QueryContext(ctx, l.q(`SELECT a.attempt_id, a.trigger, a.host, a.pid, a.proc_start, a.file_path, coalesce(a.recovered_from, '')
		FROM `+l.Prefix+`attempts a JOIN `+l.Prefix+`operations o ON o.table_name = a.table_name AND o.file_id = a.file_id
		WHERE a.ended_at IS NULL AND o.state = 'processing' ORDER BY a.started_at, a.attempt_id`))
	if err != nil {
		return nil, fmt.Errorf("list running attempts: %w", err)
	}
	defer rows.Close()
	var out []ledger.Attempt
	for rows.Next() {
		var a ledger.Attempt
		var start int64
		if err := rows.Scan(&a.ID, &a.Trigger, &a.Host, &a.PID, &start, &a.Path, &a.RecoveredFrom); err != nil {
			return nil, fmt.Errorf("list running attempts: %w", err)
		}
		a.ProcStart = uint64(start)
		out = append(out, a)
	}
	return out, rows.Err()
}

// List implements ledger.Ops.
func (l Ledger) List(ctx context.Context, q idemtype.Querier, f ledger.Filter, replaces bool) ([]ledger.Operation, error) {
	where, args := where(f, l.Prefix, l.Prefix+"operations")
	rows, err := q.QueryContext(ctx, l.q(`SELECT `+opCols(replaces)+` FROM `+l.Prefix+`operations`+where+
		` ORDER BY created_at DESC, table_name, file_id`), args...)
	if err != nil {
		return nil, fmt.Errorf("list operations: %w", err)
	}
	defer rows.Close()
	var out []ledger.Operation
	for rows.Next() {
		op, err := scanOp(rows)
		if err != nil {
			return nil, fmt.Errorf("list operations: %w", err)
		}
		out = append(out, op)
	}
	return out, rows.Err()
}

// Attempts implements ledger.Ops.
func (l Ledger) Attempts(ctx context.Context, q idemtype.Querier, k ledger.Key) ([]ledger.AttemptRecord, error) {
	rows, err := q.QueryContext(ctx, l.q(`SELECT attempt_id, trigger, host, pid, file_path, coalesce(recovered_from, ''),
		table_name, file_id, started_at, heartbeat_at, coalesce(ended_at, 0), coalesce(outcome, ''), coalesce(error, ''),
		rows_read, rows_inserted, rows_updated, rows_unchanged, rows_stale, rows_superseded, rows_rejected,
		partitions_skipped, partitions_committed, recovered_leases, rows_deleted, coalesce(schema_changes, ''), coalesce(proc_start, 0)
		FROM `+l.Prefix+`attempts WHERE table_name = ? AND file_id = ? ORDER BY started_at, attempt_id`), k.Table, k.FileID)
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	defer rows.Close()
	var out []ledger.AttemptRecord
	for rows.Next() {
		var a ledger.AttemptRecord
		var start int64
		if err := rows.Scan(&a.ID, &a.Trigger, &a.Host, &a.PID, &a.Path, &a.RecoveredFrom,
			&a.Table, &a.FileID, &a.StartedAt, &a.HeartbeatAt, &a.EndedAt, &a.Outcome, &a.Error,
			&a.Rows.Read, &a.Rows.Inserted, &a.Rows.Updated, &a.Rows.Unchanged, &a.Rows.Stale, &a.Rows.Superseded, &a.Rows.Rejected,
			&a.Partitions.Skipped, &a.Partitions.Committed, &a.Recovered, &a.Deleted, &a.SchemaChanges, &start); err != nil {
			return nil, fmt.Errorf("list attempts: %w", err)
		}
		a.ProcStart = uint64(start)
		out = append(out, a)
	}
	return out, rows.Err()
}

// StoreRejects implements ledger.Ops.
func (l Ledger) StoreRejects(ctx context.Context, tx *sql.Tx, k ledger.Key, attempt string, rs []ledger.Reject) error {
	if len(rs) == 0 {
		return nil
	}
	row := `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ` + l.S.Now() + `)`
	args := make([]any, 0, 11*len(rs))
	for _, r := range rs {
		args = append(args, k.Table, k.FileID, r.Ordinal, r.Offset, r.Column, r.Value, r.Row, nullable(r.Fields), r.Code, r.Message, attempt)
	}
	if _, err := tx.ExecContext(ctx, l.q(`INSERT INTO `+l.Prefix+`rejects
		(table_name, file_id, ordinal, byte_offset, column_name, raw_value, raw_row, raw_fields, code, message, attempt_id, created_at)
		VALUES `+strings.Repeat(row+`, `, len(rs)-1)+row+` ON CONFLICT DO NOTHING`), args...); err != nil {
		ords := make([]int64, len(rs))
		for i, r := range rs {
			ords[i] = r.Ordinal
		}
		return fmt.Errorf("store rejects of %s: %w", sink.RowSpan(ords), err)
	}
	return nil
}

// nullable stores "" as NULL.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Rejects implements ledger.Ops.
func (l Ledger) Rejects(ctx context.Context, q idemtype.Querier, k ledger.Key) ([]ledger.Reject, error) {
	rows, err := q.QueryContext(ctx, l.q(`SELECT ordinal, byte_offset, coalesce(column_name, ''), coalesce(raw_value, ''),
		coalesce(raw_row, ''), coalesce(raw_fields, ''), code, message, attempt_id, coalesce(replayed_by, ''), coalesce(replayed_at, 0)
		FROM `+l.Prefix+`rejects WHERE table_name = ? AND file_id = ? ORDER BY ordinal`), k.Table, k.FileID)
	if err != nil {
		return nil, fmt.Errorf("list rejects: %w", err)
	}
	defer rows.Close()
	var out []ledger.Reject
	for rows.Next() {
		var r ledger.Reject
		if err := rows.Scan(&r.Ordinal, &r.Offset, &r.Column, &r.Value, &r.Row, &r.Fields, &r.Code, &r.Message, &r.Attempt, &r.ReplayedBy, &r.ReplayedAt); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
