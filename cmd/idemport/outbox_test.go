package main

// The outbox suite: events recorded with their effect and delivered to a
// real NATS JetStream server and an HTTP endpoint, with the binary killed
// at each boundary of a delivery and rerun: one stream message per event,
// one Idempotency-Key per event however often it is sent.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemport/idemport/internal/testenv"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/pipeline"
)

const natsURL = "nats://127.0.0.1:4222"

// natsStream is a JetStream stream of its own for one test, deleted at
// cleanup.
type natsStream struct {
	t       *testing.T
	subject string
	stream  jetstream.Stream
}

// newStream creates a uniquely named stream on the machine's NATS server.
// Without a server the test skips with a message, or fails when the run
// requires NATS (IDEMPORT_REQUIRE=nats).
func newStream(t *testing.T) *natsStream {
	t.Helper()
	nc, err := nats.Connect(natsURL, nats.Timeout(3*time.Second))
	if err != nil {
		testenv.Unavailable(t, testenv.NATS, fmt.Sprintf("no NATS JetStream server at %s (%v): start one", natsURL, err))
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	id := strings.ReplaceAll(uuid.NewString(), "-", "")
	name := "IDEMPORT_TEST_" + id
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"idemport.test." + id},
		Storage: jetstream.MemoryStorage, Duplicates: 10 * time.Minute})
	if err != nil {
		t.Fatalf("create stream: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := js.DeleteStream(ctx, name); err != nil {
			t.Errorf("delete stream %s: %v", name, err)
		}
	})
	return &natsStream{t: t, subject: "idemport.test." + id, stream: s}
}

func (s *natsStream) url() string { return natsURL + "/" + s.subject }

// messages returns the stream's messages: their Nats-Msg-Id and body.
func (s *natsStream) messages() (ids []string, bodies [][]byte) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := s.stream.Info(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.stream.GetMsg(ctx, seq)
		if err != nil {
			s.t.Fatalf("message %d: %v", seq, err)
		}
		ids = append(ids, m.Header.Get("Nats-Msg-Id"))
		bodies = append(bodies, m.Data)
	}
	if uint64(len(ids)) != info.State.Msgs {
		s.t.Fatalf("read %d messages, the stream counts %d", len(ids), info.State.Msgs)
	}
	return ids, bodies
}

// hook is an HTTP endpoint that records every delivery's Idempotency-Key
// and body, and answers with status (200 unless set).
type hook struct {
	srv    *httptest.Server
	status atomic.Int32
	fails  atomic.Int32 // the next this many requests get 503
	mu     sync.Mutex
	keys   []string
	bodies [][]byte
	codes  []int
}

func newHook(t *testing.T) *hook {
	h := &hook{}
	h.status.Store(200)
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		code := int(h.status.Load())
		if h.fails.Add(-1) >= 0 {
			code = 503
		}
		h.mu.Lock()
		h.keys = append(h.keys, r.Header.Get("Idempotency-Key"))
		h.bodies = append(h.bodies, b)
		h.codes = append(h.codes, code)
		h.mu.Unlock()
		w.WriteHeader(code)
		fmt.Fprintf(w, "status %d", code)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// url carries a token in its query, which must never be shown.
func (h *hook) url() string { return h.srv.URL + "/events?token=s3cr3t-token" }

func (h *hook) requests() (keys []string, bodies [][]byte, codes []int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.keys), slices.Clone(h.bodies), slices.Clone(h.codes)
}

// outboxEvent is a recorded event as the test reads it from the ledger.
type outboxEvent struct {
	ID, Kind, Attempt string
}

func outboxEvents(t *testing.T, tg *testkit.Target) []outboxEvent {
	t.Helper()
	var out []outboxEvent
	for _, r := range testkit.Query(t, tg.DB, `SELECT event_id, kind, attempt_id FROM `+tg.Ledger("outbox")+` ORDER BY created_at, event_id`) {
		out = append(out, outboxEvent{r[0].(string), r[1].(string), r[2].(string)})
	}
	return out
}

// deliveryStates returns "state tries" of each delivery of the outbox.
func deliveryStates(t *testing.T, tg *testkit.Target) []string {
	t.Helper()
	var out []string
	for _, r := range testkit.Query(t, tg.DB, `SELECT state FROM `+tg.Ledger("outbox_deliveries")+` ORDER BY event_id, sink_id`) {
		out = append(out, r[0].(string))
	}
	return out
}

// checkDelivered asserts that the stream holds exactly one message per
// event, carrying its ID, and that every HTTP delivery of an event carried
// its ID, each event reaching the endpoint with a 2xx at least once.
func checkDelivered(t *testing.T, s *natsStream, h *hook, events []outboxEvent) {
	t.Helper()
	ids, bodies := s.messages()
	var want []string
	for _, e := range events {
		want = append(want, e.ID)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("stream holds messages %v, want one per event %v", ids, want)
	}
	for i, b := range bodies {
		var ev struct {
			EventID string `json:"event_id"`
			Kind    string `json:"kind"`
		}
		if err := json.Unmarshal(b, &ev); err != nil || ev.EventID != ids[i] || ev.Kind != events[i].Kind {
			t.Fatalf("message %d: %s (%v), want event %s of kind %s", i, b, err, ids[i], events[i].Kind)
		}
	}
	keys, hbodies, codes := h.requests()
	ok := map[string]int{}
	for i, k := range keys {
		var ev struct {
			EventID string `json:"event_id"`
		}
		if err := json.Unmarshal(hbodies[i], &ev); err != nil || ev.EventID != k {
			t.Fatalf("HTTP delivery %d: key %q, body %s", i, k, hbodies[i])
		}
		if !slices.Contains(want, k) {
			t.Fatalf("HTTP delivery %d carries key %q, not an event ID (%v)", i, k, want)
		}
		if codes[i] == 200 {
			ok[k]++
		}
	}
	for _, id := range want {
		if ok[id] < 1 {
			t.Fatalf("event %s never reached the endpoint with a 2xx (keys %v, codes %v)", id, keys, codes)
		}
	}
}

// TestOutboxKillAtEachDeliveryBoundary kills the binary after the
// completing commit and before publishing, after publishing and before
// marking delivered (for each sink), and during a retry, then reruns it:
// one JetStream message per event, and every HTTP delivery of the event
// carries its ID.
func TestOutboxKillAtEachDeliveryBoundary(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, point := range []string{"after-finalize", "before-publish:1", "before-publish:2", "after-publish:1", "after-publish:2", "during-retry:1"} {
			t.Run(point, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				stream, h := newStream(t), newHook(t)
				testkit.Orders(t, filepath.Join(dir, "orders.csv"), 300, 5)
				notify := []string{"--notify", stream.url(), "--notify", h.url()}
				if point == "during-retry:1" {
					h.fails.Store(1) // the first try fails; the retry is killed
				}
				killed := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=" + point},
					append([]string{"import", "--partition-rows", "100", "--notify-timeout", "3s", "orders.csv"}, notify...)...)
				if killed.Signal != syscall.SIGKILL {
					t.Fatalf("not killed at %s: exit %d\n%s%s", point, killed.Code, killed.Stdout, killed.Stderr)
				}
				events := outboxEvents(t, tg)
				if len(events) != 1 || events[0].Kind != "import.completed" {
					t.Fatalf("outbox after the kill: %v, want one import.completed", events)
				}
				h.status.Store(200)
				// The rerun is a duplicate: it records nothing and delivers
				// what the killed run left.
				res := importTo(t, tg, dir, nil, 0, append([]string{"--partition-rows", "100", "--notify-timeout", "20s", "orders.csv"}, notify...)...)
				if res.Outcome != "duplicate" {
					t.Fatalf("rerun: %s", res.Outcome)
				}
				if got := outboxEvents(t, tg); !slices.Equal(got, events) {
					t.Fatalf("outbox after the rerun: %v, want %v", got, events)
				}
				if got := deliveryStates(t, tg); !slices.Equal(got, []string{"delivered", "delivered"}) {
					t.Fatalf("deliveries %v", got)
				}
				checkDelivered(t, stream, h, events)
				keys, _, _ := h.requests()
				t.Logf("%s: HTTP deliveries %d", point, len(keys))
				// Once more: nothing new is recorded or sent.
				importTo(t, tg, dir, nil, 0, append([]string{"--partition-rows", "100", "orders.csv"}, notify...)...)
				checkDelivered(t, stream, h, events)
				if again, _, _ := h.requests(); len(again) != len(keys) {
					t.Fatalf("a third run sent %d more HTTP deliveries", len(again)-len(keys))
				}
			})
		}
	})
}

// TestOutboxKillBeforeEventRecorded kills each command that records an
// event (a plain import by place and by key, a --snapshot and an --atomic
// import, undo, a replay of rejects) inside its effect's transaction, after
// the effect is written and before its event is (failpoint before-event):
// the effect must then be absent with the event, the operation not
// completed (or not undone), and the rerun applies the effect and records
// exactly one event for it, which the endpoint receives once. An event
// recorded in a transaction of its own, after its effect committed, would
// be lost for ever by such a crash.
func TestOutboxKillBeforeEventRecorded(t *testing.T) {
	t.Parallel()
	const rows = 300
	type state struct {
		op   string // the state of the operation the command works on
		rows int64  // the rows of its table
	}
	cases := []struct {
		name   string
		table  string                                                           // the table the command writes
		file   string                                                           // the file of the operation it works on
		before func(t *testing.T, tg *testkit.Target, dir string, env []string) // clean runs first
		cmd    []string                                                         // killed at before-event, then rerun
		kinds  []string                                                         // the events after the rerun
		killed state                                                            // after the kill
		done   state                                                            // after the rerun
	}{
		{name: "import", table: "orders", file: "orders.csv", cmd: []string{"import", "--partition-rows", "100", "orders.csv"},
			kinds: []string{"import.completed"}, killed: state{"processing", rows}, done: state{"completed", rows}},
		{name: "import-by-key", table: "orders", file: "orders.csv", cmd: []string{"import", "--partition-rows", "100", "--key", "order_id", "orders.csv"},
			kinds: []string{"import.completed"}, killed: state{"processing", rows}, done: state{"completed", rows}},
		{name: "snapshot", table: "orders", file: "fewer.csv",
			before: func(t *testing.T, tg *testkit.Target, dir string, env []string) {
				importTo(t, tg, dir, env, 0, "--key", "order_id", "--snapshot", "orders.csv")
			},
			cmd:   []string{"import", "--table", "orders", "--partition-rows", "100", "--key", "order_id", "--snapshot", "--max-delete", "50", "fewer.csv"},
			kinds: []string{"import.completed", "import.completed"}, killed: state{"processing", rows}, done: state{"completed", rows - 50}},
		{name: "atomic", table: "orders", file: "orders.csv", cmd: []string{"import", "--partition-rows", "100", "--atomic", "orders.csv"},
			kinds: []string{"import.completed"}, killed: state{"processing", 0}, done: state{"completed", rows}},
		{name: "undo", table: "orders", file: "orders.csv",
			before: func(t *testing.T, tg *testkit.Target, dir string, env []string) {
				importTo(t, tg, dir, env, 0, "orders.csv")
			},
			cmd:   []string{"undo", "orders.csv"},
			kinds: []string{"import.completed", "import.undone"}, killed: state{"completed", rows}, done: state{"undone", 0}},
		{name: "replay", table: "items", file: "items.csv",
			before: func(t *testing.T, tg *testkit.Target, dir string, env []string) {
				importTo(t, tg, dir, env, 0, "--column", "qty:int64", "--max-rejects", "1", "items.csv")
				export := tg.Exec(t, dir, nil, "rejects", "export", "items.csv")
				if export.Code != 0 {
					t.Fatalf("export: exit %d\n%s%s", export.Code, export.Stdout, export.Stderr)
				}
				os.WriteFile(filepath.Join(dir, "fix.csv"), []byte(strings.Replace(export.Stdout, ",five", ",55", 1)), 0o644)
			},
			cmd:   []string{"rejects", "replay", "fix.csv"},
			kinds: []string{"import.completed", "rejects.replayed"}, killed: state{"completed", 2}, done: state{"completed", 3}},
	}
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				h := newHook(t)
				env := []string{"IDEMPORT_NOTIFY=" + h.url()}
				want := testkit.Orders(t, filepath.Join(dir, "orders.csv"), rows, 21)
				testkit.Orders(t, filepath.Join(dir, "fewer.csv"), rows-50, 21) // the first 250 rows
				os.WriteFile(filepath.Join(dir, "items.csv"), []byte("id,qty\n1,5\n2,five\n3,7\n"), 0o644)
				var earlier []outboxEvent
				if c.before != nil {
					c.before(t, tg, dir, env)
					earlier = outboxEvents(t, tg)
				}
				now := func() state {
					op := testkit.Query(t, tg.DB, tg.Rebind(`SELECT state FROM `+tg.Ledger("operations")+` WHERE table_name = ? AND file_path LIKE ?`), c.table, "%"+c.file)
					n := int64(0)
					if tg.TableExists(t, c.table) {
						n = testkit.Int(t, tg.DB, `SELECT count(*) FROM `+c.table)
					}
					if len(op) != 1 {
						t.Fatalf("operations of %s: %v", c.table, op)
					}
					return state{op[0][0].(string), n}
				}

				killed := tg.Exec(t, dir, append(env, "IDEMPORT_FAILPOINT=before-event"), c.cmd...)
				if killed.Signal != syscall.SIGKILL {
					t.Fatalf("not killed before recording the event: exit %d\n%s%s", killed.Code, killed.Stdout, killed.Stderr)
				}
				if got := now(); got != c.killed {
					t.Fatalf("killed before its event: operation %s with %d rows, want %s with %d: the effect committed without its event", got.op, got.rows, c.killed.op, c.killed.rows)
				}
				if got := outboxEvents(t, tg); !slices.Equal(got, earlier) {
					t.Fatalf("outbox after the kill: %v, want the earlier %v", got, earlier)
				}

				again := tg.Exec(t, dir, env, c.cmd...)
				if again.Code != 0 {
					t.Fatalf("rerun: exit %d\n%s%s", again.Code, again.Stdout, again.Stderr)
				}
				if got := now(); got != c.done {
					t.Fatalf("after the rerun: operation %s with %d rows, want %s with %d", got.op, got.rows, c.done.op, c.done.rows)
				}
				events := outboxEvents(t, tg)
				var kinds []string
				for _, e := range events {
					kinds = append(kinds, e.Kind)
				}
				if !slices.Equal(kinds, c.kinds) || !slices.Equal(events[:len(earlier)], earlier) {
					t.Fatalf("events %v, want the earlier %v and then %v", events, earlier, c.kinds)
				}
				// Every event reached the endpoint, once.
				keys, _, codes := h.requests()
				sent := map[string]int{}
				for i, k := range keys {
					if codes[i] == 200 {
						sent[k]++
					}
				}
				for _, e := range events {
					if sent[e.ID] != 1 {
						t.Fatalf("event %s (%s) reached the endpoint %d times (deliveries %v)", e.ID, e.Kind, sent[e.ID], keys)
					}
				}
				if len(keys) != len(events) {
					t.Fatalf("%d deliveries for %d events: %v", len(keys), len(events), keys)
				}
				if c.table == "orders" && c.done.op == "completed" && c.done.rows == rows {
					mode := "ordinal"
					if slices.Contains(c.cmd, "--key") {
						mode = "natural"
					}
					checkExact(t, tg, mode, want)
				}
			})
		}
	})
}

// outboxList runs 'outbox list --output json' and returns its lines.
func outboxList(t *testing.T, tg *testkit.Target, dir string) []deliveryJSON {
	t.Helper()
	r := tg.Exec(t, dir, nil, "outbox", "list", "--output", "json")
	if r.Code != 0 {
		t.Fatalf("outbox list: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	var out []deliveryJSON
	for _, l := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		if l == "" {
			continue
		}
		var d deliveryJSON
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatalf("outbox list line %q: %v", l, err)
		}
		out = append(out, d)
	}
	return out
}

// TestOutboxEndpointDownThenUp: an endpoint down during the import leaves
// the event pending (the import still exits 0, and says so on stderr, in
// JSON and in metrics); the next run delivers it with the same key, and
// 'outbox deliver' delivers what a later outage left.
func TestOutboxEndpointDownThenUp(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		h := newHook(t)
		testkit.Orders(t, filepath.Join(dir, "a.csv"), 10, 1)
		testkit.Orders(t, filepath.Join(dir, "b.csv"), 10, 2)
		testkit.Orders(t, filepath.Join(dir, "c.csv"), 10, 3)
		h.status.Store(503)
		run := tg.Exec(t, dir, []string{"IDEMPORT_NOTIFY=" + h.url()}, "import", "--output", "json", "--notify-timeout", "700ms",
			"--metrics-file", "m.prom", "a.csv")
		if run.Code != 0 {
			t.Fatalf("exit %d with the endpoint down\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
		var a struct {
			EventID  string `json:"event_id"`
			Notified string `json:"notified"`
		}
		if err := json.Unmarshal([]byte(run.Stdout), &a); err != nil || a.Notified != "pending" || a.EventID == "" {
			t.Fatalf("result %s (%v): want an event_id and notified pending", run.Stdout, err)
		}
		if !strings.Contains(run.Stderr, "1 event delivery not delivered yet") || !strings.Contains(run.Stderr, "503") {
			t.Fatalf("stderr does not say the event is pending and why:\n%s", run.Stderr)
		}
		if strings.Contains(run.Stderr+run.Stdout, "s3cr3t") {
			t.Fatalf("the token of --notify is shown:\n%s%s", run.Stdout, run.Stderr)
		}
		if m, err := os.ReadFile(filepath.Join(dir, "m.prom")); err != nil || !strings.Contains(string(m), "\nidemport_outbox_pending{job=\"m\"} 1\n") {
			t.Fatalf("metrics lack idemport_outbox_pending 1: %v\n%s", err, m)
		}
		list := outboxList(t, tg, dir)
		if len(list) != 1 || list[0].State != "pending" || list[0].Attempts < 1 || !strings.Contains(list[0].LastError, "503") ||
			list[0].EventID != a.EventID || strings.Contains(list[0].Sink, "s3cr3t") {
			t.Fatalf("outbox list: %+v", list)
		}
		// Up again: the next run (another file) delivers both events.
		h.status.Store(200)
		run = tg.Exec(t, dir, []string{"IDEMPORT_NOTIFY=" + h.url()}, "import", "--output", "json", "b.csv")
		if run.Code != 0 || !strings.Contains(run.Stdout, `"notified":"delivered"`) {
			t.Fatalf("exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
		events := outboxEvents(t, tg)
		if len(events) != 2 || events[0].ID != a.EventID {
			t.Fatalf("events %v", events)
		}
		keys, _, codes := h.requests()
		for i, k := range keys {
			if (codes[i] == 503) != (k == a.EventID && i < len(keys)-2) {
				t.Fatalf("delivery %d: key %s status %d", i, k, codes[i])
			}
		}
		// The old event waits out its backoff, so the new one may go first.
		if got := keys[len(keys)-2:]; !slices.Equal(got, []string{events[0].ID, events[1].ID}) && !slices.Equal(got, []string{events[1].ID, events[0].ID}) {
			t.Fatalf("the delivered keys are %v, want %v", got, events)
		}
		// Down again; 'outbox deliver' delivers once it is up, and exits 1
		// while anything is left.
		h.status.Store(502)
		tg.Exec(t, dir, []string{"IDEMPORT_NOTIFY=" + h.url()}, "import", "--notify-timeout", "300ms", "c.csv")
		if r := tg.Exec(t, dir, nil, "outbox", "deliver", "--notify", h.url(), "--notify-timeout", "300ms"); r.Code != 1 {
			t.Fatalf("outbox deliver with the endpoint down: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		h.status.Store(200)
		if r := tg.Exec(t, dir, nil, "outbox", "deliver", "--notify", h.url(), "--notify-timeout", "20s"); r.Code != 0 || !strings.Contains(r.Stdout, "delivered 1 event delivery; 0 pending") {
			t.Fatalf("outbox deliver: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		events = outboxEvents(t, tg)
		keys, _, codes = h.requests()
		if len(events) != 3 || keys[len(keys)-1] != events[2].ID || codes[len(codes)-1] != 200 {
			t.Fatalf("events %v, last key %s", events, keys[len(keys)-1])
		}
		for _, d := range outboxList(t, tg, dir) {
			if d.State != "delivered" {
				t.Fatalf("outbox list: %+v", d)
			}
		}
	})
}

// TestOutboxRefusedDeliveryFailsForGood: a 4xx other than 409 is not
// retried, and outbox list shows it failed with the endpoint's answer; a
// 409 counts as delivered.
func TestOutboxRefusedDeliveryFailsForGood(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		h := newHook(t)
		testkit.Orders(t, filepath.Join(dir, "a.csv"), 10, 1)
		testkit.Orders(t, filepath.Join(dir, "b.csv"), 10, 2)
		h.status.Store(422)
		if r := tg.Exec(t, dir, nil, "import", "--notify", h.url(), "a.csv"); r.Code != 0 || !strings.Contains(r.Stderr, "refused for good") {
			t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if keys, _, _ := h.requests(); len(keys) != 1 {
			t.Fatalf("a refused delivery was sent %d times", len(keys))
		}
		list := outboxList(t, tg, dir)
		if len(list) != 1 || list[0].State != "failed" || !strings.Contains(list[0].LastError, "422") {
			t.Fatalf("outbox list: %+v", list)
		}
		h.status.Store(409)
		if r := tg.Exec(t, dir, nil, "import", "--output", "json", "--notify", h.url(), "b.csv"); r.Code != 0 || !strings.Contains(r.Stdout, `"notified":"delivered"`) {
			t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if keys, _, _ := h.requests(); len(keys) != 2 {
			t.Fatalf("%d HTTP deliveries, want 2 (the failed one is not retried)", len(keys))
		}
	})
}

// TestOutboxEventsOfTheLifecycle: a duplicate emits nothing; undo emits
// import.undone; the import after it is a new event; every event goes to
// NATS, HTTP and a command, each once.
func TestOutboxEventsOfTheLifecycle(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		stream, h := newStream(t), newHook(t)
		testkit.Orders(t, filepath.Join(dir, "orders.csv"), 250, 9)
		cmdOut := filepath.Join(dir, "exec.log")
		env := []string{"IDEMPORT_NOTIFY=" + stream.url() + "\n" + h.url() + "\nexec:{ printf '%s ' \"$IDEMPORT_EVENT_ID\"; cat; } >> " + cmdOut}
		first := importTo(t, tg, dir, env, 0, "--partition-rows", "100", "orders.csv")
		dup := importTo(t, tg, dir, env, 0, "--partition-rows", "100", "orders.csv")
		if dup.Outcome != "duplicate" {
			t.Fatalf("rerun %s", dup.Outcome)
		}
		if n := len(outboxEvents(t, tg)); n != 1 {
			t.Fatalf("%d events after a duplicate, want 1", n)
		}
		if r := tg.Exec(t, dir, env, "undo", "orders.csv"); r.Code != 0 {
			t.Fatalf("undo: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		again := importTo(t, tg, dir, env, 0, "--partition-rows", "100", "orders.csv")
		events := outboxEvents(t, tg)
		kinds := []string{}
		for _, e := range events {
			kinds = append(kinds, e.Kind)
		}
		if !slices.Equal(kinds, []string{"import.completed", "import.undone", "import.completed"}) {
			t.Fatalf("events %v", events)
		}
		if events[0].Attempt != first.AttemptID || events[2].Attempt != again.AttemptID || events[0].ID == events[2].ID {
			t.Fatalf("events %v, attempts %s %s", events, first.AttemptID, again.AttemptID)
		}
		checkDelivered(t, stream, h, events)
		if keys, _, _ := h.requests(); len(keys) != 3 {
			t.Fatalf("%d HTTP deliveries, want 3", len(keys))
		}
		// The payloads, whole: the undo's and the completion's fields.
		_, bodies := stream.messages()
		var undone, completed map[string]any
		if err := json.Unmarshal(bodies[1], &undone); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(bodies[0], &completed); err != nil {
			t.Fatal(err)
		}
		op := completed["operation"].(map[string]any)
		rows := completed["rows"].(map[string]any)
		if completed["schema_version"] != 1.0 || completed["outcome"] != "imported" || completed["attempt_id"] != first.AttemptID ||
			completed["file"] != "orders.csv" || op["table"] != "orders" || op["file_id"] != first.FileID || op["state"] != "completed" ||
			rows["read"] != 250.0 || rows["inserted"] != 250.0 || op["rows"].(map[string]any)["inserted"] != 250.0 ||
			!slices.Equal(op["attempt_ids"].([]any), []any{first.AttemptID}) {
			t.Fatalf("import.completed payload: %s", bodies[0])
		}
		for _, f := range []string{"occurred_at", "created_at", "completed_at"} {
			v, _ := completed[f].(string)
			if f != "occurred_at" {
				v, _ = op[f].(string)
			}
			if _, err := time.Parse(time.RFC3339, v); err != nil {
				t.Fatalf("%s %q is not RFC 3339: %s", f, v, bodies[0])
			}
		}
		if undone["kind"] != "import.undone" || undone["outcome"] != "undone" || undone["deleted"] != 250.0 ||
			undone["operation"].(map[string]any)["state"] != "undone" || undone["trigger"] != "undo" {
			t.Fatalf("import.undone payload: %s", bodies[1])
		}
		log, err := os.ReadFile(cmdOut)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(log)), "\n")
		if len(lines) != 3 {
			t.Fatalf("the command ran %d times, want 3:\n%s", len(lines), log)
		}
		for i, l := range lines {
			id, body, _ := strings.Cut(l, " ")
			var ev map[string]any
			if err := json.Unmarshal([]byte(body), &ev); err != nil || id != events[i].ID || ev["event_id"] != id {
				t.Fatalf("command run %d: %s", i, l)
			}
		}
	})
}

// TestOutboxOneEventWhenWorkersFinishTogether: two processes working on
// one operation both reach its completion at once; only the one whose
// transaction completes it records an event.
func TestOutboxOneEventWhenWorkersFinishTogether(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		stream := newStream(t)
		testkit.Orders(t, filepath.Join(dir, "orders.csv"), 2000, 3)
		args := []string{"--partition-rows", "100", "orders.csv"}
		planOnly(t, tg, dir, args...)
		env := []string{"IDEMPORT_FAILPOINT=before-finalize:1:stop"}
		imp := append([]string{"import", "--output", "json", "--notify", stream.url()}, args...)
		a, b := start(t, tg, dir, env, imp...), start(t, tg, dir, env, imp...)
		// Both stop before completing, every partition done; then both go.
		stopped(t, a)
		stopped(t, b)
		testkit.Continue(a.cmd.Process)
		testkit.Continue(b.cmd.Process)
		ra, rb := testkit.Wait(t, a.cmd), testkit.Wait(t, b.cmd)
		if ra.Code != 0 || rb.Code != 0 {
			t.Fatalf("exits %d %d\n%s%s\n%s%s", ra.Code, rb.Code, ra.Stdout, ra.Stderr, rb.Stdout, rb.Stderr)
		}
		withEvent := 0
		for _, r := range []testkit.Run{ra, rb} {
			if parseResults(t, r.Stdout)[0].EventID != "" {
				withEvent++
			}
		}
		events := outboxEvents(t, tg)
		if len(events) != 1 || withEvent != 1 {
			t.Fatalf("%d events (%d results name one), want 1: %v", len(events), withEvent, events)
		}
		if ids, _ := stream.messages(); !slices.Equal(ids, []string{events[0].ID}) {
			t.Fatalf("stream %v, want %s", ids, events[0].ID)
		}
	})
}

// TestOutboxReplayEvents: each replay of corrected rejects is its own
// rejects.replayed event, even when it changes nothing, with its own ID.
func TestOutboxReplayEvents(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		h := newHook(t)
		os.WriteFile(filepath.Join(dir, "items.csv"), []byte("id,qty\n1,5\n2,five\n3,7\n"), 0o644)
		env := []string{"IDEMPORT_NOTIFY=" + h.url()}
		res := importTo(t, tg, dir, env, 0, "--column", "qty:int64", "--max-rejects", "1", "items.csv")
		export := tg.Exec(t, dir, nil, "rejects", "export", "items.csv")
		if export.Code != 0 {
			t.Fatalf("export: %d %s", export.Code, export.Stderr)
		}
		os.WriteFile(filepath.Join(dir, "fix.csv"), []byte(strings.Replace(export.Stdout, ",five", ",55", 1)), 0o644)
		for i := 0; i < 2; i++ {
			if r := tg.Exec(t, dir, env, "rejects", "replay", "fix.csv"); r.Code != 0 {
				t.Fatalf("replay: %d %s %s", r.Code, r.Stdout, r.Stderr)
			}
		}
		events := outboxEvents(t, tg)
		if len(events) != 3 || events[0].Kind != "import.completed" || events[1].Kind != "rejects.replayed" || events[2].Kind != "rejects.replayed" ||
			events[1].ID == events[2].ID || events[0].Attempt != res.AttemptID {
			t.Fatalf("events %v", events)
		}
		keys, bodies, _ := h.requests()
		if !slices.Equal(keys, []string{events[0].ID, events[1].ID, events[2].ID}) {
			t.Fatalf("HTTP keys %v, want %v", keys, events)
		}
		var first, second pipeline.Event
		json.Unmarshal(bodies[1], &first)
		json.Unmarshal(bodies[2], &second)
		if first.Outcome != "replayed" || first.Rows.Inserted != 1 || second.Rows.Unchanged != 1 || second.Rows.Inserted != 0 ||
			first.Operation.FileID != res.FileID || len(second.Operation.AttemptIDs) != 3 || second.Trigger != "replay" {
			t.Fatalf("replay payloads:\n%s\n%s", bodies[1], bodies[2])
		}
	})
}
