package pipeline

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// freshState is a PostgreSQL target whose state schema is empty, and a
// transaction that holds the migrations of an Engine opened on it: it
// creates, uncommitted, a table of the name the migrations create, so
// that an Engine's look-up finds the schema fresh and its migrations wait
// at that name until the transaction ends.
type freshState struct {
	tg   *testkit.Target
	dir  string
	hold *sql.Tx
}

func newFreshState(t *testing.T) *freshState {
	t.Helper()
	dir := t.TempDir()
	s := &freshState{tg: testkit.NewTarget(t, testkit.Postgres, dir), dir: dir}
	tx, err := s.tg.DB.Begin()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	s.hold = tx
	return s
}

// heldState is a fresh state whose migrations are held at table name
// (the transaction creates it), with an orders file of n rows of seed in
// its directory: it returns the state, the file's path and its rows.
func heldState(t *testing.T, name string, n, seed int) (s *freshState, path string, rows [][]string) {
	t.Helper()
	s = newFreshState(t)
	path = filepath.Join(s.dir, "orders.csv")
	rows = testkit.Orders(t, path, n, seed)
	if _, err := s.hold.Exec(`CREATE TABLE "` + s.tg.Schema + `".` + name + ` (x int)`); err != nil {
		t.Fatal(err)
	}
	return s, path, rows
}

// open opens an Engine on the state with ctx, closed when t ends.
func (s *freshState) open(ctx context.Context, t *testing.T) *Engine {
	t.Helper()
	e, err := Open(ctx, s.tg.Args[1], Options{StateSchema: s.tg.Schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// importing imports path on e in the background, telling hashed once the
// hash has read the whole file; the result comes on the channel returned.
func importing(e *Engine, path string, size int64, hashed chan<- struct{}) <-chan *Result {
	out := make(chan *Result, 1)
	var once sync.Once
	req := Request{Path: path, Mapping: Mapping{Table: "orders", Key: []string{"order_id"}}}
	req.Progress = func(p Progress) {
		if p.Phase == "hash" && p.Bytes >= size && hashed != nil {
			once.Do(func() { close(hashed) })
		}
	}
	go func() { out <- e.Import(context.Background(), req) }()
	return out
}

// TestFreshStateHashesWhileMigrating opens an import on a fresh
// PostgreSQL state schema whose migrations are held: the file is hashed
// while they wait, nothing reads or writes idemport's tables before they
// are created (the import waits for them), and once they are the import
// is exact, as is a rerun (a duplicate, found by the quick check). A
// migration that fails (a table of its name committed meanwhile) fails
// the import with nothing written, and a rerun once it is gone imports
// the file exactly; two first imports of one file, both opened on the
// fresh state, import it once, as two runs of one file at once
// do (each imported, resumed, duplicate or busy).
func TestFreshStateHashesWhileMigrating(t *testing.T) {
	t.Parallel()
	t.Run("held", func(t *testing.T) {
		t.Parallel()
		s, path, rows := heldState(t, "migrations", 500, 31)
		size := fileSize(t, path)
		e := s.open(context.Background(), t)
		if !e.st.Migrating() {
			t.Fatal("the held migrations of a fresh state did not run past Open")
		}
		hashed := make(chan struct{})
		done := importing(e, path, size, hashed)
		select {
		case <-hashed:
		case res := <-done:
			t.Fatalf("the import ended before its hash was read whole: %s %v", res.Outcome, res.Err)
		case <-time.After(20 * time.Second):
			t.Fatal("the file was not hashed while the migrations waited")
		}
		select {
		case res := <-done:
			t.Fatalf("the import went on before the migrations ended: %s %v", res.Outcome, res.Err)
		case <-time.After(200 * time.Millisecond):
		}
		if err := s.hold.Rollback(); err != nil {
			t.Fatal(err)
		}
		res := <-done
		if res.Outcome != Imported || res.Err != nil {
			t.Fatalf("import: %s %v", res.Outcome, res.Err)
		}
		checkFresh(t, s.tg, len(rows))
		again := s.open(context.Background(), t).Import(context.Background(), Request{Path: path, Mapping: Mapping{Table: "orders", Key: []string{"order_id"}}})
		if again.Outcome != Duplicate || !again.QuickCheck {
			t.Fatalf("rerun: %s (quick check %v) %v", again.Outcome, again.QuickCheck, again.Err)
		}
	})
	t.Run("failed", func(t *testing.T) {
		t.Parallel()
		s, path, rows := heldState(t, "operations", 500, 32)
		e := s.open(context.Background(), t)
		done := importing(e, path, fileSize(t, path), nil)
		time.Sleep(100 * time.Millisecond)
		if err := s.hold.Commit(); err != nil {
			t.Fatal(err)
		}
		res := <-done
		if res.Outcome != Failed || res.Err == nil || !strings.Contains(res.Err.Error(), "migration") {
			t.Fatalf("import with a failed migration: %s %v", res.Outcome, res.Err)
		}
		if s.tg.TableExists(t, "orders") {
			t.Fatal("the target table was created by an import whose state was not")
		}
		if _, err := s.tg.DB.Exec(`DROP TABLE "` + s.tg.Schema + `".operations`); err != nil {
			t.Fatal(err)
		}
		res = s.open(context.Background(), t).Import(context.Background(), Request{Path: path, Mapping: Mapping{Table: "orders", Key: []string{"order_id"}}})
		if res.Outcome != Imported || res.Err != nil {
			t.Fatalf("rerun: %s %v", res.Outcome, res.Err)
		}
		checkFresh(t, s.tg, len(rows))
	})
	t.Run("concurrent", func(t *testing.T) {
		t.Parallel()
		s, path, rows := heldState(t, "migrations", 500, 33)
		size := fileSize(t, path)
		a, b := s.open(context.Background(), t), s.open(context.Background(), t)
		ha, hb := make(chan struct{}), make(chan struct{})
		da, db := importing(a, path, size, ha), importing(b, path, size, hb)
		<-ha
		<-hb
		if err := s.hold.Rollback(); err != nil {
			t.Fatal(err)
		}
		ra, rb := <-da, <-db
		for _, r := range []*Result{ra, rb} {
			switch r.Outcome {
			case Imported, Resumed, Duplicate, Busy:
			default:
				t.Fatalf("two first imports: %s %v and %s %v, want each imported, resumed, duplicate or busy", ra.Outcome, ra.Err, rb.Outcome, rb.Err)
			}
		}
		checkFresh(t, s.tg, len(rows))
	})
}

// checkFresh checks that the target's orders table holds n rows, each key
// once, and the ledger one completed operation.
func checkFresh(t *testing.T, tg *testkit.Target, n int) {
	t.Helper()
	if got := testkit.Int(t, tg.DB, `SELECT count(*) FROM orders`); got != int64(n) {
		t.Errorf("%d rows, want %d", got, n)
	}
	if got := testkit.Int(t, tg.DB, `SELECT count(DISTINCT order_id) FROM orders`); got != int64(n) {
		t.Errorf("%d keys, want %d", got, n)
	}
	if got := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("operations")+` WHERE state = 'completed'`); got != 1 {
		t.Errorf("%d completed operations, want 1", got)
	}
}

// fileSize returns the size of the file at path.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// TestFreshStateOutlivesOpenContext opens an Engine on a fresh PostgreSQL
// state schema whose migrations are held, with a context that ends once
// Open has returned, as a caller whose context bounds only the opening:
// the migrations Open left running go on, and the import, on a context of
// its own, imports the file. An import whose own context ends while they
// are held returns without waiting for them. Close, while they are held,
// ends them instead of waiting for the lock, and a rerun on a new Engine
// imports the file.
func TestFreshStateOutlivesOpenContext(t *testing.T) {
	t.Parallel()
	t.Run("open context ends", func(t *testing.T) {
		t.Parallel()
		s, path, rows := heldState(t, "migrations", 200, 37)
		ctx, cancel := context.WithCancel(context.Background())
		e := s.open(ctx, t)
		cancel()
		done := importing(e, path, fileSize(t, path), nil)
		time.Sleep(100 * time.Millisecond)
		if err := s.hold.Rollback(); err != nil {
			t.Fatal(err)
		}
		if res := <-done; res.Outcome != Imported || res.Err != nil {
			t.Fatalf("an import on an Engine whose Open's context ended: %s %v, want imported", res.Outcome, res.Err)
		}
		checkFresh(t, s.tg, len(rows))
	})
	t.Run("import context ends while held", func(t *testing.T) {
		t.Parallel()
		s, path, _ := heldState(t, "migrations", 200, 41)
		e := s.open(context.Background(), t)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan *Result, 1)
		go func() {
			done <- e.Import(ctx, Request{Path: path, Mapping: Mapping{Table: "orders", Key: []string{"order_id"}}})
		}()
		time.Sleep(100 * time.Millisecond)
		cancel()
		select {
		case res := <-done:
			if res.Outcome == Imported {
				t.Fatalf("an import whose context ended before its state was created: %s", res.Outcome)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("an import whose context ended waited for migrations held by another transaction")
		}
	})
	t.Run("close while held", func(t *testing.T) {
		t.Parallel()
		s, path, rows := heldState(t, "migrations", 200, 39)
		e := s.open(context.Background(), t) // closed again at cleanup: Close is idempotent
		closed := make(chan error, 1)
		go func() { closed <- e.Close() }()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatal("Close waited for migrations held by another transaction")
		}
		if err := s.hold.Rollback(); err != nil {
			t.Fatal(err)
		}
		res := s.open(context.Background(), t).Import(context.Background(), Request{Path: path, Mapping: Mapping{Table: "orders", Key: []string{"order_id"}}})
		if res.Outcome != Imported || res.Err != nil {
			t.Fatalf("rerun after Close: %s %v", res.Outcome, res.Err)
		}
		checkFresh(t, s.tg, len(rows))
	})
}
