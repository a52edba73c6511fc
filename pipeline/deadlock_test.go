package pipeline

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/ledger"
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
				f.wantItems(t, 300, 7)
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

// expireDeadlocking is a target's driver whose checkpoint store fails the
// first expiry of a dead attempt's partition leases with an error the
// driver reports as a deadlock, as InnoDB fails the taking over of leases
// when another process's partition transactions lock the same rows in
// another order.
type expireDeadlocking struct {
	sink.Driver
	mu     sync.Mutex
	failed int
}

func (d *expireDeadlocking) Deadlock(err error) bool {
	return errors.Is(err, errVictim) || d.Driver.Deadlock(err)
}

func (d *expireDeadlocking) Checkpoints(prefix string) checkpoint.Ops {
	return expireDeadlockingOps{Ops: d.Driver.Checkpoints(prefix), d: d}
}

type expireDeadlockingOps struct {
	checkpoint.Ops
	d *expireDeadlocking
}

func (o expireDeadlockingOps) Expire(ctx context.Context, q idemtype.Querier, op checkpoint.Op, attempt string) error {
	o.d.mu.Lock()
	defer o.d.mu.Unlock()
	if o.d.failed == 0 {
		o.d.failed++
		return fmt.Errorf("expire leases: %w", errVictim)
	}
	return o.Ops.Expire(ctx, q, op, attempt)
}

// onLog runs do, once, when a log record with message at is written.
type onLog struct {
	at   string
	once sync.Once
	do   func()
}

func (h *onLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *onLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *onLog) WithGroup(string) slog.Handler            { return h }
func (h *onLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.at {
		h.once.Do(h.do)
	}
	return nil
}

// TestDeadlockedTakeOverRunsAgain: taking over the leases of a dead
// attempt was a deadlock's victim (MariaDB, four processes on one file,
// one killed), once, in the claim's transaction and in the wait for
// others' partitions: the run tries again rather than fail, takes the
// leases over, and imports every row once.
func TestDeadlockedTakeOverRunsAgain(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		d, err := Drivers().Lookup(newFx(t, name).dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Run("claim", func(t *testing.T) {
			f := newFx(t, name)
			// A killed process holds partition 0's lease.
			req := Request{Path: f.write(t, "items.csv", items(300, 3)), PartitionRows: 100}
			f.killedHolding(t, helperJob{Path: req.Path, PartitionRows: 100, Failpoint: "after-partition-claim"})
			victim := &expireDeadlocking{Driver: d}
			res := f.open(t, Options{Drivers: sink.Registry{victim}}).Import(context.Background(), req)
			if res.Outcome != Resumed || !res.RecoveredLease || res.Rows.Inserted != 300 || len(res.RecoveredFrom) != 1 {
				t.Fatalf("%s (%v), rows %+v, recovered %v; want resumed, the dead attempt's leases taken over once, 300 rows", res.Outcome, res.Err, res.Rows, res.RecoveredFrom)
			}
			if victim.failed != 1 {
				t.Fatalf("%d expiries failed as deadlocked, want 1", victim.failed)
			}
			f.wantItems(t, 300, 3)
		})
		t.Run("wait", func(t *testing.T) {
			f := newFx(t, name)
			req := Request{Path: f.write(t, "items.csv", items(300, 5)), Mapping: Mapping{Table: "items"}, PartitionRows: 100, Lease: 10 * time.Minute}
			// Committed partition 0; holds partition 1's lease, out of
			// any transaction, alive.
			h := f.holdPartition(t, req)
			holder := f.rows(t, `SELECT lease_attempt FROM `+f.tg.Ledger("partitions")+` WHERE done = 0 AND lease_attempt IS NOT NULL`)
			if len(holder) != 1 {
				t.Fatalf("partition leases held: %v", holder)
			}
			// Once the run waits for that partition, its holder looks
			// dead: its process is one that has ended.
			ended := exec.Command(os.Args[0], "-test.run=^$")
			if err := ended.Run(); err != nil {
				t.Fatal(err)
			}
			dies := &onLog{at: "waiting for the partitions other attempts hold", do: func() {
				if _, err := f.tg.DB.Exec(`UPDATE ` + f.tg.Ledger("attempts") + ` SET pid = ` + fmt.Sprint(ended.Process.Pid) + ` WHERE attempt_id = '` + holder[0][0].(string) + `'`); err != nil {
					t.Error(err)
				}
			}}
			victim := &expireDeadlocking{Driver: d}
			res := f.open(t, Options{Drivers: sink.Registry{victim}, Logger: slog.New(dies)}).Import(context.Background(), req)
			if res.Outcome != Resumed || !res.RecoveredLease || res.Partitions.Committed != 2 {
				t.Fatalf("%s (%v), partitions %+v, recovered %v; want resumed, the dead attempt's lease taken over, 2 partitions committed",
					res.Outcome, res.Err, res.Partitions, res.RecoveredFrom)
			}
			if victim.failed != 1 {
				t.Fatalf("%d expiries failed as deadlocked, want 1", victim.failed)
			}
			if hr := h.finish(); hr.Outcome != Failed || !errors.Is(hr.Err, ledger.ErrLeaseLost) {
				t.Fatalf("the holder, let go: %s %v; want failed, lease lost", hr.Outcome, hr.Err)
			}
			f.wantItems(t, 300, 5)
		})
	})
}

// wantItems fails t unless the table items holds exactly items(n, seed)'s
// rows, value by value.
func (f *fx) wantItems(t *testing.T, n, seed int) {
	t.Helper()
	got := f.rows(t, `SELECT `+f.tg.Text("id")+` || ',' || `+f.tg.Text("qty")+` || ',' || name FROM items ORDER BY id`)
	var lines []string
	for _, r := range got {
		lines = append(lines, r[0].(string))
	}
	if want := strings.TrimSpace(strings.TrimPrefix(items(n, seed), "id,qty,name\n")); strings.Join(lines, "\n") != want {
		t.Fatalf("items holds %d rows:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}

// victimOnce is a target's driver whose first claim of a partition (at
// "claim"), first completion of an operation (at "complete") or first
// release of an attempt's partitions (at "release") fails with
// an error the driver reports as a deadlock, as InnoDB fails either
// transaction when another process's transactions lock the same rows in
// another order.
type victimOnce struct {
	sink.Driver
	at     string
	mu     sync.Mutex
	failed int
}

// fail reports whether the call at point should fail, counting it.
func (d *victimOnce) fail(point string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if point != d.at || d.failed > 0 {
		return false
	}
	d.failed++
	return true
}

func (d *victimOnce) Deadlock(err error) bool {
	return errors.Is(err, errVictim) || d.Driver.Deadlock(err)
}

func (d *victimOnce) Checkpoints(prefix string) checkpoint.Ops {
	return victimOnceCheckpoints{Ops: d.Driver.Checkpoints(prefix), d: d}
}

func (d *victimOnce) Ledger(prefix string) ledger.Ops {
	return victimOnceLedger{Ops: d.Driver.Ledger(prefix), d: d}
}

type victimOnceCheckpoints struct {
	checkpoint.Ops
	d *victimOnce
}

func (o victimOnceCheckpoints) ClaimPartition(ctx context.Context, tx *sql.Tx, op checkpoint.Op, attempt string, leaseMs int64) (*checkpoint.Partition, string, error) {
	if o.d.fail("claim") {
		return nil, "", fmt.Errorf("claim partition: %w", errVictim)
	}
	return o.Ops.ClaimPartition(ctx, tx, op, attempt, leaseMs)
}

func (o victimOnceCheckpoints) Release(ctx context.Context, q idemtype.Querier, op checkpoint.Op, attempt string) error {
	if o.d.fail("release") {
		return fmt.Errorf("release partitions: %w", errVictim)
	}
	return o.Ops.Release(ctx, q, op, attempt)
}

type victimOnceLedger struct {
	ledger.Ops
	d *victimOnce
}

func (o victimOnceLedger) CompleteOperation(ctx context.Context, tx *sql.Tx, k ledger.Key, attempt, outcome string) (bool, error) {
	if o.d.fail("complete") {
		return false, fmt.Errorf("complete operation: %w", errVictim)
	}
	return o.Ops.CompleteOperation(ctx, tx, k, attempt, outcome)
}

// TestDeadlockedClaimOrCompletionRunsAgain: a worker's first claim of a
// partition, in a transaction of its own, or the transaction that
// completes the operation, was a deadlock's victim (MariaDB, processes
// sharing a file, or imports meeting on one table) and rolled back: the
// run runs it again rather than fail, and imports every row once.
func TestDeadlockedClaimOrCompletionRunsAgain(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		d, err := Drivers().Lookup(newFx(t, name).dsn)
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range []string{"claim", "complete"} {
			t.Run(at, func(t *testing.T) {
				f := newFx(t, name)
				req := Request{Path: f.write(t, "items.csv", items(300, 9)), Mapping: Mapping{Table: "items"}, PartitionRows: 100}
				victim := &victimOnce{Driver: d, at: at}
				res := f.open(t, Options{Drivers: sink.Registry{victim}}).Import(context.Background(), req)
				if res.Outcome != Imported || res.Rows.Inserted != 300 || res.Partitions.Committed != 3 {
					t.Fatalf("%s (%v), rows %+v, partitions %+v; want imported, 300 rows inserted, 3 partitions committed", res.Outcome, res.Err, res.Rows, res.Partitions)
				}
				if victim.failed != 1 {
					t.Fatalf("%d calls failed as deadlocked, want 1", victim.failed)
				}
				f.wantItems(t, 300, 9)
				if op := f.rows(t, `SELECT state, rows_inserted, rows_read FROM `+f.tg.Ledger("operations")); fmt.Sprint(op) != "[[completed 300 300]]" {
					t.Fatalf("operation (state, inserted, read): %v", op)
				}
			})
		}
	})
}

// meeting is a target's driver whose Writers meet as two workers'
// partition transactions meet in a deadlock: the first Write of each
// Writer waits, its rows written, for another Writer's Write (at most
// meetWithin); the later of two that meet fails as the deadlock's victim,
// and the earlier, as the database keeps it waiting until the victim's
// transaction rolls back, waits for its context to end (at most
// meetWithin) and fails with it if it ends, as a transaction rolled back
// with its round would.
type meeting struct {
	sink.Driver
	mu      sync.Mutex
	waiting chan struct{} // closed when a victim met the Write that waits; nil when none waits
	meets   int
}

const meetWithin = 2 * time.Second

func (d *meeting) Deadlock(err error) bool {
	return errors.Is(err, errVictim) || d.Driver.Deadlock(err)
}

func (d *meeting) Writer(ctx context.Context, conn *sql.Conn, tg sink.Target, schema *arrow.Schema) (sink.Writer, error) {
	w, err := d.Driver.Writer(ctx, conn, tg, schema)
	if err != nil {
		return nil, err
	}
	return &meetingWriter{Writer: w, d: d}, nil
}

type meetingWriter struct {
	sink.Writer
	d      *meeting
	writes int
}

func (w *meetingWriter) Write(ctx context.Context, tx *sql.Tx, fileKey int64, rec arrow.RecordBatch, ordinals []int64) (idemtype.Rows, error) {
	c, err := w.Writer.Write(ctx, tx, fileKey, rec, ordinals)
	if err != nil {
		return c, err
	}
	w.writes++
	d := w.d
	d.mu.Lock()
	if d.waiting != nil {
		close(d.waiting) // this one is the victim
		d.waiting = nil
		d.meets++
		d.mu.Unlock()
		return idemtype.Rows{}, fmt.Errorf("upsert: %w", errVictim)
	}
	if w.writes > 1 {
		d.mu.Unlock()
		return c, nil
	}
	met := make(chan struct{})
	d.waiting = met
	d.mu.Unlock()
	select {
	case <-met:
	case <-time.After(meetWithin):
		d.mu.Lock()
		if d.waiting == met {
			d.waiting = nil
			d.mu.Unlock()
			return c, nil
		}
		d.mu.Unlock()
		<-met
	}
	select {
	case <-ctx.Done():
		return idemtype.Rows{}, ctx.Err()
	case <-time.After(meetWithin):
		return c, nil
	}
}

// TestDeadlockVictimStopsAlone: two workers' partition transactions meet
// in a deadlock and the database rolls one back. The other worker goes on
// and commits; only the victim's partition runs again. (A round that
// stopped every worker at the deadlock rolled the other's transaction back
// too, and the two workers started the next round together and met the
// same way again, until the run failed: "deadlock: partition 2: load rows
// 9-12 into accounts: Error 1213", three workers on MariaDB.) SQLite has
// one writer at a time: its transactions never meet.
func TestDeadlockVictimStopsAlone(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.Postgres, testkit.MariaDB}, func(t *testing.T, name string) {
		f := newFx(t, name)
		d, err := Drivers().Lookup(f.dsn)
		if err != nil {
			t.Fatal(err)
		}
		req := Request{Path: f.write(t, "items.csv", items(300, 5)), Mapping: Mapping{Table: "items", Key: []string{"id"}}, PartitionRows: 100, Workers: 2}
		m := &meeting{Driver: d}
		res := f.open(t, Options{Drivers: sink.Registry{m}}).Import(context.Background(), req)
		if res.Outcome != Imported || res.Rows.Inserted != 300 || res.Rows.Read != 300 || res.Partitions.Committed != 3 {
			t.Fatalf("%s (%v), rows %+v, partitions %+v; want imported, 300 rows inserted, 3 partitions committed", res.Outcome, res.Err, res.Rows, res.Partitions)
		}
		if m.meets == 0 {
			t.Fatal("the workers' transactions never met")
		}
		f.wantItems(t, 300, 5)
		if op := f.rows(t, `SELECT state, rows_inserted, rows_read FROM `+f.tg.Ledger("operations")); fmt.Sprint(op) != "[[completed 300 300]]" {
			t.Fatalf("operation (state, inserted, read): %v", op)
		}
	})
}

// TestDeadlockedRecordRunsAgain: the transaction that records the end of
// an interrupted attempt and releases its partitions was a deadlock's
// victim (MariaDB: the attempt's last partition transaction, rolled back
// as its connection closed, still held its partition's row): the record is
// made again, so that the operation is failed, no lease is left held and a
// rerun resumes at once, instead of the operation looking in progress
// until its leases expire.
func TestDeadlockedRecordRunsAgain(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		d, err := Drivers().Lookup(newFx(t, name).dsn)
		if err != nil {
			t.Fatal(err)
		}
		f := newFx(t, name)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req := Request{Path: f.write(t, "items.csv", items(1000, 11)), Mapping: Mapping{Table: "items"}, PartitionRows: 100,
			Progress: func(p Progress) {
				if p.Phase == "apply" && p.Partitions >= 2 {
					cancel() // interrupted after two partitions
				}
			}}
		victim := &victimOnce{Driver: d, at: "release"}
		res := f.open(t, Options{Drivers: sink.Registry{victim}}).Import(ctx, req)
		if !errors.Is(res.Err, ErrInterrupted) {
			t.Fatalf("%s (%v); want interrupted", res.Outcome, res.Err)
		}
		if victim.failed != 1 {
			t.Fatalf("%d releases failed as deadlocked, want 1", victim.failed)
		}
		got := f.rows(t, `SELECT o.state, (SELECT count(*) FROM `+f.tg.Ledger("partitions")+` WHERE lease_attempt IS NOT NULL),
			(SELECT outcome FROM `+f.tg.Ledger("attempts")+`) FROM `+f.tg.Ledger("operations")+` o`)
		if fmt.Sprint(got) != "[[failed 0 interrupted]]" {
			t.Fatalf("ledger after the interrupt (operation, leases held, attempt): %v", got)
		}
		res = f.open(t, Options{}).Import(context.Background(), Request{Path: req.Path, Mapping: req.Mapping, PartitionRows: 100})
		if res.Outcome != Resumed || res.RecoveredLease || res.Partitions.Skipped < 2 {
			t.Fatalf("rerun: %s (%v), recovered lease %v, partitions %+v; want resumed at once, no lease taken over", res.Outcome, res.Err, res.RecoveredLease, res.Partitions)
		}
		f.wantItems(t, 1000, 11)
	})
}
