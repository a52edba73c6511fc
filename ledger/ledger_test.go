package ledger

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/dialect"
)

const leaseMs = 60_000

func openLedger(t *testing.T) (*Ledger, *sql.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_txlock=immediate&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	l := New(db, dialect.SQLite, "idemport_")
	if err := l.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return l, db
}

// inTx runs fn in a transaction, committed when fn returns nil and rolled
// back otherwise; it returns fn's error.
func inTx(t *testing.T, db *sql.DB, fn func(tx *sql.Tx) error) error {
	t.Helper()
	tx, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return nil
}

func attempt(id string) Attempt {
	return Attempt{ID: id, Trigger: "cli", Host: "host-1", PID: 4242, ProcStart: 99, Path: "/data/orders.csv"}
}

func create(t *testing.T, l *Ledger, db *sql.DB, id Identity, a Attempt) {
	t.Helper()
	if err := inTx(t, db, func(tx *sql.Tx) error { return l.Create(context.Background(), tx, id, a, leaseMs) }); err != nil {
		t.Fatalf("create %s: %v", id.Key, err)
	}
}

func get(t *testing.T, l *Ledger, db *sql.DB, k Key) (*Operation, int64) {
	t.Helper()
	op, now, err := l.Get(context.Background(), db, k)
	if err != nil {
		t.Fatalf("get %s: %v", k, err)
	}
	return op, now
}

func TestGetBeforeMigrate(t *testing.T) {
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "fresh.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l := New(db, dialect.SQLite, "idemport_")
	op, now, err := l.Get(context.Background(), db, identity().Key)
	if err != nil || op != nil || now <= 0 {
		t.Fatalf("get on a fresh database: %+v, %d, %v", op, now, err)
	}
}

func TestCreateGetRoundTrip(t *testing.T) {
	ctx := context.Background()
	l, db := openLedger(t)
	id := identity()
	create(t, l, db, id, attempt("a1"))

	op, now := get(t, l, db, id.Key)
	if op == nil {
		t.Fatal("created operation not found")
	}
	if op.Key != id.Key || op.FileKey != id.FileKey || op.ContentDigest != id.ContentDigest ||
		op.MappingDigest != id.MappingDigest || op.Mapping != id.Mapping || op.Path != id.Path || op.Size != id.Size {
		t.Errorf("identity did not round-trip:\nstored %+v\nwant   %+v", op, id)
	}
	if op.State != Processing || op.Planned || op.Attempts != 1 || op.Rows != (idemtype.Rows{}) ||
		op.Outcome != "" || op.CompletedAt != 0 || op.CompletedBy != "" {
		t.Errorf("new operation: %+v", op)
	}
	if op.LeaseAttempt != "a1" || op.LeaseExpires <= now || op.LeaseExpires > now+leaseMs {
		t.Errorf("lease %q until %d; now %d", op.LeaseAttempt, op.LeaseExpires, now)
	}
	if op.CreatedAt <= 0 || op.CreatedAt > now || op.UpdatedAt != op.CreatedAt {
		t.Errorf("created %d, updated %d, now %d", op.CreatedAt, op.UpdatedAt, now)
	}
	// The stored operation decides as the decision table says.
	if d, _ := Decide(Situation{Op: op, ID: id, Now: now}); d != Busy {
		t.Errorf("another run decides %s while a1 holds the lease", d)
	}

	// Another key has no operation.
	if other, _ := get(t, l, db, Key{Table: "orders", FileID: "file-2"}); other != nil {
		t.Errorf("operation for an unknown key: %+v", other)
	}

	as, err := l.Attempts(ctx, id.Key)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].ID != "a1" || as[0].Host != "host-1" || as[0].PID != 4242 || as[0].Trigger != "cli" ||
		as[0].Path != "/data/orders.csv" || as[0].Table != "orders" || as[0].FileID != "file-1" || as[0].EndedAt != 0 {
		t.Errorf("attempts: %+v", as)
	}
	host, pid, start, ok, err := l.Process(ctx, db, "a1")
	if err != nil || !ok || host != "host-1" || pid != 4242 || start != 99 {
		t.Errorf("process of a1: %s %d %d %v %v", host, pid, start, ok, err)
	}
	var fileID string
	if err := db.QueryRow(`SELECT file_id FROM idemport_files WHERE file_key = ?`, id.FileKey).Scan(&fileID); err != nil || fileID != id.FileID {
		t.Errorf("file key %d maps to %q (%v)", id.FileKey, fileID, err)
	}
}

func TestPlannedNeedsThePlanningLease(t *testing.T) {
	ctx := context.Background()
	l, db := openLedger(t)
	id := identity()
	create(t, l, db, id, attempt("a1"))

	planned := func(who string) error {
		return inTx(t, db, func(tx *sql.Tx) error { return l.Planned(ctx, tx, id.Key, who) })
	}
	if err := planned("a2"); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("planned by a non-holder: %v", err)
	}
	if op, _ := get(t, l, db, id.Key); op.Planned || op.LeaseAttempt != "a1" {
		t.Fatalf("a refused Planned changed the operation: %+v", op)
	}
	if err := inTx(t, db, func(tx *sql.Tx) error {
		return l.Refuse(ctx, tx, id.Key, "a2", `{}`, idemtype.Rows{Read: 1, Rejected: 1})
	}); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("refuse by a non-holder: %v", err)
	}

	// a1 dies; a2 takes the expired lease over and plans.
	if err := l.Expire(ctx, db, id.Key, "a1"); err != nil {
		t.Fatal(err)
	}
	op, now := get(t, l, db, id.Key)
	d, from := Decide(Situation{Op: op, ID: id, Now: now})
	if d != Plan || from != "a1" {
		t.Fatalf("after expiry: %s from %q", d, from)
	}
	a2 := attempt("a2")
	a2.RecoveredFrom = from
	if err := inTx(t, db, func(tx *sql.Tx) error { return l.Start(ctx, tx, id.Key, a2, true, leaseMs) }); err != nil {
		t.Fatal(err)
	}
	if err := planned("a1"); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("planned by the attempt whose lease was taken over: %v", err)
	}
	if err := planned("a2"); err != nil {
		t.Fatalf("planned by the holder: %v", err)
	}
	op, now = get(t, l, db, id.Key)
	if !op.Planned || op.LeaseAttempt != "" || op.LeaseExpires != 0 || op.Attempts != 2 {
		t.Errorf("after planning: %+v", op)
	}
	if d, _ := Decide(Situation{Op: op, ID: id, Now: now}); d != Resume {
		t.Errorf("planned operation decides %s", d)
	}
	if err := planned("a2"); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("planned twice: %v", err)
	}
	as, err := l.Attempts(ctx, id.Key)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 2 || as[1].ID != "a2" || as[1].RecoveredFrom != "a1" {
		t.Errorf("attempts: %+v", as)
	}
}

func TestCountAddsToAttemptAndOperation(t *testing.T) {
	ctx := context.Background()
	l, db := openLedger(t)
	id := identity()
	create(t, l, db, id, attempt("a1"))

	parts := []idemtype.Rows{
		{Read: 10, Inserted: 6, Updated: 2, Unchanged: 1, Stale: 0, Rejected: 1},
		{Read: 7, Inserted: 1, Updated: 1, Unchanged: 2, Stale: 3, Rejected: 0},
	}
	var want idemtype.Rows
	for _, p := range parts {
		if err := inTx(t, db, func(tx *sql.Tx) error { return l.Count(ctx, tx, id.Key, "a1", p) }); err != nil {
			t.Fatal(err)
		}
		want.Add(p)
	}
	// A partition whose transaction rolls back counts nothing.
	rollback := errors.New("rolled back")
	if err := inTx(t, db, func(tx *sql.Tx) error {
		if err := l.Count(ctx, tx, id.Key, "a1", idemtype.Rows{Read: 100, Inserted: 100}); err != nil {
			return err
		}
		return rollback
	}); !errors.Is(err, rollback) {
		t.Fatal(err)
	}

	op, _ := get(t, l, db, id.Key)
	if op.Rows != want {
		t.Errorf("operation counted %+v, want %+v", op.Rows, want)
	}
	as, err := l.Attempts(ctx, id.Key)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].Rows != want || as[0].Partitions.Committed != 2 {
		t.Errorf("attempt counted %+v, want rows %+v in 2 partitions", as, want)
	}
}

func TestCompleteOnce(t *testing.T) {
	ctx := context.Background()
	l, db := openLedger(t)
	id := identity()
	create(t, l, db, id, attempt("a1"))

	complete := func(who, outcome string) bool {
		var ok bool
		if err := inTx(t, db, func(tx *sql.Tx) (err error) {
			ok, err = l.Complete(ctx, tx, id.Key, who, outcome)
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
	op, now := get(t, l, db, id.Key)
	if op.State != Completed || op.Outcome != `{"n":1}` || op.CompletedBy != "a1" || op.CompletedAt <= 0 ||
		op.LeaseAttempt != "" || op.LeaseExpires != 0 {
		t.Errorf("completed operation: %+v", op)
	}
	if d, _ := Decide(Situation{Op: op, ID: id, Now: now}); d != Duplicate {
		t.Errorf("completed operation decides %s", d)
	}
}

func schema(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM sqlite_master ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		out = append(out, s)
	}
	var m []string
	mr, err := db.Query(`SELECT component || ' ' || version || ' ' || applied_at FROM idemport_migrations ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	for mr.Next() {
		var s string
		mr.Scan(&s)
		m = append(m, s)
	}
	return append(out, m...)
}

func TestMigrateTwiceIsANoOp(t *testing.T) {
	l, db := openLedger(t)
	before := schema(t, db)
	for _, table := range []string{"idemport_operations", "idemport_attempts", "idemport_rejects", "idemport_files", "idemport_migrations"} {
		if !slices.ContainsFunc(before, func(s string) bool { return strings.HasPrefix(s, "table "+table+" ") }) {
			t.Errorf("migrate did not create %s", table)
		}
	}
	files, err := fs.Glob(migrations, "migrations/sqlite/*.up.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migration files: %v %v", files, err)
	}
	if n := len(slices.DeleteFunc(slices.Clone(before), func(s string) bool { return !strings.HasPrefix(s, "ledger ") })); n != len(files) {
		t.Errorf("%d ledger migrations recorded, want one per file: %d", n, len(files))
	}
	create(t, l, db, identity(), attempt("a1"))
	if err := l.Migrate(context.Background()); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	if after := schema(t, db); !slices.Equal(before, after) {
		t.Errorf("second migrate changed the schema:\n%s\n---\n%s", strings.Join(before, "\n"), strings.Join(after, "\n"))
	}
	// A second Ledger on the same database also finds nothing to do.
	if err := New(db, dialect.SQLite, "idemport_").Migrate(context.Background()); err != nil {
		t.Fatalf("migrate from another ledger: %v", err)
	}
	if op, _ := get(t, l, db, identity().Key); op == nil {
		t.Error("migrate lost the operation")
	}
}

func TestCreateFileKeyCollision(t *testing.T) {
	l, db := openLedger(t)
	first := identity()
	create(t, l, db, first, attempt("a1"))

	// The same file ID into another table shares its file key.
	again := first
	again.Table = "orders_copy"
	create(t, l, db, again, attempt("a2"))

	// Another file ID with the same key is refused, and nothing is recorded.
	other := first
	other.Table = "other"
	other.FileID = "file-2"
	err := inTx(t, db, func(tx *sql.Tx) error { return l.Create(context.Background(), tx, other, attempt("a3"), leaseMs) })
	if !errors.Is(err, ErrFileKeyCollision) {
		t.Fatalf("create with a used file key: %v", err)
	}
	if !strings.Contains(err.Error(), `"file-1"`) || !strings.Contains(err.Error(), `"file-2"`) {
		t.Errorf("collision error does not name both file IDs: %v", err)
	}
	if op, _ := get(t, l, db, other.Key); op != nil {
		t.Errorf("colliding operation was recorded: %+v", op)
	}
	if _, _, _, ok, _ := l.Process(context.Background(), db, "a3"); ok {
		t.Error("colliding attempt was recorded")
	}
}
