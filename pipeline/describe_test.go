package pipeline

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/sink"
)

// describeCount counts, for a target's driver, inside transactions, the
// describes of the table in statements of their own (Describe), those in
// the message that holds its columns (HoldColumnsDescribed), and the
// writers prepared (Writer and WriterFor), own those that described the
// table themselves (Writer). It is the base of the driver countDescribes
// returns.
type describeCount struct {
	sink.Driver
	mu                            sync.Mutex
	describes, held, writers, own int
}

func (d *describeCount) add(n ...*int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range n {
		*p++
	}
}

func (d *describeCount) Describe(ctx context.Context, qr sink.Querier, name string) (*sink.Table, error) {
	if _, ok := qr.(*sql.Tx); ok {
		d.add(&d.describes)
	}
	return d.Driver.Describe(ctx, qr, name)
}

func (d *describeCount) Writer(ctx context.Context, conn *sql.Conn, tg sink.Target, schema *arrow.Schema) (sink.Writer, error) {
	d.add(&d.writers, &d.own)
	return d.Driver.Writer(ctx, conn, tg, schema)
}

// heldDescribes passes HoldColumnsDescribed on, counting it.
type heldDescribes struct{ c *describeCount }

func (h heldDescribes) HoldColumnsDescribed(ctx context.Context, conn *sql.Conn, table string, lazy bool) (string, *sink.Table, error) {
	h.c.add(&h.c.held)
	return h.c.Driver.(describingHolder).HoldColumnsDescribed(ctx, conn, table, lazy)
}

// writersFor passes WriterFor on, counting it.
type writersFor struct{ c *describeCount }

func (w writersFor) WriterFor(ctx context.Context, conn *sql.Conn, tg sink.Target, schema *arrow.Schema, table *sink.Table) (sink.Writer, error) {
	w.c.add(&w.c.writers)
	return w.c.Driver.(describedWriter).WriterFor(ctx, conn, tg, schema, table)
}

// countDescribes returns d counting its describes and writers (the
// describeCount, also returned), with d's ways and no other (withWays),
// so that imports take the paths they take on d.
func countDescribes(t *testing.T, d sink.Driver) (sink.Driver, *describeCount) {
	t.Helper()
	c := &describeCount{Driver: d}
	w := waysOf(d)
	if w.heldDescribed != nil {
		w.heldDescribed = heldDescribes{c}
	}
	if w.writerFor != nil {
		w.writerFor = writersFor{c}
	}
	return withWays(t, c, w), c
}

// TestWriterPreparedFromOneDescribe: a partition transaction that
// prepares its worker's writer (and the overlap's) describes the table
// once, with its columns held, and the writer is prepared from that
// describe (WriterFor), not from one of its own: on PostgreSQL in the
// message that holds the columns (HoldColumnsDescribed), on MariaDB in a
// Describe after HoldColumnsVersion; with one worker and two, and a file
// of over 8 MiB, whose first partitions the overlap may write.
func TestWriterPreparedFromOneDescribe(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.Postgres, testkit.MariaDB}, func(t *testing.T, name string) {
		for _, c := range []struct {
			name    string
			content string
			rows    int
			part    int64
			workers int
		}{
			{"one worker", items(300, 7), 300, 50, 1},
			{"two workers", items(300, 7), 300, 50, 2},
			{"overlap", numberedFile(150000, strings.Repeat("x", 40)), 150000, 50000, 1},
		} {
			t.Run(c.name, func(t *testing.T) {
				f := newFx(t, name)
				d, err := Drivers().Lookup(f.dsn)
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := d.(describedWriter); !ok {
					t.Fatalf("%T prepares no writer from a describe", d)
				}
				_, inLock := d.(describingHolder)
				counting, dc := countDescribes(t, d)
				req := Request{Path: f.write(t, "items.csv", c.content), Mapping: Mapping{Table: "items", Key: []string{"id"}},
					PartitionRows: c.part, Workers: c.workers}
				res := f.open(t, Options{Drivers: sink.Registry{counting}}).Import(context.Background(), req)
				wantImported(t, res, int64(c.rows))
				wantHeld, wantApart, where := dc.writers, 0, "in the message with the columns' lock"
				if !inLock {
					wantHeld, wantApart, where = 0, dc.writers, "apart, after the lock"
				}
				if dc.writers == 0 || dc.own != 0 || dc.held != wantHeld || dc.describes != wantApart {
					t.Fatalf("%d describes in the message with the columns' lock and %d apart for %d writers prepared, %d of them describing the table themselves; want one each %s",
						dc.held, dc.describes, dc.writers, dc.own, where)
				}
				t.Logf("%d writers", dc.writers)
			})
		}
	})
}

// ensureCount is describeCount that also counts the tables ensured
// through the driver's Ensure and through its EnsureOn (connEnsurer).
type ensureCount struct {
	*describeCount
	plain, on atomic.Int32
}

func (d *ensureCount) Ensure(ctx context.Context, tx *sql.Tx, tg sink.Target, schema *arrow.Schema) error {
	d.plain.Add(1)
	return d.Driver.Ensure(ctx, tx, tg, schema)
}

func (d *ensureCount) EnsureOn(ctx context.Context, conn *sql.Conn, tx *sql.Tx, tg sink.Target, schema *arrow.Schema) error {
	d.on.Add(1)
	return d.Driver.(connEnsurer).EnsureOn(ctx, conn, tx, tg, schema)
}

// TestOverlapEnsuresOnItsConnection: on PostgreSQL the overlap's
// transaction, the first of a new table's, creates the table through the
// driver's EnsureOn (the advisory lock and the describe in one message, a
// round trip fewer before the first row is written); the plan stored in
// its transaction at the end ensures it once more (readyTables), through
// Ensure.
func TestOverlapEnsuresOnItsConnection(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.Postgres}, func(t *testing.T, name string) {
		f := newFx(t, name)
		d, err := Drivers().Lookup(f.dsn)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := d.(connEnsurer); !ok {
			t.Fatalf("%T ensures no table on a connection", d)
		}
		ec := &ensureCount{describeCount: &describeCount{Driver: d}}
		w := waysOf(d)
		w.ensurer = ec
		req := Request{Path: f.write(t, "items.csv", numberedFile(150000, strings.Repeat("x", 40))), Mapping: Mapping{Table: "items", Key: []string{"id"}},
			PartitionRows: 50000}
		res := f.open(t, Options{Drivers: sink.Registry{withWays(t, ec, w)}}).Import(context.Background(), req)
		wantImported(t, res, 150000)
		if on, plain := ec.on.Load(), ec.plain.Load(); on != 1 || plain != 1 {
			t.Fatalf("the table ensured %d times through EnsureOn and %d through Ensure, want once each (the overlap's, the plan's)", on, plain)
		}
	})
}
