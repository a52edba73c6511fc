package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Event is an event recorded in the outbox.
type Event struct {
	ID        string
	Kind      string
	Key       Key
	AttemptID string // the attempt that caused it
	Payload   string // the JSON delivered, fixed when recorded
	CreatedAt int64  // Unix milliseconds, by the database clock
}

// SinkRef names a sink an event is owed to: ID is a digest of its full
// address, Name its address with secrets masked. Neither holds a secret.
type SinkRef struct {
	ID   string
	Name string
}

// The states of a delivery.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed" // the sink refused it for good; it is not retried
)

// RecordEvent writes ev to the outbox and owes it to each of sinks. Call it
// in the transaction whose effect ev announces, so the event exists exactly
// when the effect committed. Recording an event ID again changes nothing.
func (l *Ledger) RecordEvent(ctx context.Context, tx *sql.Tx, ev Event, sinks []SinkRef) error {
	if _, err := tx.ExecContext(ctx, l.q(`INSERT INTO `+l.prefix+`outbox (event_id, kind, table_name, file_id, attempt_id, payload, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING`),
		ev.ID, ev.Kind, ev.Key.Table, ev.Key.FileID, ev.AttemptID, ev.Payload, ev.CreatedAt); err != nil {
		return fmt.Errorf("record event %s: %w", ev.ID, err)
	}
	for _, s := range sinks {
		if _, err := tx.ExecContext(ctx, l.q(`INSERT INTO `+l.prefix+`outbox_deliveries (event_id, sink_id, sink_name, state, next_at)
			VALUES (?, ?, ?, 'pending', 0) ON CONFLICT (event_id, sink_id) DO NOTHING`), ev.ID, s.ID, s.Name); err != nil {
			return fmt.Errorf("record delivery of %s: %w", ev.ID, err)
		}
	}
	return nil
}

// Delivery is one event owed to one sink.
type Delivery struct {
	EventID     string
	Kind        string
	Key         Key
	SinkID      string
	SinkName    string
	State       string
	Tries       int64
	LastError   string
	NextAt      int64
	DeliveredAt int64
	CreatedAt   int64
	Payload     string
}

// Lessee is who takes a delivery's lease: the owner that fences its
// updates, and the process it runs in (host, pid and process start; empty
// when unknown), so that a run on the same host can tell when it died.
type Lessee struct {
	Owner string
	Host  string
	PID   int
	Start uint64
}

// ClaimDelivery leases to owner, for leaseMs, the oldest pending delivery
// owed to one of sinks whose retry time has come and that no live lease
// holds. It returns nil when there is none. Run it in its own short
// transaction: the transaction holds the database's write lock, or a
// row lock that other claims skip (the driver's SkipLocked), so two processes never claim one delivery.
func (l *Ledger) ClaimDelivery(ctx context.Context, tx *sql.Tx, sinks []string, owner string, leaseMs int64) (*Delivery, error) {
	return l.ClaimDeliveryAs(ctx, tx, sinks, Lessee{Owner: owner}, leaseMs)
}

// ClaimDeliveryAs is ClaimDelivery, recording with the lease the process
// that holds it (see LeaseHolders).
func (l *Ledger) ClaimDeliveryAs(ctx context.Context, tx *sql.Tx, sinks []string, by Lessee, leaseMs int64) (*Delivery, error) {
	if len(sinks) == 0 {
		return nil, nil
	}
	lock, _ := l.d.SkipLocked("d")
	args := make([]any, len(sinks))
	for i, s := range sinks {
		args[i] = s
	}
	row := tx.QueryRowContext(ctx, l.q(`SELECT d.event_id, d.sink_id, d.sink_name, d.tries, coalesce(d.last_error, ''), o.kind, o.table_name, o.file_id, o.payload, o.created_at
		FROM `+l.prefix+`outbox_deliveries d JOIN `+l.prefix+`outbox o ON o.event_id = d.event_id
		WHERE d.state = 'pending' AND d.sink_id IN (?`+strings.Repeat(`, ?`, len(sinks)-1)+`)
		AND d.next_at <= `+l.d.Now()+` AND (d.lease_owner IS NULL OR d.lease_expires <= `+l.d.Now()+`)
		ORDER BY o.created_at, d.event_id, d.sink_id LIMIT 1`+lock), args...)
	var d Delivery
	err := row.Scan(&d.EventID, &d.SinkID, &d.SinkName, &d.Tries, &d.LastError, &d.Kind, &d.Key.Table, &d.Key.FileID, &d.Payload, &d.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim delivery: %w", err)
	}
	if _, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.prefix+`outbox_deliveries SET lease_owner = ?, lease_expires = `+l.d.Now()+` + ?,
		lease_host = ?, lease_pid = ?, lease_proc_start = ?
		WHERE event_id = ? AND sink_id = ?`), by.Owner, leaseMs, by.Host, by.PID, int64(by.Start), d.EventID, d.SinkID); err != nil {
		return nil, fmt.Errorf("claim delivery of %s: %w", d.EventID, err)
	}
	d.State = DeliveryPending
	return &d, nil
}

// LeaseHolders returns the lessees, other than owner, that hold a live
// lease on a pending delivery and ran on host.
func (l *Ledger) LeaseHolders(ctx context.Context, q Querier, host, owner string) ([]Lessee, error) {
	rows, err := q.QueryContext(ctx, l.q(`SELECT DISTINCT lease_owner, lease_pid, lease_proc_start FROM `+l.prefix+`outbox_deliveries
		WHERE state = 'pending' AND lease_owner IS NOT NULL AND lease_owner <> ? AND lease_expires > `+l.d.Now()+`
		AND lease_host = ? AND lease_pid IS NOT NULL`), owner, host)
	if err != nil {
		return nil, fmt.Errorf("read delivery leases: %w", err)
	}
	defer rows.Close()
	var out []Lessee
	for rows.Next() {
		h := Lessee{Host: host}
		var start int64
		if err := rows.Scan(&h.Owner, &h.PID, &start); err != nil {
			return nil, fmt.Errorf("read delivery leases: %w", err)
		}
		h.Start = uint64(start)
		out = append(out, h)
	}
	return out, rows.Err()
}

// ReleaseLeases ends at once the delivery leases owner holds (its process
// is known to be dead), so the deliveries may be claimed again; a
// delivery the dead process made but did not record is then sent again,
// with the same event ID. It returns how many leases it ended.
func (l *Ledger) ReleaseLeases(ctx context.Context, tx *sql.Tx, owner string) (int64, error) {
	res, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.prefix+`outbox_deliveries SET lease_owner = NULL, lease_expires = NULL
		WHERE lease_owner = ? AND state = 'pending'`), owner)
	if err != nil {
		return 0, fmt.Errorf("release the delivery leases of %s: %w", owner, err)
	}
	return res.RowsAffected()
}

// Delivered records that the sink acknowledged d. It fails with
// ErrLeaseLost when owner no longer holds d's lease (another process took
// it over and may deliver it again, with the same event ID).
func (l *Ledger) Delivered(ctx context.Context, q Querier, d *Delivery, owner string) error {
	res, err := q.ExecContext(ctx, l.q(`UPDATE `+l.prefix+`outbox_deliveries SET state = 'delivered', tries = tries + 1,
		delivered_at = `+l.d.Now()+`, lease_owner = NULL, lease_expires = NULL, last_error = NULL
		WHERE event_id = ? AND sink_id = ? AND lease_owner = ? AND state = 'pending'`), d.EventID, d.SinkID, owner)
	return l.fenced(res, err, "mark delivered")
}

// Retry records a failed try of d with its error, to be tried again no
// sooner than afterMs from now, or never when permanent (the sink refused
// it for good). It fails with ErrLeaseLost when owner no longer holds d.
func (l *Ledger) Retry(ctx context.Context, q Querier, d *Delivery, owner, errMsg string, afterMs int64, permanent bool) error {
	state := DeliveryPending
	if permanent {
		state = DeliveryFailed
	}
	res, err := q.ExecContext(ctx, l.q(`UPDATE `+l.prefix+`outbox_deliveries SET state = ?, tries = tries + 1, last_error = ?,
		next_at = `+l.d.Now()+` + ?, lease_owner = NULL, lease_expires = NULL
		WHERE event_id = ? AND sink_id = ? AND lease_owner = ? AND state = 'pending'`), state, errMsg, afterMs, d.EventID, d.SinkID, owner)
	return l.fenced(res, err, "record delivery failure")
}

// Deliveries returns the outbox's deliveries, oldest event first, those of
// state only unless state is empty. An event owed to no sink is listed once
// with an empty SinkID. A ledger without an outbox yet has none.
func (l *Ledger) Deliveries(ctx context.Context, q Querier, state string) ([]Delivery, error) {
	where, args := ``, []any{}
	if state != "" {
		where, args = ` WHERE coalesce(d.state, '') = ?`, append(args, state)
	}
	rows, err := q.QueryContext(ctx, l.q(`SELECT o.event_id, o.kind, o.table_name, o.file_id, o.created_at, o.payload,
		coalesce(d.sink_id, ''), coalesce(d.sink_name, ''), coalesce(d.state, ''), coalesce(d.tries, 0),
		coalesce(d.last_error, ''), coalesce(d.next_at, 0), coalesce(d.delivered_at, 0)
		FROM `+l.prefix+`outbox o LEFT JOIN `+l.prefix+`outbox_deliveries d ON d.event_id = o.event_id`+where+`
		ORDER BY o.created_at, o.event_id, d.sink_id`), args...)
	if err != nil {
		return nil, fmt.Errorf("list outbox: %w", err)
	}
	defer rows.Close()
	var out []Delivery
	for rows.Next() {
		var d Delivery
		if err := rows.Scan(&d.EventID, &d.Kind, &d.Key.Table, &d.Key.FileID, &d.CreatedAt, &d.Payload,
			&d.SinkID, &d.SinkName, &d.State, &d.Tries, &d.LastError, &d.NextAt, &d.DeliveredAt); err != nil {
			return nil, fmt.Errorf("list outbox: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// DeliveryStates counts the deliveries of event id by state.
func (l *Ledger) DeliveryStates(ctx context.Context, q Querier, id string) (map[string]int64, error) {
	rows, err := q.QueryContext(ctx, l.q(`SELECT state, count(*) FROM `+l.prefix+`outbox_deliveries WHERE event_id = ? GROUP BY state`), id)
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

// PendingDeliveries counts the deliveries not yet made (failed ones not
// included).
func (l *Ledger) PendingDeliveries(ctx context.Context, q Querier) (int64, error) {
	var n int64
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM `+l.prefix+`outbox_deliveries WHERE state = 'pending'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count pending deliveries: %w", err)
	}
	return n, nil
}

// NextDeliveryIn returns how many milliseconds from now the next pending
// delivery owed to one of sinks may be tried (its retry time, or the end of
// the lease another process holds on it; 0 when one may be tried now), and
// false when none is pending.
func (l *Ledger) NextDeliveryIn(ctx context.Context, q Querier, sinks []string) (int64, bool, error) {
	if len(sinks) == 0 {
		return 0, false, nil
	}
	args := make([]any, len(sinks))
	for i, s := range sinks {
		args[i] = s
	}
	now := l.d.Now()
	var at sql.NullInt64
	if err := q.QueryRowContext(ctx, l.q(`SELECT min(CASE WHEN lease_owner IS NOT NULL AND lease_expires > next_at THEN lease_expires ELSE next_at END) - `+now+`
		FROM `+l.prefix+`outbox_deliveries WHERE state = 'pending' AND sink_id IN (?`+strings.Repeat(`, ?`, len(sinks)-1)+`)`), args...).Scan(&at); err != nil {
		return 0, false, fmt.Errorf("read next delivery: %w", err)
	}
	if !at.Valid {
		return 0, false, nil
	}
	return max(at.Int64, 0), true, nil
}

// PruneEvents deletes, in tx, the events recorded before cutoff (Unix
// milliseconds) that owe nothing: every delivery of theirs was made before
// cutoff, or they were owed to no sink. Events with a delivery pending or
// refused for good are kept, whatever their age. It returns how many
// events it deleted. An event's ID is never recorded again once its effect
// committed, so a pruned event is never sent again.
func (l *Ledger) PruneEvents(ctx context.Context, tx *sql.Tx, cutoff int64) (int64, error) {
	res, err := tx.ExecContext(ctx, l.q(`DELETE FROM `+l.prefix+`outbox WHERE event_id IN (SELECT o.event_id FROM `+l.prefix+`outbox o
		WHERE o.created_at < ? AND NOT EXISTS (SELECT 1 FROM `+l.prefix+`outbox_deliveries d
			WHERE d.event_id = o.event_id AND (d.state <> 'delivered' OR coalesce(d.delivered_at, 0) >= ?)))`), cutoff, cutoff)
	if err != nil {
		return 0, fmt.Errorf("prune delivered events: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM `+l.prefix+`outbox_deliveries WHERE event_id NOT IN (SELECT event_id FROM `+l.prefix+`outbox)`); err != nil {
		return 0, fmt.Errorf("prune deliveries of pruned events: %w", err)
	}
	return n, nil
}

// AttemptIDs returns the IDs of the attempts on operation k, oldest first,
// as the caller's transaction sees them.
func (l *Ledger) AttemptIDs(ctx context.Context, q Querier, k Key) ([]string, error) {
	rows, err := q.QueryContext(ctx, l.q(`SELECT attempt_id FROM `+l.prefix+`attempts WHERE table_name = ? AND file_id = ?
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
