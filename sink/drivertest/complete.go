package drivertest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
)

// PartitionCompleter is a driver's completion of a partition in one
// message (CompletePartition of sink/postgres and sink/mysql): it marks
// partition idx of op done by attempt with the counters r, as
// checkpoint.Ops.Complete does, and counts it, as ledger.Ops.Count does,
// on the tables prefix places, and returns how many partitions it marked.
type PartitionCompleter func(ctx context.Context, tx *sql.Tx, prefix string, op checkpoint.Op, idx int, attempt string, r idemtype.Rows) (int64, error)

// CompleteFx is an operation of attempt a1 with a plan of three
// partitions of 10 rows, in a fresh store, the attempt's heartbeat and the
// operation's updated_at zero (so that State shows whether a count renewed
// them). Its partitions are completed (Complete) by a PartitionCompleter,
// or without one by the checkpoints' Complete and the ledger's Count.
type CompleteFx struct {
	T  *testing.T
	St Store
	Cp *checkpoint.Store
	L  *ledger.Ledger
	Op checkpoint.Op
	// Sent counts the messages the store's connections have sent so far,
	// or is nil where the store does not count them.
	Sent func() int64

	combined PartitionCompleter
}

// NewCompleteFx makes a CompleteFx on the store open returns, with the
// count of its messages (nil: not counted); combined completes its
// partitions, or nil for Complete and Count.
func NewCompleteFx(t *testing.T, open func(t *testing.T) (Store, func() int64), combined PartitionCompleter) *CompleteFx {
	t.Helper()
	st, sent := open(t)
	f := &CompleteFx{T: t, St: st, Cp: checkpoint.New(st.DB, st.Driver, st.Prefix), L: ledger.New(st.DB, st.Driver, st.Prefix),
		Op: checkpoint.Op{Table: "orders", FileID: "file-1"}, Sent: sent, combined: combined}
	ctx := t.Context()
	if err := f.Cp.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.L.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	parts := make([]checkpoint.Partition, 3)
	for i := range parts {
		parts[i].Partition = idemtype.Partition{Index: i, First: int64(i*10 + 1), Rows: 10}
	}
	id := ledger.Identity{Key: ledger.Key{Table: f.Op.Table, FileID: f.Op.FileID}, FileKey: 77, ContentDigest: "sha256:c",
		MappingDigest: "sha256:m", Mapping: "{}", Path: "/data/orders.csv", Size: 300}
	tx := f.Begin()
	if err := f.Cp.Save(ctx, tx, f.Op, "a0", []byte(`{}`), 30, parts); err != nil {
		t.Fatal(err)
	}
	if err := f.L.Create(ctx, tx, id, ledger.Attempt{ID: "a1", Trigger: "cron", Host: "h", PID: 1, Path: id.Path}, 60_000); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`UPDATE ` + st.Prefix + `attempts SET heartbeat_at = 0`, `UPDATE ` + st.Prefix + `operations SET updated_at = 0`} {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return f
}

// Begin begins a transaction, rolled back when the test ends unless it
// ended before.
func (f *CompleteFx) Begin() *sql.Tx {
	f.T.Helper()
	tx, err := f.St.DB.BeginTx(f.T.Context(), nil)
	if err != nil {
		f.T.Fatal(err)
	}
	f.T.Cleanup(func() { tx.Rollback() })
	return tx
}

// Claim claims the next partition for attempt in tx, and returns its
// index and the attempt it was taken over from; none free fails the test.
func (f *CompleteFx) Claim(tx *sql.Tx, attempt string) (int, string) {
	f.T.Helper()
	c, err := f.Cp.Claim(f.T.Context(), tx, f.Op, attempt, 60_000)
	if err != nil || c == nil {
		f.T.Fatalf("%s's claim: %+v, %v", attempt, c, err)
	}
	return c.Index, c.RecoveredFrom
}

// Complete marks partition idx done by attempt with counts c and counts
// it, in tx; checkpoint.ErrNotHeld when it did not. It returns the
// messages it sent (0 where they are not counted).
func (f *CompleteFx) Complete(tx *sql.Tx, idx int, attempt string, c idemtype.Rows) (int64, error) {
	ctx := f.T.Context()
	sent := func() int64 { return 0 }
	if f.Sent != nil {
		sent = f.Sent
	}
	before := sent()
	if f.combined == nil {
		if err := f.Cp.Complete(ctx, tx, f.Op, idx, attempt, c); err != nil {
			return sent() - before, err
		}
		err := f.L.Count(ctx, tx, ledger.Key{Table: f.Op.Table, FileID: f.Op.FileID}, attempt, c)
		return sent() - before, err
	}
	n, err := f.combined(ctx, tx, f.St.Prefix, f.Op, idx, attempt, c)
	if err == nil && n != 1 {
		err = fmt.Errorf("partition %d: marked %d: %w", idx, n, checkpoint.ErrNotHeld)
	}
	return sent() - before, err
}

// State is the partitions, attempts and operation as q sees them, as
// text, the same on every database (a condition as 0 or 1).
func (f *CompleteFx) State(q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) []string {
	f.T.Helper()
	p := f.St.Prefix
	yes := func(cond string) string { return `(CASE WHEN ` + cond + ` THEN '1' ELSE '0' END)` }
	rows, err := q.QueryContext(f.T.Context(), `SELECT concat('partition ', idx, ': done ', done, ' by ', coalesce(done_by, '-'),
			' at ', `+yes(`done_at IS NOT NULL`)+`, ', lease ', coalesce(lease_attempt, '-'), ' ', `+yes(`lease_expires IS NOT NULL`)+`,
			', rows ', concat_ws(' ', rows_inserted, rows_updated, rows_unchanged, rows_stale, rejected))
			FROM `+p+`partitions
		UNION ALL SELECT concat('attempt ', attempt_id, ': rows ', concat_ws(' ', rows_read, rows_inserted, rows_updated, rows_unchanged,
			rows_stale, rows_superseded, rows_rejected), ', partitions ', partitions_committed, ', heartbeat ', `+yes(`heartbeat_at > 0`)+`)
			FROM `+p+`attempts
		UNION ALL SELECT concat('operation ', file_id, ': rows ', concat_ws(' ', rows_read, rows_inserted, rows_updated, rows_unchanged,
			rows_stale, rows_superseded, rows_rejected), ', updated ', `+yes(`updated_at > 0`)+`)
			FROM `+p+`operations
		ORDER BY 1`)
	if err != nil {
		f.T.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			f.T.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		f.T.Fatal(err)
	}
	return out
}

// RunCompletePartition checks combined, a driver's completion in one
// message, on stores open returns: it leaves the partitions, the attempt
// and the operation as the checkpoints' Complete and the ledger's Count
// leave them, compared whole as text: the holder's partition done with
// its counts, its lease ended, the counts added to the attempt (a
// partition more, its heartbeat renewed) and the operation. An attempt
// that no longer holds the partition (its lease taken over while it
// stalled, or the partition already done) marks nothing and counts
// nothing: the state inside its transaction is the state before it.
// Where open counts the messages, the holder's completion is one message,
// and Complete and Count's three.
func RunCompletePartition(t *testing.T, open func(t *testing.T) (Store, func() int64), combined PartitionCompleter) {
	c0 := idemtype.Rows{Read: 10, Inserted: 4, Updated: 2, Unchanged: 1, Stale: 1, Superseded: 1, Rejected: 1}
	c1 := idemtype.Rows{Read: 10, Inserted: 3_000_000_000, Unchanged: 7, Superseded: 2, Rejected: 1}
	var states [2][]string
	for i, completer := range []PartitionCompleter{nil, combined} {
		how := map[bool]string{true: "Complete and Count", false: "the driver's completion"}[completer == nil]
		f := NewCompleteFx(t, open, completer)
		a := f.Begin()
		f.Claim(a, "a1") // 0
		f.Claim(a, "a1") // 1
		if err := a.Commit(); err != nil {
			t.Fatal(err)
		}
		tx := f.Begin()
		sent, err := f.Complete(tx, 0, "a1", c0)
		if err != nil {
			t.Fatalf("%s: the holder's completion: %v", how, err)
		}
		if want := map[bool]int64{true: 3, false: 1}[completer == nil]; f.Sent != nil && sent != want {
			t.Errorf("%s: the holder's completion sent %d messages, want %d", how, sent, want)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		// a1 stalls past its lease on partition 1, and a2 takes it over.
		if err := f.Cp.Expire(t.Context(), f.St.DB, f.Op, "a1"); err != nil {
			t.Fatal(err)
		}
		b := f.Begin()
		if idx, from := f.Claim(b, "a2"); idx != 1 || from != "a1" {
			t.Fatalf("a2 claimed %d from %q, want 1 from a1", idx, from)
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		before := f.State(f.St.DB)
		for _, idx := range []int{1, 0} { // taken over; done
			tx := f.Begin()
			if _, err := f.Complete(tx, idx, "a1", c1); !errors.Is(err, checkpoint.ErrNotHeld) {
				t.Fatalf("%s: a1's completion of partition %d it does not hold: %v, want ErrNotHeld", how, idx, err)
			}
			if got := f.State(tx); !slices.Equal(got, before) {
				t.Fatalf("%s: a1's completion of partition %d it does not hold changed\n%s\nto\n%s", how, idx,
					strings.Join(before, "\n"), strings.Join(got, "\n"))
			}
			tx.Rollback()
		}
		tx = f.Begin()
		if _, err := f.Complete(tx, 1, "a2", c1); err != nil {
			t.Fatalf("%s: the new holder's completion: %v", how, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		states[i] = f.State(f.St.DB)
	}
	want := []string{
		"attempt a1: rows 10 4 2 1 1 1 1, partitions 1, heartbeat 1",
		"operation file-1: rows 20 3000000004 2 8 1 3 2, updated 1",
		"partition 0: done 1 by a1 at 1, lease - 0, rows 4 2 1 1 1",
		"partition 1: done 1 by a2 at 1, lease - 0, rows 3000000000 0 7 0 1",
		"partition 2: done 0 by - at 0, lease - 0, rows 0 0 0 0 0",
	}
	if !slices.Equal(states[0], want) {
		t.Fatalf("the checkpoints' Complete and the ledger's Count left\n%s\nwant\n%s", strings.Join(states[0], "\n"), strings.Join(want, "\n"))
	}
	if !slices.Equal(states[1], states[0]) {
		t.Fatalf("the driver's completion left\n%s\nthe checkpoints' Complete and the ledger's Count\n%s", strings.Join(states[1], "\n"), strings.Join(states[0], "\n"))
	}
}
