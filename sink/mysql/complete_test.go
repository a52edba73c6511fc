package mysql

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
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
	"github.com/idemport/idemport/sink/internal/stdsql"
)

// completeFx is an operation of attempt a1 with a plan of three
// partitions, in a fresh database reached through a messageProxy; its
// partitions are completed by Driver.CompletePartition (combined) or by
// the checkpoints' Complete and the ledger's Count.
type completeFx struct {
	t        *testing.T
	st       drivertest.Store
	cp       *checkpoint.Store
	l        *ledger.Ledger
	op       checkpoint.Op
	sent     func() int64
	combined bool
}

func newCompleteFx(t *testing.T, combined bool) *completeFx {
	t.Helper()
	dsn, sent := messageProxy(t, freshDSN(t))
	st := drivertest.OpenStore(t, Driver{}, dsn, sink.Settings{}, func(t *testing.T, db *sql.DB) []string { return nil })
	f := &completeFx{t: t, st: st, cp: checkpoint.New(st.DB, st.Driver, st.Prefix), l: ledger.New(st.DB, st.Driver, st.Prefix),
		op: checkpoint.Op{Table: "orders", FileID: "file-1"}, sent: sent, combined: combined}
	ctx := t.Context()
	if err := f.cp.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.l.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	parts := make([]checkpoint.Partition, 3)
	for i := range parts {
		parts[i].Partition = idemtype.Partition{Index: i, First: int64(i*10 + 1), Rows: 10}
	}
	id := ledger.Identity{Key: ledger.Key{Table: f.op.Table, FileID: f.op.FileID}, FileKey: 77, ContentDigest: "sha256:c",
		MappingDigest: "sha256:m", Mapping: "{}", Path: "/data/orders.csv", Size: 300}
	tx := f.begin()
	if err := f.cp.Save(ctx, tx, f.op, "a0", []byte(`{}`), 30, parts); err != nil {
		t.Fatal(err)
	}
	if err := f.l.Create(ctx, tx, id, ledger.Attempt{ID: "a1", Trigger: "cron", Host: "h", PID: 1, Path: id.Path}, 60_000); err != nil {
		t.Fatal(err)
	}
	// Their times zero, so that the state shows whether the counts
	// renewed them.
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

func (f *completeFx) begin() *sql.Tx {
	f.t.Helper()
	tx, err := f.st.DB.BeginTx(f.t.Context(), nil)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { tx.Rollback() })
	return tx
}

// claim claims the next partition for attempt in tx, and returns its
// index and the attempt it was taken over from.
func (f *completeFx) claim(tx *sql.Tx, attempt string) (int, string) {
	f.t.Helper()
	c, err := f.cp.Claim(f.t.Context(), tx, f.op, attempt, 60_000)
	if err != nil || c == nil {
		f.t.Fatalf("%s's claim: %+v, %v", attempt, c, err)
	}
	return c.Index, c.RecoveredFrom
}

// complete marks partition idx done by attempt with counts c and counts
// it, in tx; checkpoint.ErrNotHeld when it did not. It returns the
// messages it sent.
func (f *completeFx) complete(tx *sql.Tx, idx int, attempt string, c idemtype.Rows) (int64, error) {
	ctx := f.t.Context()
	before := f.sent()
	if !f.combined {
		if err := f.cp.Complete(ctx, tx, f.op, idx, attempt, c); err != nil {
			return f.sent() - before, err
		}
		err := f.l.Count(ctx, tx, ledger.Key{Table: f.op.Table, FileID: f.op.FileID}, attempt, c)
		return f.sent() - before, err
	}
	n, err := Driver{}.CompletePartition(ctx, tx, f.st.Prefix, f.op, idx, attempt, c)
	sent := f.sent() - before
	if err != nil {
		return sent, err
	}
	if n != 1 {
		return sent, fmt.Errorf("partition %d: marked %d: %w", idx, n, checkpoint.ErrNotHeld)
	}
	return sent, nil
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

// TestCompletePartitionInOneMessage: Driver.CompletePartition, one
// message, leaves the partitions, the attempt and the operation as the
// checkpoints' Complete and the ledger's Count, three, leave them,
// compared whole as text: the holder's partition done with its counts, its
// lease ended, the counts added to the attempt (a partition more, its
// heartbeat renewed) and the operation. An attempt that no longer holds
// the partition (its lease taken over while it stalled, or the partition
// already done) marks nothing and counts nothing: the state inside its
// transaction is the state before it.
func TestCompletePartitionInOneMessage(t *testing.T) {
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
		sent, err := f.complete(tx, 0, "a1", c0)
		if err != nil {
			t.Fatalf("combined %v: the holder's completion: %v", combined, err)
		}
		if want := map[bool]int64{false: 3, true: 1}[combined]; sent != want {
			t.Errorf("combined %v: the holder's completion sent %d messages, want %d", combined, sent, want)
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
			if _, err := f.complete(tx, idx, "a1", c1); !errors.Is(err, checkpoint.ErrNotHeld) {
				t.Fatalf("combined %v: a1's completion of partition %d it does not hold: %v, want ErrNotHeld", combined, idx, err)
			}
			if got := f.state(tx); !slices.Equal(got, before) {
				t.Fatalf("combined %v: a1's completion of partition %d it does not hold changed\n%s\nto\n%s", combined, idx,
					strings.Join(before, "\n"), strings.Join(got, "\n"))
			}
			tx.Rollback()
		}
		tx = f.begin()
		if _, err := f.complete(tx, 1, "a2", c1); err != nil {
			t.Fatalf("combined %v: the new holder's completion: %v", combined, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		states[i] = f.state(f.st.DB)
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
		t.Fatalf("CompletePartition left\n%s\nthe checkpoints' Complete and the ledger's Count\n%s", strings.Join(states[1], "\n"), strings.Join(states[0], "\n"))
	}
}

// TestClaimPartitionInOneMessage: the checkpoints' ClaimPartition, one
// message, claims what the shared statements, three, claim, and leaves
// the partitions as they leave them: the lowest partition free, its
// boundaries, the attempt it was taken over from once its lease ran out,
// and none when none is free.
func TestClaimPartitionInOneMessage(t *testing.T) {
	var states [2][]string
	var claims [2][]string
	for i, combined := range []bool{false, true} {
		f := newCompleteFx(t, combined)
		var ops checkpoint.Ops = stdsql.Checkpoints{S: Driver{}, Prefix: f.st.Prefix}
		if combined {
			ops = Driver{}.Checkpoints(f.st.Prefix)
		}
		claim := func(attempt string) {
			t.Helper()
			tx := f.begin()
			before := f.sent()
			p, holder, err := ops.ClaimPartition(t.Context(), tx, f.op, attempt, 60_000)
			sent := f.sent() - before
			if err != nil {
				t.Fatalf("combined %v: %s's claim: %v", combined, attempt, err)
			}
			want := int64(1) // the shared statements: 3, or 1 when none is free
			if !combined && p != nil {
				want = 3
			}
			if sent != want {
				t.Errorf("combined %v: %s's claim sent %d messages, want %d", combined, attempt, sent, want)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if p == nil {
				claims[i] = append(claims[i], attempt+": none")
				return
			}
			claims[i] = append(claims[i], fmt.Sprintf("%s: %d first %d rows %d lease %s from %q", attempt, p.Index, p.First, p.Rows, p.LeaseAttempt, holder))
		}
		claim("a1")
		claim("a1")
		if err := f.cp.Expire(t.Context(), f.st.DB, f.op, "a1"); err != nil {
			t.Fatal(err)
		}
		claim("a2")
		claim("a2")
		claim("a2")
		claim("a2")
		states[i] = f.state(f.st.DB)
	}
	want := []string{
		`a1: 0 first 1 rows 10 lease a1 from ""`,
		`a1: 1 first 11 rows 10 lease a1 from ""`,
		`a2: 0 first 1 rows 10 lease a2 from "a1"`,
		`a2: 1 first 11 rows 10 lease a2 from "a1"`,
		`a2: 2 first 21 rows 10 lease a2 from ""`,
		`a2: none`,
	}
	if !slices.Equal(claims[0], want) {
		t.Fatalf("the shared statements claimed\n%s\nwant\n%s", strings.Join(claims[0], "\n"), strings.Join(want, "\n"))
	}
	if !slices.Equal(claims[1], claims[0]) || !slices.Equal(states[1], states[0]) {
		t.Fatalf("ClaimPartition claimed\n%s\nand left\n%s\nthe shared statements\n%s\nand\n%s", strings.Join(claims[1], "\n"),
			strings.Join(states[1], "\n"), strings.Join(claims[0], "\n"), strings.Join(states[0], "\n"))
	}
}
