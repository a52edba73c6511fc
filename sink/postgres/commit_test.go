package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/sink/drivertest"
)

// TestCommitLazilyOnlyThatTransaction: CommitLazily turns
// synchronous_commit off for its transaction alone; the next transaction
// on the same connection (the pool may give it to the completion of an
// operation) commits as the session did before.
func TestCommitLazilyOnlyThatTransaction(t *testing.T) {
	db, _ := pgtest.Open(t)
	ctx := t.Context()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	setting := func() string {
		var v string
		if err := conn.QueryRowContext(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := setting()
	if before == "off" {
		t.Fatalf("the session's synchronous_commit is already off")
	}
	for _, end := range []string{"commit", "rollback"} {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := (Driver{}).CommitLazily(ctx, tx); err != nil {
			t.Fatal(err)
		}
		var in string
		if err := tx.QueryRowContext(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&in); err != nil {
			t.Fatal(err)
		}
		if in != "off" {
			t.Fatalf("inside the transaction: synchronous_commit %s, want off", in)
		}
		if end == "commit" {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		if after := setting(); after != before {
			t.Fatalf("after the transaction's %s: synchronous_commit %s, want the session's %s", end, after, before)
		}
	}
}

// TestOpenPartitionInOneMessage: OpenPartition does what CommitLazily,
// HoldColumns and ColumnsVersion do, in that order: synchronous_commit
// off for its transaction alone, the table's lock held until the
// transaction ends, and the version of the columns as ColumnsVersion reads
// it, read after the lock was granted, so that an ALTER TABLE that
// committed while the lock waited for it shows. A missing table is an
// error, as HoldColumns's.
func TestOpenPartitionInOneMessage(t *testing.T) {
	testHoldInOneMessage(t, Driver{}.OpenPartition, true)
}

// TestHoldColumnsVersionInOneMessage: HoldColumnsVersion does what
// HoldColumns and ColumnsVersion do, as OpenPartition does, and leaves
// synchronous_commit as the session has it.
func TestHoldColumnsVersionInOneMessage(t *testing.T) {
	testHoldInOneMessage(t, Driver{}.HoldColumnsVersion, false)
}

// TestHoldColumnsDescribedInOneMessage: HoldColumnsDescribed does what
// OpenPartition (lazy) and HoldColumnsVersion do, and describes the table
// after the lock, in the same message: the column an ALTER TABLE widened
// while the lock waited is described as it is now. The table it
// describes is Describe's, column by column and key by key, for tables
// of every kind of column and key TestDescribe has, unqualified and
// schema-qualified.
func TestHoldColumnsDescribedInOneMessage(t *testing.T) {
	for _, lazy := range []bool{true, false} {
		testHoldInOneMessage(t, func(ctx context.Context, conn *sql.Conn, table string) (string, error) {
			v, tbl, err := Driver{}.HoldColumnsDescribed(ctx, conn, table, lazy)
			if err == nil {
				if c := tbl.Column("n"); c == nil || c.SQLType != "numeric" {
					err = fmt.Errorf("lazy %v: column n described as %+v after the ALTER TABLE, want numeric", lazy, c)
				}
			}
			return v, err
		}, lazy)
	}
	f := drivertest.Open(t, open(t))
	sales := pgtest.Schema(t, f.Env.DB)
	for _, name := range []string{"t", sales + ".t"} {
		f.Exec(`CREATE DOMAIN ` + name + `_positive AS bigint CHECK (VALUE > 0)`)
		f.Exec(`CREATE TABLE ` + name + ` (
			id integer PRIMARY KEY, serial_id bigserial, ident bigint GENERATED ALWAYS AS IDENTITY,
			small smallint NOT NULL DEFAULT 0, flag boolean NOT NULL, at timestamp, atz timestamptz,
			doc json, docb jsonb, x real, y double precision, z numeric(10,2), zz numeric,
			s varchar(5), c char(3), txt text, day date, u uuid, p ` + name + `_positive,
			gen bigint GENERATED ALWAYS AS (id * 2) STORED, a integer, b text, "Mixed ""q""" text)`)
		f.Exec(`CREATE UNIQUE INDEX ON ` + name + ` (at, x)`)
		f.Exec(`CREATE UNIQUE INDEX ON ` + name + ` (a) INCLUDE (b)`)
		f.Exec(`CREATE UNIQUE INDEX ON ` + name + ` (b) WHERE b IS NOT NULL`)
		f.Exec(`ALTER TABLE ` + name + ` DROP COLUMN txt`)
		tx, err := f.Conn.BeginTx(f.Ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		v, got, err := Driver{}.HoldColumnsDescribed(f.Ctx, f.Conn, name, false)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Driver{}.Describe(f.Ctx, tx, name)
		if err != nil {
			t.Fatal(err)
		}
		wantV, err := Driver{}.ColumnsVersion(f.Ctx, tx, name)
		if err != nil {
			t.Fatal(err)
		}
		tx.Rollback()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: described\n%+v\nwant Describe's\n%+v", name, got, want)
		}
		if v != wantV {
			t.Errorf("%s: version %q, want %q", name, v, wantV)
		}
	}
}

// testHoldInOneMessage checks open, OpenPartition (lazy) or
// HoldColumnsVersion.
func testHoldInOneMessage(t *testing.T, open func(context.Context, *sql.Conn, string) (string, error), lazy bool) {
	db, _ := pgtest.Open(t)
	ctx := t.Context()
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (id bigint PRIMARY KEY, n bigint)`); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var pid int
	if err := conn.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	setting := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) string {
		t.Helper()
		var v string
		if err := q.QueryRowContext(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := setting(conn)
	if before == "off" {
		t.Fatalf("the session's synchronous_commit is already off")
	}
	// alter, on another connection, widens n and holds its lock until
	// commit is called.
	alter := func() (commit func()) {
		t.Helper()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `ALTER TABLE t ALTER COLUMN n TYPE numeric`); err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := tx.Commit(); err != nil {
				t.Error(err)
			}
		}
	}
	for _, end := range []string{"commit", "rollback"} {
		commitAlter := alter()
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		// On failure: the test's schema is dropped at its end, once the
		// lock is let go.
		defer tx.Rollback()
		type opened struct {
			v   string
			err error
		}
		done := make(chan opened, 1)
		go func() {
			v, err := open(ctx, conn, "t")
			done <- opened{v, err}
		}()
		awaitLockWait(t, db, pid, done)
		commitAlter()
		o := <-done
		v, err := o.v, o.err
		if err != nil {
			t.Fatal(err)
		}
		want, err := Driver{}.ColumnsVersion(ctx, tx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if v == "" || v != want {
			t.Fatalf("version %q, want ColumnsVersion's %q after the ALTER TABLE", v, want)
		}
		if in, want := setting(tx), map[bool]string{true: "off", false: before}[lazy]; in != want {
			t.Fatalf("inside the transaction: synchronous_commit %s, want %s", in, want)
		}
		other, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = other.ExecContext(ctx, `LOCK TABLE t IN ACCESS EXCLUSIVE MODE NOWAIT`)
		other.Rollback()
		if !lockNotAvailable(err) {
			t.Fatalf("another transaction's ALTER TABLE lock while the columns are held: %v, want lock_not_available", err)
		}
		if end == "commit" {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		if after := setting(conn); after != before {
			t.Fatalf("after the transaction's %s: synchronous_commit %s, want the session's %s", end, after, before)
		}
		if _, err := db.ExecContext(ctx, `ALTER TABLE t ALTER COLUMN n TYPE bigint`); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := open(ctx, conn, "missing"); err == nil {
		t.Fatal("a missing table: no error")
	}
}

// awaitLockWait returns once the session of server process pid waits for
// a lock (pg_stat_activity), failing t when done receives first (what it
// ran ended without waiting) or after a minute.
func awaitLockWait[T any](t *testing.T, db *sql.DB, pid int, done <-chan T) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		select {
		case r := <-done:
			t.Fatalf("session %d ended (%+v) before waiting for a lock", pid, r)
		case <-time.After(5 * time.Millisecond):
		}
		var waiting bool
		if err := db.QueryRow(`SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock')`, pid).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %d did not wait for a lock in a minute", pid)
		}
	}
}
