package mysql

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/idemport/idemport/checkpoint"
)

// TestFenceRightAfterClaim: a partition fenced in the same millisecond as
// it was claimed is held. Both statements set its lease to the clock plus
// the lease, the same value then, so the fence's UPDATE changes nothing:
// MariaDB's protocol, by default, reports the rows an UPDATE changed, not
// the rows it found, and the fence, counting none, said the lease was lost
// to another attempt (an import failed so, once, 67 s into 10M rows). The
// millisecond is made certain by fixing the session's clock (SET
// timestamp), which NOW(6) reads.
func TestFenceRightAfterClaim(t *testing.T) {
	st := openStore(t)
	ctx := t.Context()
	cp := checkpoint.New(st.DB, st.Driver, st.Prefix)
	if err := cp.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	op := checkpoint.Op{Table: "orders", FileID: "f1"}
	if _, err := st.DB.ExecContext(ctx, `INSERT INTO `+st.Prefix+`partitions
		(table_name, file_id, idx, first_row, row_count, rejected, byte_offset, byte_length, crc)
		VALUES (?, ?, 0, 1, 10, 0, 0, 0, 0)`, op.Table, op.FileID); err != nil {
		t.Fatal(err)
	}
	conn, err := st.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SET timestamp = 1700000000.123456`); err != nil {
		t.Fatal(err)
	}
	inTx := func(f func(tx *sql.Tx) error) error {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := f(tx); err != nil {
			return err
		}
		return tx.Commit()
	}
	if err := inTx(func(tx *sql.Tx) error {
		p, err := cp.Claim(ctx, tx, op, "a1", 60_000)
		if err == nil && p == nil {
			err = errors.New("no partition to claim")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := inTx(func(tx *sql.Tx) error { return cp.Fence(ctx, tx, op, 0, "a1", 60_000) }); err != nil {
		t.Fatalf("fence of the partition just claimed, in the same millisecond: %v", err)
	}
	// Another attempt is still fenced out: the count is of rows found.
	if err := inTx(func(tx *sql.Tx) error { return cp.Fence(ctx, tx, op, 0, "a2", 60_000) }); !errors.Is(err, checkpoint.ErrNotHeld) {
		t.Fatalf("fence by an attempt that holds nothing: %v, want %v", err, checkpoint.ErrNotHeld)
	}
}

// TestUpdateCountsRowsFound: an UPDATE through the driver's connections
// counts the rows it found, as PostgreSQL and SQLite do, including those
// it left as they were: the shared statements (leases, heartbeats, the
// outbox's deliveries) read a count of 0 as "not held".
func TestUpdateCountsRowsFound(t *testing.T) {
	st := openStore(t)
	ctx := t.Context()
	if _, err := st.DB.ExecContext(ctx, `CREATE TABLE t (a INT PRIMARY KEY, b BIGINT)`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB.ExecContext(ctx, `INSERT INTO t VALUES (1, 5), (2, 6)`); err != nil {
		t.Fatal(err)
	}
	res, err := st.DB.ExecContext(ctx, `UPDATE t SET b = 5 WHERE a IN (1, 2)`)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 2 {
		t.Fatalf("UPDATE of two rows, one already so: %d rows (%v), want 2", n, err)
	}
}
