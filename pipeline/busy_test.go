package pipeline

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink"
)

// jumpingClock is a target's driver whose database clock jumps ahead once,
// right after a claim: once armed, the next claim of a partition is judged
// by the real clock, and after it every statement that reads the clock
// (Now) by a clock an hour ahead, and the leases on the checkpoints'
// partitions have run out. To the run that uses it, every lease shorter
// than an hour then runs out between its claim and what it reads next.
type jumpingClock struct {
	sink.Driver
	mu    sync.Mutex
	armed bool
	ahead bool
}

func (d *jumpingClock) Now() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.Driver.Now()
	if d.ahead {
		now = fmt.Sprintf("(%s + %d)", now, time.Hour.Milliseconds())
	}
	return now
}

func (d *jumpingClock) Checkpoints(prefix string) checkpoint.Ops {
	return jumpingCheckpoints{d.Driver.Checkpoints(prefix), d}
}

// jumpingCheckpoints are the checkpoints' operations of a jumpingClock: an
// armed claim, once made, expires every live lease on the operation's
// partitions in the claim's transaction, as the clock's jump would.
type jumpingCheckpoints struct {
	checkpoint.Ops
	clock *jumpingClock
}

func (c jumpingCheckpoints) ClaimPartition(ctx context.Context, tx *sql.Tx, op checkpoint.Op, attempt string, leaseMs int64) (*checkpoint.Partition, string, error) {
	p, holder, err := c.Ops.ClaimPartition(ctx, tx, op, attempt, leaseMs)
	c.clock.mu.Lock()
	jump := c.clock.armed
	c.clock.armed = false
	c.clock.mu.Unlock()
	if err != nil || !jump {
		return p, holder, err
	}
	holders, err := c.Ops.Holders(ctx, tx, op)
	if err != nil {
		return nil, "", err
	}
	for _, h := range holders {
		if err := c.Ops.Expire(ctx, tx, op, h); err != nil {
			return nil, "", err
		}
	}
	c.clock.mu.Lock()
	c.clock.ahead = true
	c.clock.mu.Unlock()
	return p, holder, nil
}

// armOnWait is a log handler that arms clock the first time its run says
// it waits for partitions other attempts hold.
type armOnWait struct {
	clock *jumpingClock
	once  sync.Once
	armed chan struct{}
}

func (a *armOnWait) Enabled(context.Context, slog.Level) bool { return true }
func (a *armOnWait) WithAttrs([]slog.Attr) slog.Handler       { return a }
func (a *armOnWait) WithGroup(string) slog.Handler            { return a }
func (a *armOnWait) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "waiting for the partitions other attempts hold" {
		a.once.Do(func() {
			a.clock.mu.Lock()
			a.clock.armed = true
			a.clock.mu.Unlock()
			close(a.armed)
		})
	}
	return nil
}

// TestJustExpiredLeaseIsNotBusy: a run that has applied what it could and
// waits for a partition another live attempt holds sees that lease run out
// just after its claim found nothing, so that the partition looks
// claimable although this round claimed nothing. The holder is not inside
// a transaction, so the partition can be taken over: the decision
// table says the run takes it over, and it must, rather than exit busy.
// Then the holder, let go, commits nothing more (lease lost), and the
// target holds every row once. The clock jump makes the moment exact
// instead of a matter of timing.
func TestJustExpiredLeaseIsNotBusy(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := newFx(t, name)
		req := Request{Path: f.write(t, "items.csv", items(300, 1)), Mapping: Mapping{Table: "items"}, PartitionRows: 100, Lease: 10 * time.Minute}
		// Committed partition 0; holds partition 1's lease, out of any
		// transaction; partition 2 is free.
		h := f.holdPartition(t, req)

		d, err := Drivers().Lookup(f.dsn)
		if err != nil {
			t.Fatal(err)
		}
		clock := &jumpingClock{Driver: d}
		arm := &armOnWait{clock: clock, armed: make(chan struct{})}
		e := f.open(t, Options{Drivers: sink.Registry{clock}, Logger: slog.New(arm)})
		res := e.Import(context.Background(), req)
		select {
		case <-arm.armed:
		default:
			t.Fatalf("the run never waited for the held partition: %s %v", res.Outcome, res.Err)
		}
		if res.Outcome != Resumed || !res.RecoveredLease || res.Partitions.Committed != 2 || res.Partitions.Skipped != 1 {
			t.Fatalf("the run that met the just-expired lease: %s (%v), partitions %+v, recovered %v; want resumed, taking the lease over",
				res.Outcome, res.Err, res.Partitions, res.RecoveredLease)
		}
		if hr := h.finish(); hr.Outcome != Failed || !errors.Is(hr.Err, ledger.ErrLeaseLost) {
			t.Fatalf("the holder, let go: %s %v; want failed, lease lost", hr.Outcome, hr.Err)
		}
		if got := f.rows(t, `SELECT count(*), count(DISTINCT id), min(id), max(id) FROM items`); fmt.Sprint(got) != "[[300 300 1 300]]" {
			t.Fatalf("items (rows, distinct ids, min, max): %v", got)
		}
		if got := f.rows(t, `SELECT count(*), sum(done) FROM `+f.tg.Ledger("partitions")); fmt.Sprint(got) != "[[3 3]]" {
			t.Fatalf("partitions (total, done): %v", got)
		}
	})
}

// TestClaimStoppedReportsRecoveredLease: a run whose claim takes over the
// planning lease of a dead attempt reports that it recovered it even when
// the claim's transaction then does not commit (here a cancel as it
// recovers the lease); a rerun recovers it again and imports the file.
func TestClaimStoppedReportsRecoveredLease(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := newFx(t, name)
		req := Request{Path: f.write(t, "items.csv", items(3, 1))}
		f.killedHolding(t, helperJob{Path: req.Path, Failpoint: "after-claim"})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		e := f.open(t, Options{Logger: slog.New(&cancelAt{at: "recovered the planning lease of a dead attempt", cancel: cancel})})
		res := e.Import(ctx, req)
		if res.Outcome != Interrupted || !res.RecoveredLease || len(res.RecoveredFrom) != 1 {
			t.Fatalf("stopped in its claim: %s %v, recovered %v %v; want interrupted, one lease recovered",
				res.Outcome, res.Err, res.RecoveredLease, res.RecoveredFrom)
		}
		again := f.e.Import(context.Background(), req)
		if again.Outcome != Resumed || !again.RecoveredLease || again.Rows.Inserted != 3 ||
			len(again.RecoveredFrom) != 1 || again.RecoveredFrom[0] != res.RecoveredFrom[0] {
			t.Fatalf("rerun: %s %v, %+v, recovered %v; want resumed, 3 rows, the lease of %v recovered",
				again.Outcome, again.Err, again.Rows, again.RecoveredFrom, res.RecoveredFrom)
		}
	})
}

// cancelAt cancels a context when a log record with message at is
// written.
type cancelAt struct {
	at     string
	cancel context.CancelFunc
}

func (c *cancelAt) Enabled(context.Context, slog.Level) bool { return true }
func (c *cancelAt) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *cancelAt) WithGroup(string) slog.Handler            { return c }
func (c *cancelAt) Handle(_ context.Context, r slog.Record) error {
	if r.Message == c.at {
		c.cancel()
	}
	return nil
}

// TestWorkersRecoverLeasesAtOnce: a run of two workers takes over the
// partitions a killed run of two workers held (one on SQLite, whose
// single writer lets the killed run claim one at a time; on PostgreSQL
// and MariaDB both, usually one by each worker): the result says it
// recovered their leases, and the target holds every row once. Run with
// -race: the workers add to
// what the attempt shares (applying) under its lock (the race detector
// does not see two workers' claims unordered here: database/sql's pool
// orders them).
func TestWorkersRecoverLeasesAtOnce(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := newFx(t, name)
		req := Request{Path: f.write(t, "items.csv", items(400, 1)), Mapping: Mapping{Table: "items"}, PartitionRows: 100, Workers: 2}
		f.killedHolding(t, helperJob{Path: req.Path, PartitionRows: 100, Workers: 2, Failpoint: "inside-partition"})
		res := f.e.Import(context.Background(), req)
		if res.Err != nil || res.Outcome != Resumed || !res.RecoveredLease || len(res.RecoveredFrom) == 0 {
			t.Fatalf("the run after the kill: %s (%v), recovered %v; want resumed, the dead attempt's leases recovered", res.Outcome, res.Err, res.RecoveredFrom)
		}
		if got := f.rows(t, `SELECT count(*), count(DISTINCT id), min(id), max(id) FROM items`); fmt.Sprint(got) != "[[400 400 1 400]]" {
			t.Fatalf("items (rows, distinct ids, min, max): %v", got)
		}
	})
}

// TestRecoveredAttemptNamedOnce: a dead attempt that held the leases of
// two partitions is named once among the attempts a run recovered from,
// and both leases are counted, in the result, the ledger and the metrics.
func TestRecoveredAttemptNamedOnce(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := newFx(t, name)
		req := Request{Path: f.write(t, "items.csv", items(400, 1)), Mapping: Mapping{Table: "items"}, PartitionRows: 100, Workers: 1}
		f.killedHolding(t, helperJob{Path: req.Path, PartitionRows: 100, Workers: 1, Failpoint: "inside-partition"})
		parts := f.tg.Ledger("partitions")
		held := f.rows(t, `SELECT lease_attempt, lease_expires FROM `+parts+` WHERE done = 0 AND lease_attempt IS NOT NULL`)
		free := f.rows(t, `SELECT min(idx) FROM `+parts+` WHERE done = 0 AND lease_attempt IS NULL`)
		if len(held) != 1 || len(free) != 1 || free[0][0] == nil {
			t.Fatalf("after the kill: leased %v, first free partition %v; want one of each", held, free)
		}
		dead := fmt.Sprint(held[0][0])
		// The dead attempt held a second partition, as a run of two workers does.
		if _, err := f.tg.DB.Exec(f.tg.Rebind(`UPDATE `+parts+` SET lease_attempt = ?, lease_expires = ? WHERE idx = ?`), dead, held[0][1], free[0][0]); err != nil {
			t.Fatal(err)
		}
		res := f.e.Import(context.Background(), req)
		if res.Err != nil || res.Outcome != Resumed || !res.RecoveredLease || !slices.Equal(res.RecoveredFrom, []string{dead}) || res.RecoveredLeases != 2 {
			t.Fatalf("the run after the kill: %s (%v), recovered from %v, %d leases; want resumed, from %s once, 2 leases",
				res.Outcome, res.Err, res.RecoveredFrom, res.RecoveredLeases, dead)
		}
		if got := f.rows(t, `SELECT recovered_leases FROM `+f.tg.Ledger("attempts")+` WHERE attempt_id = ?`, res.AttemptID); fmt.Sprint(got) != "[[2]]" {
			t.Fatalf("the ledger's recovered_leases of the run: %v, want 2", got)
		}
		var m RunMetrics
		m.Add("", res)
		if n := m.RecoveredLeases[MetricKey{"", res.Table, ""}]; n != 2 {
			t.Fatalf("metrics: %d recovered leases, want 2", n)
		}
		if got := f.rows(t, `SELECT count(*), count(DISTINCT id) FROM items`); fmt.Sprint(got) != "[[400 400]]" {
			t.Fatalf("items (rows, distinct ids): %v", got)
		}
	})
}
