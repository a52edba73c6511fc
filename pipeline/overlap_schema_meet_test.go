package pipeline

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// TestOverlapIntoAnExistingTableMeetsASchemaChange holds import A, a
// daily delta by key over 8 MiB into the table an earlier file made,
// inside its overlap (passHold), which has written the delta's first
// partition into the table (and after the hold all but the last, which
// holds a key its last row restates), while the table's columns change: the user's
// ALTER TABLE adding a column, or import B by key with --evolve add,
// whose file has a column more and keys of that partition and one of its
// own. The change waits for the overlap (its transaction holds the lock
// every write takes on PostgreSQL, the write lock on SQLite): on
// PostgreSQL it is seen waiting for A's transaction; on SQLite, given
// time, it has not gone through. Once A goes on, the overlap commits with
// the plan it was written for and the rest of the delta is applied into
// the changed table: A is imported, counted as without the change, and so
// is B, over A's rows; the table is the delta
// with B's rows over it, value by value as text, the new column empty
// but where B set it, each key once; reruns are duplicates. MariaDB has
// no overlap.
func TestOverlapIntoAnExistingTableMeetsASchemaChange(t *testing.T) {
	t.Parallel()
	const stored, partRows = 30000, 20000
	pad := strings.Repeat("z", 40)
	delta, keys := deltaFile(stored, pad, false)
	// Its last partition, not full, is cut only at the pass's end, and a
	// row added at its end restates a key of it: the overlap, stopping at
	// the first partition with a superseded row, writes every partition
	// but that one, and the apply writes it into the changed table.
	if len(keys)%partRows < 100 {
		t.Fatalf("the delta's last partition holds %d rows, want a partial one", len(keys)%partRows)
	}
	restated, overlapped := len(keys)-10, len(keys)/partRows
	delta += fmt.Sprintf("%d,restated\n", restated)
	cases := []struct {
		name string
		b    map[int][2]string // B's v and extra by key; nil: the user's ALTER TABLE
	}{
		{name: "alter-table"},
		{name: "evolve-import", b: map[int][2]string{2: {"b over a changed key", "x2"}, 3: {"b over an unchanged key", "x3"}, 999999: {"new in b", "xnew"}}},
	}
	testkit.Each(t, func(t *testing.T, name string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				_, want := deltaFile(stored, pad, false)
				want[restated] = "restated"
				f := newFx(t, name)
				a := f.holdDelta(t, stored, pad, delta, partRows)

				// The change, started while A holds its overlap.
				changed := make(chan error, 1)
				var (
					eB   *Engine
					reqB Request
					resB *Result
				)
				if c.b == nil {
					db := f.tg.DB
					if !f.tg.IsPostgres() {
						// Waits for the write lock longer than the test's pool would.
						var err error
						if db, err = sql.Open("sqlite3", "file:"+f.tg.Path+"?_busy_timeout=180000"); err != nil {
							t.Fatal(err)
						}
						defer db.Close()
					}
					go func() {
						_, err := db.Exec(`ALTER TABLE t ADD COLUMN extra TEXT`)
						changed <- err
					}()
				} else {
					var b strings.Builder
					b.WriteString("id,v,extra\n")
					for _, k := range []int{2, 3, 999999} {
						fmt.Fprintf(&b, "%d,%s,%s\n", k, c.b[k][0], c.b[k][1])
					}
					pathB := f.write(t, "b.csv", b.String())
					eB = f.open(t, Options{Logger: slog.New(&logRecorder{}), BusyTimeout: 3 * time.Minute})
					reqB = Request{Path: pathB, Mapping: Mapping{Table: "t", Key: []string{"id"}, Evolve: EvolveAdd}, Lease: time.Minute}
					go func() {
						resB = eB.Import(context.Background(), reqB)
						changed <- resB.Err
					}()
				}
				if f.tg.IsPostgres() {
					blocked := `SELECT count(*) FROM pg_stat_activity a WHERE EXISTS (
						SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation JOIN pg_namespace n ON n.oid = c.relnamespace
						WHERE l.pid = ANY (pg_blocking_pids(a.pid)) AND n.nspname = $1 AND c.relname = 't')`
					for deadline := time.Now().Add(2 * time.Minute); testkit.Int(t, f.tg.DB, blocked, f.tg.Schema) == 0; {
						select {
						case err := <-changed:
							t.Fatalf("the change ended while A held its overlap: %v", err)
						case <-time.After(50 * time.Millisecond):
						}
						if time.Now().After(deadline) {
							t.Fatal("the change never waited for A: this test proves nothing")
						}
					}
				} else {
					// SQLite shows no waiter: the change must not
					// end within 2 s while A holds the write lock. That
					// shows it did not go through beside A, not that it
					// was already waiting; the table compared after
					// holds either way.
					select {
					case err := <-changed:
						t.Fatalf("the change ended while A held its overlap's write lock: %v", err)
					case <-time.After(2 * time.Second):
					}
				}
				a.let()
				select {
				case err := <-changed:
					if err != nil {
						t.Fatalf("the change: %v", err)
					}
				case <-time.After(3 * time.Minute):
					t.Fatal("the change is stuck")
				}
				rA := awaitResult(t, "A", a.res)
				if rA.Err != nil || rA.Outcome != Imported || !a.log.has(overlapKeptLog) || a.log.has(overlapRolledLog) {
					t.Fatalf("A (the delta): %s (%v), want imported with its overlap kept\n%s", rA.Outcome, rA.Err, a.log)
				}
				if !strings.Contains(a.log.String(), fmt.Sprintf("%s partitions=%d", overlapKeptLog, overlapped)) || rA.Partitions.Total != int64(overlapped+1) {
					t.Fatalf("A's overlap did not keep the %d partitions before the restated key's, of %d:\n%s", overlapped, rA.Partitions.Total, a.log)
				}
				if rows := int64(len(want)); rA.Rows.Read != rows+1 || rA.Rows.Superseded != 1 || rA.Rows.Inserted != rows-stored || rA.Rows.Updated != stored/2 || rA.Rows.Unchanged != stored/2 {
					t.Fatalf("A's rows %+v, want %d read, 1 superseded, %d inserted, %d updated, %d unchanged", rA.Rows, rows+1, rows-stored, stored/2, stored/2)
				}
				if resB != nil && (resB.Outcome != Imported || resB.Rows.Read != 3 || resB.Rows.Updated != 2 || resB.Rows.Inserted != 1) {
					t.Fatalf("B (--evolve add): %s (%v), rows %+v; want imported, 2 updated over A's, 1 inserted", resB.Outcome, resB.Err, resB.Rows)
				}
				extra := map[int]string{}
				for k, vx := range c.b {
					if k <= len(want) {
						want[k] = vx[0]
					}
					extra[k] = vx[1]
				}
				got := f.rows(t, `SELECT `+f.tg.Text("t.id")+`, v, coalesce(extra, '-') FROM t ORDER BY t.id`)
				n := len(want)
				if _, ok := c.b[999999]; ok {
					n++
				}
				if len(got) != n {
					t.Fatalf("t holds %d rows, want %d", len(got), n)
				}
				for i, r := range got {
					id := i + 1
					if i == len(want) {
						id = 999999
						want[id] = c.b[id][0]
					}
					x := "-"
					if e, ok := extra[id]; ok {
						x = e
					}
					if w := []any{fmt.Sprint(id), want[id], x}; fmt.Sprint(r) != fmt.Sprint(w) {
						t.Fatalf("row %d: %v, want %v", i+1, r, w)
					}
				}
				if n := f.tg.LiveLeases(t); n != 0 {
					t.Fatalf("%d live leases", n)
				}
				reqA := a.req
				reqA.Progress = nil
				if again := a.e.Import(context.Background(), reqA); again.Outcome != Duplicate {
					t.Fatalf("rerun of A: %s (%v), want a duplicate", again.Outcome, again.Err)
				}
				if eB != nil {
					if again := eB.Import(context.Background(), reqB); again.Outcome != Duplicate {
						t.Fatalf("rerun of B: %s (%v), want a duplicate", again.Outcome, again.Err)
					}
				}
			})
		}
	})
}
