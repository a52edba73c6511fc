package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// TestOverlapIntoAnExistingTableMeetsAPlainImportOfTheSameKeys holds
// import A, a daily delta by key over 8 MiB into the table an earlier file
// made, inside its overlap (passHold), which has written the delta's first
// partition into the table: keys 1 to 20,000, the even ones changed.
// Meanwhile import B, a plain small file by key, writes keys of that
// partition (one A changed, one A left as stored, the partition's last;
// and a new key of its third, which the overlap writes once the plan is
// known, before it commits) and a key of its own. B runs during the
// overlap: on SQLite it has identified its file and waits for the write
// lock the overlap holds (its claim has not gone through when A goes on);
// on PostgreSQL it waits for a lock A's transaction holds. Once A goes on,
// both are imported, each exactly once: B's effects commit after the
// partitions A's overlap wrote, so the table is the delta over the day
// before with B's rows over it, value by value as text, each key once; no
// lease is left, both operations are complete, and a rerun of each is a
// duplicate. MariaDB has no overlap.
func TestOverlapIntoAnExistingTableMeetsAPlainImportOfTheSameKeys(t *testing.T) {
	t.Parallel()
	const stored, partRows = 30000, 20000
	pad := strings.Repeat("z", 40)
	delta, delta1 := deltaFile(stored, pad, false)
	bRows := map[int]string{2: "b over a changed key", 3: "b over an unchanged key", 20000: "b over a's last row written",
		60000: "b over a row a wrote once its plan was known", 999999: "new in b"}
	var bFile strings.Builder
	bFile.WriteString("id,v\n")
	for _, k := range []int{2, 3, 20000, 60000, 999999} {
		fmt.Fprintf(&bFile, "%d,%s\n", k, bRows[k])
	}
	testkit.Each(t, func(t *testing.T, name string) {
		t.Parallel()
		want := maps.Clone(delta1) // each target's own: B's rows go over it
		f := newFx(t, name)
		pathB := f.write(t, "b.csv", bFile.String())
		a := f.holdDelta(t, stored, pad, delta, partRows)
		keyed := Mapping{Table: "t", Key: []string{"id"}}
		identified := make(chan struct{})
		var (
			once    sync.Once
			claimed atomic.Bool
		)
		fpB := failpointsFunc(func(name string) error {
			switch name {
			case "after-identify":
				once.Do(func() { close(identified) })
			case "after-claim":
				claimed.Store(true)
			}
			return nil
		})
		eB := f.open(t, Options{Failpoints: fpB, Logger: slog.New(&logRecorder{}), BusyTimeout: 3 * time.Minute})
		reqB := Request{Path: pathB, Mapping: keyed, Lease: time.Minute}
		resB := make(chan *Result, 1)
		go func() { resB <- eB.Import(context.Background(), reqB) }()
		select {
		case <-identified:
		case r := <-resB:
			t.Fatalf("B ended before it identified its file: %s (%v)", r.Outcome, r.Err)
		}
		if f.tg.IsPostgres() {
			// B waits for A: for a lock A's overlap holds, or for its rows.
			blocked := `SELECT count(*) FROM pg_stat_activity a WHERE EXISTS (
				SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation JOIN pg_namespace n ON n.oid = c.relnamespace
				WHERE l.pid = ANY (pg_blocking_pids(a.pid)) AND n.nspname = $1 AND c.relname = 't')`
			for deadline := time.Now().Add(2 * time.Minute); testkit.Int(t, f.tg.DB, blocked, f.tg.Schema) == 0; {
				select {
				case r := <-resB:
					t.Fatalf("B ended while A held its overlap: %s (%v)", r.Outcome, r.Err)
				case <-time.After(50 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					t.Fatal("B never waited for A: this test proves nothing")
				}
			}
		} else {
			// B's claim needs the write lock A's overlap holds: given 2 s
			// to go through, it must not. SQLite shows no waiter, so this
			// shows B did not claim beside A, not that it was already
			// waiting rather than slow; the table compared after holds
			// either way.
			select {
			case r := <-resB:
				t.Fatalf("B ended while A held its overlap: %s (%v)", r.Outcome, r.Err)
			case <-time.After(2 * time.Second):
			}
			if claimed.Load() {
				t.Fatal("B claimed its file while A's overlap held the write lock")
			}
		}
		a.let()
		rA, rB := awaitResult(t, "A", a.res), awaitResult(t, "B", resB)
		if rA.Err != nil || rA.Outcome != Imported || !a.log.has(overlapKeptLog) || a.log.has(overlapRolledLog) {
			t.Fatalf("A (the delta): %s (%v), want imported with its overlap kept\n%s", rA.Outcome, rA.Err, a.log)
		}
		if rB.Err != nil || rB.Outcome != Imported {
			t.Fatalf("B: %s (%v), want imported", rB.Outcome, rB.Err)
		}
		if got := rB.Rows; got.Read != 5 || got.Inserted != 1 || got.Updated != 4 {
			t.Fatalf("B's rows %+v, want 5 read: 4 updated over A's, 1 inserted", got)
		}
		for k, v := range bRows {
			if k <= len(want) {
				want[k] = v
			}
		}
		got := f.rows(t, `SELECT `+f.tg.Text("t.id")+`, v FROM t ORDER BY t.id`)
		if len(got) != len(want)+1 {
			t.Fatalf("t holds %d rows, want %d", len(got), len(want)+1)
		}
		for i, r := range got[:len(want)] {
			if w := []any{fmt.Sprint(i + 1), want[i+1]}; fmt.Sprint(r) != fmt.Sprint(w) {
				t.Fatalf("row %d: %v, want %v", i+1, r, w)
			}
		}
		if last := fmt.Sprint(got[len(want)]); last != "[999999 new in b]" {
			t.Fatalf("last row %s, want B's new key", last)
		}
		if n := f.count(t, `SELECT count(*) FROM (SELECT id FROM t GROUP BY id HAVING count(*) > 1) d`); n != 0 {
			t.Fatalf("%d keys held twice", n)
		}
		if got := f.rows(t, `SELECT state, count(*) FROM `+f.tg.Ledger("operations")+` GROUP BY state`); fmt.Sprint(got) != "[[completed 3]]" {
			t.Fatalf("operations by state: %v, want the three complete", got)
		}
		if n := f.tg.LiveLeases(t); n != 0 {
			t.Fatalf("%d live leases", n)
		}
		reqA := a.req
		reqA.Progress = nil
		for _, r := range []struct {
			name string
			e    *Engine
			req  Request
		}{{"A", a.e, reqA}, {"B", eB, reqB}} {
			if again := r.e.Import(context.Background(), r.req); again.Outcome != Duplicate {
				t.Fatalf("rerun of %s: %s (%v), want a duplicate", r.name, again.Outcome, again.Err)
			}
		}
	})
}
