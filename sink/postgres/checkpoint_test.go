package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink/drivertest"
)

// claimFx is a migrated checkpoint store of a fresh state schema, whose
// operation has the partitions of a plan of n partitions.
type claimFx struct {
	t  *testing.T
	st drivertest.Store
	cp *checkpoint.Store
	op checkpoint.Op
}

func newClaimFx(t *testing.T, n int) *claimFx {
	t.Helper()
	st := openStore(t)
	f := &claimFx{t: t, st: st, cp: checkpoint.New(st.DB, st.Driver, st.Prefix), op: checkpoint.Op{Table: "orders", FileID: "file-1"}}
	if err := f.cp.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	parts := make([]checkpoint.Partition, n)
	for i := range parts {
		parts[i].Partition = idemtype.Partition{Index: i, First: int64(i*10 + 1), Rows: 10}
	}
	tx := f.begin()
	if err := f.cp.Save(t.Context(), tx, f.op, "a0", []byte(`{}`), int64(n*10), parts); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return f
}

// begin begins a transaction in which no statement may wait for a lock
// another transaction holds: lock_timeout fails one that waits a second.
func (f *claimFx) begin() *sql.Tx {
	f.t.Helper()
	tx, err := f.st.DB.BeginTx(f.t.Context(), nil)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { tx.Rollback() })
	if _, err := tx.ExecContext(f.t.Context(), `SET LOCAL lock_timeout = '1s'`); err != nil {
		f.t.Fatal(err)
	}
	return tx
}

// claim claims the next partition for attempt in tx, as a partition
// transaction claims the next one: -1 when there is none. A claim that
// waits for another transaction's lock fails the test, as does one still
// running after 30 s whatever it waits for.
func (f *claimFx) claim(tx *sql.Tx, attempt string) (int, string) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.t.Context(), 30*time.Second)
	defer cancel()
	c, err := f.cp.Claim(ctx, tx, f.op, attempt, 60_000)
	if lockNotAvailable(err) {
		f.t.Fatalf("%s's claim waited for a partition another transaction holds: %v", attempt, err)
	}
	if err != nil {
		f.t.Fatalf("%s's claim: %v", attempt, err)
	}
	if c == nil {
		return -1, ""
	}
	return c.Index, c.RecoveredFrom
}

// leases lists each partition as "index holder", "-" for none.
func (f *claimFx) leases() []string {
	f.t.Helper()
	parts, err := f.cp.Partitions(f.t.Context(), f.st.DB, f.op)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, p := range parts {
		out = append(out, fmt.Sprintf("%d %s", p.Index, cmp.Or(p.LeaseAttempt, "-")))
	}
	return out
}

// TestClaimSkipsHeldPartitions: a claim passes over the partition another
// transaction claimed and has not committed (a worker claims its next
// partition inside the transaction of the one it writes, which lasts as
// long as the partition's rows take), rather than waiting for that
// transaction to end; and when that partition is the only one left, the
// claim finds none, without an error and without waiting. Once that
// transaction commits, its claim holds; rolled back, the partition is free
// again. A claim that waits fails on lock_timeout (a wait here is the bug,
// not slowness), whatever the machine's load.
func TestClaimSkipsHeldPartitions(t *testing.T) {
	for _, end := range []string{"commit", "rollback"} {
		t.Run(end, func(t *testing.T) {
			f := newClaimFx(t, 2)
			a := f.begin()
			if idx, from := f.claim(a, "a1"); idx != 0 || from != "" {
				t.Fatalf("a1 claimed %d from %q, want 0", idx, from)
			}
			b := f.begin()
			if idx, from := f.claim(b, "b1"); idx != 1 || from != "" {
				t.Fatalf("b1 claimed %d from %q while a1's transaction holds 0, want 1", idx, from)
			}
			if err := b.Commit(); err != nil {
				t.Fatal(err)
			}
			c := f.begin()
			if idx, _ := f.claim(c, "c1"); idx != -1 {
				t.Fatalf("c1 claimed %d while a1's transaction holds 0 and b1 leases 1, want none", idx)
			}
			if err := c.Commit(); err != nil {
				t.Fatal(err)
			}
			want := []string{"0 a1", "1 b1"}
			if end == "commit" {
				if err := a.Commit(); err != nil {
					t.Fatal(err)
				}
			} else {
				if err := a.Rollback(); err != nil {
					t.Fatal(err)
				}
				want[0] = "0 -"
			}
			if got := f.leases(); !slices.Equal(got, want) {
				t.Fatalf("after a1's %s: leases %q, want %q", end, got, want)
			}
			d := f.begin()
			wantIdx := map[string]int{"commit": -1, "rollback": 0}[end]
			if idx, from := f.claim(d, "d1"); idx != wantIdx || from != "" {
				t.Fatalf("d1 claimed %d from %q after a1's %s, want %d", idx, from, end, wantIdx)
			}
		})
	}
}

// completeFx is an operation with a plan of three partitions, created by
// attempt a1, in a fresh state schema; its partitions are completed by
// Driver.CompletePartition (combined) or, as the other drivers do, by the
// checkpoints' Complete and the ledger's Count.
type completeFx struct {
	*claimFx
	l        *ledger.Ledger
	combined bool
}

func newCompleteFx(t *testing.T, combined bool) *completeFx {
	t.Helper()
	f := &completeFx{claimFx: newClaimFx(t, 3), combined: combined}
	f.l = ledger.New(f.st.DB, f.st.Driver, f.st.Prefix)
	ctx := t.Context()
	if err := f.l.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	id := ledger.Identity{Key: ledger.Key{Table: f.op.Table, FileID: f.op.FileID}, FileKey: 77, ContentDigest: "sha256:c",
		MappingDigest: "sha256:m", Mapping: "{}", Path: "/data/orders.csv", Size: 300}
	tx := f.begin()
	if err := f.l.Create(ctx, tx, id, ledger.Attempt{ID: "a1", Trigger: "cron", Host: "h", PID: 1, Path: id.Path}, 60_000); err != nil {
		t.Fatal(err)
	}
	// Their times zero, so that the state shows whether the counts
	// renewed them.
	for _, s := range []string{`UPDATE ` + f.st.Prefix + `attempts SET heartbeat_at = 0`, `UPDATE ` + f.st.Prefix + `operations SET updated_at = 0`} {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return f
}

// complete marks partition idx done by attempt with counts c and counts
// it, in tx; checkpoint.ErrNotHeld when it did not.
func (f *completeFx) complete(tx *sql.Tx, idx int, attempt string, c idemtype.Rows) error {
	ctx := f.t.Context()
	if !f.combined {
		if err := f.cp.Complete(ctx, tx, f.op, idx, attempt, c); err != nil {
			return err
		}
		return f.l.Count(ctx, tx, ledger.Key{Table: f.op.Table, FileID: f.op.FileID}, attempt, c)
	}
	n, err := Driver{}.CompletePartition(ctx, tx, f.st.Prefix, f.op, idx, attempt, c)
	if err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("partition %d: marked %d: %w", idx, n, checkpoint.ErrNotHeld)
	}
	return nil
}

// state is the partitions, attempts and operation as q sees them, as text.
func (f *completeFx) state(q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) []string {
	f.t.Helper()
	p := f.st.Prefix
	rows, err := q.QueryContext(f.t.Context(), `SELECT 'partition ' || idx || ': done ' || done || ' by ' || coalesce(done_by, '-')
			|| ' at ' || (done_at IS NOT NULL) || ', lease ' || coalesce(lease_attempt, '-') || ' ' || (lease_expires IS NOT NULL)
			|| ', rows ' || concat_ws(' ', rows_inserted, rows_updated, rows_unchanged, rows_stale, rejected)
			FROM `+p+`partitions
		UNION ALL SELECT 'attempt ' || attempt_id || ': rows ' || concat_ws(' ', rows_read, rows_inserted, rows_updated, rows_unchanged,
			rows_stale, rows_superseded, rows_rejected) || ', partitions ' || partitions_committed || ', heartbeat ' || (heartbeat_at > 0)
			FROM `+p+`attempts
		UNION ALL SELECT 'operation ' || file_id || ': rows ' || concat_ws(' ', rows_read, rows_inserted, rows_updated, rows_unchanged,
			rows_stale, rows_superseded, rows_rejected) || ', updated ' || (updated_at > 0)
			FROM `+p+`operations
		ORDER BY 1`)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// TestCompletePartitionInOneStatement: Driver.CompletePartition leaves the
// partitions, the attempt and the operation as the checkpoints' Complete
// and the ledger's Count leave them, compared whole as text: the holder's
// partition done with its counts, its lease ended, the counts added to the
// attempt (a partition more, its heartbeat renewed) and the operation. An
// attempt that no longer holds the partition (its lease taken over while
// it stalled, or the partition already done) marks nothing and counts
// nothing: the state inside its transaction is the state before it.
func TestCompletePartitionInOneStatement(t *testing.T) {
	c0 := idemtype.Rows{Read: 10, Inserted: 4, Updated: 2, Unchanged: 1, Stale: 1, Superseded: 1, Rejected: 1}
	c1 := idemtype.Rows{Read: 10, Inserted: 3_000_000_000, Unchanged: 7, Superseded: 2, Rejected: 1}
	var states [2][]string
	for i, combined := range []bool{false, true} {
		f := newCompleteFx(t, combined)
		a := f.begin()
		f.claim(a, "a1") // 0
		f.claim(a, "a1") // 1
		if err := a.Commit(); err != nil {
			t.Fatal(err)
		}
		tx := f.begin()
		if err := f.complete(tx, 0, "a1", c0); err != nil {
			t.Fatalf("combined %v: the holder's completion: %v", combined, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		// a1 stalls past its lease on partition 1, and a2 takes it over.
		if err := f.cp.Expire(t.Context(), f.st.DB, f.op, "a1"); err != nil {
			t.Fatal(err)
		}
		b := f.begin()
		if idx, from := f.claim(b, "a2"); idx != 1 || from != "a1" {
			t.Fatalf("a2 claimed %d from %q, want 1 from a1", idx, from)
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		before := f.state(f.st.DB)
		for _, idx := range []int{1, 0} { // taken over; done
			tx := f.begin()
			if err := f.complete(tx, idx, "a1", c1); !errors.Is(err, checkpoint.ErrNotHeld) {
				t.Fatalf("combined %v: a1's completion of partition %d it does not hold: %v, want ErrNotHeld", combined, idx, err)
			}
			if got := f.state(tx); !slices.Equal(got, before) {
				t.Fatalf("combined %v: a1's completion of partition %d it does not hold changed\n%s\nto\n%s", combined, idx,
					strings.Join(before, "\n"), strings.Join(got, "\n"))
			}
			tx.Rollback()
		}
		tx = f.begin()
		if err := f.complete(tx, 1, "a2", c1); err != nil {
			t.Fatalf("combined %v: the new holder's completion: %v", combined, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		states[i] = f.state(f.st.DB)
	}
	want := []string{
		"attempt a1: rows 10 4 2 1 1 1 1, partitions 1, heartbeat true",
		"operation file-1: rows 20 3000000004 2 8 1 3 2, updated true",
		"partition 0: done 1 by a1 at true, lease - false, rows 4 2 1 1 1",
		"partition 1: done 1 by a2 at true, lease - false, rows 3000000000 0 7 0 1",
		"partition 2: done 0 by - at false, lease - false, rows 0 0 0 0 0",
	}
	if !slices.Equal(states[0], want) {
		t.Fatalf("the checkpoints' Complete and the ledger's Count left\n%s\nwant\n%s", strings.Join(states[0], "\n"), strings.Join(want, "\n"))
	}
	if !slices.Equal(states[1], states[0]) {
		t.Fatalf("CompletePartition left\n%s\nthe checkpoints' Complete and the ledger's Count\n%s", strings.Join(states[1], "\n"), strings.Join(states[0], "\n"))
	}
}
