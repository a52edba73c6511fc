package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/testkit"
)

// recordingSink is an event sink that acknowledges every event and keeps
// the IDs it was given, in order.
type recordingSink struct {
	mu  sync.Mutex
	ids []string
}

func (s *recordingSink) ID() string   { return "recording" }
func (s *recordingSink) Name() string { return "recording" }
func (s *recordingSink) Close() error { return nil }
func (s *recordingSink) Deliver(_ context.Context, m idemtype.EventMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids = append(s.ids, m.ID)
	return nil
}

// TestImportAllDoesWhatTheCommandDoes imports several files with one
// ImportAll, as `idemport import` does, and checks what a Go user gets
// back: a failing file does not stop the ones after it, each result says
// what happened, the table holds the rows, the events of the imported
// files are delivered in order and each result says so, and the metrics
// count the rows the table holds.
func TestImportAllDoesWhatTheCommandDoes(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := newFx(t, name)
		ctx := context.Background()
		sink := &recordingSink{}
		e := f.open(t, Options{Notify: []idemtype.EventSink{sink}})
		a := f.write(t, "a.csv", "id,qty\n1,10\n2,20\n3,30\n")
		b := f.write(t, "b.csv", "id,qty\n3,31\n4,40\n")
		paths := []string{a, filepath.Join(f.dir, "missing.csv"), b, a}
		reqs := make([]Request, len(paths))
		for i, p := range paths {
			reqs[i] = Request{Path: p, Mapping: Mapping{Table: "orders", Key: []string{"id"}}}
		}
		var seen []string
		sum, err := e.ImportAll(ctx, reqs, BatchOptions{
			OnStart: func(i, n int, req *Request) {
				seen = append(seen, fmt.Sprintf("start %d/%d %s", i, n, filepath.Base(req.Path)))
			},
			OnImported: func(r *Result) { seen = append(seen, "imported "+string(r.Outcome)) },
			OnResult: func(r *Result) error {
				seen = append(seen, fmt.Sprintf("result %s notified=%q", r.Outcome, r.Notified))
				return nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		var outcomes []string
		for _, r := range sum.Results {
			outcomes = append(outcomes, string(r.Outcome))
		}
		if want := []string{"imported", "failed", "imported", "duplicate"}; !reflect.DeepEqual(outcomes, want) {
			t.Fatalf("outcomes %v, want %v (errors: %v, %v)", outcomes, want, sum.Results[0].Err, sum.Results[1].Err)
		}
		if bad := sum.NotClean(); len(bad) != 1 || bad[0] != sum.Results[1] {
			t.Errorf("NotClean() = %v, want only the missing file's result", bad)
		}
		wantSeen := []string{
			"start 0/4 a.csv", "imported imported", `result imported notified="delivered"`,
			"start 1/4 missing.csv", "imported failed", `result failed notified=""`,
			"start 2/4 b.csv", "imported imported", `result imported notified="delivered"`,
			"start 3/4 a.csv", "imported duplicate", `result duplicate notified=""`,
		}
		if !reflect.DeepEqual(seen, wantSeen) {
			t.Errorf("callbacks:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(wantSeen, "\n"))
		}
		if got, want := fmt.Sprint(f.rows(t, "SELECT id, qty FROM orders ORDER BY id")), "[[1 10] [2 20] [3 31] [4 40]]"; got != want {
			t.Errorf("orders: %s, want %s", got, want)
		}

		wantIDs := []string{sum.Results[0].EventID, sum.Results[2].EventID}
		if wantIDs[0] == "" || wantIDs[1] == "" || !reflect.DeepEqual(sink.ids, wantIDs) {
			t.Errorf("delivered %v, want the events of the two imports in order %v", sink.ids, wantIDs)
		}
		if d := sum.Delivery; !sum.Delivered || d.Delivered != 2 || d.Failed != 0 || d.Pending != 0 || len(d.Errors) != 0 {
			t.Errorf("delivery %+v (ran: %v), want 2 delivered, nothing owed", d, sum.Delivered)
		}

		m := sum.Metrics()
		k := func(label string) MetricKey { return MetricKey{Table: "orders", Label: label} }
		stored := f.count(t, "SELECT COUNT(*) FROM orders")
		for _, c := range []struct {
			what      string
			got, want int64
		}{
			{"files imported", m.Files[k("imported")], 2},
			{"files failed", m.Files[k("failed")], 1},
			{"files duplicate", m.Files[k("duplicate")], 1},
			{"rows read", m.Rows[k("read")], 5},
			{"rows inserted (the table's rows)", m.Rows[k("inserted")], stored},
			{"rows updated", m.Rows[k("updated")], 1},
			{"partitions committed", m.Partitions[k("committed")], 2},
			{"recovered leases", m.RecoveredLeases[k("")], 0},
		} {
			if c.got != c.want {
				t.Errorf("metrics: %s = %d, want %d", c.what, c.got, c.want)
			}
		}
		if len(m.Files) != 3 {
			t.Errorf("metrics: files %v, want three outcomes", m.Files)
		}

		lm, err := e.LedgerMetrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := lm.Operations[k("completed")]; got != 2 || len(lm.Operations) != 1 {
			t.Errorf("ledger metrics: operations %v, want 2 completed", lm.Operations)
		}
		last := f.count(t, "SELECT MAX(completed_at) FROM "+f.tg.Ledger("operations"))
		if lm.LastSuccess["orders"] != last || last == 0 || lm.OutboxPending != 0 {
			t.Errorf("ledger metrics: last success %v, pending %d; want orders at %d, nothing pending", lm.LastSuccess, lm.OutboxPending, last)
		}
	})
}

// count is the one integer q returns.
func (f *fx) count(t *testing.T, q string) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(fmt.Sprint(f.rows(t, q)[0][0]), &n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestImportAllSpendsOneDeliveryBudget: the delivery passes after the
// files of one ImportAll share its budget: each gets what the earlier ones
// left, a millisecond at least; a pass runs after the first file whatever
// it did (for what earlier runs left owed) and after each file that
// recorded an event, not after a duplicate. The clock and the pass are
// the test's, so no time is measured.
func TestImportAllSpendsOneDeliveryBudget(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.SQLite)
	f := newFx(t, testkit.SQLite)
	ctx := context.Background()
	e := f.open(t, Options{Notify: []idemtype.EventSink{&recordingSink{}}})
	var reqs []Request
	for _, name := range []string{"old", "n1", "n2", "old", "n3"} {
		reqs = append(reqs, Request{Path: f.write(t, name+".csv", fmt.Sprintf("id,qty\n%d,1\n", len(name))), Mapping: Mapping{Table: name}})
	}
	if r := e.Import(ctx, reqs[0]); r.Outcome != Imported {
		t.Fatalf("first import of old.csv: %s (%v)", r.Outcome, r.Err)
	}

	b := newBatch(e, BatchOptions{DeliveryBudget: time.Second})
	now := time.Unix(0, 0)
	b.now = func() time.Time { return now }
	var given []time.Duration
	b.deliver = func(_ context.Context, timeout time.Duration) (DeliveryReport, error) {
		given = append(given, timeout)
		now = now.Add(400 * time.Millisecond) // each pass takes 400ms
		return DeliveryReport{Delivered: 1, Pending: int64(10 - len(given)), Errors: map[string]string{"s": fmt.Sprint(len(given))}}, nil
	}
	if err := b.run(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{time.Second, 600 * time.Millisecond, 200 * time.Millisecond, time.Millisecond}
	if !reflect.DeepEqual(given, want) {
		t.Errorf("delivery passes given %v, want %v", given, want)
	}
	d := b.sum.Delivery
	if d.Delivered != 4 || d.Pending != 6 || d.Errors["s"] != "4" {
		t.Errorf("summed delivery %+v, want 4 delivered, the last pass's 6 pending and error", d)
	}
	for i, r := range b.sum.Results {
		if wantNotified := map[bool]string{true: "pending", false: ""}[r.EventID != ""]; r.Notified != wantNotified {
			t.Errorf("file %d (%s): notified %q, want %q", i, r.Outcome, r.Notified, wantNotified)
		}
	}
}

// TestImportAllStopsWhenCancelled: once ctx is done, no file starts and no
// delivery pass runs; the results so far are returned.
func TestImportAllStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.SQLite)
	f := newFx(t, testkit.SQLite)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink := &recordingSink{}
	e := f.open(t, Options{Notify: []idemtype.EventSink{sink}})
	var reqs []Request
	for i := range 3 {
		reqs = append(reqs, Request{Path: f.write(t, fmt.Sprintf("f%d.csv", i), fmt.Sprintf("id\n%d\n", i)), Mapping: Mapping{Table: "t"}})
	}
	sum, err := e.ImportAll(ctx, reqs, BatchOptions{OnImported: func(*Result) { cancel() }})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Results) != 1 || sum.Delivered || len(sink.ids) != 0 {
		t.Errorf("after a cancel during the first file: %d results, delivery ran %v, delivered %v; want 1 result and no delivery",
			len(sum.Results), sum.Delivered, sink.ids)
	}
}
