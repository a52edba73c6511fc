//go:build !windows

package main

// Deliverers racing and dying: a delivery leased by a process killed with
// SIGKILL is taken over at once by a run on the same host (not after the
// lease), one leased by a live process or another host's is not; two real
// processes delivering the same pending events send each exactly once at a
// time.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

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
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
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

// raceHook is an HTTP endpoint that answers 503 while down; up, it
// records per Idempotency-Key how many deliveries it answered 200 and the
// most that were in flight at once, and holds its first request until a
// second one is in flight (or 30s pass), so that two deliverers are seen to
// overlap.
type raceHook struct {
	srv      *httptest.Server
	down     atomic.Bool
	mu       sync.Mutex
	inflight map[string]int
	maxOne   int // the most deliveries of one key in flight at once
	total    int // deliveries in flight now, any key
	overlap  bool
	ok       map[string]int
	first    chan struct{}
	once     sync.Once
}

func newRaceHook(t *testing.T) *raceHook {
	h := &raceHook{inflight: map[string]int{}, ok: map[string]int{}, first: make(chan struct{})}
	h.down.Store(true)
	var n atomic.Int32
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if h.down.Load() {
			w.WriteHeader(503)
			return
		}
		key := r.Header.Get("Idempotency-Key")
		h.mu.Lock()
		h.inflight[key]++
		h.total++
		h.maxOne = max(h.maxOne, h.inflight[key])
		if h.total >= 2 {
			h.overlap = true
			h.once.Do(func() { close(h.first) })
		}
		h.mu.Unlock()
		if n.Add(1) == 1 {
			select {
			case <-h.first:
			case <-time.After(30 * time.Second):
			}
		}
		h.mu.Lock()
		h.inflight[key]--
		h.total--
		h.ok[key]++
		h.mu.Unlock()
		w.WriteHeader(200)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *raceHook) url() string { return h.srv.URL + "/events" }

func (h *raceHook) state() (ok map[string]int, maxOne int, overlap bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.ok), h.maxOne, h.overlap
}

// capture makes the stream capture subject too.
func (s *natsStream) capture(subject string) {
	s.t.Helper()
	nc, err := nats.Connect(natsURL, nats.Timeout(3*time.Second))
	if err != nil {
		s.t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := s.stream.Info(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	cfg := info.Config
	cfg.Subjects = append(cfg.Subjects, subject)
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		s.t.Fatalf("update stream: %v", err)
	}
}

// deliverJSON is the output of 'outbox deliver --output json'.
type deliverJSON struct {
	Delivered, Failed, Pending int64
}

// TestOutboxTwoDeliverersRace: forty events are pending for a NATS
// JetStream stream and an HTTP endpoint; two 'outbox deliver' processes
// race over them, one killed with SIGKILL after its seventh acknowledged
// delivery, before it marks it. Both are seen in flight at once; no event
// is ever in flight twice at once at the endpoint; after a last run, the
// stream holds exactly one message per event and the endpoint has every
// event, each once but for the one delivery the killed process left
// unmarked, which may be sent again, with the same ID. Then a delivery
// killed after publishing is raced for by two processes: exactly one sends
// it again, with the same ID.
func TestOutboxTwoDeliverersRace(t *testing.T) {
	t.Parallel()
	const files = 40
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		stream, h := newStream(t), newRaceHook(t)
		// The events are recorded while both sinks refuse: the subject has
		// no stream yet, and the endpoint answers 503.
		subject := stream.subject + ".later"
		notify := []string{"--notify", natsURL + "/" + subject, "--notify", h.url()}
		args := append([]string{"import", "--notify-timeout", "1ms"}, notify...)
		for i := 0; i < files; i++ {
			f := fmt.Sprintf("f%02d.csv", i)
			testkit.Orders(t, filepath.Join(dir, f), 3, i+1)
			args = append(args, f)
		}
		if r := tg.Exec(t, dir, nil, args...); r.Code != 0 {
			t.Fatalf("import: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		events := outboxEvents(t, tg)
		if len(events) != files {
			t.Fatalf("%d events, want %d", len(events), files)
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("outbox_deliveries")+` WHERE state = 'pending'`); n != 2*files {
			t.Fatalf("%d deliveries pending, want %d", n, 2*files)
		}
		stream.capture(subject)
		h.down.Store(false)
		deliver := append([]string{"outbox", "deliver", "--output", "json", "--notify-timeout", "60s"}, notify...)
		a := start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=after-publish:7"}, deliver...)
		b := start(t, tg, dir, nil, deliver...)
		ra, rb := testkit.Wait(t, a.cmd), testkit.Wait(t, b.cmd)
		if ra.Signal != syscall.SIGKILL || (rb.Code != 0 && rb.Code != 1) {
			t.Fatalf("a: %+v\nb: %+v", ra, rb)
		}
		// What the killed one left (its unmarked delivery, if the other
		// did not take it over) goes with the next run.
		if r := tg.Exec(t, dir, nil, deliver...); r.Code != 0 {
			t.Fatalf("last deliver: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		ok, maxOne, overlap := h.state()
		if !overlap {
			t.Fatalf("the two deliverers never had deliveries in flight at once")
		}
		if maxOne != 1 {
			t.Fatalf("one event was in flight %d times at once at the endpoint", maxOne)
		}
		twice := 0
		for _, e := range events {
			switch ok[e.ID] {
			case 1:
			case 2:
				twice++
			default:
				t.Fatalf("event %s reached the endpoint %d times", e.ID, ok[e.ID])
			}
		}
		if twice > 1 || len(ok) != files {
			t.Fatalf("%d events reached the endpoint twice (want at most the killed one's), %d keys for %d events", twice, len(ok), files)
		}
		ids, _ := stream.messages()
		var want []string
		for _, e := range events {
			want = append(want, e.ID)
		}
		slices.Sort(ids)
		slices.Sort(want)
		if !slices.Equal(ids, want) {
			t.Fatalf("stream holds %d messages %v, want one per event %v", len(ids), ids, want)
		}
		for _, s := range deliveryStates(t, tg) {
			if s != "delivered" {
				t.Fatalf("deliveries %v", deliveryStates(t, tg))
			}
		}
		// A delivery killed after the endpoint took it, then two processes
		// race for it: one sends it again, with the same ID.
		testkit.Orders(t, filepath.Join(dir, "z.csv"), 3, 99)
		killed := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=after-publish:1"}, append([]string{"import", "z.csv"}, notify[2:]...)...)
		if killed.Signal != syscall.SIGKILL {
			t.Fatalf("not killed: %+v", killed)
		}
		z := outboxEvents(t, tg)[files].ID
		if ok, _, _ := h.state(); ok[z] != 1 {
			t.Fatalf("the killed run sent event %s %d times, want once", z, ok[z])
		}
		a, b = start(t, tg, dir, nil, deliver...), start(t, tg, dir, nil, deliver...)
		ra, rb = testkit.Wait(t, a.cmd), testkit.Wait(t, b.cmd)
		var da, db deliverJSON
		// The one that finds it leased by the other may end first, saying
		// it is pending (exit 1).
		if ra.Code+rb.Code > 1 || json.Unmarshal([]byte(ra.Stdout), &da) != nil || json.Unmarshal([]byte(rb.Stdout), &db) != nil ||
			da.Delivered+db.Delivered != 1 {
			t.Fatalf("the two deliverers after the kill:\n%+v\n%+v", ra, rb)
		}
		if got := deliveryStates(t, tg); got[len(got)-1] != "delivered" || slices.ContainsFunc(got, func(s string) bool { return s != "delivered" }) {
			t.Fatalf("deliveries %v", got)
		}
		ok, maxOne, _ = h.state()
		if ok[z] != 2 || maxOne != 1 || len(ok) != files+1 {
			t.Fatalf("event %s reached the endpoint %d times (want 2, one after the kill), at most %d at once, %d keys", z, ok[z], maxOne, len(ok))
		}
	})
}
