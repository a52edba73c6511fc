package drivertest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
)

const leaseMs = 60_000

// ledgerFx is a migrated ledger on a fresh store.
type ledgerFx struct {
	t   *testing.T
	ctx context.Context
	st  Store
	l   *ledger.Ledger
}

func newLedger(t *testing.T, open func(t *testing.T) Store) *ledgerFx {
	t.Helper()
	st := open(t)
	l := ledger.New(st.DB, st.Driver, st.Prefix)
	if err := l.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate ledger: %v", err)
	}
	return &ledgerFx{t: t, ctx: context.Background(), st: st, l: l}
}

func (f *ledgerFx) tx(fn func(tx *sql.Tx) error) error {
	f.t.Helper()
	return inTx(f.t, f.st.DB, fn)
}

func (f *ledgerFx) tx2(fn func(tx *sql.Tx) (bool, error)) (bool, error) {
	f.t.Helper()
	var ok bool
	err := f.tx(func(tx *sql.Tx) (err error) {
		ok, err = fn(tx)
		return err
	})
	return ok, err
}

func (f *ledgerFx) create(id ledger.Identity, a ledger.Attempt) {
	f.t.Helper()
	if err := f.tx(func(tx *sql.Tx) error { return f.l.Create(f.ctx, tx, id, a, leaseMs) }); err != nil {
		f.t.Fatalf("create %s: %v", id.Key, err)
	}
}

func (f *ledgerFx) get(k ledger.Key) (*ledger.Operation, int64) {
	f.t.Helper()
	op, now, err := f.l.Get(f.ctx, f.st.DB, k)
	if err != nil {
		f.t.Fatalf("get %s: %v", k, err)
	}
	return op, now
}

func (f *ledgerFx) attempts(k ledger.Key) []ledger.AttemptRecord {
	f.t.Helper()
	as, err := f.l.Attempts(f.ctx, k)
	if err != nil {
		f.t.Fatalf("attempts of %s: %v", k, err)
	}
	return as
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

const mapping = `{"mapping_version":1,"table":"orders","key":["id"],"version_column":"","columns":{},"format":"csv","delimiter":",","quotes":false}`

func identity() ledger.Identity {
	return ledger.Identity{
		Key:           ledger.Key{Table: "orders", FileID: "file-1"},
		FileKey:       -8_070_450_532_247_928_832, // a 64-bit hash: negative and wider than 32 bits
		ContentDigest: digest("content"),
		MappingDigest: digest(mapping),
		Mapping:       mapping,
		Path:          "/data/orders.csv",
		Size:          5_000_000_000,
	}
}

func attempt(id string) ledger.Attempt {
	return ledger.Attempt{ID: id, Trigger: "cron", Host: "host-1", PID: 4242, ProcStart: 1<<63 + 99, Path: "/data/orders.csv"}
}

// RunLedger runs the ledger's conformance cases, each on a fresh store from
// open, in parallel.
func RunLedger(t *testing.T, open func(t *testing.T) Store) {
	cases := []struct {
		name string
		fn   func(t *testing.T, open func(t *testing.T) Store)
	}{
		{"MigrateIsIdempotent", ledgerMigrateIsIdempotent},
		{"ConcurrentMigrate", concurrentMigrate},
		{"GetBeforeMigrate", ledgerGetBeforeMigrate},
		{"CreateGetRoundTrip", ledgerCreateGetRoundTrip},
		{"FileKeyCollision", ledgerFileKeyCollision},
		{"PlannedAndRefuseAreFenced", ledgerPlannedAndRefuseAreFenced},
		{"RefuseStoresTheReport", ledgerRefuseStoresTheReport},
		{"RefuseLate", ledgerRefuseLate},
		{"CountAddsToAttemptAndOperation", ledgerCount},
		{"CompleteOnce", ledgerCompleteOnce},
		{"CompletedIsNeverMovedBack", ledgerCompletedIsNeverMovedBack},
		{"FailHeartbeatEnd", ledgerFailHeartbeatEnd},
		{"Retract", ledgerRetract},
		{"Rejects", ledgerRejects},
		{"RunningAndRecount", ledgerRunningAndRecount},
		{"List", ledgerList},
		{"RememberKnowRemote", ledgerRemote},
		{"QuickCheck", ledgerQuickCheck},
		{"Replay", ledgerReplay},
		{"Snapshots", ledgerSnapshots},
		{"CreatedTables", ledgerCreatedTables},
		{"Lifecycle", ledgerLifecycle},
		{"OutboxRecordOnce", outboxRecordOnce},
		{"OutboxClaimIsExclusive", outboxClaimIsExclusive},
		{"OutboxLeaseAndFencing", outboxLeaseAndFencing},
		{"OutboxLeaseHoldersAndPrune", outboxLeaseHoldersAndPrune},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, open)
		})
	}
}

func ledgerMigrateIsIdempotent(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	before := snapshot(t, f.st)
	for _, table := range []string{"operations", "attempts", "rejects", "files", "migrations"} {
		if ok, err := f.st.Driver.TableExists(f.ctx, f.st.DB, f.st.Prefix+table); err != nil || !ok {
			t.Errorf("migrate did not create %s%s (%v)", f.st.Prefix, table, err)
		}
	}
	fsys, err := f.st.Driver.Migrations("ledger")
	if err != nil {
		t.Fatal(err)
	}
	files, err := fs.Glob(fsys, "*.up.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("ledger migration files: %v %v", files, err)
	}
	if n := len(Strings(t, f.st.DB, `SELECT component FROM `+f.st.Prefix+`migrations WHERE component = 'ledger'`)); n != len(files) {
		t.Errorf("%d ledger migrations recorded, want one per file: %d", n, len(files))
	}
	f.create(identity(), attempt("a1"))
	if err := f.l.Migrate(f.ctx); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	// A second Ledger on the same database also finds nothing to do.
	if err := ledger.New(f.st.DB, f.st.Driver, f.st.Prefix).Migrate(f.ctx); err != nil {
		t.Fatalf("migrate from another ledger: %v", err)
	}
	if after := snapshot(t, f.st); !slices.Equal(before, after) {
		t.Errorf("migrating again changed the schema:\n%v\n---\n%v", before, after)
	}
	if op, _ := f.get(identity().Key); op == nil {
		t.Error("migrate lost the operation")
	}
}

// concurrentMigrate starts 6 processes' worth of stores on an empty
// database at once, as concurrent first runs do: each opens it through the
// driver (creating the state schema, where there is one, that no one has
// created yet) and migrates the ledger and the checkpoints, four of them
// together (Ledger.MigrateWith, as an import does: one transaction where
// the driver allows) and two one after the other. All must succeed, and
// each migration must be recorded once.
func concurrentMigrate(t *testing.T, open func(t *testing.T) Store) {
	st := open(t)
	ctx := context.Background()
	s := st.Settings
	s.StateSchema += "_fresh"
	var wg sync.WaitGroup
	errs := make([]error, 6)
	prefixes := make([]string, 6)
	for i := range errs {
		wg.Go(func() {
			db, err := st.Open(ctx, s)
			if err != nil {
				errs[i] = err
				return
			}
			defer db.DB.Close()
			prefixes[i] = db.Prefix
			l := ledger.New(db.DB, st.Driver, db.Prefix)
			if i%3 != 2 {
				errs[i] = l.MigrateWith(ctx, "checkpoint")
				return
			}
			if err := l.Migrate(ctx); err != nil {
				errs[i] = err
				return
			}
			errs[i] = checkpoint.New(db.DB, st.Driver, db.Prefix).Migrate(ctx)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("migration %d: %v", i, err)
		}
	}
	if t.Failed() {
		return
	}
	recorded := Strings(t, st.DB, `SELECT component || ' ' || version FROM `+prefixes[0]+`migrations ORDER BY 1`)
	if len(recorded) == 0 || len(slices.Compact(slices.Clone(recorded))) != len(recorded) {
		t.Errorf("migrations recorded: %v", recorded)
	}
}

func ledgerGetBeforeMigrate(t *testing.T, open func(t *testing.T) Store) {
	st := open(t)
	l := ledger.New(st.DB, st.Driver, st.Prefix)
	op, now, err := l.Get(context.Background(), st.DB, identity().Key)
	if err != nil || op != nil || now <= 0 {
		t.Fatalf("get on a fresh database: %+v, %d, %v", op, now, err)
	}
	ops, err := l.List(context.Background(), ledger.Filter{})
	if err != nil || len(ops) != 0 {
		t.Fatalf("list on a fresh database: %+v, %v", ops, err)
	}
}

func ledgerCreateGetRoundTrip(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	id := identity()
	f.create(id, attempt("a1"))

	op, now := f.get(id.Key)
	if op == nil {
		t.Fatal("created operation not found")
	}
	if op.Key != id.Key || op.FileKey != id.FileKey || op.ContentDigest != id.ContentDigest ||
		op.MappingDigest != id.MappingDigest || op.Mapping != id.Mapping || op.Path != id.Path || op.Size != id.Size {
		t.Errorf("identity did not round-trip:\nstored %+v\nwant   %+v", op, id)
	}
	if op.State != ledger.Processing || op.Planned || op.Attempts != 1 || op.Rows != (idemtype.Rows{}) ||
		op.Outcome != "" || op.CompletedAt != 0 || op.CompletedBy != "" {
		t.Errorf("new operation: %+v", op)
	}
	if op.LeaseAttempt != "a1" || op.LeaseExpires <= now || op.LeaseExpires > now+leaseMs {
		t.Errorf("lease %q until %d; now %d", op.LeaseAttempt, op.LeaseExpires, now)
	}
	if op.CreatedAt <= 0 || op.CreatedAt > now || op.UpdatedAt != op.CreatedAt {
		t.Errorf("created %d, updated %d, now %d", op.CreatedAt, op.UpdatedAt, now)
	}
	if d, _ := ledger.Decide(ledger.Situation{Op: op, ID: id, Now: now}); d != ledger.Busy {
		t.Errorf("another run decides %s while a1 holds the lease", d)
	}
	if other, _ := f.get(ledger.Key{Table: "orders", FileID: "file-2"}); other != nil {
		t.Errorf("operation for an unknown key: %+v", other)
	}

	as := f.attempts(id.Key)
	if len(as) != 1 || as[0].ID != "a1" || as[0].Host != "host-1" || as[0].PID != 4242 || as[0].Trigger != "cron" ||
		as[0].Path != "/data/orders.csv" || as[0].Table != "orders" || as[0].FileID != "file-1" || as[0].EndedAt != 0 ||
		as[0].StartedAt <= 0 || as[0].HeartbeatAt != as[0].StartedAt {
		t.Errorf("attempts: %+v", as)
	}
	host, pid, start, ok, err := f.l.Process(f.ctx, f.st.DB, "a1")
	if err != nil || !ok || host != "host-1" || pid != 4242 || start != 1<<63+99 {
		t.Errorf("process of a1: %s %d %d %v %v", host, pid, start, ok, err)
	}
	if _, _, _, ok, err := f.l.Process(f.ctx, f.st.DB, "nobody"); ok || err != nil {
		t.Errorf("process of an unknown attempt: %v %v", ok, err)
	}
	var fileID string
	if err := f.st.DB.QueryRow(f.st.Driver.Rebind(`SELECT file_id FROM `+f.st.Prefix+`files WHERE file_key = ?`), id.FileKey).Scan(&fileID); err != nil || fileID != id.FileID {
		t.Errorf("file key %d maps to %q (%v)", id.FileKey, fileID, err)
	}
}

func ledgerFileKeyCollision(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	first := identity()
	f.create(first, attempt("a1"))

	// The same file ID into another table shares its file key.
	again := first
	again.Table = "orders_copy"
	f.create(again, attempt("a2"))

	// Another file ID with the same key is refused, and nothing is recorded.
	other := first
	other.Table = "other"
	other.FileID = "file-2"
	err := f.tx(func(tx *sql.Tx) error { return f.l.Create(f.ctx, tx, other, attempt("a3"), leaseMs) })
	if !errors.Is(err, ledger.ErrFileKeyCollision) {
		t.Fatalf("create with a used file key: %v", err)
	}
	if !strings.Contains(err.Error(), `"file-1"`) || !strings.Contains(err.Error(), `"file-2"`) {
		t.Errorf("collision error does not name both file IDs: %v", err)
	}
	if op, _ := f.get(other.Key); op != nil {
		t.Errorf("colliding operation was recorded: %+v", op)
	}
	if _, _, _, ok, _ := f.l.Process(f.ctx, f.st.DB, "a3"); ok {
		t.Error("colliding attempt was recorded")
	}

	// Creating the same operation twice fails on its key.
	if err := f.tx(func(tx *sql.Tx) error { return f.l.Create(f.ctx, tx, first, attempt("a4"), leaseMs) }); err == nil {
		t.Error("the same operation was created twice")
	}
}

func ledgerPlannedAndRefuseAreFenced(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	id := identity()
	f.create(id, attempt("a1"))

	planned := func(who string) error {
		return f.tx(func(tx *sql.Tx) error { return f.l.Planned(f.ctx, tx, id.Key, who) })
	}
	if err := planned("a2"); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Fatalf("planned by a non-holder: %v", err)
	}
	if op, _ := f.get(id.Key); op.Planned || op.LeaseAttempt != "a1" {
		t.Fatalf("a refused Planned changed the operation: %+v", op)
	}
	if err := f.tx(func(tx *sql.Tx) error {
		return f.l.Refuse(f.ctx, tx, id.Key, "a2", `{}`, idemtype.Rows{Read: 1, Rejected: 1})
	}); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Fatalf("refuse by a non-holder: %v", err)
	}

	// a1 dies; a2 takes the expired lease over and plans.
	if err := f.l.Expire(f.ctx, f.st.DB, id.Key, "a1"); err != nil {
		t.Fatal(err)
	}
	op, now := f.get(id.Key)
	d, from := ledger.Decide(ledger.Situation{Op: op, ID: id, Now: now})
	if d != ledger.Plan || from != "a1" {
		t.Fatalf("after expiry: %s from %q", d, from)
	}
	a2 := attempt("a2")
	a2.RecoveredFrom = from
	if err := f.tx(func(tx *sql.Tx) error { return f.l.Start(f.ctx, tx, id.Key, a2, true, leaseMs) }); err != nil {
		t.Fatal(err)
	}
	if err := planned("a1"); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Fatalf("planned by the attempt whose lease was taken over: %v", err)
	}
	if err := f.tx(func(tx *sql.Tx) error {
		return f.l.Refuse(f.ctx, tx, id.Key, "a1", `{}`, idemtype.Rows{Read: 1, Rejected: 1})
	}); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Fatalf("refuse by the attempt whose lease was taken over: %v", err)
	}
	if err := planned("a2"); err != nil {
		t.Fatalf("planned by the holder: %v", err)
	}
	op, now = f.get(id.Key)
	if !op.Planned || op.LeaseAttempt != "" || op.LeaseExpires != 0 || op.Attempts != 2 || op.State != ledger.Processing {
		t.Errorf("after planning: %+v", op)
	}
	if d, _ := ledger.Decide(ledger.Situation{Op: op, ID: id, Now: now}); d != ledger.Resume {
		t.Errorf("planned operation decides %s", d)
	}
	if err := planned("a2"); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Errorf("planned twice: %v", err)
	}
	as := f.attempts(id.Key)
	if len(as) != 2 || as[1].ID != "a2" || as[1].RecoveredFrom != "a1" || as[0].RecoveredFrom != "" {
		t.Errorf("attempts: %+v", as)
	}

	// A third attempt joins without the planning lease.
	if err := f.tx(func(tx *sql.Tx) error { return f.l.Start(f.ctx, tx, id.Key, attempt("a3"), false, leaseMs) }); err != nil {
		t.Fatal(err)
	}
	if op, _ := f.get(id.Key); op.Attempts != 3 || op.LeaseAttempt != "" || !op.Planned {
		t.Errorf("after a joining attempt: %+v", op)
	}
}

func ledgerRefuseStoresTheReport(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	id := identity()
	f.create(id, attempt("a1"))
	report := `{"rows":10,"rejected":3}`
	if err := f.tx(func(tx *sql.Tx) error {
		return f.l.Refuse(f.ctx, tx, id.Key, "a1", report, idemtype.Rows{Read: 10, Rejected: 3})
	}); err != nil {
		t.Fatal(err)
	}
	op, now := f.get(id.Key)
	if op.State != ledger.Refused || op.Outcome != report || op.Rows != (idemtype.Rows{Read: 10, Rejected: 3}) || op.LeaseAttempt != "" {
		t.Errorf("refused operation: %+v", op)
	}
	if d, _ := ledger.Decide(ledger.Situation{Op: op, ID: id, Now: now}); d != ledger.Refuse {
		t.Errorf("refused operation decides %s", d)
	}
	// Planning again (a rerun with a higher --max-rejects) starts the
	// counters from zero.
	if err := f.tx(func(tx *sql.Tx) error { return f.l.Start(f.ctx, tx, id.Key, attempt("a2"), true, leaseMs) }); err != nil {
		t.Fatal(err)
	}
	if op, _ := f.get(id.Key); op.State != ledger.Processing || op.Outcome != "" || op.Rows != (idemtype.Rows{}) || op.LeaseAttempt != "a2" {
		t.Errorf("replanned operation: %+v", op)
	}
}

// ledgerRefuseLate: a planned operation whose planning lease is over
// (its partitions being applied) is refused with its report, its
// counters and planned mark kept, and planned again by the next attempt;
// a completed one is never refused.
func ledgerRefuseLate(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	id := identity()
	f.create(id, attempt("a1"))
	if err := f.tx(func(tx *sql.Tx) error { return f.l.Planned(f.ctx, tx, id.Key, "a1") }); err != nil {
		t.Fatal(err)
	}
	report := `{"error":"table t does not fit the file","unfit":true}`
	if err := f.tx(func(tx *sql.Tx) error { return f.l.RefuseLate(f.ctx, tx, id.Key, report) }); err != nil {
		t.Fatalf("refuse late: %v", err)
	}
	op, _ := f.get(id.Key)
	if op.State != ledger.Refused || op.Outcome != report || !op.Planned || op.LeaseAttempt != "" || op.Rows != (idemtype.Rows{}) {
		t.Errorf("operation refused late: %+v", op)
	}
	if err := f.tx(func(tx *sql.Tx) error { return f.l.Start(f.ctx, tx, id.Key, attempt("a2"), true, leaseMs) }); err != nil {
		t.Fatal(err)
	}
	if op, _ := f.get(id.Key); op.State != ledger.Processing || op.Outcome != "" || op.LeaseAttempt != "a2" {
		t.Errorf("operation planned again: %+v", op)
	}
	if err := f.tx(func(tx *sql.Tx) error { _, err := f.l.Complete(f.ctx, tx, id.Key, "a2", `{"n":1}`); return err }); err != nil {
		t.Fatal(err)
	}
	if err := f.tx(func(tx *sql.Tx) error { return f.l.RefuseLate(f.ctx, tx, id.Key, report) }); !errors.Is(err, ledger.ErrCompleted) {
		t.Fatalf("refuse late of a completed operation: %v, want ErrCompleted", err)
	}
	if op, _ := f.get(id.Key); op.State != ledger.Completed || op.Outcome != `{"n":1}` {
		t.Errorf("completed operation after a late refusal: %+v", op)
	}
}

func ledgerCount(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	id := identity()
	f.create(id, attempt("a1"))

	parts := []idemtype.Rows{
		{Read: 10, Inserted: 6, Updated: 2, Unchanged: 1, Stale: 0, Rejected: 1},
		{Read: 7, Inserted: 1, Updated: 1, Unchanged: 2, Stale: 3, Rejected: 0},
		{Read: 3_000_000_000, Inserted: 3_000_000_000},
	}
	var want idemtype.Rows
	for _, p := range parts {
		if err := f.tx(func(tx *sql.Tx) error { return f.l.Count(f.ctx, tx, id.Key, "a1", p) }); err != nil {
			t.Fatal(err)
		}
		want.Add(p)
	}
	// A partition whose transaction rolls back counts nothing.
	rollback := errors.New("rolled back")
	if err := f.tx(func(tx *sql.Tx) error {
		if err := f.l.Count(f.ctx, tx, id.Key, "a1", idemtype.Rows{Read: 100, Inserted: 100}); err != nil {
			return err
		}
		return rollback
	}); !errors.Is(err, rollback) {
		t.Fatal(err)
	}

	op, _ := f.get(id.Key)
	if op.Rows != want {
		t.Errorf("operation counted %+v, want %+v", op.Rows, want)
	}
	as := f.attempts(id.Key)
	if len(as) != 1 || as[0].Rows != want || as[0].Partitions.Committed != int64(len(parts)) {
		t.Errorf("attempt counted %+v, want rows %+v in %d partitions", as, want, len(parts))
	}
}

func ledgerCompleteOnce(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	id := identity()
	f.create(id, attempt("a1"))

	complete := func(who, outcome string) bool {
		var ok bool
		if err := f.tx(func(tx *sql.Tx) (err error) {
			ok, err = f.l.Complete(f.ctx, tx, id.Key, who, outcome)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !complete("a1", `{"n":1}`) {
		t.Fatal("first Complete reported false")
	}
	if complete("a2", `{"n":2}`) {
		t.Fatal("second Complete reported true")
	}
	op, now := f.get(id.Key)
	if op.State != ledger.Completed || op.Outcome != `{"n":1}` || op.CompletedBy != "a1" || op.CompletedAt <= 0 ||
		op.CompletedAt > now || op.LeaseAttempt != "" || op.LeaseExpires != 0 {
		t.Errorf("completed operation: %+v", op)
	}
	if d, _ := ledger.Decide(ledger.Situation{Op: op, ID: id, Now: now}); d != ledger.Duplicate {
		t.Errorf("completed operation decides %s", d)
	}
}

// ledgerCompletedIsNeverMovedBack checks the ledger's fencing on state: a
// completed operation is not started again, failed or abandoned, and the
// attempt that completed it is not recorded as failed, each refused with
// ErrCompleted and nothing changed; undo (Close to undone) and Reset stay
// possible. Restore sets back to completed an operation that completed and
// was moved back anyway (by an earlier version), and nothing else.
func ledgerCompletedIsNeverMovedBack(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	id := identity()
	f.create(id, attempt("a1"))
	if err := f.tx(func(tx *sql.Tx) error { return f.l.Start(f.ctx, tx, id.Key, attempt("a2"), false, leaseMs) }); err != nil {
		t.Fatalf("start a2 on a processing operation: %v", err)
	}
	if err := f.tx(func(tx *sql.Tx) error { _, err := f.l.Complete(f.ctx, tx, id.Key, "a1", `{"n":1}`); return err }); err != nil {
		t.Fatal(err)
	}
	before, _ := f.get(id.Key)
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ledger.ErrCompleted) {
			t.Errorf("%s on a completed operation: %v, want ErrCompleted", what, err)
		}
		if op, _ := f.get(id.Key); op.State != ledger.Completed || op.CompletedBy != "a1" || op.Attempts != before.Attempts {
			t.Errorf("after %s: %+v", what, op)
		}
	}
	refused("Start", f.tx(func(tx *sql.Tx) error { return f.l.Start(f.ctx, tx, id.Key, attempt("a3"), false, leaseMs) }))
	if as := f.attempts(id.Key); len(as) != 2 {
		t.Errorf("a refused Start recorded an attempt: %+v", as)
	}
	refused("planning Start", f.tx(func(tx *sql.Tx) error { return f.l.Start(f.ctx, tx, id.Key, attempt("a3"), true, leaseMs) }))
	refused("Fail", f.tx(func(tx *sql.Tx) error { return f.l.Fail(f.ctx, tx, id.Key, "a2", false) }))
	refused("Fail of the completer", f.tx(func(tx *sql.Tx) error { return f.l.Fail(f.ctx, tx, id.Key, "a1", false) }))
	refused("Close to abandoned", f.tx(func(tx *sql.Tx) error { return f.l.Close(f.ctx, tx, id.Key, ledger.Abandoned) }))
	refused("End of the completer with an error", f.l.End(f.ctx, f.st.DB, "a1", "failed", "finalize: conn closed", 0, 0))
	if err := f.l.End(f.ctx, f.st.DB, "a2", "failed", "write: no such table", 0, 0); err != nil {
		t.Errorf("End of another attempt with an error: %v", err)
	}
	if err := f.l.End(f.ctx, f.st.DB, "a1", "imported", "", 0, 0); err != nil {
		t.Errorf("End of the completer without an error: %v", err)
	}
	as := f.attempts(id.Key)
	if len(as) != 2 || as[0].Outcome != "imported" || as[0].Error != "" || as[1].Outcome != "failed" {
		t.Errorf("attempts: %+v", as)
	}
	if ok, err := f.tx2(func(tx *sql.Tx) (bool, error) { return f.l.Restore(f.ctx, tx, id.Key) }); err != nil || ok {
		t.Errorf("Restore of a completed operation: %v, %v", ok, err)
	}

	// What a joining run of an earlier version did: completed, then
	// failed. Restore makes it completed again, with its completion.
	if _, err := f.st.DB.ExecContext(f.ctx, f.st.Driver.Rebind(`UPDATE `+f.st.Prefix+`operations SET state = 'failed' WHERE file_id = ?`), id.FileID); err != nil {
		t.Fatal(err)
	}
	if ok, err := f.tx2(func(tx *sql.Tx) (bool, error) { return f.l.Restore(f.ctx, tx, id.Key) }); err != nil || !ok {
		t.Errorf("Restore of a completed operation moved back to failed: %v, %v", ok, err)
	}
	if op, _ := f.get(id.Key); op.State != ledger.Completed || op.CompletedBy != "a1" || op.Outcome != `{"n":1}` {
		t.Errorf("restored: %+v", op)
	}

	// Undo and --reapply still move a completed operation on; Reset
	// forgets the completer, so Restore leaves the operation alone.
	if err := f.tx(func(tx *sql.Tx) error { return f.l.Reset(f.ctx, tx, id.Key) }); err != nil {
		t.Fatal(err)
	}
	if ok, err := f.tx2(func(tx *sql.Tx) (bool, error) { return f.l.Restore(f.ctx, tx, id.Key) }); err != nil || ok {
		t.Errorf("Restore of a reset operation: %v, %v", ok, err)
	}
	if err := f.tx(func(tx *sql.Tx) error { return f.l.Start(f.ctx, tx, id.Key, attempt("a4"), true, leaseMs) }); err != nil {
		t.Errorf("Start after Reset: %v", err)
	}
	if err := f.tx(func(tx *sql.Tx) error { _, err := f.l.Complete(f.ctx, tx, id.Key, "a4", `{"n":4}`); return err }); err != nil {
		t.Fatal(err)
	}
	if err := f.tx(func(tx *sql.Tx) error { return f.l.Close(f.ctx, tx, id.Key, ledger.Undone) }); err != nil {
		t.Errorf("Close to undone of a completed operation: %v", err)
	}
	if op, _ := f.get(id.Key); op.State != ledger.Undone {
		t.Errorf("undone: %+v", op)
	}
}

func ledgerFailHeartbeatEnd(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	id := identity()
	f.create(id, attempt("a1"))

	// A heartbeat renews the holder's lease and no other's.
	if err := f.l.Expire(f.ctx, f.st.DB, id.Key, "a1"); err != nil {
		t.Fatal(err)
	}
	if err := f.l.Heartbeat(f.ctx, f.st.DB, id.Key, "a2", leaseMs); err != nil {
		t.Fatal(err)
	}
	if op, now := f.get(id.Key); op.LeaseExpires > now {
		t.Errorf("another attempt's heartbeat renewed a1's lease: %+v", op)
	}
	if err := f.l.Heartbeat(f.ctx, f.st.DB, id.Key, "a1", leaseMs); err != nil {
		t.Fatal(err)
	}
	if op, now := f.get(id.Key); op.LeaseAttempt != "a1" || op.LeaseExpires <= now {
		t.Errorf("heartbeat did not renew the lease: %+v (now %d)", op, now)
	}

	// Failing with others live releases the lease and keeps processing.
	if err := f.l.Fail(f.ctx, f.st.DB, id.Key, "a1", true); err != nil {
		t.Fatal(err)
	}
	if op, _ := f.get(id.Key); op.State != ledger.Processing || op.LeaseAttempt != "" {
		t.Errorf("after failing with others live: %+v", op)
	}
	// Failing alone sets the operation failed, and it then resumes or
	// plans again.
	if err := f.l.Fail(f.ctx, f.st.DB, id.Key, "a1", false); err != nil {
		t.Fatal(err)
	}
	op, now := f.get(id.Key)
	if op.State != ledger.Failed {
		t.Errorf("after failing alone: %+v", op)
	}
	if d, _ := ledger.Decide(ledger.Situation{Op: op, ID: id, Now: now}); d != ledger.Plan {
		t.Errorf("failed operation without a plan decides %s", d)
	}

	if err := f.l.End(f.ctx, f.st.DB, "a1", "failed", "disk full", 2, 1); err != nil {
		t.Fatal(err)
	}
	as := f.attempts(id.Key)
	if len(as) != 1 || as[0].Outcome != "failed" || as[0].Error != "disk full" || as[0].EndedAt < as[0].StartedAt ||
		as[0].Partitions.Skipped != 2 || as[0].Recovered != 1 {
		t.Errorf("ended attempt: %+v", as)
	}
	if err := f.l.End(f.ctx, f.st.DB, "a1", "imported", "", 0, 0); err != nil {
		t.Fatal(err)
	}
	if as := f.attempts(id.Key); as[0].Error != "" || as[0].Outcome != "imported" {
		t.Errorf("an attempt ended without error kept one: %+v", as[0])
	}
}

func ledgerRetract(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	id := identity()
	f.create(id, attempt("a1"))
	if err := f.tx(func(tx *sql.Tx) error { return f.l.Retract(f.ctx, tx, id.Key, "a2") }); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Fatalf("retract by a non-holder: %v", err)
	}
	if err := f.tx(func(tx *sql.Tx) error { return f.l.Retract(f.ctx, tx, id.Key, "a1") }); err != nil {
		t.Fatalf("retract: %v", err)
	}
	if op, _ := f.get(id.Key); op != nil {
		t.Errorf("retracted operation remains: %+v", op)
	}
	if as := f.attempts(id.Key); len(as) != 0 {
		t.Errorf("retracted attempts remain: %+v", as)
	}
	// A planned operation is never retracted.
	f.create(id, attempt("a3"))
	if err := f.tx(func(tx *sql.Tx) error { return f.l.Planned(f.ctx, tx, id.Key, "a3") }); err != nil {
		t.Fatal(err)
	}
	if err := f.tx(func(tx *sql.Tx) error { return f.l.Retract(f.ctx, tx, id.Key, "a3") }); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Fatalf("retract of a planned operation: %v", err)
	}
}

func ledgerRejects(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	id := identity()
	f.create(id, attempt("a1"))
	first := []ledger.Reject{
		{Reject: idemtype.Reject{Ordinal: 7, Offset: 5_000_000_001, Column: "qty", Value: "x", Code: "type", Message: "not an integer"}},
		{Reject: idemtype.Reject{Ordinal: 3, Offset: 40, Code: "columns", Message: "3 fields, want 4"}},
	}
	again := []ledger.Reject{
		{Reject: idemtype.Reject{Ordinal: 7, Offset: 5_000_000_001, Column: "qty", Value: "y", Code: "type", Message: "changed"}},
		{Reject: idemtype.Reject{Ordinal: 9, Offset: 90, Column: "at", Value: "soon", Code: "type", Message: "not a timestamp"}},
	}
	for i, rs := range [][]ledger.Reject{first, again} {
		if err := f.tx(func(tx *sql.Tx) error { return f.l.AddRejects(f.ctx, tx, id.Key, fmt.Sprintf("a%d", i+1), rs) }); err != nil {
			t.Fatalf("add rejects %d: %v", i, err)
		}
	}
	if err := f.tx(func(tx *sql.Tx) error { return f.l.AddRejects(f.ctx, tx, id.Key, "a1", nil) }); err != nil {
		t.Fatal(err)
	}
	got, err := f.l.Rejects(f.ctx, f.st.DB, id.Key)
	if err != nil {
		t.Fatal(err)
	}
	var rendered []string
	for _, r := range got {
		rendered = append(rendered, fmt.Sprintf("%d@%d %s=%q %s: %s by %s", r.Ordinal, r.Offset, r.Column, r.Value, r.Code, r.Message, r.Attempt))
	}
	want := []string{
		`3@40 ="" columns: 3 fields, want 4 by a1`,
		`7@5000000001 qty="x" type: not an integer by a1`, // the first stored is kept
		`9@90 at="soon" type: not a timestamp by a2`,
	}
	if !slices.Equal(rendered, want) {
		t.Errorf("rejects:\n%v\nwant\n%v", rendered, want)
	}
	if other, err := f.l.Rejects(f.ctx, f.st.DB, ledger.Key{Table: "orders", FileID: "file-2"}); err != nil || len(other) != 0 {
		t.Errorf("rejects of another operation: %v %v", other, err)
	}
}

func ledgerList(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	a := identity()
	b := identity()
	b.Table = "customers"
	b.ContentDigest = digest("other")
	f.create(a, attempt("a1"))
	f.create(b, attempt("a2"))
	if _, err := func() (bool, error) {
		var ok bool
		err := f.tx(func(tx *sql.Tx) (err error) { ok, err = f.l.Complete(f.ctx, tx, b.Key, "a2", `{}`); return err })
		return ok, err
	}(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		filter ledger.Filter
		want   []string
	}{
		{"all", ledger.Filter{}, []string{"customers", "orders"}},
		{"table", ledger.Filter{Table: "orders"}, []string{"orders"}},
		{"file ID", ledger.Filter{FileID: "file-1"}, []string{"customers", "orders"}},
		{"state", ledger.Filter{State: ledger.Completed}, []string{"customers"}},
		{"digest", ledger.Filter{Digest: digest("other")}, []string{"customers"}},
		{"nothing", ledger.Filter{Table: "orders", State: ledger.Completed}, nil},
	} {
		ops, err := f.l.List(f.ctx, c.filter)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []string
		for _, op := range ops {
			got = append(got, op.Table)
		}
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: listed %v, want %v", c.name, got, c.want)
		}
	}
}
