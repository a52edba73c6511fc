package drivertest

import (
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/idemport/idemport/ledger"
)

var sinks = []ledger.SinkRef{{ID: "s1", Name: "nats://h:4222/a"}, {ID: "s2", Name: "https://h/x?token=xxxxx"}}

func (f *ledgerFx) record(id string) {
	f.t.Helper()
	ev := ledger.Event{ID: id, Kind: "import.completed", Key: identity().Key, AttemptID: "a-" + id, Payload: `{"event_id":"` + id + `"}`, CreatedAt: 1}
	if err := f.tx(func(tx *sql.Tx) error { return f.l.RecordEvent(f.ctx, tx, ev, sinks) }); err != nil {
		f.t.Fatalf("record %s: %v", id, err)
	}
}

func (f *ledgerFx) claimDelivery(owner string, lease int64, sinkIDs ...string) *ledger.Delivery {
	f.t.Helper()
	var d *ledger.Delivery
	if err := f.tx(func(tx *sql.Tx) (err error) {
		d, err = f.l.ClaimDelivery(f.ctx, tx, sinkIDs, owner, lease)
		return err
	}); err != nil {
		f.t.Fatalf("claim: %v", err)
	}
	return d
}

// outboxRecordOnce: an event recorded again (same ID) is one event, owed
// once to each sink; a rolled back transaction records nothing.
func outboxRecordOnce(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	f.record("e1")
	f.record("e1")
	err := f.tx(func(tx *sql.Tx) error {
		ev := ledger.Event{ID: "e2", Kind: "import.undone", Key: identity().Key, AttemptID: "a2", Payload: "{}", CreatedAt: 2}
		if err := f.l.RecordEvent(f.ctx, tx, ev, sinks); err != nil {
			return err
		}
		return errors.New("roll back")
	})
	if err == nil {
		t.Fatal("the failing transaction committed")
	}
	ds, err := f.l.Deliveries(f.ctx, f.st.DB, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range ds {
		got = append(got, fmt.Sprintf("%s %s %s %s %d", d.EventID, d.SinkID, d.SinkName, d.State, d.Tries))
	}
	want := []string{"e1 s1 nats://h:4222/a pending 0", "e1 s2 https://h/x?token=xxxxx pending 0"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("deliveries %q, want %q", got, want)
	}
	if n, err := f.l.PendingDeliveries(f.ctx, f.st.DB); err != nil || n != 2 {
		t.Fatalf("pending %d, %v", n, err)
	}
}

// outboxClaimIsExclusive: many claimants at once never get one delivery
// twice while its lease lives; each is claimed exactly once.
func outboxClaimIsExclusive(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	const n = 30
	for i := range n {
		f.record(fmt.Sprintf("e%02d", i))
	}
	var mu sync.Mutex
	seen := map[string]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		owner := fmt.Sprintf("w%d", w)
		wg.Go(func() {
			for {
				var d *ledger.Delivery
				err := inTxErr(f, func(tx *sql.Tx) (err error) {
					d, err = f.l.ClaimDelivery(f.ctx, tx, []string{"s1", "s2"}, owner, leaseMs)
					return err
				})
				if err != nil {
					errs <- err
					return
				}
				if d == nil {
					return
				}
				k := d.EventID + "/" + d.SinkID
				mu.Lock()
				if prev, ok := seen[k]; ok {
					errs <- fmt.Errorf("%s claimed by %s and %s", k, prev, owner)
				}
				seen[k] = owner
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(seen) != 2*n {
		t.Fatalf("%d of %d deliveries claimed", len(seen), 2*n)
	}
}

func inTxErr(f *ledgerFx, fn func(tx *sql.Tx) error) error {
	tx, err := f.st.DB.BeginTx(f.ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// outboxLeaseAndFencing: a delivery leased to w1 is not claimed by w2 until
// the lease ends; w2 then takes it over with the same event ID, and w1 can
// no longer mark it delivered. A retry waits its backoff; a permanent
// failure is never claimed again.
func outboxLeaseAndFencing(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	f.record("e1")
	d1 := f.claimDelivery("w1", 300, "s1")
	if d1 == nil || d1.EventID != "e1" || d1.SinkID != "s1" || d1.Payload != `{"event_id":"e1"}` {
		t.Fatalf("claim: %+v", d1)
	}
	if d := f.claimDelivery("w2", 300, "s1"); d != nil {
		t.Fatalf("claimed under a live lease: %+v", d)
	}
	wait, ok, err := f.l.NextDeliveryIn(f.ctx, f.st.DB, []string{"s1"})
	if err != nil || !ok || wait <= 0 || wait > 300 {
		t.Fatalf("next delivery in %d ms (%v, %v), want within the lease", wait, ok, err)
	}
	time.Sleep(350 * time.Millisecond)
	d2 := f.claimDelivery("w2", leaseMs, "s1")
	if d2 == nil || d2.EventID != "e1" {
		t.Fatalf("takeover: %+v", d2)
	}
	if err := f.l.Delivered(f.ctx, f.st.DB, d1, "w1"); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Fatalf("the old owner marked it delivered: %v", err)
	}
	if err := f.l.Retry(f.ctx, f.st.DB, d2, "w2", "503", 60_000, false); err != nil {
		t.Fatal(err)
	}
	if d := f.claimDelivery("w3", leaseMs, "s1"); d != nil {
		t.Fatalf("claimed before its retry time: %+v", d)
	}
	d3 := f.claimDelivery("w3", leaseMs, "s2")
	if err := f.l.Retry(f.ctx, f.st.DB, d3, "w3", "422 refused", 0, true); err != nil {
		t.Fatal(err)
	}
	if d := f.claimDelivery("w3", leaseMs, "s2"); d != nil {
		t.Fatalf("a permanent failure was claimed again: %+v", d)
	}
	ds, err := f.l.Deliveries(f.ctx, f.st.DB, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range ds {
		got = append(got, fmt.Sprintf("%s %s %d %s", d.SinkID, d.State, d.Tries, d.LastError))
	}
	if want := "[s1 pending 1 503 s2 failed 1 422 refused]"; fmt.Sprint(got) != want {
		t.Fatalf("deliveries %v, want %s", got, want)
	}
	if n, _ := f.l.PendingDeliveries(f.ctx, f.st.DB); n != 1 {
		t.Fatalf("pending %d, want 1", n)
	}
}
