package pipeline

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/sink"
)

// describeCount is a target's driver that counts, inside transactions,
// the describes of the table in statements of their own (Describe, and
// Writer, which describes it itself), those in the message that holds its
// columns (HoldColumnsDescribed), and the writers prepared (Writer and
// WriterFor). It passes the driver's ways of opening a partition on, so
// that imports take the paths they take on it.
type describeCount struct {
	sink.Driver
	mu                       sync.Mutex
	describes, held, writers int
}

func (d *describeCount) HoldColumnsDescribed(ctx context.Context, conn *sql.Conn, table string, lazy bool) (string, *sink.Table, error) {
	d.mu.Lock()
	d.held++
	d.mu.Unlock()
	return d.Driver.(describingHolder).HoldColumnsDescribed(ctx, conn, table, lazy)
}

func (d *describeCount) Describe(ctx context.Context, qr sink.Querier, name string) (*sink.Table, error) {
	if _, ok := qr.(*sql.Tx); ok {
		d.mu.Lock()
		d.describes++
		d.mu.Unlock()
	}
	return d.Driver.Describe(ctx, qr, name)
}

func (d *describeCount) Writer(ctx context.Context, conn *sql.Conn, tg sink.Target, schema *arrow.Schema) (sink.Writer, error) {
	d.mu.Lock()
	d.describes++
	d.writers++
	d.mu.Unlock()
	return d.Driver.Writer(ctx, conn, tg, schema)
}

func (d *describeCount) WriterFor(ctx context.Context, conn *sql.Conn, tg sink.Target, schema *arrow.Schema, table *sink.Table) (sink.Writer, error) {
	d.mu.Lock()
	d.writers++
	d.mu.Unlock()
	return d.Driver.(describedWriter).WriterFor(ctx, conn, tg, schema, table)
}

func (d *describeCount) CommitLazily(ctx context.Context, tx *sql.Tx) error {
	return d.Driver.(lazyCommitter).CommitLazily(ctx, tx)
}

func (d *describeCount) OpenPartition(ctx context.Context, conn *sql.Conn, table string) (string, error) {
	return d.Driver.(partitionOpener).OpenPartition(ctx, conn, table)
}

func (d *describeCount) HoldColumnsVersion(ctx context.Context, conn *sql.Conn, table string) (string, error) {
	return d.Driver.(columnsHolder).HoldColumnsVersion(ctx, conn, table)
}

func (d *describeCount) ColumnsVersion(ctx context.Context, tx *sql.Tx, table string) (string, error) {
	return d.Driver.(columnsVersioner).ColumnsVersion(ctx, tx, table)
}

// TestWriterPreparedFromOneDescribe: on PostgreSQL a partition
// transaction that prepares its worker's writer (and the overlap's)
// describes the table once, in the message that holds its columns
// (HoldColumnsDescribed), and the writer is prepared from that describe
// (WriterFor), not from one of its own: with one worker and two, and a
// file of over 8 MiB, whose first partitions the overlap may write.
func TestWriterPreparedFromOneDescribe(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.Postgres}, func(t *testing.T, name string) {
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
				if _, ok := d.(describingHolder); !ok {
					t.Fatalf("%T describes no table with its columns' lock", d)
				}
				dc := &describeCount{Driver: d}
				req := Request{Path: f.write(t, "items.csv", c.content), Mapping: Mapping{Table: "items", Key: []string{"id"}},
					PartitionRows: c.part, Workers: c.workers}
				res := f.open(t, Options{Drivers: sink.Registry{dc}}).Import(context.Background(), req)
				wantImported(t, res, int64(c.rows))
				if dc.writers == 0 || dc.describes != 0 || dc.held != dc.writers {
					t.Fatalf("%d describes in transactions with the columns' lock and %d apart for %d writers prepared, want one each with the lock", dc.held, dc.describes, dc.writers)
				}
				t.Logf("%d writers", dc.writers)
			})
		}
	})
}
