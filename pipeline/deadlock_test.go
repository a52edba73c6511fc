package pipeline

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/sink"
)

// errVictim is the failure a deadlocking driver's Writers return, as
// PostgreSQL fails a statement of a deadlock's victim.
var errVictim = errors.New("deadlock detected")

// deadlocking is a target's driver whose Writers fail some of their
// Writes after writing the rows, with an error the driver reports as a
// deadlock: the partition's transaction holds the rows and must roll
// back. fail says, for the n-th Write of all its Writers (from 1),
// whether it fails.
type deadlocking struct {
	sink.Driver
	fail   func(n int) bool
	mu     sync.Mutex
	writes int
	failed int
}

func (d *deadlocking) Deadlock(err error) bool {
	return errors.Is(err, errVictim) || d.Driver.Deadlock(err)
}

func (d *deadlocking) Writer(ctx context.Context, conn *sql.Conn, tg sink.Target, schema *arrow.Schema) (sink.Writer, error) {
	w, err := d.Driver.Writer(ctx, conn, tg, schema)
	if err != nil {
		return nil, err
	}
	return &deadlockingWriter{Writer: w, d: d}, nil
}

type deadlockingWriter struct {
	sink.Writer
	d *deadlocking
}

func (w *deadlockingWriter) Write(ctx context.Context, tx *sql.Tx, fileKey int64, rec arrow.RecordBatch, ordinals []int64) (idemtype.Rows, error) {
	c, err := w.Writer.Write(ctx, tx, fileKey, rec, ordinals)
	if err != nil {
		return c, err
	}
	w.d.mu.Lock()
	defer w.d.mu.Unlock()
	w.d.writes++
	if w.d.fail(w.d.writes) {
		w.d.failed++
		return idemtype.Rows{}, fmt.Errorf("upsert: %w", errVictim)
	}
	return c, nil
}

// TestDeadlockedPartitionRunsAgain: a partition transaction the database
// fails to break a deadlock (two imports writing shared keys in different
// orders, on PostgreSQL) rolls back, and the run applies the partition
// again in a new round: it completes, the table holds every row once with
// its values, and the counts are those of the committed transactions
// only. A run whose every round deadlocks stops after a bounded number
// of rounds, failed (a rerun resumes), having committed nothing.
func TestDeadlockedPartitionRunsAgain(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, mode := range []string{"ordinal", "natural"} {
			t.Run(mode, func(t *testing.T) {
				f := newFx(t, name)
				d, err := Drivers().Lookup(f.dsn)
				if err != nil {
					t.Fatal(err)
				}
				req := Request{Path: f.write(t, "items.csv", items(300, 7)), Mapping: Mapping{Table: "items"}, PartitionRows: 100, Workers: 2}
				if mode == "natural" {
					req.Mapping.Key = []string{"id"}
				}
				victim := &deadlocking{Driver: d, fail: func(n int) bool { return n == 1 || n == 3 }}
				res := f.open(t, Options{Drivers: sink.Registry{victim}}).Import(context.Background(), req)
				if res.Outcome != Imported || res.Rows.Inserted != 300 || res.Rows.Read != 300 || res.Partitions.Committed != 3 {
					t.Fatalf("%s (%v), rows %+v, partitions %+v; want imported, 300 rows inserted, 3 partitions committed", res.Outcome, res.Err, res.Rows, res.Partitions)
				}
				if victim.failed != 2 {
					t.Fatalf("%d writes failed as deadlocked, want 2", victim.failed)
				}
				got := f.rows(t, `SELECT `+f.tg.Text("id")+` || ',' || `+f.tg.Text("qty")+` || ',' || name FROM items ORDER BY id`)
				var lines []string
				for _, r := range got {
					lines = append(lines, r[0].(string))
				}
				if want := strings.TrimSpace(strings.TrimPrefix(items(300, 7), "id,qty,name\n")); strings.Join(lines, "\n") != want {
					t.Fatalf("items holds %d rows:\n%s", len(lines), strings.Join(lines, "\n"))
				}
				if op := f.rows(t, `SELECT state, rows_inserted, rows_read FROM `+f.tg.Ledger("operations")); fmt.Sprint(op) != "[[completed 300 300]]" {
					t.Fatalf("operation (state, inserted, read): %v", op)
				}

				// Every round deadlocks: the run gives up, nothing committed.
				again := Request{Path: f.write(t, "more.csv", items(300, 9)), Mapping: req.Mapping, PartitionRows: 100, Workers: 2}
				always := &deadlocking{Driver: d, fail: func(int) bool { return true }}
				res = f.open(t, Options{Drivers: sink.Registry{always}}).Import(context.Background(), again)
				if res.Outcome != Failed || !errors.Is(res.Err, errVictim) || res.Partitions.Committed != 0 {
					t.Fatalf("always deadlocked: %s (%v), partitions %+v; want failed by the deadlock, nothing committed", res.Outcome, res.Err, res.Partitions)
				}
				if always.failed <= maxDeadlocks {
					t.Fatalf("the run gave up after %d deadlocked writes, fewer than its %d rounds", always.failed, maxDeadlocks+1)
				}
				if n := f.rows(t, `SELECT count(*) FROM items WHERE qty = id * 9`); fmt.Sprint(n) != "[[0]]" {
					t.Fatalf("the deadlocked run left rows: %v", n)
				}
			})
		}
	})
}
