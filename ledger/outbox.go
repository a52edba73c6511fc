package ledger

import (
	"context"
	"database/sql"
	"fmt"
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
	return l.ops.RecordEvent(ctx, tx, ev, sinks)
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
	d, found, err := l.ops.ClaimDelivery(ctx, tx, sinks, by, leaseMs)
	if err != nil || !found {
		return nil, err
	}
	d.State = DeliveryPending
	return &d, nil
}

// LeaseHolders returns the lessees, other than owner, that hold a live
// lease on a pending delivery and ran on host.
func (l *Ledger) LeaseHolders(ctx context.Context, q Querier, host, owner string) ([]Lessee, error) {
	hs, err := l.ops.LeaseHolders(ctx, q, host, owner)
	for i := range hs {
		hs[i].Host = host
	}
	return hs, err
}

// ReleaseLeases ends at once the delivery leases owner holds (its process
// is known to be dead), so the deliveries may be claimed again; a
// delivery the dead process made but did not record is then sent again,
// with the same event ID. It returns how many leases it ended.
func (l *Ledger) ReleaseLeases(ctx context.Context, tx *sql.Tx, owner string) (int64, error) {
	return l.ops.ReleaseLeases(ctx, tx, owner)
}

// Delivered records that the sink acknowledged d. It fails with
// ErrLeaseLost when owner no longer holds d's lease (another process took
// it over and may deliver it again, with the same event ID).
func (l *Ledger) Delivered(ctx context.Context, q Querier, d *Delivery, owner string) error {
	held, err := l.ops.MarkDelivered(ctx, q, d.EventID, d.SinkID, owner)
	return leaseHeld(held, err, "mark delivered")
}

// Retry records a failed try of d with its error, to be tried again no
// sooner than afterMs from now, or never when permanent (the sink refused
// it for good). It fails with ErrLeaseLost when owner no longer holds d.
func (l *Ledger) Retry(ctx context.Context, q Querier, d *Delivery, owner, errMsg string, afterMs int64, permanent bool) error {
	state := DeliveryPending
	if permanent {
		state = DeliveryFailed
	}
	held, err := l.ops.RecordTry(ctx, q, d.EventID, d.SinkID, owner, state, errMsg, afterMs)
	return leaseHeld(held, err, "record delivery failure")
}

// leaseHeld returns err, or ErrLeaseLost, wrapped with what, when the
// write fenced by a lease found it not held.
func leaseHeld(held bool, err error, what string) error {
	if err != nil {
		return err
	}
	if !held {
		return fmt.Errorf("%s: %w", what, ErrLeaseLost)
	}
	return nil
}

// Deliveries returns the outbox's deliveries, oldest event first, those of
// state only unless state is empty. An event owed to no sink is listed once
// with an empty SinkID. A ledger without an outbox yet has none.
func (l *Ledger) Deliveries(ctx context.Context, q Querier, state string) ([]Delivery, error) {
	return l.ops.Deliveries(ctx, q, state)
}

// DeliveryStates counts the deliveries of event id by state.
func (l *Ledger) DeliveryStates(ctx context.Context, q Querier, id string) (map[string]int64, error) {
	return l.ops.DeliveryStates(ctx, q, id)
}

// PendingDeliveries counts the deliveries not yet made (failed ones not
// included).
func (l *Ledger) PendingDeliveries(ctx context.Context, q Querier) (int64, error) {
	return l.ops.PendingDeliveries(ctx, q)
}

// NextDeliveryIn returns how many milliseconds from now the next pending
// delivery owed to one of sinks may be tried (its retry time, or the end of
// the lease another process holds on it; 0 when one may be tried now), and
// false when none is pending.
func (l *Ledger) NextDeliveryIn(ctx context.Context, q Querier, sinks []string) (int64, bool, error) {
	if len(sinks) == 0 {
		return 0, false, nil
	}
	at, found, err := l.ops.NextDelivery(ctx, q, sinks)
	if err != nil || !found {
		return 0, false, err
	}
	return max(at, 0), true, nil
}

// PruneEvents deletes, in tx, the events recorded before cutoff (Unix
// milliseconds) that owe nothing: every delivery of theirs was made before
// cutoff, or they were owed to no sink. Events with a delivery pending or
// refused for good are kept, whatever their age. It returns how many
// events it deleted. An event's ID is never recorded again once its effect
// committed, so a pruned event is never sent again.
func (l *Ledger) PruneEvents(ctx context.Context, tx *sql.Tx, cutoff int64) (int64, error) {
	return l.ops.PruneEvents(ctx, tx, cutoff)
}

// AttemptIDs returns the IDs of the attempts on operation k, oldest first,
// as the caller's transaction sees them.
func (l *Ledger) AttemptIDs(ctx context.Context, q Querier, k Key) ([]string, error) {
	return l.ops.AttemptIDs(ctx, q, k)
}
