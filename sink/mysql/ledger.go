package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/internal/stdsql"
)

// Ledger implements sink.Driver: the shared statements, but for those
// MariaDB spells apart (ledgerOps).
func (d Driver) Ledger(prefix string) ledger.Ops {
	return ledgerOps{stdsql.Ledger{S: d, Prefix: prefix}}
}

// ledgerOps is the ledger's operations on MariaDB: stdsql's, but for
// upserts (ON DUPLICATE KEY UPDATE, where the others say ON CONFLICT),
// the column trigger, a reserved word here, and the outbox's claim.
//
// An insert that must change nothing when the key is stored ends with
// ON DUPLICATE KEY UPDATE of a key column to itself, not INSERT IGNORE,
// which would also turn any other error of the row (a value too long) into
// a warning.
type ledgerOps struct{ stdsql.Ledger }

func (l ledgerOps) now() string { return l.S.Now() }

// QuickCheck implements ledger.Ops: the path is found by its SHA-256,
// the key of the table (0001_ledger.up.sql).
func (l ledgerOps) QuickCheck(ctx context.Context, q idemtype.Querier, st ledger.FileStat) (stored, content string, found bool, err error) {
	err = q.QueryRowContext(ctx, `SELECT digest, coalesce(content_digest, '') FROM `+l.Prefix+`quickcheck
		WHERE host = ? AND path_hash = UNHEX(SHA2(?, 256)) AND path = ?
		AND size = ? AND mtime_ns = ? AND ctime_ns = ? AND inode = ? AND device = ?`,
		st.Host, st.Path, st.Path, st.Size, st.MtimeNs, st.CtimeNs, int64(st.Inode), int64(st.Device)).Scan(&stored, &content)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("read quick check: %w", err)
	}
	return stored, content, true, nil
}

// RememberQuickCheck implements ledger.Ops.
func (l ledgerOps) RememberQuickCheck(ctx context.Context, q idemtype.Querier, st ledger.FileStat, stored, content string) error {
	_, err := q.ExecContext(ctx, `INSERT INTO `+l.Prefix+`quickcheck
		(host, path, size, mtime_ns, ctime_ns, inode, device, digest, content_digest, checked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, `+l.now()+`)
		ON DUPLICATE KEY UPDATE size = VALUES(size), mtime_ns = VALUES(mtime_ns), ctime_ns = VALUES(ctime_ns),
		inode = VALUES(inode), device = VALUES(device), digest = VALUES(digest), content_digest = VALUES(content_digest),
		checked_at = VALUES(checked_at)`,
		st.Host, st.Path, st.Size, st.MtimeNs, st.CtimeNs, int64(st.Inode), int64(st.Device), stored, content)
	if err != nil {
		return fmt.Errorf("record quick check: %w", err)
	}
	return nil
}

// Remote implements ledger.Ops: the URL is found by its SHA-256, the key
// of the table.
func (l ledgerOps) Remote(ctx context.Context, q idemtype.Querier, st ledger.RemoteStat) (stored, content string, found bool, err error) {
	err = q.QueryRowContext(ctx, `SELECT digest, content_digest FROM `+l.Prefix+`remote
		WHERE url_hash = UNHEX(SHA2(?, 256)) AND url = ? AND etag = ? AND (version_id = ? OR ? = '') AND size = ?`,
		st.URL, st.URL, st.ETag, st.Version, st.Version, st.Size).Scan(&stored, &content)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("read remote quick check: %w", err)
	}
	return stored, content, true, nil
}

// RememberRemote implements ledger.Ops.
func (l ledgerOps) RememberRemote(ctx context.Context, q idemtype.Querier, st ledger.RemoteStat, stored, content string) error {
	_, err := q.ExecContext(ctx, `INSERT INTO `+l.Prefix+`remote
		(url, etag, version_id, size, digest, content_digest, checked_at) VALUES (?, ?, ?, ?, ?, ?, `+l.now()+`)
		ON DUPLICATE KEY UPDATE etag = VALUES(etag), version_id = VALUES(version_id), size = VALUES(size),
		digest = VALUES(digest), content_digest = VALUES(content_digest), checked_at = VALUES(checked_at)`,
		st.URL, st.ETag, st.Version, st.Size, stored, content)
	if err != nil {
		return fmt.Errorf("record remote quick check: %w", err)
	}
	return nil
}

// RecordFileKey implements ledger.Ops.
func (l ledgerOps) RecordFileKey(ctx context.Context, tx *sql.Tx, fileKey int64, fileID string) (string, error) {
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+l.Prefix+`files (file_key, file_id) VALUES (?, ?)
		ON DUPLICATE KEY UPDATE file_key = file_key`, fileKey, fileID); err != nil {
		return "", fmt.Errorf("record file key: %w", err)
	}
	var owner string
	if err := tx.QueryRowContext(ctx, `SELECT file_id FROM `+l.Prefix+`files WHERE file_key = ?`, fileKey).Scan(&owner); err != nil {
		return "", fmt.Errorf("read file key: %w", err)
	}
	return owner, nil
}

// RecordAttempt implements ledger.Ops: the clock is read once, so that a
// new attempt's first heartbeat is its start.
func (l ledgerOps) RecordAttempt(ctx context.Context, tx *sql.Tx, k ledger.Key, a ledger.Attempt) error {
	var rec any
	if a.RecoveredFrom != "" {
		rec = a.RecoveredFrom
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO `+l.Prefix+`attempts
		(attempt_id, table_name, file_id, "trigger", host, pid, proc_start, file_path, started_at, heartbeat_at, recovered_from)
		SELECT ?, ?, ?, ?, ?, ?, ?, ?, clock.now, clock.now, ? FROM (SELECT `+l.now()+` AS now) AS clock`,
		a.ID, k.Table, k.FileID, a.Trigger, a.Host, a.PID, int64(a.ProcStart), a.Path, rec)
	if err != nil {
		return fmt.Errorf("record attempt %s: %w", a.ID, err)
	}
	return nil
}

// Running implements ledger.Ops.
func (l ledgerOps) Running(ctx context.Context, q idemtype.Querier) ([]ledger.Attempt, error) {
	rows, err := q.QueryContext(ctx, `SELECT a.attempt_id, a."trigger", a.host, a.pid, a.proc_start, a.file_path, coalesce(a.recovered_from, '')
		FROM `+l.Prefix+`attempts a JOIN `+l.Prefix+`operations o ON o.table_name = a.table_name AND o.file_id = a.file_id
		WHERE a.ended_at IS NULL AND o.state = 'processing' ORDER BY a.started_at, a.attempt_id`)
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

// Attempts implements ledger.Ops.
func (l ledgerOps) Attempts(ctx context.Context, q idemtype.Querier, k ledger.Key) ([]ledger.AttemptRecord, error) {
	rows, err := q.QueryContext(ctx, `SELECT attempt_id, "trigger", host, pid, file_path, coalesce(recovered_from, ''),
		table_name, file_id, started_at, heartbeat_at, coalesce(ended_at, 0), coalesce(outcome, ''), coalesce(error, ''),
		rows_read, rows_inserted, rows_updated, rows_unchanged, rows_stale, rows_superseded, rows_rejected,
		partitions_skipped, partitions_committed, recovered_leases, rows_deleted, coalesce(schema_changes, ''), coalesce(proc_start, 0)
		FROM `+l.Prefix+`attempts WHERE table_name = ? AND file_id = ? ORDER BY started_at, attempt_id`, k.Table, k.FileID)
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

// StoreRejects implements ledger.Ops: a reject stored already (by an
// earlier attempt) is kept as it is.
func (l ledgerOps) StoreRejects(ctx context.Context, tx *sql.Tx, k ledger.Key, attempt string, rs []ledger.Reject) error {
	if len(rs) == 0 {
		return nil
	}
	row := `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ` + l.now() + `)`
	args := make([]any, 0, 11*len(rs))
	for _, r := range rs {
		args = append(args, k.Table, k.FileID, r.Ordinal, r.Offset, r.Column, r.Value, r.Row, nullable(r.Fields), r.Code, r.Message, attempt)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+l.Prefix+`rejects
		(table_name, file_id, ordinal, byte_offset, column_name, raw_value, raw_row, raw_fields, code, message, attempt_id, created_at)
		VALUES `+strings.Repeat(row+`, `, len(rs)-1)+row+` ON DUPLICATE KEY UPDATE ordinal = ordinal`, args...); err != nil {
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

// RecordSnapshot implements ledger.Ops.
func (l ledgerOps) RecordSnapshot(ctx context.Context, tx *sql.Tx, table, scope string, asOf int64, fileID string, markedAt int64) error {
	var mark any
	if markedAt != 0 {
		mark = markedAt
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO `+l.Prefix+`snapshots (table_name, scope, file_id, as_of, applied_at, marked_at)
		VALUES (?, ?, ?, ?, `+l.now()+`, ?)
		ON DUPLICATE KEY UPDATE as_of = VALUES(as_of), applied_at = VALUES(applied_at), marked_at = VALUES(marked_at)`,
		table, scope, fileID, asOf, mark)
	if err != nil {
		return fmt.Errorf("record snapshot of %s: %w", table, err)
	}
	return nil
}

// RecordEvent implements ledger.Ops: recording an event ID again changes
// nothing.
func (l ledgerOps) RecordEvent(ctx context.Context, tx *sql.Tx, ev ledger.Event, sinks []ledger.SinkRef) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+l.Prefix+`outbox (event_id, kind, table_name, file_id, attempt_id, payload, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE event_id = event_id`,
		ev.ID, ev.Kind, ev.Key.Table, ev.Key.FileID, ev.AttemptID, ev.Payload, ev.CreatedAt); err != nil {
		return fmt.Errorf("record event %s: %w", ev.ID, err)
	}
	for _, s := range sinks {
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+l.Prefix+`outbox_deliveries (event_id, sink_id, sink_name, state, next_at)
			VALUES (?, ?, ?, 'pending', 0) ON DUPLICATE KEY UPDATE event_id = event_id`, ev.ID, s.ID, s.Name); err != nil {
			return fmt.Errorf("record delivery of %s: %w", ev.ID, err)
		}
	}
	return nil
}

// claimPage is how many deliveries a claim considers at a time.
const claimPage = 16

// ClaimDelivery implements ledger.Ops. One ordered SELECT … FOR UPDATE
// SKIP LOCKED over the join, as on PostgreSQL, locks every row it sorts
// (InnoDB locks the rows it reads, not the rows it returns), so that a
// second claimer finds nothing; and MariaDB has no FOR UPDATE OF to lock
// the delivery alone. So the claim reads the claimable deliveries in order
// without locking them, a page at a time, and locks the first one no other
// transaction holds by its primary key, checking again under the lock that
// it is still claimable.
func (l ledgerOps) ClaimDelivery(ctx context.Context, tx *sql.Tx, sinks []string, by ledger.Lessee, leaseMs int64) (ledger.Delivery, bool, error) {
	args := make([]any, len(sinks))
	for i, s := range sinks {
		args[i] = s
	}
	claimable := `d.state = 'pending' AND d.next_at <= ` + l.now() + ` AND (d.lease_owner IS NULL OR d.lease_expires <= ` + l.now() + `)`
	for offset := 0; ; offset += claimPage {
		rows, err := tx.QueryContext(ctx, fmt.Sprintf(`SELECT d.event_id, d.sink_id
			FROM `+l.Prefix+`outbox_deliveries d JOIN `+l.Prefix+`outbox o ON o.event_id = d.event_id
			WHERE `+claimable+` AND d.sink_id IN (?`+strings.Repeat(`, ?`, len(sinks)-1)+`)
			ORDER BY o.created_at, d.event_id, d.sink_id LIMIT %d OFFSET %d`, claimPage, offset), args...)
		if err != nil {
			return ledger.Delivery{}, false, fmt.Errorf("claim delivery: %w", err)
		}
		var page [][2]string
		for rows.Next() {
			var c [2]string
			if err := rows.Scan(&c[0], &c[1]); err != nil {
				rows.Close()
				return ledger.Delivery{}, false, fmt.Errorf("claim delivery: %w", err)
			}
			page = append(page, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return ledger.Delivery{}, false, fmt.Errorf("claim delivery: %w", err)
		}
		for _, c := range page {
			d, ok, err := l.claimOne(ctx, tx, c[0], c[1], claimable, by, leaseMs)
			if err != nil || ok {
				return d, ok, err
			}
		}
		if len(page) < claimPage {
			return ledger.Delivery{}, false, nil
		}
	}
}

// claimOne locks the delivery (event, sink) unless another transaction
// holds it, and leases it to by when it is still claimable.
func (l ledgerOps) claimOne(ctx context.Context, tx *sql.Tx, event, sink, claimable string, by ledger.Lessee, leaseMs int64) (ledger.Delivery, bool, error) {
	var d ledger.Delivery
	err := tx.QueryRowContext(ctx, `SELECT d.event_id, d.sink_id, d.sink_name, d.tries, coalesce(d.last_error, '')
		FROM `+l.Prefix+`outbox_deliveries d WHERE d.event_id = ? AND d.sink_id = ? AND `+claimable+`
		FOR UPDATE SKIP LOCKED`, event, sink).Scan(&d.EventID, &d.SinkID, &d.SinkName, &d.Tries, &d.LastError)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Delivery{}, false, nil
	}
	if err != nil {
		return ledger.Delivery{}, false, fmt.Errorf("claim delivery of %s: %w", event, err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT kind, table_name, file_id, payload, created_at FROM `+l.Prefix+`outbox WHERE event_id = ?`, event).
		Scan(&d.Kind, &d.Key.Table, &d.Key.FileID, &d.Payload, &d.CreatedAt); err != nil {
		return ledger.Delivery{}, false, fmt.Errorf("read event %s: %w", event, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE `+l.Prefix+`outbox_deliveries SET lease_owner = ?, lease_expires = `+l.now()+` + ?,
		lease_host = ?, lease_pid = ?, lease_proc_start = ?
		WHERE event_id = ? AND sink_id = ?`, by.Owner, leaseMs, by.Host, by.PID, int64(by.Start), d.EventID, d.SinkID); err != nil {
		return ledger.Delivery{}, false, fmt.Errorf("claim delivery of %s: %w", d.EventID, err)
	}
	return d, true, nil
}

// ReleaseLeases implements ledger.Ops: the deliveries owner holds are
// read without locking, then released one by one by the primary key, each
// checked again under its row's lock. The shared statement finds them by
// a locking scan (no index holds the lease's owner), through the index of
// pending deliveries or the whole table, and InnoDB keeps locks the scan
// took on rows it did not change while it waits for a row another
// transaction holds: a deliverer that holds that row and then records
// delivered one the scan has locked (or whose entry in
// outbox_deliveries_pending the scan has locked and must move) closes a
// cycle, and InnoDB rolled one back (two deliverers racing for a killed
// one's delivery: "mark delivered: Error 1213 … Deadlock found"). By the
// primary key the release locks only the rows it changes, none of their
// indexed columns, and waits for each holding nothing a deliverer needs.
func (l ledgerOps) ReleaseLeases(ctx context.Context, tx *sql.Tx, owner string) (int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT event_id, sink_id FROM `+l.Prefix+`outbox_deliveries
		WHERE lease_owner = ? AND state = 'pending' ORDER BY event_id, sink_id`, owner)
	if err != nil {
		return 0, fmt.Errorf("release the delivery leases of %s: %w", owner, err)
	}
	var held [][2]string
	for rows.Next() {
		var k [2]string
		if err := rows.Scan(&k[0], &k[1]); err != nil {
			rows.Close()
			return 0, fmt.Errorf("release the delivery leases of %s: %w", owner, err)
		}
		held = append(held, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("release the delivery leases of %s: %w", owner, err)
	}
	var n int64
	for _, k := range held {
		res, err := tx.ExecContext(ctx, `UPDATE `+l.Prefix+`outbox_deliveries SET lease_owner = NULL, lease_expires = NULL
			WHERE event_id = ? AND sink_id = ? AND lease_owner = ? AND state = 'pending'`, k[0], k[1], owner)
		if err != nil {
			return 0, fmt.Errorf("release the delivery leases of %s: %w", owner, err)
		}
		m, err := res.RowsAffected()
		if err != nil {
			return 0, fmt.Errorf("release the delivery leases of %s: %w", owner, err)
		}
		n += m
	}
	return n, nil
}
