package postgres

import (
	"context"
	"database/sql"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// writeCounter is a socket that counts the writes its client makes:
// pgconn writes a message, or a pipeline of them, at once and then waits
// for the reply, so outside a COPY each write is a round trip.
type writeCounter struct {
	net.Conn
	n *atomic.Int64
}

func (c writeCounter) Write(b []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(b)
}

// countedConn returns a fresh connection to the server whose search path
// starts with schema, as a pool of pgtest.Open has, and the count of its
// round trips (writeCounter).
func countedConn(t *testing.T, schema string) (*sql.Conn, *atomic.Int64) {
	t.Helper()
	cfg, err := pgx.ParseConfig(pgtest.URL(t, schema))
	if err != nil {
		t.Fatal(err)
	}
	n := &atomic.Int64{}
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return writeCounter{c, n}, nil
	}
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, n
}

// TestFirstLookUpInOneRoundTrip: on a connection that has sent nothing
// yet (the overlap's, a worker's first batch), the look-up of a batch's
// first key goes with its savepoint in one round trip: nothing is
// prepared first. The savepoint is taken, and the look-up tells a stored
// key from one that is not.
func TestFirstLookUpInOneRoundTrip(t *testing.T) {
	db, schema := pgtest.Open(t)
	ctx := t.Context()
	if _, err := db.ExecContext(ctx, `CREATE TABLE firstkey (id bigint PRIMARY KEY, name text, _idemport_file bigint, _idemport_row bigint);
		INSERT INTO firstkey VALUES (7, 'seven', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key   int64
		found bool
	}{{7, true}, {8, false}} {
		conn, n := countedConn(t, schema)
		s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("name"))
		sw, err := Driver{}.Writer(ctx, conn, sink.Target{Table: "firstkey", Key: []string{"id"}}, s)
		if err != nil {
			t.Fatal(err)
		}
		w := sw.(*writer)
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		w.sp.Begin("idemport_test")
		before := n.Load()
		found, err := w.exists(ctx, tx, w.storedKey, c.key)
		trips := n.Load() - before
		w.sp.End()
		if err != nil {
			t.Fatal(err)
		}
		if found != c.found {
			t.Errorf("key %d: found %v, want %v", c.key, found, c.found)
		}
		if trips != 1 {
			t.Errorf("key %d: looked up with its savepoint in %d round trips, want 1", c.key, trips)
		}
		if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT idemport_test"); err != nil {
			t.Errorf("key %d: the savepoint was not taken: %v", c.key, err)
		}
		tx.Rollback()
	}
}

// TestEnsureOnInOneRoundTripLess: EnsureOn takes the advisory lock and
// describes the table in one round trip, on a connection that has sent
// nothing yet: two for a new table (with its CREATE), one for a table
// that fits; qualified names and not. The table it makes is Ensure's.
func TestEnsureOnInOneRoundTripLess(t *testing.T) {
	db, schema := pgtest.Open(t)
	ctx := t.Context()
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("name"))
	for _, c := range []struct {
		table string
		trips int64
	}{
		{"ensured", 2},
		{"ensured", 1},
		{schema + ".qualified", 2},
		{schema + ".qualified", 1},
	} {
		conn, n := countedConn(t, schema)
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		before := n.Load()
		err = Driver{}.EnsureOn(ctx, conn, tx, sink.Target{Table: c.table, Key: []string{"id"}}, s)
		trips := n.Load() - before
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if trips != c.trips {
			t.Errorf("%s: ensured in %d round trips, want %d", c.table, trips, c.trips)
		}
	}
	f := drivertest.Open(t, drivertest.Env{DB: db, Driver: Driver{}})
	for _, table := range []string{"ensured", "qualified"} {
		tbl, err := (Driver{}).Describe(ctx, f.Conn, table)
		if err != nil || tbl == nil {
			t.Fatalf("%s: %v, %v", table, tbl, err)
		}
		if len(tbl.Columns) != 4 || len(tbl.Keys) != 1 || tbl.Keys[0][0] != "id" {
			t.Errorf("%s: columns %v, keys %v; want id, name and the lineage columns, keyed by id", table, tbl.Columns, tbl.Keys)
		}
	}
}

// TestEnsureOnWaitsThenFinds: a transaction ensuring a new table that
// another is creating waits for the other's lock, and then finds the
// table the other committed (its describe reads the catalog after the
// lock is held) rather than creating it again.
func TestEnsureOnWaitsThenFinds(t *testing.T) {
	_, schema := pgtest.Open(t)
	ctx := t.Context()
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("name"))
	tg := sink.Target{Table: "raced", Key: []string{"id"}}
	first, _ := countedConn(t, schema)
	second, _ := countedConn(t, schema)
	watch, _ := countedConn(t, schema)
	var pid int64
	if err := second.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	tx1, err := first.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback()
	if err := (Driver{}).EnsureOn(ctx, first, tx1, tg, s); err != nil {
		t.Fatal(err)
	}
	tx2, err := second.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx2.Rollback()
	done := make(chan error, 1)
	go func() { done <- (Driver{}).EnsureOn(ctx, second, tx2, tg, s) }()
	// The second waits for the first's advisory lock.
	for waiting := false; !waiting; {
		if err := watch.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1 AND locktype = 'advisory' AND NOT granted)`, pid).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if !waiting {
			select {
			case err := <-done:
				t.Fatalf("the second ensured the table while the first held its lock: %v", err)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	if err := tx1.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the second, once the first had committed the table: %v", err)
	}
	if err := tx2.Commit(); err != nil {
		t.Fatal(err)
	}
}
