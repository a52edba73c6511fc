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

// RecordEvent implements ledger.Ops.
func (l Ledger) RecordEvent(ctx context.Context, tx *sql.Tx, ev ledger.Event, sinks []ledger.SinkRef) error {
	if _, err := tx.ExecContext(ctx, l.q(`INSERT INTO `+l.Prefix+`outbox (event_id, kind, table_name, file_id, attempt_id, payload, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING`),
		ev.ID, ev.Kind, ev.Key.Table, ev.Key.FileID, ev.AttemptID, ev.Payload, ev.CreatedAt); err != nil {
		return fmt.Errorf("record event %s: %w", ev.ID, err)
	}
	for _, s := range sinks {
		if _, err := tx.ExecContext(ctx, l.q(`INSERT INTO `+l.Prefix+`outbox_deliveries (event_id, sink_id, sink_name, state, next_at)
			VALUES (?, ?, ?, 'pending', 0) ON CONFLICT (event_id, sink_id) DO NOTHING`), ev.ID, s.ID, s.Name); err != nil {
			return fmt.Errorf("record delivery of %s: %w", ev.ID, err)
		}
	}
	return nil
}

// ClaimDelivery implements ledger.Ops.
func (l Ledger) ClaimDelivery(ctx context.Context, tx *sql.Tx, sinks []string, by ledger.Lessee, leaseMs int64) (ledger.Delivery, bool, error) {
	lock, _ := l.S.SkipLocked("d")
	args := make([]any, len(sinks))
	for i, s := range sinks {
		args[i] = s
	}
	row := tx.QueryRowContext(ctx, l.q(`SELECT d.event_id, d.sink_id, d.sink_name, d.tries, coalesce(d.last_error, ''), o.kind, o.table_name, o.file_id, o.payload, o.created_at
		FROM `+l.Prefix+`outbox_deliveries d JOIN `+l.Prefix+`outbox o ON o.event_id = d.event_id
		WHERE d.state = 'pending' AND d.sink_id IN (?`+strings.Repeat(`, ?`, len(sinks)-1)+`)
		AND d.next_at <= `+l.S.Now()+` AND (d.lease_owner IS NULL OR d.lease_expires <= `+l.S.Now()+`)
		ORDER BY o.created_at, d.event_id, d.sink_id LIMIT 1`+lock), args...)
	var d ledger.Delivery
	err := row.Scan(&d.EventID, &d.SinkID, &d.SinkName, &d.Tries, &d.LastError, &d.Kind, &d.Key.Table, &d.Key.FileID, &d.Payload, &d.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Delivery{}, false, nil
	}
	if err != nil {
		return ledger.Delivery{}, false, fmt.Errorf("claim delivery: %w", err)
	}
	if _, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`outbox_deliveries SET lease_owner = ?, lease_expires = `+l.S.Now()+` + ?,
		lease_host = ?, lease_pid = ?, lease_proc_start = ?
		WHERE event_id = ? AND sink_id = ?`), by.Owner, leaseMs, by.Host, by.PID, int64(by.Start), d.EventID, d.SinkID); err != nil {
		return ledger.Delivery{}, false, fmt.Errorf("claim delivery of %s: %w", d.EventID, err)
	}
	return d, true, nil
}

// LeaseHolders implements ledger.Ops.
func (l Ledger) LeaseHolders(ctx context.Context, q idemtype.Querier, host, owner string) ([]ledger.Lessee, error) {
	rows, err := q.QueryContext(ctx, l.q(`SELECT DISTINCT lease_owner, lease_pid, lease_proc_start FROM `+l.Prefix+`outbox_deliveries
		WHERE state = 'pending' AND lease_owner IS NOT NULL AND lease_owner <> ? AND lease_expires > `+l.S.Now()+`
		AND lease_host = ? AND lease_pid IS NOT NULL`), owner, host)
	if err != nil {
		return nil, fmt.Errorf("read delivery leases: %w", err)
	}
	defer rows.Close()
	var out []ledger.Lessee
	for rows.Next() {
		var h ledger.Lessee
		var start int64
		if err := rows.Scan(&h.Owner, &h.PID, &start); err != nil {
			return nil, fmt.Errorf("read delivery leases: %w", err)
		}
		h.Start = uint64(start)
		out = append(out, h)
	}
	return out, rows.Err()
}

// ReleaseLeases implements ledger.Ops.
func (l Ledger) ReleaseLeases(ctx context.Context, tx *sql.Tx, owner string) (int64, error) {
	res, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`outbox_deliveries SET lease_owner = NULL, lease_expires = NULL
		WHERE lease_owner = ? AND state = 'pending'`), owner)
	if err != nil {
		return 0, fmt.Errorf("release the delivery leases of %s: %w", owner, err)
	}
	return res.RowsAffected()
}

// MarkDelivered implements ledger.Ops.
func (l Ledger) MarkDelivered(ctx context.Context, q idemtype.Querier, event, sink, owner string) (bool, error) {
	res, err := q.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`outbox_deliveries SET state = 'delivered', tries = tries + 1,
		delivered_at = `+l.S.Now()+`, lease_owner = NULL, lease_expires = NULL, last_error = NULL
		WHERE event_id = ? AND sink_id = ? AND lease_owner = ? AND state = 'pending'`), event, sink, owner)
	return one(res, err, "mark delivered")
}

// RecordTry implements ledger.Ops.
func (l Ledger) RecordTry(ctx context.Context, q idemtype.Querier, event, sink, owner, state, errMsg string, afterMs int64) (bool, error) {
	res, err := q.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`outbox_deliveries SET state = ?, tries = tries + 1, last_error = ?,
		next_at = `+l.S.Now()+` + ?, lease_owner = NULL, lease_expires = NULL
		WHERE event_id = ? AND sink_id = ? AND lease_owner = ? AND state = 'pending'`), state, errMsg, afterMs, event, sink, owner)
	return one(res, err, "record delivery failure")
}

// one reports whether the statement that returned res changed exactly one
// row, wrapping its error with what.
func one(res sql.Result, err error, what string) (bool, error) {
	if err != nil {
		return false, fmt.Errorf("%s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("%s: %w", what, err)
	}
	return n == 1, nil
}

// Deliveries implements ledger.Ops.
func (l Ledger) Deliveries(ctx context.Context, q idemtype.Querier, state string) ([]ledger.Delivery, error) {
	where, args := ``, []any{}
	if state != "" {
		where, args = ` WHERE coalesce(d.state, '') = ?`, append(args, state)
	}
	rows, err := q.QueryContext(ctx, l.q(`SELECT o.event_id, o.kind, o.table_name, o.file_id, o.created_at, o.payload,
		coalesce(d.sink_id, ''), coalesce(d.sink_name, ''), coalesce(d.state, ''), coalesce(d.tries, 0),
		coalesce(d.last_error, ''), coalesce(d.next_at, 0), coalesce(d.delivered_at, 0)
		FROM `+l.Prefix+`outbox o LEFT JOIN `+l.Prefix+`outbox_deliveries d ON d.event_id = o.event_id`+where+`
		ORDER BY o.created_at, o.event_id, d.sink_id`), args...)
	if err != nil {
		return nil, fmt.Errorf("list outbox: %w", err)
	}
	defer rows.Close()
	var out []ledger.Delivery
	for rows.Next() {
		var d ledger.Delivery
		if err := rows.Scan(&d.EventID, &d.Kind, &d.Key.Table, &d.Key.FileID, &d.CreatedAt, &d.Payload,
			&d.SinkID, &d.SinkName, &d.State, &d.Tries, &d.LastError, &d.NextAt, &d.DeliveredAt); err != nil {
			return nil, fmt.Errorf("list outbox: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// DeliveryStates implements ledger.Ops.
func (l Ledger) DeliveryStates(ctx context.Context, q idemtype.Querier, id string) (map[string]int64, error) {
	rows, err := q.QueryContext(ctx, l.q(`SELECT state, count(*) FROM `+l.Prefix+`outbox_deliveries WHERE event_id = ? GROUP BY state`), id)
	if err != nil {
		return nil, fmt.Errorf("read deliveries of %s: %w", id, err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var s string
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			return nil, fmt.Errorf("read deliveries of %s: %w", id, err)
		}
		out[s] = n
	}
	return out, rows.Err()
}

// PendingDeliveries implements ledger.Ops.
func (l Ledger) PendingDeliveries(ctx context.Context, q idemtype.Querier) (int64, error) {
	var n int64
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM `+l.Prefix+`outbox_deliveries WHERE state = 'pending'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count pending deliveries: %w", err)
	}
	return n, nil
}

// NextDelivery implements ledger.Ops.
func (l Ledger) NextDelivery(ctx context.Context, q idemtype.Querier, sinks []string) (int64, bool, error) {
	args := make([]any, len(sinks))
	for i, s := range sinks {
		args[i] = s
	}
	now := l.S.Now()
	var at sql.NullInt64
	if err := q.QueryRowContext(ctx, l.q(`SELECT min(CASE WHEN lease_owner IS NOT NULL AND lease_expires > next_at THEN lease_expires ELSE next_at END) - `+now+`
		FROM `+l.Prefix+`outbox_deliveries WHERE state = 'pending' AND sink_id IN (?`+strings.Repeat(`, ?`, len(sinks)-1)+`)`), args...).Scan(&at); err != nil {
		return 0, false, fmt.Errorf("read next delivery: %w", err)
	}
	return at.Int64, at.Valid, nil
}

// PruneEvents implements ledger.Ops.
func (l Ledger) PruneEvents(ctx context.Context, tx *sql.Tx, cutoff int64) (int64, error) {
	res, err := tx.ExecContext(ctx, l.q(`DELETE FROM `+l.Prefix+`outbox WHERE event_id IN (SELECT o.event_id FROM `+l.Prefix+`outbox o
		WHERE o.created_at < ? AND NOT EXISTS (SELECT 1 FROM `+l.Prefix+`outbox_deliveries d
			WHERE d.event_id = o.event_id AND (d.state <> 'delivered' OR coalesce(d.delivered_at, 0) >= ?)))`), cutoff, cutoff)
	if err != nil {
		return 0, fmt.Errorf("prune delivered events: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM `+l.Prefix+`outbox_deliveries WHERE event_id NOT IN (SELECT event_id FROM `+l.Prefix+`outbox)`); err != nil {
		return 0, fmt.Errorf("prune deliveries of pruned events: %w", err)
	}
	return n, nil
}

// AttemptIDs implements ledger.Ops.
func (l Ledger) AttemptIDs(ctx context.Context, q idemtype.Querier, k ledger.Key) ([]string, error) {
	rows, err := q.QueryContext(ctx, l.q(`SELECT attempt_id FROM `+l.Prefix+`attempts WHERE table_name = ? AND file_id = ?
		ORDER BY started_at, attempt_id`), k.Table, k.FileID)
	if err != nil {
		return nil, fmt.Errorf("list attempts of %s: %w", k, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("list attempts of %s: %w", k, err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
