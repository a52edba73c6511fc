package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// TestOverlapIntoAnExistingTableMeetsAnAtomicImport holds import A, a
// daily delta by key over 8 MiB into the table an earlier file made,
// inside its overlap (passHold), which has updated the table's even keys
// of its first partition; meanwhile import B, an --atomic file by key
// into the same table holding one of those keys, runs until it waits for
// A, and a little longer than the server's deadlock_timeout. B's
// completion checks the table (Ensure, under its lock on the table's
// name) before it moves its staged row onto A's: had A's overlap not
// taken that lock before its rows, B would wait for A's rows holding it,
// A's plan store would wait for it, and A would be the deadlock's victim.
// Once A goes on, both are imported, and the key holds B's value,
// written after A's. PostgreSQL only: SQLite's write lock lets no two
// transactions write at once, and MariaDB has no overlap.
func TestOverlapIntoAnExistingTableMeetsAnAtomicImport(t *testing.T) {
	t.Parallel()
	const stored, partRows = 30000, 20000
	pad := strings.Repeat("z", 40)
	delta, _ := deltaFile(stored, pad, false)
	f := newFx(t, testkit.Postgres)
	if !f.tg.IsPostgres() {
		t.Skip("PostgreSQL only")
	}
	pathB := f.write(t, "b.csv", "id,v\n2,written by b\n999999,new in b\n")
	a := f.holdDelta(t, stored, pad, delta, partRows)
	eB := f.open(t, Options{Logger: slog.New(&logRecorder{}), BusyTimeout: time.Minute})
	resB := make(chan *Result, 1)
	go func() {
		resB <- eB.Import(context.Background(), Request{Path: pathB, Mapping: Mapping{Table: "t", Key: []string{"id"}, Atomic: true}, Lease: time.Minute})
	}()
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
	// Past the server's deadlock_timeout (1 s) the server has looked once
	// for a cycle through B's wait, found none, and does not look again:
	// a cycle A's commit would close is then found by A's own wait.
	time.Sleep(2 * time.Second)
	a.let()
	rA, rB := awaitResult(t, "A", a.res), awaitResult(t, "B", resB)
	if rA.Err != nil || rA.Outcome != Imported || !a.log.has(overlapKeptLog) {
		t.Fatalf("A (the delta): %s (%v), want imported with its overlap kept\n%s", rA.Outcome, rA.Err, a.log)
	}
	if rB.Err != nil || rB.Outcome != Imported {
		t.Fatalf("B (--atomic): %s (%v), want imported", rB.Outcome, rB.Err)
	}
	got := f.rows(t, `SELECT v FROM t WHERE id IN (2, 999999) ORDER BY id`)
	if fmt.Sprint(got) != "[[written by b] [new in b]]" {
		t.Fatalf("keys 2 and 999999 hold %v, want B's values", got)
	}
}

// TestOverlapIntoAnOlderDecimalKeyedTable imports by key a delta over
// 8 MiB into a SQLite table an older version made, keyed by a decimal
// column through a unique index on its text, whose first row is 1.50,
// the key stored as 1.5: the overlap, writing it before the plan is known
// (passHold), writes it into the table as the plan leaves it (Ensure
// replaces the key by one that compares decimals by number), so 1.50
// updates 1.5, one key, as the apply does. Written by the text key
// before Ensure, it was a second row, the key Ensure makes then failed
// on it, and so did every rerun.
func TestOverlapIntoAnOlderDecimalKeyedTable(t *testing.T) {
	t.Parallel()
	f := newFx(t, testkit.SQLite)
	if _, err := f.tg.DB.Exec(`CREATE TABLE t (id DECIMAL TEXT NOT NULL, v TEXT, _idemport_file INTEGER, _idemport_row INTEGER, UNIQUE (id))`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.tg.DB.Exec(`INSERT INTO t (id, v) VALUES ('1.5', 'stored'), ('2', 'stored')`); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("id,v\n1.50,written\n")
	rows := 1
	for i := 3; b.Len() < overlapBytes+1<<20; i++ {
		fmt.Fprintf(&b, "%d,value of row %d %s\n", i, i, strings.Repeat("z", 40))
		rows++
	}
	path := f.write(t, "delta.csv", b.String())
	hold := newPassHold(1)
	e, log := f.openHeld(t, hold) // its overlap waits an hour for the plan
	res := e.Import(context.Background(), Request{Path: path, Mapping: Mapping{Table: "t", Key: []string{"id"}}, PartitionRows: 20000,
		Lease: time.Minute, Progress: hold.progress})
	if res.Err != nil || res.Outcome != Imported {
		t.Fatalf("%s (%v)\n%s", res.Outcome, res.Err, log)
	}
	if n := hold.atHold.Load(); n < 1 || !log.has(overlapKeptLog) {
		t.Fatalf("the overlap wrote %d partitions before the plan was known, want 1, kept:\n%s", n, log)
	}
	if r := res.Rows; r.Read != int64(rows) || r.Updated != 1 || r.Inserted != int64(rows-1) {
		t.Fatalf("rows %+v, want %d read, 1.50 updating 1.5, %d inserted", r, rows, rows-1)
	}
	if got := f.rows(t, `SELECT id, v FROM t WHERE id IN ('1.5', '1.50', '2') ORDER BY id`); fmt.Sprint(got) != "[[1.50 written] [2 stored]]" {
		t.Fatalf("keys 1.5 and 2: %v, want 1.50 written over 1.5, one row", got)
	}
}
