package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/idemport/idemport/idemtype"
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

// TestStoredFirstKeySplitInOneLookUp: a batch of increasing keys tried as
// one COPY (the writer's first) whose first key is stored is split with
// one look-up, sent with its savepoint: whether the first key is stored
// and which of its keys are, one round trip where there were two. The
// batch costs that look-up, the staging COPY of the stored keys and their
// merge, and the COPY of the new keys straight into the table; the table
// is compared whole, lineage included, and with the other batches of the
// transaction after it.
func TestStoredFirstKeySplitInOneLookUp(t *testing.T) {
	db, schema := pgtest.Open(t)
	ctx := t.Context()
	if _, err := db.ExecContext(ctx, `CREATE TABLE splitfirst (id bigint PRIMARY KEY, name text, _idemport_file bigint, _idemport_row bigint);
		INSERT INTO splitfirst VALUES (1, 'one', 1, 1), (2, 'two', 1, 2), (3, 'three', 1, 3)`); err != nil {
		t.Fatal(err)
	}
	conn, n := countedConn(t, schema)
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("name"))
	sw, err := Driver{}.Writer(ctx, conn, sink.Target{Table: "splitfirst", Key: []string{"id"}}, s)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	w := sw.(*writer)
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	write := func(what, name string, fileKey int64, want idemtype.Rows, rows ...[]any) int64 {
		t.Helper()
		rec := drivertest.Batch(t, s, rows...)
		defer rec.Release()
		before := n.Load()
		c, err := w.WriteUnder(ctx, tx, name, fileKey, rec, drivertest.Seq(1, int64(len(rows))))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		drivertest.WantRows(t, what, c, want)
		return n.Load() - before
	}
	// The round trips of a COPY straight into the table, looked up first,
	// with its savepoint: its first key is not stored.
	direct := write("new keys", "idemport_a", 2, idemtype.Rows{Read: 2, Inserted: 2}, []any{10, "ten"}, []any{11, "eleven"})
	// The same COPY, the round trips of the staged batch besides.
	split := write("stored keys, then new ones", "idemport_b", 3, idemtype.Rows{Read: 4, Inserted: 1, Updated: 1, Unchanged: 2},
		[]any{1, "one"}, []any{2, "TWO"}, []any{3, "three"}, []any{12, "twelve"})
	// One more batch of the transaction, every key stored: merged.
	write("stored keys", "idemport_c", 4, idemtype.Rows{Read: 2, Updated: 2}, []any{3, "THREE"}, []any{10, "TEN"})
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// The staged batch's staging COPY, its merge and the count of its
	// rows neither inserted nor updated (the two prepared on their first
	// use): 7 writes more than the COPY straight into the table alone,
	// where the split's own look-up, prepared and then run, made 9.
	if split-direct != 7 {
		t.Errorf("the batch split at a stored first key took %d round trips more than one copied whole (%d), want 7", split-direct, direct)
	}
	var got string
	if err := db.QueryRowContext(ctx, `SELECT string_agg(concat_ws('|', id, name, _idemport_file, _idemport_row), ', ' ORDER BY id) FROM splitfirst`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "1|one|1|1, 2|TWO|3|2, 3|THREE|4|1, 10|TEN|4|2, 11|eleven|2|2, 12|twelve|3|4"; got != want {
		t.Errorf("the table:\n got %s\nwant %s", got, want)
	}
}

// TestEnsureHeldInOneRoundTrip: EnsureHeld ensures a table that exists,
// holds its columns and describes it in one round trip, returning what
// HoldColumnsDescribed returns in the same transaction afterwards. A
// table without the lineage columns gets them, and is returned as it is
// after that change, its columns' version the changed one; a table gone
// fails.
func TestEnsureHeldInOneRoundTrip(t *testing.T) {
	db, schema := pgtest.Open(t)
	ctx := t.Context()
	if _, err := db.ExecContext(ctx, `CREATE TABLE held (id bigint PRIMARY KEY, name text, _idemport_file bigint, _idemport_row bigint);
		CREATE TABLE bare (id bigint PRIMARY KEY, name text)`); err != nil {
		t.Fatal(err)
	}
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("name"))
	for _, c := range []struct{ table, wantTrips string }{{"held", "1"}, {"bare", "more than 1"}} {
		conn, n := countedConn(t, schema)
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		before := n.Load()
		version, table, err := Driver{}.EnsureHeld(ctx, conn, tx, sink.Target{Table: c.table, Key: []string{"id"}}, s)
		trips := n.Load() - before
		if err != nil {
			t.Fatalf("%s: %v", c.table, err)
		}
		if got := fmt.Sprint(trips); (c.wantTrips == "1") != (got == "1") {
			t.Errorf("%s: ensured, held and described in %s round trips, want %s", c.table, got, c.wantTrips)
		}
		wantVersion, wantTable, err := Driver{}.HoldColumnsDescribed(ctx, conn, c.table, false)
		if err != nil {
			t.Fatal(err)
		}
		if version != wantVersion {
			t.Errorf("%s: version %q, want %q", c.table, version, wantVersion)
		}
		if got, want := fmt.Sprintf("%+v", table), fmt.Sprintf("%+v", wantTable); got != want {
			t.Errorf("%s: described as\n%s\nwant\n%s", c.table, got, want)
		}
		if table.Column(sink.FileColumn) == nil || table.Column(sink.RowColumn) == nil {
			t.Errorf("%s: described without the lineage columns: %+v", c.table, table)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
	}
	conn, _ := countedConn(t, schema)
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, _, err := (Driver{}).EnsureHeld(ctx, conn, tx, sink.Target{Table: "gone", Key: []string{"id"}}, s); err == nil || !strings.Contains(err.Error(), `relation "gone" does not exist`) {
		t.Errorf("a table gone: %v, want its lock refused", err)
	}
}
