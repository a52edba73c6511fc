package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// deltaFile returns a keyed CSV file of id and v over 8 MiB, a daily
// delta of numberedFile(stored, pad): of the stored keys the even ones
// changed and the odd ones as stored, then new keys after them; the rows
// at the ordinals bad, and with badLast one more row at the end, have a
// v that is not UTF-8. It returns the file and the table it leaves, v by
// id (without the bad rows).
func deltaFile(stored int, pad string, badLast bool, bad ...int) (string, map[int]string) {
	want := map[int]string{}
	for i := 1; i <= stored; i++ {
		want[i] = fmt.Sprintf("value of row %d %s", i, pad)
	}
	var b strings.Builder
	b.WriteString("id,v\n")
	i := 1
	for ; b.Len() < overlapBytes+1<<20; i++ {
		v := fmt.Sprintf("value of row %d %s", i, pad)
		if i <= stored && i%2 == 0 {
			v = fmt.Sprintf("changed row %d %s", i, pad)
		}
		if slices.Contains(bad, i) {
			v = "\xff\xfe"
		} else {
			want[i] = v
		}
		fmt.Fprintf(&b, "%d,%s\n", i, v)
	}
	if badLast {
		fmt.Fprintf(&b, "%d,\xff\xfe\n", i)
	}
	return b.String(), want
}

// TestOverlapWritesIntoAnExistingTable imports by key a daily delta over
// 8 MiB into the table an earlier file made (its keys half changed, half
// as stored, then new keys), holding the plan stage until the overlap
// has written two partitions (passHold): the overlap writes into the
// existing table before the plan is known, as the table's columns type
// the file, and its partitions commit with the plan. The counts are the
// apply's (each changed key updated, each unchanged one unchanged, each
// new one inserted), and the table is the delta over the day before,
// value by value as text; a rerun is a duplicate.
func TestOverlapWritesIntoAnExistingTable(t *testing.T) {
	t.Parallel()
	const stored, partRows = 30000, 20000
	pad := strings.Repeat("z", 40)
	delta, want := deltaFile(stored, pad, false)
	testkit.Each(t, func(t *testing.T, name string) {
		t.Parallel()
		f := newFx(t, name)
		if f.tg.IsMariaDB() {
			t.Skip("no overlap where DDL commits")
		}
		day1 := f.write(t, "day1.csv", numberedFile(stored, pad))
		path := f.write(t, "delta.csv", delta)
		hold := newPassHold(2)
		e, log := f.openHeld(t, hold)
		if res := e.Import(context.Background(), Request{Path: day1, Mapping: Mapping{Table: "t", Key: []string{"id"}}}); res.Err != nil {
			t.Fatalf("day 1: %s (%v)", res.Outcome, res.Err)
		}
		req := Request{Path: path, Mapping: Mapping{Table: "t", Key: []string{"id"}}, PartitionRows: partRows, Lease: time.Minute, Progress: hold.progress}
		res := e.Import(context.Background(), req)
		if res.Err != nil || res.Outcome != Imported {
			t.Fatalf("%s: %v", res.Outcome, res.Err)
		}
		if n := hold.atHold.Load(); n < 2 || !log.has(overlapKeptLog) || log.has(overlapRolledLog) {
			t.Fatalf("the overlap wrote %d partitions into the existing table before the plan was known, want 2, kept with the plan:\n%s", n, log)
		}
		rows := int64(len(want))
		if got := res.Rows; got.Read != rows || got.Inserted != rows-stored || got.Updated != stored/2 || got.Unchanged != stored/2 || got.Rejected != 0 {
			t.Fatalf("rows %+v, want %d read, %d inserted, %d updated, %d unchanged", got, rows, rows-stored, stored/2, stored/2)
		}
		if res.Partitions.Committed != res.Partitions.Total {
			t.Fatalf("partitions %+v, want every one committed by this run", res.Partitions)
		}
		f.wantTable(t, want)
		again := e.Import(context.Background(), req)
		if again.Outcome != Duplicate {
			t.Fatalf("rerun: %s (%v), want a duplicate", again.Outcome, again.Err)
		}
	})
}

// wantTable fails t unless table t holds want (v by id), value by value
// as text.
func (f *fx) wantTable(t *testing.T, want map[int]string) {
	t.Helper()
	got := f.rows(t, `SELECT `+f.tg.Text("t.id")+`, v FROM t ORDER BY t.id`)
	if len(got) != len(want) {
		t.Fatalf("t holds %d rows, want %d", len(got), len(want))
	}
	for i, r := range got {
		if w := []any{fmt.Sprint(i + 1), want[i+1]}; fmt.Sprint(r) != fmt.Sprint(w) {
			t.Fatalf("row %d: %v, want %v", i+1, r, w)
		}
	}
}

// TestOverlapOfARefusedDeltaLeavesTheTable imports by key daily deltas
// the plan refuses only at the end of its pass (a bad last row; an early
// and the last with one allowed) into the table an earlier file made,
// their first partitions, which update stored keys and insert new ones,
// written by the overlap before the plan is known (passHold). Each is
// refused and leaves the table exactly as it was, row by row with its
// lineage (on PostgreSQL the transaction that wrote each row too: a row
// written again with the same values shows), the catalog as it was (no
// staging table), and the ledger without a plan or a partition; the
// overlap was dropped by settle as the plan bars the file.
func TestOverlapOfARefusedDeltaLeavesTheTable(t *testing.T) {
	t.Parallel()
	const stored, partRows = 30000, 10000
	pad := strings.Repeat("z", 40)
	late, _ := deltaFile(stored, pad, true)
	early, _ := deltaFile(stored, pad, true, 2500)
	cases := []struct {
		name string
		file string
		max  RejectLimit
	}{
		{name: "bad-last-row", file: late},
		{name: "over-max-rejects", file: early, max: RejectLimit{Count: 1}},
	}
	testkit.Each(t, func(t *testing.T, name string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				f := newFx(t, name)
				if f.tg.IsMariaDB() {
					t.Skip("no overlap where DDL commits")
				}
				day1 := f.write(t, "day1.csv", numberedFile(stored, pad))
				path := f.write(t, "delta.csv", c.file)
				hold := newPassHold(1)
				e, log := f.openHeld(t, hold)
				if res := e.Import(context.Background(), Request{Path: day1, Mapping: Mapping{Table: "t", Key: []string{"id"}}}); res.Err != nil {
					t.Fatalf("day 1: %s (%v)", res.Outcome, res.Err)
				}
				before, catalog := f.tg.Snapshot(t)["t"], f.catalog(t)
				plans := f.count(t, `SELECT count(*) FROM `+f.tg.Ledger("plans"))
				parts := f.count(t, `SELECT count(*) FROM `+f.tg.Ledger("partitions"))
				req := Request{Path: path, Mapping: Mapping{Table: "t", Key: []string{"id"}}, PartitionRows: partRows, MaxRejects: c.max,
					Lease: time.Minute, Progress: hold.progress}
				res := e.Import(context.Background(), req)
				if res.Outcome != Refused {
					t.Fatalf("%s (%v), want refused", res.Outcome, res.Err)
				}
				if n := hold.atHold.Load(); n < 1 {
					t.Fatalf("the overlap wrote no partition before the plan was known: this test proves nothing\n%s", log)
				}
				if !log.has(overlapDroppedLog) || !log.has(overlapRolledLog) || log.has(overlapKeptLog) {
					t.Fatalf("the overlap was not dropped as the plan bars the file:\n%s", log)
				}
				if after := f.tg.Snapshot(t)["t"]; after != before {
					t.Fatal("the refused delta changed the table")
				}
				if now := f.catalog(t); fmt.Sprint(now) != fmt.Sprint(catalog) {
					t.Fatalf("the refused delta changed the catalog:\n was: %q\n now: %q", catalog, now)
				}
				if p, n := f.count(t, `SELECT count(*) FROM `+f.tg.Ledger("plans")), f.count(t, `SELECT count(*) FROM `+f.tg.Ledger("partitions")); p != plans || n != parts {
					t.Fatalf("%d plans and %d partitions after the refusal, want %d and %d", p, n, plans, parts)
				}
				if n := f.tg.LiveLeases(t); n != 0 {
					t.Fatalf("%d live leases", n)
				}
			})
		}
	})
}

// heldDelta is import A of the meet tests: a daily delta by key into the
// table t that day 1's numbered rows made, held inside its overlap at the
// plan's end (passHold.meetAtPlanEnd) once the overlap has written a
// partition.
type heldDelta struct {
	e   *Engine
	req Request      // A's request, held at the plan's end by its Progress
	res chan *Result // A's result, once let go
	log *logRecorder
	let func() // lets A go on; again, nothing (also when the test ends)
}

// holdDelta imports day 1 (numberedFile(stored, pad)) into t by key, then
// starts A, delta in partitions of partRows rows, and returns once A's
// overlap is held having written a partition; it fails t otherwise.
func (f *fx) holdDelta(t *testing.T, stored int, pad, delta string, partRows int64) *heldDelta {
	t.Helper()
	day1 := f.write(t, "day1.csv", numberedFile(stored, pad))
	pathA := f.write(t, "delta.csv", delta)
	hold := newPassHold(1)
	hold.wait = 3 * time.Minute
	eA, log := f.openHeld(t, hold) // its overlap waits an hour for the plan
	keyed := Mapping{Table: "t", Key: []string{"id"}}
	if res := eA.Import(context.Background(), Request{Path: day1, Mapping: keyed}); res.Err != nil {
		t.Fatalf("day 1: %s (%v)", res.Outcome, res.Err)
	}
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	a := &heldDelta{res: make(chan *Result, 1), log: log, let: func() { once.Do(func() { close(release) }) }}
	t.Cleanup(a.let)
	a.e, a.req = eA, Request{Path: pathA, Mapping: keyed, PartitionRows: partRows, Lease: time.Minute,
		Progress: hold.meetAtPlanEnd(held, release, 3*time.Minute)}
	go func() { a.res <- eA.Import(context.Background(), a.req) }()
	select {
	case <-held:
	case r := <-a.res:
		t.Fatalf("A ended before its overlap was held: %s (%v)", r.Outcome, r.Err)
	}
	if n := hold.atHold.Load(); n < 1 {
		t.Fatalf("A's overlap wrote no partition before the plan was known: this test proves nothing\n%s", log)
	}
	return a
}

// awaitResult returns the result of the import name on ch, failing t
// after 3 minutes.
func awaitResult(t *testing.T, name string, ch <-chan *Result) *Result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(3 * time.Minute):
		t.Fatalf("%s is stuck", name)
		return nil
	}
}
