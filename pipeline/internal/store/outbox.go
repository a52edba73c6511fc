package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/proc"
	"github.com/idemport/idemport/ledger"
)

// The kinds of event idemport records in its outbox (pipeline.EventCompleted…).
const (
	EventCompleted = "import.completed" // an operation completed (imported, resumed or reapplied)
	EventUndone    = "import.undone"    // `idemport undo` retracted or forgot an operation
	EventReplayed  = "rejects.replayed" // corrected rejects were applied to an operation
)

// EventSchemaVersion is the version of the event payload's schema. It
// changes only when a field changes meaning or goes away; fields may be
// added within a version.
const EventSchemaVersion = 1

// eventNamespace makes event IDs: the UUID (version 5) of the causing
// attempt's ID and the event kind.
var eventNamespace = uuid.MustParse("5b0c1d4e-6f1a-4c8e-9a53-1d2e3f405162")

// EventID returns the ID of the event of kind caused by attempt. It is the
// same however often it is computed, so every delivery of one event
// carries one ID, and two attempts never share one.
func EventID(attempt, kind string) string {
	return uuid.NewSHA1(eventNamespace, []byte(attempt+"\n"+kind)).String()
}

// Event is the JSON payload of an event, as delivered.
type Event struct {
	SchemaVersion int            `json:"schema_version"`
	EventID       string         `json:"event_id"`
	Kind          string         `json:"kind"`
	OccurredAt    string         `json:"occurred_at"` // RFC 3339, when its transaction wrote it (database clock)
	Operation     EventOperation `json:"operation"`
	AttemptID     string         `json:"attempt_id"` // the attempt that caused the event
	Trigger       string         `json:"trigger"`    // manual, cron, ci, undo or replay
	File          string         `json:"file"`       // the file (or replay file, or undo argument) as the attempt named it
	// Outcome is what the attempt did: imported, resumed, undone,
	// forgotten or replayed.
	Outcome string `json:"outcome"`
	// Rows is what this attempt did; for an undo, all zero.
	Rows idemtype.Rows `json:"rows"`
	// Deleted is the target rows an undo removed, or a snapshot's sweep
	// removed (or marked deleted, with --delete soft) when it completed
	// the operation: present, even when 0, for those two only.
	Deleted *int64 `json:"deleted,omitempty"`
}

// EventOperation is the operation an event is about.
type EventOperation struct {
	Table         string        `json:"table"`
	FileID        string        `json:"file_id"`
	ContentDigest string        `json:"content_digest"`
	State         string        `json:"state"`       // after the event's transaction
	AttemptIDs    []string      `json:"attempt_ids"` // every attempt on it, oldest first
	Rows          idemtype.Rows `json:"rows"`        // the operation's counters, all attempts together
	CreatedAt     string        `json:"created_at"`
	CompletedAt   string        `json:"completed_at,omitempty"`
}

func rfc3339(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// RecordEvent builds the event of kind that attempt a caused on operation
// k and writes it to the outbox in tx, owed to each of the store's sinks.
// It returns the event ID. The caller writes the effect the event reports
// in the same tx, so that a crash before its COMMIT loses both.
func (s *Store) RecordEvent(ctx context.Context, tx *sql.Tx, kind string, k ledger.Key, a ledger.Attempt, outcome string,
	rows idemtype.Rows, deleted *int64) (string, error) {
	// The effect is written in tx: a crash from here to its COMMIT must
	// lose the effect with its event, never one of them alone.
	if err := s.Hit("before-event"); err != nil {
		return "", err
	}
	op, now, err := s.Ledger.Get(ctx, tx, k)
	if err != nil {
		return "", err
	}
	if op == nil {
		return "", fmt.Errorf("record %s: no operation %s", kind, k)
	}
	ids, err := s.Ledger.AttemptIDs(ctx, tx, k)
	if err != nil {
		return "", err
	}
	ev := Event{
		SchemaVersion: EventSchemaVersion, EventID: EventID(a.ID, kind), Kind: kind, OccurredAt: rfc3339(now),
		Operation: EventOperation{Table: k.Table, FileID: k.FileID, ContentDigest: op.ContentDigest, State: string(op.State),
			AttemptIDs: ids, Rows: op.Rows, CreatedAt: rfc3339(op.CreatedAt)},
		AttemptID: a.ID, Trigger: a.Trigger, File: a.Path, Outcome: outcome, Rows: rows, Deleted: deleted,
	}
	if op.CompletedAt > 0 {
		ev.Operation.CompletedAt = rfc3339(op.CompletedAt)
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return "", err
	}
	refs := make([]ledger.SinkRef, len(s.Sinks))
	for i, sk := range s.Sinks {
		refs[i] = ledger.SinkRef{ID: sk.ID(), Name: sk.Name()}
	}
	err = s.Ledger.RecordEvent(ctx, tx, ledger.Event{ID: ev.EventID, Kind: kind, Key: k, AttemptID: a.ID, Payload: string(body), CreatedAt: now}, refs)
	return ev.EventID, err
}

// DeliveryReport says what a delivery pass did (pipeline.DeliveryReport).
type DeliveryReport struct {
	Delivered int64 // deliveries this pass made
	Failed    int64 // deliveries this pass found refused for good
	Pending   int64 // deliveries still owed after this pass, to any sink
	// Errors holds the last error of each sink that failed during the pass,
	// by sink name (secrets masked).
	Errors map[string]string
}

// DefaultNotifyTimeout bounds a delivery pass when none is given.
const DefaultNotifyTimeout = 30 * time.Second

// Backoff between tries of one delivery: it doubles from the first to the
// last, and the count of tries is kept across runs.
const (
	firstBackoff = 200 * time.Millisecond
	lastBackoff  = 5 * time.Minute
)

func backoff(tries int64) time.Duration {
	d := firstBackoff
	for i := int64(0); i < tries && d < lastBackoff; i++ {
		d *= 2
	}
	return min(d, lastBackoff)
}

// Deliver sends the events the outbox owes to the store's sinks (those of
// this run and those earlier runs left undelivered), trying each again with
// backoff until it is delivered, refused for good, or timeout (0 means
// DefaultNotifyTimeout) has passed. A sink that fails with
// idemtype.ErrMisconfigured is tried no more in this pass: what it is owed
// stays pending, its error in the report, and the other sinks go on. Each
// delivery is leased while it is tried, so two processes never send one at
// once; a delivery whose process died is taken over at once when that
// process ran on this host and is certainly gone (see reapDeliverers),
// else when its lease ends.
// A failed delivery is an error only in the report: err is for the ledger,
// or ErrNoDatabase (see Present).
func (s *Store) Deliver(ctx context.Context, timeout time.Duration) (DeliveryReport, error) {
	if err := s.Present(); err != nil {
		return DeliveryReport{}, err
	}
	rep := DeliveryReport{Errors: map[string]string{}}
	if len(s.Sinks) == 0 {
		n, err := s.pending(ctx)
		rep.Pending = n
		return rep, err
	}
	if timeout <= 0 {
		timeout = DefaultNotifyTimeout
	}
	deadline := time.Now().Add(timeout)
	host, _ := os.Hostname()
	me := ledger.Lessee{Owner: uuid.Must(uuid.NewV7()).String(), Host: host, PID: os.Getpid(), Start: proc.Start(os.Getpid())}
	bg := context.WithoutCancel(ctx)
	if err := s.deliverUntil(ctx, me, deadline, &rep); err != nil {
		// A pass that ends in error gives up the lease it holds, so that
		// the next pass, in this process or another, takes its event at
		// once instead of after the lease (the pass's timeout and a
		// second); if the database refuses that too, the lease ends.
		rctx, cancel := context.WithTimeout(bg, leaseReleaseWait)
		rerr := s.tx(rctx, func(tx *sql.Tx) error {
			_, err := s.Ledger.ReleaseLeases(rctx, tx, me.Owner)
			return err
		})
		cancel()
		if rerr != nil {
			s.Log.Info("leases of a failed delivery pass not given up; they end on their own", "err", rerr)
		}
		return rep, err
	}
	n, err := s.pending(bg)
	rep.Pending = n
	return rep, err
}

// deliverUntil delivers, as me, the events due to the store's sinks one by
// one until none is due before deadline or ctx is cancelled, counting them
// in rep. A sink that cannot take any event until it is set up otherwise
// leaves the pass at its first such error.
func (s *Store) deliverUntil(ctx context.Context, me ledger.Lessee, deadline time.Time, rep *DeliveryReport) error {
	owner := me.Owner
	ids := make([]string, len(s.Sinks))
	byID := map[string]idemtype.EventSink{}
	for i, sk := range s.Sinks {
		ids[i] = sk.ID()
		byID[sk.ID()] = sk
	}
	for ctx.Err() == nil {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		d, err := s.claimDelivery(ctx, me, ids, left)
		if err != nil {
			return err
		}
		if d == nil {
			more, err := s.awaitDelivery(ctx, ids, deadline)
			if err != nil {
				return err
			}
			if !more {
				break
			}
			continue
		}
		stuck, err := s.deliverOne(ctx, d, byID[d.SinkID], owner, deadline, rep)
		if err != nil {
			return err
		}
		if stuck {
			s.Log.Info("sink not tried again in this pass", "sink", byID[d.SinkID].Name())
			ids = slices.DeleteFunc(ids, func(id string) bool { return id == d.SinkID })
			if len(ids) == 0 {
				break
			}
		}
	}
	return nil
}

// claimDelivery reaps dead deliverers and claims, for me, the next event
// due to one of the sinks ids, leased for left and a second; nil when none
// is due.
func (s *Store) claimDelivery(ctx context.Context, me ledger.Lessee, ids []string, left time.Duration) (*ledger.Delivery, error) {
	var d *ledger.Delivery
	if err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		if err := s.reapDeliverers(ctx, tx, me); err != nil {
			return err
		}
		d, err = s.Ledger.ClaimDeliveryAs(ctx, tx, ids, me, (left + time.Second).Milliseconds())
		return err
	}); err != nil {
		return nil, err
	}
	return d, nil
}

// awaitDelivery waits until the next event for the sinks ids is due, and
// reports false when none will be before deadline.
func (s *Store) awaitDelivery(ctx context.Context, ids []string, deadline time.Time) (bool, error) {
	wait, ok, err := s.Ledger.NextDeliveryIn(ctx, s.DB, ids)
	if err != nil {
		return false, err
	}
	if !ok || time.Duration(wait)*time.Millisecond >= time.Until(deadline) {
		return false, nil
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Duration(wait)*time.Millisecond + 10*time.Millisecond):
	}
	return true, nil
}

// deliverOne publishes d through sk, cut short at deadline, and records in
// the ledger that it was delivered, or when to try again, counting it in
// rep. The record is written even when ctx is cancelled meanwhile. It
// reports stuck when sk failed with idemtype.ErrMisconfigured: no other
// try of it can succeed in this pass.
func (s *Store) deliverOne(ctx context.Context, d *ledger.Delivery, sk idemtype.EventSink, owner string, deadline time.Time, rep *DeliveryReport) (stuck bool, _ error) {
	bg := context.WithoutCancel(ctx)
	if err := s.Hit("before-publish"); err != nil {
		return false, err
	}
	if d.Tries > 0 {
		if err := s.Hit("during-retry"); err != nil {
			return false, err
		}
	}
	tctx, cancel := context.WithDeadline(ctx, deadline)
	err := sk.Deliver(tctx, idemtype.EventMessage{ID: d.EventID, Body: []byte(d.Payload)})
	cancel()
	if err == nil {
		if err := s.Hit("after-publish"); err != nil {
			return false, err
		}
		if err := s.record(ctx, func() error { return s.marks().Delivered(bg, s.DB, d, owner) }); err != nil && !errors.Is(err, ledger.ErrLeaseLost) {
			return false, fmt.Errorf("record that event %s was delivered to %s (it stays pending, and a later pass delivers it again): %w", d.EventID, sk.Name(), err)
		}
		rep.Delivered++
		s.Log.Info("event delivered", "event_id", d.EventID, "kind", d.Kind, "sink", sk.Name(), "operation", d.Key.String())
		return false, nil
	}
	return errors.Is(err, idemtype.ErrMisconfigured), s.undelivered(ctx, d, sk, owner, deadline, err, rep)
}

// undelivered records that d was not delivered through sk (err), to be
// tried again after a backoff unless err is permanent, counting it in rep.
func (s *Store) undelivered(ctx context.Context, d *ledger.Delivery, sk idemtype.EventSink, owner string, deadline time.Time, err error, rep *DeliveryReport) error {
	bg := context.WithoutCancel(ctx)
	permanent := errors.Is(err, idemtype.ErrPermanent)
	msg := err.Error()
	if errors.Is(err, context.DeadlineExceeded) && !time.Now().Before(deadline) && d.LastError != "" {
		// Cut short by this run's own budget: the sink's last answer
		// says more than that.
		msg = d.LastError
	}
	rep.Errors[sk.Name()] = msg
	if permanent {
		rep.Failed++
	}
	s.Log.Info("event not delivered", "event_id", d.EventID, "kind", d.Kind, "sink", sk.Name(), "tries", d.Tries+1,
		"permanent", permanent, "err", err)
	if err := s.record(ctx, func() error {
		return s.marks().Retry(bg, s.DB, d, owner, msg, backoff(d.Tries).Milliseconds(), permanent)
	}); err != nil &&
		!errors.Is(err, ledger.ErrLeaseLost) {
		return err
	}
	return nil
}

// deliveryMarks are the ledger's records of a delivery's tries
// (*ledger.Ledger), through which a pass writes what became of each.
type deliveryMarks interface {
	Delivered(ctx context.Context, q ledger.Querier, d *ledger.Delivery, owner string) error
	Retry(ctx context.Context, q ledger.Querier, d *ledger.Delivery, owner, errMsg string, afterMs int64, permanent bool) error
}

// marks returns where the store records its deliveries' tries: its
// ledger, unless a test put another in front of it.
func (s *Store) marks() deliveryMarks {
	if s.deliveryMarks != nil {
		return s.deliveryMarks
	}
	return s.Ledger
}

// maxRecordTries is how many times a pass writes a delivery's record
// that the database failed for another transaction (recordAgain) before
// the pass fails (exit 1: the delivery stays pending, and a rerun sends
// it again, as delivery is at least once).
const maxRecordTries = 8

// record runs write, one statement recording a delivery's try, again
// after a pause that grows with each try (up to recordPause times the
// try's number, at random) while the database fails it for another
// transaction (recordAgain), at most maxRecordTries times and not once
// ctx, the command's, is cancelled (write itself should not heed ctx: a
// record is written once even after Ctrl-C, but a user who stops the
// command does not wait for its tries, each up to a lock wait's
// timeout); it returns the last error. The event was already published: failing the pass for
// a deadlock would leave it pending, sent again by the next pass, and
// end the command with exit 1 where a second try records it.
func (s *Store) record(ctx context.Context, write func() error) error {
	for n := 1; ; n++ {
		err := write()
		if err == nil || n == maxRecordTries || !s.recordAgain(err) || ctx.Err() != nil {
			return err
		}
		s.Log.Info("delivery record failed for another transaction; writing it again", "try", n, "err", err)
		t := time.NewTimer(s.pauseBeforeRecord(n))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// pauseBeforeRecord is the pause before a delivery's record is written
// for the n+1-th time: at random, up to n times recordPause, unless a
// test set another (Store.recordPause).
func (s *Store) pauseBeforeRecord(n int) time.Duration {
	if s.recordPause != nil {
		return s.recordPause(n)
	}
	return rand.N(time.Duration(n) * recordPause)
}

// leaseReleaseWait bounds how long a pass that ends in error waits to
// give up its leases (they end on their own otherwise), so that a
// command stopped, or failed, while the database is stuck still exits.
const leaseReleaseWait = 10 * time.Second

// recordPause bounds the first pause before a delivery's record is
// written again (the n-th: n times as long).
const recordPause = 100 * time.Millisecond

// recordAgain reports whether err, the failure of a statement recording
// a delivery, says another transaction made it fail and the statement
// may succeed run again: a deadlock's victim or a serialization failure
// (sink.Driver.Deadlock), or a lock wait that timed out (Locked). Each
// record is one statement of its own transaction, so running it again
// runs its whole transaction again.
func (s *Store) recordAgain(err error) bool {
	return s.Driver.Deadlock(err) || s.Driver.Locked(err)
}

// reapDeliverers ends, inside tx, the delivery leases of processes that
// ran on this host and have since died (proc.Gone: the pid is free, or
// taken by a process that started at another time), so their deliveries
// need not wait for the lease to expire. Leases of live processes, and of
// other hosts, are left to expire on their own.
func (s *Store) reapDeliverers(ctx context.Context, tx *sql.Tx, me ledger.Lessee) error {
	if me.Host == "" {
		return nil
	}
	holders, err := s.Ledger.LeaseHolders(ctx, tx, me.Host, me.Owner)
	if err != nil {
		return err
	}
	for _, h := range holders {
		if !proc.Gone(h.PID, h.Start) {
			continue
		}
		n, err := s.Ledger.ReleaseLeases(ctx, tx, h.Owner)
		if err != nil {
			return err
		}
		s.Log.Info("the process holding delivery leases is gone", "holder", h.Owner, "pid", h.PID, "leases", n)
	}
	return nil
}

func (s *Store) pending(ctx context.Context) (int64, error) {
	if ok, err := s.Driver.TableExists(ctx, s.DB, s.Prefix+"outbox_deliveries"); err != nil || !ok {
		return 0, err
	}
	return s.Ledger.PendingDeliveries(ctx, s.DB)
}

// PendingDeliveries counts the deliveries the outbox still owes, to any
// sink (refused ones not included); ErrNoDatabase without a database.
func (s *Store) PendingDeliveries(ctx context.Context) (int64, error) {
	if err := s.Present(); err != nil {
		return 0, err
	}
	return s.pending(ctx)
}

// EventState says how far event id is delivered: "delivered" when every
// sink it is owed to acknowledged it, "failed" when a sink refused it for
// good, else "pending". It is "" for an event owed to no sink.
func (s *Store) EventState(ctx context.Context, id string) (string, error) {
	if err := s.Present(); err != nil {
		return "", err
	}
	states, err := s.Ledger.DeliveryStates(ctx, s.DB, id)
	switch {
	case err != nil:
		return "", err
	case states[ledger.DeliveryFailed] > 0:
		return ledger.DeliveryFailed, nil
	case states[ledger.DeliveryPending] > 0:
		return ledger.DeliveryPending, nil
	case states[ledger.DeliveryDelivered] > 0:
		return ledger.DeliveryDelivered, nil
	}
	return "", nil
}

// tx runs f in a transaction and commits it.
func (s *Store) tx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}
