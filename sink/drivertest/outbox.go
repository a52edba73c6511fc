package drivertest

import (
	"database/sql"
	"errors"
	"fmt"
	"strconv"
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

// outboxLeaseHoldersAndPrune: a claim records the process that holds the
// lease, found by host for others; releasing a dead owner's leases makes
// its deliveries claimable at once; deliveries are counted and listed by
// state; pruning deletes only the events that owe nothing, with their
// deliveries; an operation's attempt IDs are listed oldest first.
func outboxLeaseHoldersAndPrune(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	f.record("e1")
	if err := f.tx(func(tx *sql.Tx) error {
		return f.l.RecordEvent(f.ctx, tx, ledger.Event{ID: "e2", Kind: "import.undone", Key: identity().Key, AttemptID: "a2", Payload: "{}", CreatedAt: 2}, nil)
	}); err != nil {
		t.Fatal(err)
	}
	claimAs := func(by ledger.Lessee, sink string) *ledger.Delivery {
		t.Helper()
		var d *ledger.Delivery
		if err := f.tx(func(tx *sql.Tx) (err error) {
			d, err = f.l.ClaimDeliveryAs(f.ctx, tx, []string{sink}, by, leaseMs)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return d
	}
	w1 := ledger.Lessee{Owner: "w1", Host: "h1", PID: 11, Start: 1<<63 + 5}
	w2 := ledger.Lessee{Owner: "w2", Host: "h2", PID: 22, Start: 7}
	if d := claimAs(w1, "s1"); d == nil || d.EventID != "e1" || d.State != ledger.DeliveryPending {
		t.Fatalf("w1 claimed %+v", d)
	}
	d2 := claimAs(w2, "s2")
	if d2 == nil || d2.EventID != "e1" {
		t.Fatalf("w2 claimed %+v", d2)
	}
	holders := func(host, owner string) string {
		t.Helper()
		hs, err := f.l.LeaseHolders(f.ctx, f.st.DB, host, owner)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(hs)
	}
	for _, c := range []struct{ host, owner, want string }{
		{"h1", "w9", fmt.Sprint([]ledger.Lessee{w1})},
		{"h1", "w1", "[]"},
		{"h2", "w1", fmt.Sprint([]ledger.Lessee{w2})},
		{"h3", "w9", "[]"},
	} {
		if got := holders(c.host, c.owner); got != c.want {
			t.Errorf("lease holders on %s but %s: %s, want %s", c.host, c.owner, got, c.want)
		}
	}
	release := func(owner string) int64 {
		t.Helper()
		var n int64
		if err := f.tx(func(tx *sql.Tx) (err error) { n, err = f.l.ReleaseLeases(f.ctx, tx, owner); return err }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := release("w1"); n != 1 {
		t.Errorf("released %d leases of w1, want 1", n)
	}
	if n := release("w1"); n != 0 {
		t.Errorf("released %d leases of w1 again, want 0", n)
	}
	if got := holders("h1", "w9"); got != "[]" {
		t.Errorf("lease holders on h1 after the release: %s", got)
	}
	d1 := f.claimDelivery("w3", leaseMs, "s1")
	if d1 == nil || d1.EventID != "e1" {
		t.Fatalf("claim of a released delivery: %+v", d1)
	}
	if err := f.l.Delivered(f.ctx, f.st.DB, d1, "w3"); err != nil {
		t.Fatal(err)
	}
	if err := f.l.Retry(f.ctx, f.st.DB, d2, "w2", "422 refused", 0, true); err != nil {
		t.Fatal(err)
	}
	states, err := f.l.DeliveryStates(f.ctx, f.st.DB, "e1")
	if err != nil || fmt.Sprint(states) != "map[delivered:1 failed:1]" {
		t.Errorf("states of e1: %v %v", states, err)
	}
	if states, err := f.l.DeliveryStates(f.ctx, f.st.DB, "e2"); err != nil || len(states) != 0 {
		t.Errorf("states of e2, owed to none: %v %v", states, err)
	}
	listed := func(state string) string {
		t.Helper()
		ds, err := f.l.Deliveries(f.ctx, f.st.DB, state)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range ds {
			out = append(out, d.EventID+"/"+d.SinkID+" "+d.State)
		}
		return fmt.Sprint(out)
	}
	if got := listed(ledger.DeliveryDelivered); got != "[e1/s1 delivered]" {
		t.Errorf("delivered: %s", got)
	}
	if got := listed(""); got != "[e1/s1 delivered e1/s2 failed e2/ ]" {
		t.Errorf("all: %s", got)
	}

	// e3 is delivered; e1 has a delivery refused for good; e2 owes nothing.
	if err := f.tx(func(tx *sql.Tx) error {
		return f.l.RecordEvent(f.ctx, tx, ledger.Event{ID: "e3", Kind: "import.completed", Key: identity().Key, AttemptID: "a3", Payload: "{}", CreatedAt: 3}, sinks[:1])
	}); err != nil {
		t.Fatal(err)
	}
	d3 := f.claimDelivery("w3", leaseMs, "s1")
	if d3 == nil || d3.EventID != "e3" {
		t.Fatalf("claim of e3: %+v", d3)
	}
	if err := f.l.Delivered(f.ctx, f.st.DB, d3, "w3"); err != nil {
		t.Fatal(err)
	}
	prune := func(cutoff int64) int64 {
		t.Helper()
		var n int64
		if err := f.tx(func(tx *sql.Tx) (err error) { n, err = f.l.PruneEvents(f.ctx, tx, cutoff); return err }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := prune(3); n != 1 || listed("") != "[e1/s1 delivered e1/s2 failed e3/s1 delivered]" {
		t.Errorf("pruned %d before 3, left %s; want e2 pruned", n, listed(""))
	}
	// e3 was delivered at the clock's millisecond at: a cutoff of at keeps
	// it (delivered at, not before, the cutoff), at+1 prunes it.
	ats := Strings(t, f.st.DB, `SELECT delivered_at FROM `+f.st.Prefix+`outbox_deliveries WHERE event_id = 'e3'`)
	if len(ats) != 1 {
		t.Fatalf("e3's delivery times: %v", ats)
	}
	at, err := strconv.ParseInt(ats[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if n := prune(at); n != 0 || listed("") != "[e1/s1 delivered e1/s2 failed e3/s1 delivered]" {
		t.Errorf("pruned %d at e3's delivery time, left %s; want e3 kept", n, listed(""))
	}
	if n := prune(at + 1); n != 1 || listed("") != "[e1/s1 delivered e1/s2 failed]" {
		t.Errorf("pruned %d after e3's delivery time, left %s; want e3 pruned", n, listed(""))
	}
	if n := len(Strings(t, f.st.DB, `SELECT sink_id FROM `+f.st.Prefix+`outbox_deliveries`)); n != 2 {
		t.Errorf("%d deliveries left, want e1's 2", n)
	}

	id := identity()
	f.create(id, attempt("a1"))
	if err := f.tx(func(tx *sql.Tx) error { return f.l.Start(f.ctx, tx, id.Key, attempt("a2"), false, leaseMs) }); err != nil {
		t.Fatal(err)
	}
	if ids, err := f.l.AttemptIDs(f.ctx, f.st.DB, id.Key); err != nil || fmt.Sprint(ids) != "[a1 a2]" {
		t.Errorf("attempt IDs: %v %v, want [a1 a2]", ids, err)
	}
	if ids, err := f.l.AttemptIDs(f.ctx, f.st.DB, ledger.Key{Table: "orders", FileID: "file-2"}); err != nil || len(ids) != 0 {
		t.Errorf("attempt IDs of another operation: %v %v", ids, err)
	}
}
