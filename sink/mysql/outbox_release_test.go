package mysql

import (
	"slices"
	"testing"

	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// TestReleaseLeasesMeetsADeliverer: the release of a dead process's
// delivery leases meets a live deliverer's transaction without a
// deadlock. The deliverer has taken over delivery e2 (locking its row)
// and then records e1, which it also holds, delivered; the release,
// looking for the dead process's deliveries, waits for e2's row. Found by
// a locking scan, the release had kept the lock of e1's row, which it
// passed on its way to e2 and did not change, and the deliverer then needs
// it: InnoDB rolled the deliverer back ("mark delivered: Error 1213 …
// Deadlock found", as two 'outbox deliver' racing for a killed process's
// delivery once failed).
func TestReleaseLeasesMeetsADeliverer(t *testing.T) {
	st := openStoreWith(t, sink.Settings{BusyTimeout: lockWaitBound})
	ctx := t.Context()
	l := ledger.New(st.DB, st.Driver, st.Prefix)
	if err := l.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct{ event, state, owner string }{
		{"e0", "delivered", ""}, {"e1", "pending", "live"}, {"e2", "pending", "dead"}, {"e3", "delivered", ""},
	} {
		var owner, expires any
		if d.owner != "" {
			owner, expires = d.owner, 9000000000000
		}
		if _, err := st.DB.ExecContext(ctx, `INSERT INTO `+st.Prefix+`outbox_deliveries (event_id, sink_id, sink_name, state, next_at, lease_owner, lease_expires)
			VALUES (?, 's', 's', ?, 0, ?, ?)`, d.event, d.state, owner, expires); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.DB.ExecContext(ctx, `ANALYZE TABLE `+st.Prefix+`outbox_deliveries`); err != nil {
		t.Fatal(err)
	}
	ops := st.Driver.Ledger(st.Prefix)
	deliverer, err := st.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer deliverer.Rollback()
	// The deliverer takes e2 over.
	if _, err := deliverer.ExecContext(ctx, `UPDATE `+st.Prefix+`outbox_deliveries SET lease_owner = 'live' WHERE event_id = 'e2' AND sink_id = 's'`); err != nil {
		t.Fatal(err)
	}

	type released struct {
		n   int64
		err error
	}
	releaser, id := connection(t, st.DB)
	release, err := releaser.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release.Rollback()
	done := make(chan released, 1)
	go func() {
		n, err := ops.ReleaseLeases(ctx, release, "dead")
		done <- released{n, err}
	}()
	// The release waits for e2's row.
	awaitLockWait(t, st.DB, id, "the release", done)
	if held, err := ops.MarkDelivered(ctx, deliverer, "e1", "s", "live"); err != nil || !held {
		t.Fatalf("the deliverer records e1 delivered: held %v, %v", held, err)
	}
	if err := deliverer.Commit(); err != nil {
		t.Fatal(err)
	}
	if r := receive(t, done, "the release, after the deliverer committed,"); r.err != nil || r.n != 0 {
		t.Fatalf("the release: %d released, %v; want 0 (the deliverer holds e2) and no error", r.n, r.err)
	}
	if err := release.Commit(); err != nil {
		t.Fatal(err)
	}
	got := drivertest.Strings(t, st.DB, `SELECT concat(event_id, ' ', state, ' ', coalesce(lease_owner, '-')) FROM `+st.Prefix+`outbox_deliveries ORDER BY event_id`)
	if want := []string{"e0 delivered -", "e1 delivered -", "e2 pending live", "e3 delivered -"}; !slices.Equal(got, want) {
		t.Fatalf("deliveries: %q, want %q", got, want)
	}
}
