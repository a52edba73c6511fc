package pipeline

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink"
)

// commitWatch is a target's driver that records, in the transaction of
// each partition's done mark (at "partition") and in the one completing
// the operation (at "complete"), the transaction's synchronous_commit.
type commitWatch struct {
	sink.Driver
	mu   sync.Mutex
	seen map[string][]string
}

func (d *commitWatch) record(ctx context.Context, tx *sql.Tx, at string) error {
	var v string
	if err := tx.QueryRowContext(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&v); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seen[at] = append(d.seen[at], v)
	return nil
}

// watchCommits returns d recording the synchronous_commit of its
// partitions' and completions' transactions (the commitWatch, also
// returned), with d's ways and no other (withWays).
func watchCommits(t *testing.T, d sink.Driver) (sink.Driver, *commitWatch) {
	t.Helper()
	w := &commitWatch{Driver: d, seen: map[string][]string{}}
	ws := waysOf(d)
	if ws.completer != nil {
		ws.completer = partitionWatch{d: w, next: ws.completer}
	}
	return withWays(t, w, ws), w
}

// partitionWatch records, as commitWatchCheckpoints.Complete does, where
// the driver marks a partition done and counts it in one statement.
type partitionWatch struct {
	d    *commitWatch
	next partitionCompleter
}

func (p partitionWatch) CompletePartition(ctx context.Context, tx *sql.Tx, prefix string, op checkpoint.Op, idx int, attempt string, c idemtype.Rows) (int64, error) {
	if err := p.d.record(ctx, tx, "partition"); err != nil {
		return 0, err
	}
	return p.next.CompletePartition(ctx, tx, prefix, op, idx, attempt, c)
}

func (d *commitWatch) Checkpoints(prefix string) checkpoint.Ops {
	return commitWatchCheckpoints{Ops: d.Driver.Checkpoints(prefix), d: d}
}

func (d *commitWatch) Ledger(prefix string) ledger.Ops {
	return commitWatchLedger{Ops: d.Driver.Ledger(prefix), d: d}
}

type commitWatchCheckpoints struct {
	checkpoint.Ops
	d *commitWatch
}

func (o commitWatchCheckpoints) Complete(ctx context.Context, tx *sql.Tx, op checkpoint.Op, idx int, attempt string, c idemtype.Rows) (int64, error) {
	if err := o.d.record(ctx, tx, "partition"); err != nil {
		return 0, err
	}
	return o.Ops.Complete(ctx, tx, op, idx, attempt, c)
}

type commitWatchLedger struct {
	ledger.Ops
	d *commitWatch
}

func (o commitWatchLedger) CreateOperation(ctx context.Context, tx *sql.Tx, id ledger.Identity, attempt string, leaseMs int64) error {
	if err := o.d.record(ctx, tx, "claim"); err != nil {
		return err
	}
	return o.Ops.CreateOperation(ctx, tx, id, attempt, leaseMs)
}

func (o commitWatchLedger) StartOperation(ctx context.Context, tx *sql.Tx, k ledger.Key, attempt string, plan bool, leaseMs int64) (bool, error) {
	if err := o.d.record(ctx, tx, "claim"); err != nil {
		return false, err
	}
	return o.Ops.StartOperation(ctx, tx, k, attempt, plan, leaseMs)
}

func (o commitWatchLedger) MarkPlanned(ctx context.Context, tx *sql.Tx, k ledger.Key, attempt string) (bool, error) {
	if err := o.d.record(ctx, tx, "plan"); err != nil {
		return false, err
	}
	return o.Ops.MarkPlanned(ctx, tx, k, attempt)
}

func (o commitWatchLedger) RecordRefusal(ctx context.Context, tx *sql.Tx, k ledger.Key, attempt, report string, rows idemtype.Rows) (bool, error) {
	if err := o.d.record(ctx, tx, "refuse"); err != nil {
		return false, err
	}
	return o.Ops.RecordRefusal(ctx, tx, k, attempt, report, rows)
}

func (o commitWatchLedger) CompleteOperation(ctx context.Context, tx *sql.Tx, k ledger.Key, attempt, outcome string) (bool, error) {
	if err := o.d.record(ctx, tx, "complete"); err != nil {
		return false, err
	}
	return o.Ops.CompleteOperation(ctx, tx, k, attempt, outcome)
}

// TestOnlyPartitionsCommitLazily: on PostgreSQL the partition
// transactions, the claim's and the plan's commit without waiting for the
// log's flush, and the transaction that completes the operation (which
// makes them durable, and which the run reports and events follow) waits
// as the server's setting says, on the connections the partitions used
// too: with one worker and several, with --atomic (whose completion moves
// the rows) and --evolve, and for a claim that starts an attempt on an
// operation that exists (--reapply). A refusal, which the run reports
// with nothing after it, waits too.
func TestOnlyPartitionsCommitLazily(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.Postgres}, func(t *testing.T, name string) {
		cases := []struct {
			name string
			m    Mapping
			w    int
		}{
			{"key", Mapping{Key: []string{"id"}}, 1},
			{"ordinal, 2 workers", Mapping{}, 2},
			{"atomic evolve", Mapping{Key: []string{"id"}, Atomic: true, Evolve: EvolveWiden}, 1},
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				f := newFx(t, name)
				server := fmt.Sprint(f.rows(t, `SELECT current_setting('synchronous_commit')`)[0][0])
				d, err := Drivers().Lookup(f.dsn)
				if err != nil {
					t.Fatal(err)
				}
				watching, w := watchCommits(t, d)
				c.m.Table = fmt.Sprintf("items%d", i)
				req := Request{Path: f.write(t, "items.csv", items(300, 7)), Mapping: c.m, PartitionRows: 50, Workers: c.w}
				res := f.open(t, Options{Drivers: sink.Registry{watching}}).Import(context.Background(), req)
				wantImported(t, res, 300)
				if got := w.seen["partition"]; len(got) != 6 || slices.ContainsFunc(got, func(v string) bool { return v != "off" }) {
					t.Fatalf("partition transactions' synchronous_commit %v, want off in each of 6", got)
				}
				if got := fmt.Sprint(w.seen["complete"]); got != "["+server+"]" {
					t.Fatalf("the completing transaction's synchronous_commit %s, want the server's %s", got, server)
				}
				if got := fmt.Sprint(w.seen["claim"], w.seen["plan"]); got != "[off] [off]" {
					t.Fatalf("the claim's and the plan's synchronous_commit %s, want [off] [off]", got)
				}
				w.seen = map[string][]string{}
				req.Reapply = true
				if res := f.open(t, Options{Drivers: sink.Registry{watching}}).Import(context.Background(), req); res.Err != nil || res.Rows.Unchanged != 300 {
					t.Fatalf("--reapply: %s %+v %v", res.Outcome, res.Rows, res.Err)
				}
				if got := fmt.Sprint(w.seen["claim"], w.seen["plan"], w.seen["complete"]); got != "[off] [off] ["+server+"]" {
					t.Fatalf("--reapply: the claim's, the plan's and the completion's synchronous_commit %s, want [off] [off] [%s]", got, server)
				}
			})
		}
		t.Run("refused", func(t *testing.T) {
			f := newFx(t, name)
			server := fmt.Sprint(f.rows(t, `SELECT current_setting('synchronous_commit')`)[0][0])
			d, err := Drivers().Lookup(f.dsn)
			if err != nil {
				t.Fatal(err)
			}
			watching, w := watchCommits(t, d)
			req := Request{Path: f.write(t, "bad.csv", items(300, 7)+"301,1,bad,extra\n"), Mapping: Mapping{Table: "bad", Key: []string{"id"}}, PartitionRows: 50}
			res := f.open(t, Options{Drivers: sink.Registry{watching}}).Import(context.Background(), req)
			if res.Outcome != Refused {
				t.Fatalf("outcome %s (%v), want refused", res.Outcome, res.Err)
			}
			if got := fmt.Sprint(w.seen["claim"], w.seen["refuse"], len(w.seen["plan"])); got != "[off] ["+server+"] 0" {
				t.Fatalf("the claim's and the refusal's synchronous_commit, and plans %s, want [off] [%s] 0", got, server)
			}
		})
	})
}
