package mysql

import (
	"database/sql"
	"slices"
	"testing"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// TestRenewRetriesDeadlock: a renewal of an attempt's partition leases
// that InnoDB rolls back to break a deadlock is run again, and renews
// them once the other transaction ends. The deadlock is real: another
// transaction, made the heavier by the rows it wrote, locks partition 1;
// the renewal locks partition 0 and waits for 1; the other then reaches
// for 0, and InnoDB rolls back the renewal, which changed less. (The
// renewal failed with error 1213 before, and the heartbeat warned
// "renew partition leases: Error 1213 … Deadlock found" during large
// imports with several workers.)
func TestRenewRetriesDeadlock(t *testing.T) {
	st := leaseStore(t)
	ctx := t.Context()
	op := checkpoint.Op{Table: "orders", FileID: "f1"}
	for idx := range 2 {
		if _, err := st.DB.ExecContext(ctx, `INSERT INTO `+st.Prefix+`partitions
			(table_name, file_id, idx, first_row, row_count, rejected, byte_offset, byte_length, crc, lease_attempt, lease_expires)
			VALUES (?, ?, ?, ?, 10, 0, 0, 0, 0, 'a1', 1)`, op.Table, op.FileID, idx, 1+10*idx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.DB.ExecContext(ctx, `CREATE TABLE weight (n INT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}

	other, err := st.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback()
	for n := range 200 { // InnoDB rolls back the transaction that changed least
		if _, err := other.ExecContext(ctx, `INSERT INTO weight VALUES (?)`, n); err != nil {
			t.Fatal(err)
		}
	}
	lock := func(idx int) error {
		_, err := other.ExecContext(ctx, `UPDATE `+st.Prefix+`partitions SET rows_stale = rows_stale + 1
			WHERE table_name = ? AND file_id = ? AND idx = ?`, op.Table, op.FileID, idx)
		return err
	}
	if err := lock(1); err != nil {
		t.Fatal(err)
	}

	type renewed struct {
		n   int64
		err error
	}
	renewer, id := connection(t, st.DB)
	done := make(chan renewed, 1)
	go func() {
		n, err := st.Driver.Checkpoints(st.Prefix).Renew(ctx, renewer, op, "a1", 60_000)
		done <- renewed{n, err}
	}()
	// The renewal holds partition 0 and waits for 1.
	awaitLockWait(t, st.DB, id, "the renewal", done)
	deadlocks := func() int64 {
		var name string
		var n int64
		if err := st.DB.QueryRowContext(ctx, `SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'`).Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := deadlocks()
	if err := lock(0); err != nil {
		t.Fatalf("the heavier transaction was rolled back, not the renewal: %v", err)
	}
	if deadlocks() == before {
		t.Fatal("InnoDB found no deadlock")
	}
	if err := other.Commit(); err != nil {
		t.Fatal(err)
	}
	r := receive(t, done, "the renewal, after the other transaction committed,")
	if r.err != nil || r.n != 2 {
		t.Fatalf("renewal: %d renewed, %v; want 2 and no error", r.n, r.err)
	}
	var expires int64
	if err := st.DB.QueryRowContext(ctx, `SELECT min(lease_expires) FROM `+st.Prefix+`partitions`).Scan(&expires); err != nil {
		t.Fatal(err)
	}
	if expires <= 1 {
		t.Fatalf("leases expire at %d: not renewed", expires)
	}
}

// TestExpireMeetsAClaim: the expiry of a dead attempt's leases meets
// another attempt's claim of one of its partitions, whose lease ran out,
// without a deadlock. The claim has locked the partition's row and is
// about to give it its own lease; the expiry, looking for the dead
// attempt's rows, waits for that row; the claim then changes the row's
// holder. Found through the index of holders, the expiry had locked the
// dead attempt's entry there, which the claim's change needs: InnoDB
// rolled one back (the expiry, in four processes sharing a file with one
// killed: "expire leases: Error 1213 … Deadlock found").
func TestExpireMeetsAClaim(t *testing.T) {
	st, op, claim := claimingRunOut(t, "dead")
	ctx := t.Context()
	expirer, id := connection(t, st.DB)
	done := make(chan error, 1)
	go func() { done <- st.Driver.Checkpoints(st.Prefix).Expire(ctx, expirer, op, "dead") }()
	// The expiry waits for partition 3's row.
	awaitLockWait(t, st.DB, id, "the expiry", done)
	claimCommits(t, st, op, claim)
	if err := receive(t, done, "the expiry, after the claim committed,"); err != nil {
		t.Fatalf("the expiry: %v", err)
	}
	got := drivertest.Strings(t, st.DB, `SELECT concat(idx, ' ', lease_attempt, ' ', lease_expires) FROM `+st.Prefix+`partitions WHERE done = 0 ORDER BY idx`)
	if want := []string{"3 live 9000000000000", "5 dead 0"}; !slices.Equal(got, want) {
		t.Fatalf("partitions left: %q, want %q", got, want)
	}
}

// TestRenewMeetsAClaim: a renewal of an attempt's leases meets another
// attempt's claim of one of its partitions, whose lease ran out, without a
// deadlock, as the expiry does (TestExpireMeetsAClaim): the claim has
// locked the partition's row and is about to give it its own lease; the
// renewal waits for that row; the claim then changes the row's holder,
// and the renewal renews the attempt's other partition. Found through the
// index of holders, the renewal had locked the attempt's entry there,
// which the claim's change needs: InnoDB rolled back the claim, whether
// the renewal ran in a transaction or not. The renewal runs in one here,
// where renewLocked does not run it again, so that a deadlock shows
// whichever of the two InnoDB rolls back.
func TestRenewMeetsAClaim(t *testing.T) {
	st, op, claim := claimingRunOut(t, "a1")
	ctx := t.Context()
	renewer, id := connection(t, st.DB)
	renewal, err := renewer.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer renewal.Rollback()
	type renewed struct {
		n   int64
		err error
	}
	done := make(chan renewed, 1)
	go func() {
		n, err := st.Driver.Checkpoints(st.Prefix).Renew(ctx, renewal, op, "a1", 60_000)
		done <- renewed{n, err}
	}()
	// The renewal waits for partition 3's row.
	awaitLockWait(t, st.DB, id, "the renewal", done)
	claimCommits(t, st, op, claim)
	if r := receive(t, done, "the renewal, after the claim committed,"); r.err != nil || r.n != 1 {
		t.Fatalf("the renewal: %d renewed, %v; want 1 and no error", r.n, r.err)
	}
	if err := renewal.Commit(); err != nil {
		t.Fatal(err)
	}
	got := drivertest.Strings(t, st.DB, `SELECT concat(idx, ' ', lease_attempt, ' ',
		CASE lease_expires WHEN 1 THEN 'ran out' WHEN 9000000000000 THEN 'claimed' ELSE 'renewed' END)
		FROM `+st.Prefix+`partitions WHERE done = 0 ORDER BY idx`)
	if want := []string{"3 live claimed", "5 a1 renewed"}; !slices.Equal(got, want) {
		t.Fatalf("partitions left: %q, want %q", got, want)
	}
}

// claimingRunOut returns a store whose operation op has 60 partitions,
// 3 and 5 held by attempt holder, whose leases ran out, the others done;
// and another attempt's claim of partition 3, a transaction that has
// locked its row (rolled back when t ends). The table's statistics are
// fresh, so that the server plans as on a table of real imports.
func claimingRunOut(t *testing.T, holder string) (drivertest.Store, checkpoint.Op, *sql.Tx) {
	t.Helper()
	st := leaseStore(t)
	ctx := t.Context()
	op := checkpoint.Op{Table: "orders", FileID: "f1"}
	for idx := range 60 {
		lease, done := any(nil), 1
		if idx == 3 || idx == 5 {
			lease, done = holder, 0
		}
		if _, err := st.DB.ExecContext(ctx, `INSERT INTO `+st.Prefix+`partitions
			(table_name, file_id, idx, first_row, row_count, rejected, byte_offset, byte_length, crc, lease_attempt, lease_expires, done)
			VALUES (?, ?, ?, ?, 10, 0, 0, 0, 0, ?, 1, ?)`, op.Table, op.FileID, idx, 1+10*idx, lease, done); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.DB.ExecContext(ctx, `ANALYZE TABLE `+st.Prefix+`partitions`); err != nil {
		t.Fatal(err)
	}
	claim, err := st.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { claim.Rollback() })
	var idx int
	if err := claim.QueryRowContext(ctx, `SELECT idx FROM `+st.Prefix+`partitions
		WHERE table_name = ? AND file_id = ? AND idx = 3 FOR UPDATE`, op.Table, op.FileID).Scan(&idx); err != nil {
		t.Fatal(err)
	}
	return st, op, claim
}

// claimCommits gives partition 3 of op the claim's lease and commits it.
func claimCommits(t *testing.T, st drivertest.Store, op checkpoint.Op, claim *sql.Tx) {
	t.Helper()
	if _, err := claim.ExecContext(t.Context(), `UPDATE `+st.Prefix+`partitions SET lease_attempt = 'live', lease_expires = 9000000000000
		WHERE table_name = ? AND file_id = ? AND idx = 3`, op.Table, op.FileID); err != nil {
		t.Fatalf("the claim: %v", err)
	}
	if err := claim.Commit(); err != nil {
		t.Fatal(err)
	}
}

// leaseStore returns a store with the checkpoint tables, whose lock waits
// end after lockWaitBound, for the tests that stage a lock wait.
func leaseStore(t *testing.T) drivertest.Store {
	t.Helper()
	st := openStoreWith(t, sink.Settings{BusyTimeout: lockWaitBound})
	if err := checkpoint.New(st.DB, st.Driver, st.Prefix).Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return st
}
