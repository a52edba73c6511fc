package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
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

// TestCompletePartitionInOneStatement: Driver.CompletePartition leaves the
// partitions, the attempt and the operation as the checkpoints' Complete
// and the ledger's Count leave them, and marks and counts nothing for an
// attempt that no longer holds the partition (drivertest.RunCompletePartition).
func TestCompletePartitionInOneStatement(t *testing.T) {
	drivertest.RunCompletePartition(t, func(t *testing.T) (drivertest.Store, func() int64) { return openStore(t), nil }, Driver{}.CompletePartition)
}
