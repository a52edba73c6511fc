package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/idemport/idemport/idemtype"
)

// Filter selects operations for List. Empty fields select everything.
type Filter struct {
	Table  string
	FileID string
	State  State
	Digest string // content digest
	// Path selects operations last seen under this path or attempted under
	// it: a file is found by a name it had even after it was moved away.
	Path string
	// FileIDPrefix selects operations whose file ID starts with it.
	FileIDPrefix string
}

// List returns the operations matching f, newest first. A ledger whose
// tables do not exist has none.
func (l *Ledger) List(ctx context.Context, f Filter) ([]Operation, error) {
	if ok, err := l.d.TableExists(ctx, l.db, l.prefix+"operations"); err != nil || !ok {
		return nil, err
	}
	where, args := f.where(l.prefix, l.prefix+"operations")
	cols, err := l.opColumns(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := l.db.QueryContext(ctx, l.q(`SELECT `+cols+` FROM `+l.prefix+`operations`+where+
		` ORDER BY created_at DESC, table_name, file_id`), args...)
	if err != nil {
		return nil, fmt.Errorf("list operations: %w", err)
	}
	defer rows.Close()
	var out []Operation
	for rows.Next() {
		op, err := scanOp(rows)
		if err != nil {
			return nil, fmt.Errorf("list operations: %w", err)
		}
		out = append(out, *op)
	}
	return out, rows.Err()
}

// where renders f as a WHERE clause on table (empty when f selects
// everything) and its arguments.
func (f Filter) where(prefix, table string) (string, []any) {
	var where []string
	var args []any
	add := func(col, v string) {
		if v != "" {
			where = append(where, table+"."+col+" = ?")
			args = append(args, v)
		}
	}
	add("table_name", f.Table)
	add("file_id", f.FileID)
	add("state", string(f.State))
	add("content_digest", f.Digest)
	if f.Path != "" {
		where = append(where, `(`+table+`.file_path = ? OR EXISTS (SELECT 1 FROM `+prefix+`attempts a
			WHERE a.table_name = `+table+`.table_name AND a.file_id = `+table+`.file_id AND a.file_path = ?))`)
		args = append(args, f.Path, f.Path)
	}
	if f.FileIDPrefix != "" {
		// substr counts characters in SQLite and PostgreSQL alike.
		where = append(where, fmt.Sprintf("substr(%s.file_id, 1, %d) = ?", table, utf8.RuneCountInString(f.FileIDPrefix)))
		args = append(args, f.FileIDPrefix)
	}
	if len(where) == 0 {
		return "", nil
	}
	return ` WHERE ` + strings.Join(where, " AND "), args
}

// AttemptRecord is a stored attempt.
type AttemptRecord struct {
	Attempt
	Key
	StartedAt   int64
	HeartbeatAt int64
	EndedAt     int64
	Outcome     string // empty while running (or when the process died)
	Error       string
	Rows        idemtype.Rows
	Partitions  idemtype.Partitions // Total is not stored; Skipped and Committed are
	Recovered   int64               // leases recovered
	// Deleted is how many rows its snapshot sweep removed.
	Deleted int64
	// SchemaChanges says which columns it added or widened (--evolve).
	SchemaChanges string
}

// Attempts returns the attempts on operation k, oldest first.
func (l *Ledger) Attempts(ctx context.Context, k Key) ([]AttemptRecord, error) {
	if ok, err := l.d.TableExists(ctx, l.db, l.prefix+"attempts"); err != nil || !ok {
		return nil, err
	}
	rows, err := l.db.QueryContext(ctx, l.q(`SELECT attempt_id, trigger, host, pid, file_path, coalesce(recovered_from, ''),
		table_name, file_id, started_at, heartbeat_at, coalesce(ended_at, 0), coalesce(outcome, ''), coalesce(error, ''),
		rows_read, rows_inserted, rows_updated, rows_unchanged, rows_stale, rows_superseded, rows_rejected,
		partitions_skipped, partitions_committed, recovered_leases, rows_deleted, coalesce(schema_changes, ''), coalesce(proc_start, 0)
		FROM `+l.prefix+`attempts WHERE table_name = ? AND file_id = ? ORDER BY started_at, attempt_id`), k.Table, k.FileID)
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	defer rows.Close()
	var out []AttemptRecord
	for rows.Next() {
		var a AttemptRecord
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

// Reject is a bad row kept in the quarantine under its original identity.
type Reject struct {
	// The bad row: its Value at most 1 KiB, its Row at most 64 KiB and
	// empty when longer, its Fields empty when longer or stored by an
	// older version.
	idemtype.Reject
	Attempt    string // the attempt that found it
	ReplayedBy string // the replay attempt that applied a corrected row, if any
	ReplayedAt int64
}

// rejectsPerInsert is how many rejects one INSERT stores: a file admitted
// with a million bad rows takes thousands of statements, not a million.
const rejectsPerInsert = 128

// AddRejects stores rejects of operation k found by attempt. Storing a
// reject twice keeps the first.
func (l *Ledger) AddRejects(ctx context.Context, tx *sql.Tx, k Key, attempt string, rs []Reject) error {
	var stmt *sql.Stmt
	defer func() {
		if stmt != nil {
			stmt.Close()
		}
	}()
	prepared := 0 // rows of stmt
	args := make([]any, 0, 11*min(len(rs), rejectsPerInsert))
	for len(rs) > 0 {
		n := min(len(rs), rejectsPerInsert)
		if n != prepared {
			if stmt != nil {
				stmt.Close()
			}
			row := `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ` + l.d.Now() + `)`
			var err error
			stmt, err = tx.PrepareContext(ctx, l.q(`INSERT INTO `+l.prefix+`rejects
		(table_name, file_id, ordinal, byte_offset, column_name, raw_value, raw_row, raw_fields, code, message, attempt_id, created_at)
		VALUES `+strings.Repeat(row+`, `, n-1)+row+` ON CONFLICT DO NOTHING`))
			if err != nil {
				return fmt.Errorf("store rejects: %w", err)
			}
			prepared = n
		}
		args = args[:0]
		for _, r := range rs[:n] {
			args = append(args, k.Table, k.FileID, r.Ordinal, r.Offset, r.Column, r.Value, r.Row, nullable(r.Fields), r.Code, r.Message, attempt)
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("store rejects of rows %d-%d: %w", rs[0].Ordinal, rs[n-1].Ordinal, err)
		}
		rs = rs[n:]
	}
	return nil
}

// Rejects returns the stored rejects of operation k in ordinal order.
func (l *Ledger) Rejects(ctx context.Context, q Querier, k Key) ([]Reject, error) {
	if ok, err := l.d.TableExists(ctx, l.db, l.prefix+"rejects"); err != nil || !ok {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, l.q(`SELECT ordinal, byte_offset, coalesce(column_name, ''), coalesce(raw_value, ''),
		coalesce(raw_row, ''), coalesce(raw_fields, ''), code, message, attempt_id, coalesce(replayed_by, ''), coalesce(replayed_at, 0)
		FROM `+l.prefix+`rejects WHERE table_name = ? AND file_id = ? ORDER BY ordinal`), k.Table, k.FileID)
	if err != nil {
		return nil, fmt.Errorf("list rejects: %w", err)
	}
	defer rows.Close()
	var out []Reject
	for rows.Next() {
		var r Reject
		if err := rows.Scan(&r.Ordinal, &r.Offset, &r.Column, &r.Value, &r.Row, &r.Fields, &r.Code, &r.Message, &r.Attempt, &r.ReplayedBy, &r.ReplayedAt); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// nullable stores "" as NULL.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
