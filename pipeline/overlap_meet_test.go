package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// TestOverlapHeldWhileOthersImport holds import A of a keyed file of some
// 37 MiB into a new table inside its overlap, past 24 MiB on PostgreSQL
// (at 24 MiB on SQLite, its bound on a held transaction): its plan stage
// is held once the pass has ended (passHold) until the overlap has
// written that much, and then until the test lets it go. Meanwhile two
// imports start, as a user would start them, each with an engine of its
// own: B1 the same file into the same table (cron firing twice, with
// --wait), B2 another keyed file into the same table, whose first 1,500
// keys are A's (in A's first partition, which the overlap wrote) and
// 1,500 keys A lacks, its values digits with leading zeros (integers to a
// plan for a new table, text in A's). While A is held nothing of it is
// visible (not even the table) and neither B has finished: they wait, B2
// for the table's creation (PostgreSQL: Ensure's lock on its name;
// SQLite: the write lock), B1 for A's live lease. Once A goes on, A is
// imported with its overlap kept; B2 imported, updating A's 1,500 rows
// (it wrote after A's overlap committed) and inserting its own; B1 a
// duplicate, or, joining A's attempt once its plan is stored, resumed
// with partitions A left to it: each partition is committed once. The
// table is A's file with B2's rows over it, value by value as text; the
// ledger holds two operations, completed with the rows each inserted, and
// no live lease.
func TestOverlapHeldWhileOthersImport(t *testing.T) {
	t.Parallel()
	const partRows, parts, shared, own = 40000, 12, 1500, 1500
	pad := strings.Repeat("y", 60)
	var (
		a     strings.Builder
		bytes []int64 // of each partition's rows
	)
	a.WriteString("id,v\n")
	want := map[int]string{}
	for i := 1; i <= partRows*parts; i++ {
		start := a.Len()
		want[i] = fmt.Sprintf("value of row %d %s", i, pad)
		fmt.Fprintf(&a, "%d,%s\n", i, want[i])
		if (i-1)%partRows == 0 {
			bytes = append(bytes, 0)
		}
		bytes[len(bytes)-1] += int64(a.Len() - start)
	}
	floor, sum := 0, int64(0) // the partitions that hold 24 MiB
	for sum < overlapWrite {
		sum += bytes[floor]
		floor++
	}
	var b strings.Builder
	b.WriteString("id,v\n")
	for i := 1; i <= shared; i++ {
		want[i] = fmt.Sprintf("0%d", i)
		fmt.Fprintf(&b, "%d,%s\n", i, want[i])
	}
	for i := partRows*parts + 1; i <= partRows*parts+own; i++ {
		want[i] = fmt.Sprintf("00%d", i)
		fmt.Fprintf(&b, "%d,%s\n", i, want[i])
	}
	contentA, contentB := a.String(), b.String()

	testkit.Each(t, func(t *testing.T, name string) {
		t.Parallel()
		f := newFx(t, name)
		pathA, pathB := f.write(t, "a.csv", contentA), f.write(t, "b.csv", contentB)
		// A's plan stage: held once the overlap has written past 24 MiB
		// (at it on SQLite), then until release is closed.
		hold := newPassHold(floor + 1)
		if !f.tg.IsPostgres() {
			hold = newPassHold(floor)
		}
		hold.wait = 3 * time.Minute // a loaded machine writes 24 MiB slowly
		held, release := make(chan struct{}), make(chan struct{})
		eA, log := f.openHeld(t, hold) // its overlap waits an hour for the plan
		reqA := Request{Path: pathA, Mapping: Mapping{Table: "t", Key: []string{"id"}}, PartitionRows: partRows, Lease: time.Minute,
			Progress: hold.meetAtPlanEnd(held, release, time.Minute)}
		resA := make(chan *Result, 1)
		go func() { resA <- eA.Import(context.Background(), reqA) }()
		select {
		case <-held:
		case r := <-resA:
			t.Fatalf("A ended before its overlap was held: %s (%v)", r.Outcome, r.Err)
		case <-time.After(5 * time.Minute):
			t.Fatal("A's overlap was never held")
		}
		if n := hold.atHold.Load(); n != int64(hold.n) {
			close(release)
			t.Fatalf("A's overlap wrote %d partitions before the plan was known, want %d: this test proves nothing\n%s", n, hold.n, log)
		}

		other := func() *Engine { return f.open(t, Options{Logger: slog.New(&logRecorder{}), BusyTimeout: time.Minute}) }
		resB1, resB2 := make(chan *Result, 1), make(chan *Result, 1)
		reqB1 := reqA
		reqB1.Progress, reqB1.Wait = nil, 2*time.Minute
		reqB2 := Request{Path: pathB, Mapping: Mapping{Table: "t", Key: []string{"id"}}, Lease: time.Minute}
		eB1, eB2 := other(), other()
		go func() { resB1 <- eB1.Import(context.Background(), reqB1) }()
		go func() { resB2 <- eB2.Import(context.Background(), reqB2) }()
		time.Sleep(2 * time.Second)
		visible := f.tg.TableExists(t, "t")
		select {
		case r := <-resB1:
			close(release)
			t.Fatalf("B1 (the same file) ended while A held its overlap: %s %+v (%v)", r.Outcome, r.Rows, r.Err)
		case r := <-resB2:
			close(release)
			t.Fatalf("B2 (another file) ended while A held its overlap: %s %+v (%v)", r.Outcome, r.Rows, r.Err)
		default:
		}
		close(release)
		if visible {
			t.Fatal("A's table was visible while its overlap was held")
		}

		wait := func(name string, ch chan *Result) *Result {
			select {
			case r := <-ch:
				return r
			case <-time.After(3 * time.Minute):
				t.Fatalf("%s is stuck", name)
				return nil
			}
		}
		rA, rB1, rB2 := wait("A", resA), wait("B1", resB1), wait("B2", resB2)
		// B1 waits for A's attempt, and may join it once its plan is
		// stored, applying partitions A has not claimed (resumed); or find
		// it completed (a duplicate). Between them every partition is
		// committed once, by one or the other.
		if rA.Err != nil || rA.Outcome != Imported || rB1.Err != nil || (rB1.Outcome != Duplicate && rB1.Outcome != Resumed) {
			t.Fatalf("A: %s (%v); B1 (the same file): %s (%v); want imported, and a duplicate or a resumed join", rA.Outcome, rA.Err, rB1.Outcome, rB1.Err)
		}
		if n, rows := rA.Partitions.Committed+rB1.Partitions.Committed, rA.Rows.Inserted+rB1.Rows.Inserted; n != parts || rows != partRows*parts ||
			rA.Rows.Updated+rB1.Rows.Updated != 0 || rA.Partitions.Skipped != rB1.Partitions.Committed {
			t.Fatalf("A and B1 committed %d partitions (A %+v, B1 %+v) and inserted %d rows (A %+v, B1 %+v), want %d partitions and %d rows, each once",
				n, rA.Partitions, rB1.Partitions, rows, rA.Rows, rB1.Rows, parts, partRows*parts)
		}
		if !log.has(overlapKeptLog) || log.has(overlapRolledLog) {
			t.Fatalf("A's overlap was not kept with its plan:\n%s", log)
		}
		if r := rB2.Rows; rB2.Err != nil || rB2.Outcome != Imported || r.Inserted != own || r.Updated != shared || r.Unchanged != 0 || r.Read != shared+own {
			t.Fatalf("B2 (another file): %s %+v (%v), want imported, %d rows inserted and %d of A's updated", rB2.Outcome, rB2.Rows, rB2.Err, own, shared)
		}

		var wantRows, gotRows []string
		for id, v := range want {
			wantRows = append(wantRows, fmt.Sprintf("%d,%s", id, v))
		}
		for _, r := range f.rows(t, `SELECT `+f.tg.Text("id")+`, `+f.tg.Text("v")+` FROM t`) {
			gotRows = append(gotRows, fmt.Sprintf("%v,%v", r...))
		}
		sort.Strings(wantRows)
		sort.Strings(gotRows)
		if len(gotRows) != len(wantRows) {
			t.Fatalf("t holds %d rows, want %d", len(gotRows), len(wantRows))
		}
		for i := range gotRows {
			if gotRows[i] != wantRows[i] {
				t.Fatalf("t holds the row %q where the files say %q", gotRows[i], wantRows[i])
			}
		}
		ops := f.rows(t, `SELECT state, rows_inserted FROM `+f.tg.Ledger("operations")+` ORDER BY rows_inserted`)
		if fmt.Sprint(ops) != fmt.Sprint([][]any{{"completed", int64(own)}, {"completed", int64(partRows * parts)}}) {
			t.Fatalf("operations %v, want B2's and A's, completed with %d and %d rows inserted", ops, own, partRows*parts)
		}
		if n := f.tg.LiveLeases(t); n != 0 {
			t.Fatalf("%d live leases", n)
		}
	})
}
