//go:build !windows

package main

// Deliverers racing and dying: a delivery leased by a process killed with
// SIGKILL is taken over at once by a run on the same host (not after the
// lease), one leased by a live process or another host's is not; two real
// processes delivering the same pending events send each exactly once at a
// time.

import (
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// lease is a delivery's lease as the ledger holds it.
type lease struct {
	event, sink, owner, host string
	pid                      int64
	longLived                bool // it ends more than five minutes after the event was recorded
}

func leases(t *testing.T, tg *testkit.Target) []lease {
	t.Helper()
	var out []lease
	for _, r := range testkit.Query(t, tg.DB, `SELECT d.event_id, d.sink_id, d.lease_owner, d.lease_host, d.lease_pid,
		CASE WHEN d.lease_expires > o.created_at + 300000 THEN 1 ELSE 0 END
		FROM `+tg.Ledger("outbox_deliveries")+` d JOIN `+tg.Ledger("outbox")+` o ON o.event_id = d.event_id
		WHERE d.lease_owner IS NOT NULL AND d.state = 'pending' ORDER BY d.event_id, d.sink_id`) {
		out = append(out, lease{event: r[0].(string), sink: r[1].(string), owner: r[2].(string), host: r[3].(string),
			pid: r[4].(int64), longLived: fmt.Sprint(r[5]) == "1"})
	}
	return out
}

// TestOutboxDeadDelivererIsTakenOverAtOnce: a run stopped while it holds a
// delivery's lease (ten minutes long), before and after publishing. While
// it lives (stopped), another run leaves that delivery alone; killed with
// SIGKILL, a run on another host still must wait for the lease, and a run
// on this host takes it over at once and delivers it, with the same event
// ID: one JetStream message, every HTTP delivery with that key.
func TestOutboxDeadDelivererIsTakenOverAtOnce(t *testing.T) {
	testkit.Each(t, func(t *testing.T, name string) {
		for _, point := range []string{"before-publish", "after-publish"} {
			t.Run(point, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				stream, h := newStream(t), newHook(t)
				testkit.Orders(t, filepath.Join(dir, "orders.csv"), 20, 7)
				notify := []string{"--notify", stream.url(), "--notify", h.url()}
				holder := start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=" + point + ":1:stop"},
					append([]string{"import", "--notify-timeout", "10m", "orders.csv"}, notify...)...)
				stopped(t, holder)
				events := outboxEvents(t, tg)
				held := leases(t, tg)
				if len(events) != 1 || len(held) != 1 || held[0].event != events[0].ID || held[0].pid != int64(holder.cmd.Process.Pid) ||
					held[0].host == "" || !held[0].longLived {
					t.Fatalf("events %v, leases %+v: want one event leased for minutes by process %d", events, held, holder.cmd.Process.Pid)
				}
				deliver := func(timeout string) testkit.Run {
					return tg.Exec(t, dir, nil, append([]string{"outbox", "deliver", "--notify-timeout", timeout}, notify...)...)
				}
				// Alive (stopped): its lease is respected; the other sink's
				// delivery, not leased, is made.
				if r := deliver("1s"); r.Code != 1 {
					t.Fatalf("deliver beside a live holder: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
				}
				if got := leases(t, tg); !slices.Equal(got, held) {
					t.Fatalf("a live holder's lease was taken: %+v, was %+v", got, held)
				}
				if err := holder.cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				if r := testkit.Wait(t, holder.cmd); r.Signal != syscall.SIGKILL {
					t.Fatalf("holder not killed: %+v", r)
				}
				// Dead, but recorded on another host: this host cannot tell.
				testkit.Query(t, tg.DB, tg.Rebind(`UPDATE `+tg.Ledger("outbox_deliveries")+` SET lease_host = ? WHERE lease_owner = ?`),
					"another-host", held[0].owner)
				if r := deliver("1s"); r.Code != 1 {
					t.Fatalf("deliver beside another host's lease: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
				}
				if got := leases(t, tg); len(got) != 1 || got[0].owner != held[0].owner {
					t.Fatalf("another host's lease was taken: %+v", got)
				}
				testkit.Query(t, tg.DB, tg.Rebind(`UPDATE `+tg.Ledger("outbox_deliveries")+` SET lease_host = ? WHERE lease_owner = ?`),
					held[0].host, held[0].owner)
				// Dead on this host: taken over at once, though the lease has
				// minutes to run and this run's budget is seconds.
				if r := deliver("20s"); r.Code != 0 {
					t.Fatalf("deliver after the holder died: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
				}
				if got := deliveryStates(t, tg); !slices.Equal(got, []string{"delivered", "delivered"}) {
					t.Fatalf("deliveries %v", got)
				}
				checkDelivered(t, stream, h, events)
			})
		}
	})
}
