package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/mysql"
	"github.com/idemport/idemport/sink/postgres"
	"github.com/idemport/idemport/sink/sqlite"
)

// fakeSink is an event sink whose answer to each try is fail's, given the
// number of tries it saw before (nil acknowledges); it keeps the IDs of the
// events it acknowledged and counts its tries.
type fakeSink struct {
	id   string
	fail func(tries int) error

	mu    sync.Mutex
	tries int
	acked []string
}

func (s *fakeSink) ID() string   { return s.id }
func (s *fakeSink) Name() string { return s.id }
func (s *fakeSink) Close() error { return nil }
func (s *fakeSink) Deliver(_ context.Context, m idemtype.EventMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.tries
	s.tries++
	if s.fail != nil {
		if err := s.fail(n); err != nil {
			return err
		}
	}
	s.acked = append(s.acked, m.ID)
	return nil
}

func (s *fakeSink) seen() (int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tries, slices.Clone(s.acked)
}

// errNoStream is what a NATS sink says of a subject no stream captures.
var errNoStream = fmt.Errorf(`publish to nostream: no JetStream stream captures subject "x": %w`, idemtype.ErrMisconfigured)

// TestDeliverLeavesAMisconfiguredSink: a sink that cannot take any event
// until it is set up otherwise (no JetStream stream captures its subject)
// is tried once in a pass, not again with backoff until the timeout: its
// deliveries stay pending, the first with its try counted and its error in
// the report, while the other sinks get every event, one of them after a
// retry. Once the sink takes events, the next pass delivers each once.
func TestDeliverLeavesAMisconfiguredSink(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		tg := testkit.NewTarget(t, name, t.TempDir())
		ctx := context.Background()
		stuck := &fakeSink{id: "nostream", fail: func(int) error { return errNoStream }}
		ok := &fakeSink{id: "ok"}
		flaky := &fakeSink{id: "flaky", fail: func(n int) error {
			if n == 0 {
				return errors.New("connection refused")
			}
			return nil
		}}
		open := func(sinks ...idemtype.EventSink) *Store {
			s, err := Open(ctx, tg.Args[1], Options{StateSchema: cmp.Or(tg.Schema, "idemport"), Notify: sinks,
				Drivers: sink.Registry{sqlite.Driver{}, postgres.Driver{}, mysql.Driver{}}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		s := open(stuck, ok, flaky)
		events := []string{"e1", "e2", "e3"}
		refs := []ledger.SinkRef{{ID: stuck.ID(), Name: stuck.Name()}, {ID: ok.ID(), Name: ok.Name()}, {ID: flaky.ID(), Name: flaky.Name()}}
		for i, id := range events {
			ev := ledger.Event{ID: id, Kind: EventCompleted, Key: ledger.Key{Table: "orders", FileID: id}, AttemptID: "a-" + id,
				Payload: `{"event_id":"` + id + `"}`, CreatedAt: int64(i + 1)}
			if err := s.tx(ctx, func(tx *sql.Tx) error { return s.Ledger.RecordEvent(ctx, tx, ev, refs) }); err != nil {
				t.Fatal(err)
			}
		}
		deliveries := func() string {
			ds, err := s.Ledger.Deliveries(ctx, s.DB, "")
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, d := range ds {
				fmt.Fprintf(&b, "%s %s %s tries=%d %s\n", d.EventID, d.SinkID, d.State, d.Tries, d.LastError)
			}
			return b.String()
		}

		rep, err := s.Deliver(ctx, 0) // the default timeout, 30s
		if err != nil {
			t.Fatal(err)
		}
		if n, acked := stuck.seen(); n != 1 || len(acked) != 0 {
			t.Errorf("the misconfigured sink was tried %d times in the pass (acknowledged %v); want once", n, acked)
		}
		for _, sk := range []*fakeSink{ok, flaky} {
			if _, acked := sk.seen(); !slices.Equal(slices.Sorted(slices.Values(acked)), events) {
				t.Errorf("sink %s got %v, want each of %v once", sk.id, acked, events)
			}
		}
		if n, _ := flaky.seen(); n != 4 {
			t.Errorf("the flaky sink was tried %d times, want 4 (one retry)", n)
		}
		gotRep := fmt.Sprintf("delivered=%d failed=%d pending=%d errors=%v", rep.Delivered, rep.Failed, rep.Pending, rep.Errors)
		wantRep := fmt.Sprintf("delivered=6 failed=0 pending=3 errors=%v", map[string]string{"flaky": "connection refused", "nostream": errNoStream.Error()})
		if gotRep != wantRep {
			t.Errorf("report\n%s\nwant\n%s", gotRep, wantRep)
		}
		want := ""
		for _, id := range events {
			flakyTries, stuckTries, stuckErr := 1, 0, ""
			if id == "e1" { // the first of the pass: where each sink failed
				flakyTries, stuckTries, stuckErr = 2, 1, errNoStream.Error()
			}
			want += fmt.Sprintf("%s flaky delivered tries=%d \n%s nostream pending tries=%d %s\n%s ok delivered tries=1 \n",
				id, flakyTries, id, stuckTries, stuckErr, id)
		}
		if got := deliveries(); got != want {
			t.Errorf("deliveries after the first pass\n%s\nwant\n%s", got, want)
		}

		// A stream now captures the subject: a later pass (outbox
		// deliver, or the next import) delivers each event once.
		fixed := &fakeSink{id: "nostream"}
		rep, err = open(fixed).Deliver(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n, acked := fixed.seen(); n != 3 || !slices.Equal(slices.Sorted(slices.Values(acked)), events) || rep.Delivered != 3 || rep.Pending != 0 {
			t.Errorf("second pass: %d tries, acknowledged %v, report %+v; want each event once", n, acked, rep)
		}
	})
}

// failingMarks records deliveries' tries in the ledger, but fails the
// first fail records that an event was delivered with err, before any
// statement: a transaction the database failed for another (a deadlock's
// victim, a serialization failure, a lock wait that timed out).
type failingMarks struct {
	*ledger.Ledger
	err  error
	fail int

	mu    sync.Mutex
	tries int
	// failed, when set, is called at each failure: the test stops the
	// command there.
	failed func()
}

func (m *failingMarks) Delivered(ctx context.Context, q ledger.Querier, d *ledger.Delivery, owner string) error {
	m.mu.Lock()
	m.tries++
	failed := m.tries <= m.fail
	m.mu.Unlock()
	if failed {
		if m.failed != nil {
			m.failed()
		}
		return fmt.Errorf("mark delivered: %w", m.err)
	}
	return m.Ledger.Delivered(ctx, q, d, owner)
}

// transient is the error each target's database gives a statement that
// another transaction made fail: MariaDB's deadlock (1213), PostgreSQL's
// serialization failure (40001), SQLite's busy database.
func transient(name string) error {
	switch name {
	case testkit.Postgres:
		return &pgconn.PgError{Code: "40001", Message: "could not serialize access due to concurrent update"}
	case testkit.MariaDB:
		return &mysqldrv.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock; try restarting transaction"}
	}
	return sqliteBusy
}

// TestDeliverRecordsAgainAfterATransientFailure: an event the sink
// acknowledged whose record as delivered the database fails for another
// transaction (deadlock, serialization failure, busy) is recorded again:
// the pass ends without error (outbox deliver exits 0), the event sent
// once and delivered. A record that keeps failing so fails the pass after
// maxRecordTries tries (exit 1), the event pending for the next pass,
// which sends it again (delivery is at least once) and records it.
func TestDeliverRecordsAgainAfterATransientFailure(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		tg := testkit.NewTarget(t, name, t.TempDir())
		ctx := context.Background()
		sk := &fakeSink{id: "ok"}
		s, err := Open(ctx, tg.Args[1], Options{StateSchema: cmp.Or(tg.Schema, "idemport"), Notify: []idemtype.EventSink{sk},
			Drivers: sink.Registry{sqlite.Driver{}, postgres.Driver{}, mysql.Driver{}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		for _, id := range []string{"e1", "e2"} {
			ev := ledger.Event{ID: id, Kind: EventCompleted, Key: ledger.Key{Table: "orders", FileID: id}, AttemptID: "a-" + id,
				Payload: `{"event_id":"` + id + `"}`, CreatedAt: 1}
			if err := s.tx(ctx, func(tx *sql.Tx) error {
				return s.Ledger.RecordEvent(ctx, tx, ev, []ledger.SinkRef{{ID: sk.ID(), Name: sk.Name()}})
			}); err != nil {
				t.Fatal(err)
			}
		}
		state := func(id string) string {
			st, err := s.EventState(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return st
		}

		// No pause between a record's tries: the failing pass then ends
		// long before the lease it took (the pass's timeout and a second)
		// would, so the next pass takes the event only if the failing one
		// gave its lease up.
		s.recordPause = func(int) time.Duration { return 0 }
		marks := &failingMarks{Ledger: s.Ledger, err: transient(name), fail: 2}
		s.deliveryMarks = marks
		rep, err := s.Deliver(ctx, 0)
		if err != nil {
			t.Fatalf("a record failed twice for another transaction failed the pass: %v", err)
		}
		if n, acked := sk.seen(); n != 2 || rep.Delivered != 2 || rep.Pending != 0 || state("e1") != "delivered" || state("e2") != "delivered" {
			t.Fatalf("sent %d times (%v), report %+v, states %s %s; want each event sent once and delivered", n, acked, rep, state("e1"), state("e2"))
		}

		ev := ledger.Event{ID: "e3", Kind: EventCompleted, Key: ledger.Key{Table: "orders", FileID: "e3"}, AttemptID: "a-e3", Payload: `{"event_id":"e3"}`, CreatedAt: 2}
		if err := s.tx(ctx, func(tx *sql.Tx) error {
			return s.Ledger.RecordEvent(ctx, tx, ev, []ledger.SinkRef{{ID: sk.ID(), Name: sk.Name()}})
		}); err != nil {
			t.Fatal(err)
		}
		marks = &failingMarks{Ledger: s.Ledger, err: transient(name), fail: 1 << 30}
		s.deliveryMarks = marks
		_, err = s.Deliver(ctx, 0)
		if err == nil || !s.recordAgain(err) || !strings.Contains(err.Error(), "record that event e3 was delivered to ok") {
			t.Fatalf("a record failing every time: pass error %v, want the database's, naming the event", err)
		}
		if marks.tries != maxRecordTries || state("e3") != "pending" {
			t.Fatalf("recorded %d times, e3 %s; want %d tries, pending", marks.tries, state("e3"), maxRecordTries)
		}
		s.deliveryMarks = nil
		if rep, err := s.Deliver(ctx, 0); err != nil || rep.Delivered != 1 || state("e3") != "delivered" {
			t.Fatalf("the next pass: %+v, %v, e3 %s; want it delivered", rep, err, state("e3"))
		}
		if n, acked := sk.seen(); n != 4 || !slices.Equal(slices.Sorted(slices.Values(acked)), []string{"e1", "e2", "e3", "e3"}) {
			t.Fatalf("sent %d times: %v, want e3 twice (at least once)", n, acked)
		}

		// The command stopped (Ctrl-C) while a record fails: no more tries
		// of it, the pass failing at once, the event pending.
		ev = ledger.Event{ID: "e4", Kind: EventCompleted, Key: ledger.Key{Table: "orders", FileID: "e4"}, AttemptID: "a-e4", Payload: `{"event_id":"e4"}`, CreatedAt: 3}
		if err := s.tx(ctx, func(tx *sql.Tx) error {
			return s.Ledger.RecordEvent(ctx, tx, ev, []ledger.SinkRef{{ID: sk.ID(), Name: sk.Name()}})
		}); err != nil {
			t.Fatal(err)
		}
		stop, cancel := context.WithCancel(ctx)
		defer cancel()
		marks = &failingMarks{Ledger: s.Ledger, err: transient(name), fail: 1 << 30, failed: cancel}
		s.deliveryMarks = marks
		if _, err := s.Deliver(stop, 0); err == nil || marks.tries != 1 || state("e4") != "pending" {
			t.Fatalf("stopped while its record failed: pass error %v, recorded %d times, e4 %s; want an error after 1 try, pending", err, marks.tries, state("e4"))
		}
	})
}
