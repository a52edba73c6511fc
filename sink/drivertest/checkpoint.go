package drivertest

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
)

// checkpointFx is a migrated checkpoint store on a fresh store.
type checkpointFx struct {
	t   *testing.T
	ctx context.Context
	st  Store
	s   *checkpoint.Store
}

func newCheckpoint(t *testing.T, open func(t *testing.T) Store) *checkpointFx {
	t.Helper()
	st := open(t)
	s := checkpoint.New(st.DB, st.Driver, st.Prefix)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate checkpoints: %v", err)
	}
	return &checkpointFx{t: t, ctx: context.Background(), st: st, s: s}
}

func (f *checkpointFx) tx(fn func(tx *sql.Tx) error) error {
	f.t.Helper()
	return inTx(f.t, f.st.DB, fn)
}

var op = checkpoint.Op{Table: "orders", FileID: "file-1"}

// plan returns n partitions of 100 rows each; the last CRC needs all 32
// bits.
func plan(n int) []checkpoint.Partition {
	parts := make([]checkpoint.Partition, n)
	for i := range parts {
		parts[i] = checkpoint.Partition{Partition: idemtype.Partition{Index: i, First: int64(i*100 + 1), Rows: 100, Rejected: int64(i % 2),
			Offset: int64(i) * 3_000_000_000, Length: 3_000_000_000, CRC: uint32(i) * 0x1234567}}
	}
	if n > 0 {
		parts[n-1].CRC = 0xFFFFFFFF
	}
	if n > 1 {
		// Superseded rows: the first, a gap past one varint byte, the last.
		parts[1].Superseded = []int64{101, 102, 199, 200}
	}
	return parts
}

func (f *checkpointFx) save(o checkpoint.Op, parts []checkpoint.Partition) {
	f.t.Helper()
	var rows int64
	for _, p := range parts {
		rows += p.Rows
	}
	if err := f.tx(func(tx *sql.Tx) error {
		return f.s.Save(f.ctx, tx, o, "a0", []byte(`{"version":1}`), rows, parts)
	}); err != nil {
		f.t.Fatalf("save plan: %v", err)
	}
}

// claim claims the next partition for attempt in its own transaction; -1
// means none was free.
func (f *checkpointFx) claim(attempt string, lease int64) (int, string) {
	f.t.Helper()
	var c *checkpoint.Claim
	if err := f.tx(func(tx *sql.Tx) (err error) {
		c, err = f.s.Claim(f.ctx, tx, op, attempt, lease)
		return err
	}); err != nil {
		f.t.Fatalf("claim for %s: %v", attempt, err)
	}
	if c == nil {
		return -1, ""
	}
	return c.Index, c.RecoveredFrom
}

func (f *checkpointFx) fence(idx int, attempt string) error {
	f.t.Helper()
	return f.tx(func(tx *sql.Tx) error { return f.s.Fence(f.ctx, tx, op, idx, attempt, leaseMs) })
}

func (f *checkpointFx) complete(idx int, attempt string, c idemtype.Rows) error {
	f.t.Helper()
	return f.tx(func(tx *sql.Tx) error { return f.s.Complete(f.ctx, tx, op, idx, attempt, c) })
}

func (f *checkpointFx) progress(attempt string) checkpoint.Progress {
	f.t.Helper()
	p, err := f.s.Progress(f.ctx, f.st.DB, op, attempt)
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}

// RunCheckpoint runs the checkpoint store's conformance cases, each on a
// fresh store from open, in parallel.
func RunCheckpoint(t *testing.T, open func(t *testing.T) Store) {
	cases := []struct {
		name string
		fn   func(t *testing.T, open func(t *testing.T) Store)
	}{
		{"MigrateIsIdempotent", checkpointMigrateIsIdempotent},
		{"ConcurrentMigrate", concurrentMigrate},
		{"SaveLoadRoundTrip", checkpointSaveLoad},
		{"ClaimInOrder", checkpointClaimInOrder},
		{"ConcurrentClaims", checkpointConcurrentClaims},
		{"TakeoverFencesTheStalledHolder", checkpointTakeover},
		{"ExpiredLeaseByTheDatabaseClock", checkpointLeaseExpires},
		{"CompleteRolledBackCountsNothing", checkpointRollback},
		{"DoneByWaitsForTheTransaction", checkpointDoneBy},
		{"RenewExpireReleaseHolders", checkpointLeases},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, open)
		})
	}
}

func checkpointMigrateIsIdempotent(t *testing.T, open func(t *testing.T) Store) {
	f := newCheckpoint(t, open)
	before := snapshot(t, f.st)
	for _, table := range []string{"plans", "partitions", "migrations"} {
		if ok, err := f.st.Driver.TableExists(f.ctx, f.st.DB, f.st.Prefix+table); err != nil || !ok {
			t.Errorf("migrate did not create %s%s (%v)", f.st.Prefix, table, err)
		}
	}
	f.save(op, plan(2))
	if err := f.s.Migrate(f.ctx); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	if err := checkpoint.New(f.st.DB, f.st.Driver, f.st.Prefix).Migrate(f.ctx); err != nil {
		t.Fatalf("migrate from another store: %v", err)
	}
	if after := snapshot(t, f.st); !slices.Equal(before, after) {
		t.Errorf("migrating again changed the schema:\n%v\n---\n%v", before, after)
	}
	if body, parts, err := f.s.Load(f.ctx, f.st.DB, op); err != nil || body == nil || len(parts) != 2 {
		t.Errorf("migrate lost the plan: %s %v %v", body, parts, err)
	}
}

func checkpointSaveLoad(t *testing.T, open func(t *testing.T) Store) {
	f := newCheckpoint(t, open)
	if body, parts, err := f.s.Load(f.ctx, f.st.DB, op); body != nil || parts != nil || err != nil {
		t.Fatalf("load before save: %s %v %v", body, parts, err)
	}
	want := plan(3)
	f.save(op, want)
	body, parts, err := f.s.Load(f.ctx, f.st.DB, op)
	if err != nil {
		t.Fatal(err)
	}
	if string(body) != `{"version":1}` {
		t.Errorf("body %s", body)
	}
	if len(parts) != len(want) {
		t.Fatalf("loaded %d partitions, want %d", len(parts), len(want))
	}
	for i, p := range parts {
		if !reflect.DeepEqual(p, want[i]) {
			t.Errorf("partition %d:\nloaded %+v\nsaved  %+v", i, p, want[i])
		}
	}
	// Saving the plan twice fails: the plan is stored once.
	if err := f.tx(func(tx *sql.Tx) error { return f.s.Save(f.ctx, tx, op, "a1", []byte(`{}`), 1, plan(1)) }); err == nil {
		t.Error("a second plan was stored")
	}
	if body, _, _ := f.s.Load(f.ctx, f.st.DB, checkpoint.Op{Table: "orders", FileID: "file-2"}); body != nil {
		t.Errorf("another operation has a plan: %s", body)
	}
}

func checkpointClaimInOrder(t *testing.T, open func(t *testing.T) Store) {
	f := newCheckpoint(t, open)
	f.save(op, plan(3))
	if got := f.progress("a1"); got != (checkpoint.Progress{Total: 3, Claimable: 3}) {
		t.Errorf("before claims: %+v", got)
	}
	for want := range 3 {
		if idx, from := f.claim("a1", leaseMs); idx != want || from != "" {
			t.Fatalf("claim %d: got %d from %q", want, idx, from)
		}
	}
	// Its own live claims are not handed out again, to it or another.
	if idx, _ := f.claim("a1", leaseMs); idx != -1 {
		t.Errorf("claimed %d with every partition held", idx)
	}
	if idx, _ := f.claim("a2", leaseMs); idx != -1 {
		t.Errorf("a2 claimed %d with every partition held", idx)
	}
	if got := f.progress("a1"); got != (checkpoint.Progress{Total: 3, Claimable: 3}) {
		t.Errorf("progress for the holder: %+v", got)
	}
	if got := f.progress("a2"); got != (checkpoint.Progress{Total: 3, Held: 3}) {
		t.Errorf("progress for another: %+v", got)
	}
	// The partition's counts as the pipeline gives them: its rows not
	// written (here the plan's one bad row) are its rejected count, and
	// the plan's four superseded rows its superseded count.
	c := idemtype.Rows{Read: 100, Inserted: 86, Updated: 5, Unchanged: 3, Stale: 1, Superseded: 4, Rejected: 1}
	if err := f.fence(1, "a1"); err != nil {
		t.Fatalf("fence by the holder: %v", err)
	}
	if err := f.complete(1, "a1", c); err != nil {
		t.Fatalf("complete by the holder: %v", err)
	}
	if got := f.progress("a2"); got != (checkpoint.Progress{Total: 3, Done: 1, Held: 2}) {
		t.Errorf("progress after one: %+v", got)
	}
	if err := f.fence(1, "a1"); !errors.Is(err, checkpoint.ErrNotHeld) {
		t.Errorf("fence of a done partition: %v", err)
	}
	if err := f.complete(1, "a1", c); !errors.Is(err, checkpoint.ErrNotHeld) {
		t.Errorf("complete twice: %v", err)
	}
	parts, err := f.s.Partitions(f.ctx, f.st.DB, op)
	if err != nil {
		t.Fatal(err)
	}
	if p := parts[1]; !p.Done || p.DoneBy != "a1" || p.LeaseAttempt != "" || p.Counts != c || !reflect.DeepEqual(p.Superseded, plan(3)[1].Superseded) {
		t.Errorf("done partition: %+v", p)
	}
	if p := parts[0]; p.Done || p.LeaseAttempt != "a1" || p.Counts != (idemtype.Rows{}) {
		t.Errorf("held partition: %+v", p)
	}
	totals, err := f.s.Totals(f.ctx, f.st.DB, op)
	if err != nil {
		t.Fatal(err)
	}
	if totals != c {
		t.Errorf("totals %+v, want %+v", totals, c)
	}
}

// checkpointConcurrentClaims has 4 workers claim partitions at once, each
// claim in its own transaction, until none is left: every partition must
// go to exactly one of them.
func checkpointConcurrentClaims(t *testing.T, open func(t *testing.T) Store) {
	f := newCheckpoint(t, open)
	const n = 60
	f.save(op, plan(n))
	var mu sync.Mutex
	owner := map[int]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		attempt := string(rune('a'+w)) + "1"
		wg.Go(func() {
			for {
				tx, err := f.st.DB.BeginTx(f.ctx, nil)
				if err != nil {
					errs <- err
					return
				}
				c, err := f.s.Claim(f.ctx, tx, op, attempt, leaseMs)
				if err != nil {
					tx.Rollback()
					errs <- err
					return
				}
				if err := tx.Commit(); err != nil {
					errs <- err
					return
				}
				if c == nil {
					return
				}
				mu.Lock()
				if prev, ok := owner[c.Index]; ok {
					errs <- errors.New("partition claimed by " + prev + " and " + attempt)
				}
				owner[c.Index] = attempt
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(owner) != n {
		t.Errorf("%d of %d partitions claimed", len(owner), n)
	}
	holders, err := f.s.Holders(f.ctx, f.st.DB, op)
	if err != nil {
		t.Fatal(err)
	}
	var claimants []string
	for _, a := range owner {
		claimants = append(claimants, a)
	}
	slices.Sort(claimants)
	if claimants = slices.Compact(claimants); !slices.Equal(holders, claimants) {
		t.Errorf("holders %v, claimants %v", holders, claimants)
	}
}

// checkpointTakeover: a1 stalls past its lease on partition 0, a2 takes it
// over; a1, resumed, can neither fence nor complete it.
func checkpointTakeover(t *testing.T, open func(t *testing.T) Store) {
	f := newCheckpoint(t, open)
	f.save(op, plan(2))
	if idx, _ := f.claim("a1", leaseMs); idx != 0 {
		t.Fatalf("a1 claimed %d", idx)
	}
	if err := f.s.Expire(f.ctx, f.st.DB, op, "a1"); err != nil {
		t.Fatal(err)
	}
	if idx, from := f.claim("a2", leaseMs); idx != 0 || from != "a1" {
		t.Fatalf("a2 claimed %d from %q, want 0 from a1", idx, from)
	}
	if err := f.fence(0, "a1"); !errors.Is(err, checkpoint.ErrNotHeld) {
		t.Errorf("fence by the stalled holder: %v", err)
	}
	if err := f.complete(0, "a1", idemtype.Rows{Read: 100, Inserted: 100}); !errors.Is(err, checkpoint.ErrNotHeld) {
		t.Errorf("complete by the stalled holder: %v", err)
	}
	if err := f.fence(0, "a2"); err != nil {
		t.Errorf("fence by the new holder: %v", err)
	}
	if err := f.complete(0, "a2", idemtype.Rows{Read: 100, Unchanged: 100}); err != nil {
		t.Errorf("complete by the new holder: %v", err)
	}
	// A partition nobody claimed cannot be fenced or completed.
	if err := f.fence(1, "a2"); !errors.Is(err, checkpoint.ErrNotHeld) {
		t.Errorf("fence of an unclaimed partition: %v", err)
	}
	if err := f.complete(1, "a2", idemtype.Rows{}); !errors.Is(err, checkpoint.ErrNotHeld) {
		t.Errorf("complete of an unclaimed partition: %v", err)
	}
	parts, err := f.s.Partitions(f.ctx, f.st.DB, op)
	if err != nil {
		t.Fatal(err)
	}
	if !parts[0].Done || parts[0].DoneBy != "a2" || parts[0].Counts.Unchanged != 100 {
		t.Errorf("partition 0: %+v", parts[0])
	}
}

// checkpointLeaseExpires lets a lease run out on the database's clock.
func checkpointLeaseExpires(t *testing.T, open func(t *testing.T) Store) {
	f := newCheckpoint(t, open)
	f.save(op, plan(1))
	if idx, _ := f.claim("a1", 1); idx != 0 {
		t.Fatalf("a1 claimed %d", idx)
	}
	time.Sleep(20 * time.Millisecond)
	if got := f.progress("a2"); got != (checkpoint.Progress{Total: 1, Claimable: 1}) {
		t.Errorf("progress after the lease ran out: %+v", got)
	}
	if h, err := f.s.Holders(f.ctx, f.st.DB, op); err != nil || len(h) != 0 {
		t.Errorf("holders of an expired lease: %v %v", h, err)
	}
	if idx, from := f.claim("a2", leaseMs); idx != 0 || from != "a1" {
		t.Errorf("a2 claimed %d from %q", idx, from)
	}
}

func checkpointRollback(t *testing.T, open func(t *testing.T) Store) {
	f := newCheckpoint(t, open)
	f.save(op, plan(1))
	f.claim("a1", leaseMs)
	rollback := errors.New("rolled back")
	err := f.tx(func(tx *sql.Tx) error {
		if err := f.s.Fence(f.ctx, tx, op, 0, "a1", leaseMs); err != nil {
			return err
		}
		if err := f.s.Complete(f.ctx, tx, op, 0, "a1", idemtype.Rows{Read: 100, Inserted: 100}); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatal(err)
	}
	if got := f.progress("a1"); got != (checkpoint.Progress{Total: 1, Claimable: 1}) {
		t.Errorf("after a rolled-back completion: %+v", got)
	}
	if totals, err := f.s.Totals(f.ctx, f.st.DB, op); err != nil || totals != (idemtype.Rows{}) {
		t.Errorf("totals after a rolled-back completion: %+v %v", totals, err)
	}
	if err := f.complete(0, "a1", idemtype.Rows{Read: 100, Inserted: 100}); err != nil {
		t.Errorf("complete after the rollback: %v", err)
	}
}

// checkpointDoneBy checks that DoneBy answers for a partition transaction
// still open (as one whose COMMIT's reply was lost may be on the server):
// it waits for it to end, and then says whether it committed.
func checkpointDoneBy(t *testing.T, open func(t *testing.T) Store) {
	f := newCheckpoint(t, open)
	f.save(op, plan(2))
	f.claim("a1", leaseMs)
	f.claim("a1", leaseMs)
	doneBy := func(idx int) (string, error) {
		var by string
		err := f.tx(func(tx *sql.Tx) (err error) {
			by, err = f.s.DoneBy(f.ctx, tx, op, idx)
			return err
		})
		return by, err
	}
	for _, end := range []string{"commit", "rollback"} {
		idx := map[string]int{"commit": 0, "rollback": 1}[end]
		tx, err := f.st.DB.BeginTx(f.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.s.Fence(f.ctx, tx, op, idx, "a1", leaseMs); err != nil {
			t.Fatal(err)
		}
		if err := f.s.Complete(f.ctx, tx, op, idx, "a1", idemtype.Rows{Read: 100, Inserted: 100}); err != nil {
			t.Fatal(err)
		}
		type answer struct {
			by  string
			err error
		}
		got := make(chan answer, 1)
		go func() {
			by, err := doneBy(idx)
			got <- answer{by, err}
		}()
		select {
		case a := <-got:
			t.Fatalf("DoneBy answered %+v while the partition's transaction was open", a)
		case <-time.After(200 * time.Millisecond):
		}
		want := "a1"
		if end == "commit" {
			err = tx.Commit()
		} else {
			err, want = tx.Rollback(), ""
		}
		if err != nil {
			t.Fatal(err)
		}
		if a := <-got; a.err != nil || a.by != want {
			t.Errorf("DoneBy after a %s: %q, %v; want %q", end, a.by, a.err, want)
		}
	}
}

func checkpointLeases(t *testing.T, open func(t *testing.T) Store) {
	f := newCheckpoint(t, open)
	f.save(op, plan(4))
	f.claim("a1", leaseMs) // 0
	f.claim("a1", leaseMs) // 1
	f.claim("b1", leaseMs) // 2
	holders := func() []string {
		h, err := f.s.Holders(f.ctx, f.st.DB, op)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if h := holders(); !slices.Equal(h, []string{"a1", "b1"}) {
		t.Errorf("holders %v", h)
	}
	if n, err := f.s.Renew(f.ctx, f.st.DB, op, "a1", leaseMs); err != nil || n != 2 {
		t.Errorf("renewed %d leases (%v), want 2", n, err)
	}
	if err := f.complete(0, "a1", idemtype.Rows{Read: 100, Inserted: 100}); err != nil {
		t.Fatal(err)
	}
	if n, err := f.s.Renew(f.ctx, f.st.DB, op, "a1", leaseMs); err != nil || n != 1 {
		t.Errorf("renewed %d leases after completing one (%v), want 1", n, err)
	}
	if err := f.s.Expire(f.ctx, f.st.DB, op, "b1"); err != nil {
		t.Fatal(err)
	}
	if h := holders(); !slices.Equal(h, []string{"a1"}) {
		t.Errorf("holders after expiring b1: %v", h)
	}
	if got := f.progress("c1"); got != (checkpoint.Progress{Total: 4, Done: 1, Claimable: 2, Held: 1}) {
		t.Errorf("progress: %+v", got)
	}
	if err := f.s.Release(f.ctx, f.st.DB, op, "a1"); err != nil {
		t.Fatal(err)
	}
	if h := holders(); len(h) != 0 {
		t.Errorf("holders after release: %v", h)
	}
	if got := f.progress("c1"); got != (checkpoint.Progress{Total: 4, Done: 1, Claimable: 3}) {
		t.Errorf("progress after release: %+v", got)
	}
	// The released partition is free again and the lowest.
	if idx, from := f.claim("c1", leaseMs); idx != 1 || from != "" {
		t.Errorf("c1 claimed %d from %q, want 1 from nobody", idx, from)
	}
	if err := f.fence(1, "a1"); !errors.Is(err, checkpoint.ErrNotHeld) {
		t.Errorf("fence after release: %v", err)
	}
	// Another operation's partitions are untouched by all of this.
	other := checkpoint.Op{Table: "orders", FileID: "file-2"}
	f.save(other, plan(1))
	if p, err := f.s.Progress(f.ctx, f.st.DB, other, "c1"); err != nil || p != (checkpoint.Progress{Total: 1, Claimable: 1}) {
		t.Errorf("progress of another operation: %+v %v", p, err)
	}
}
