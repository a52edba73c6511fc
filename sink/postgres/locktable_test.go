package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/sink/drivertest"
)

// TestLockTableIsTheSchemas holds LockTable's lock on the name "items" in
// one session, whose search path resolves it to a table of its schema,
// and takes it from others, each waiting at most 300 ms: a session whose
// search path resolves "items" to its own schema (where no such table is
// yet) takes it at once, as do the ensure lock of the first and other
// purposes; a session of the first's schema, and one naming the first's
// table qualified, wait and fail locked. Advisory locks are the whole
// database's: keyed by the bare name, imports into tables of one name in
// different schemas waited for each other's schema changes and table
// creation (a test importing into its schema's "items" made busy every
// other test importing into an "items" of its own).
func TestLockTableIsTheSchemas(t *testing.T) {
	ctx := t.Context()
	a, schemaA := pgtest.Open(t)
	b, schemaB := pgtest.Open(t)
	if _, err := a.ExecContext(ctx, `CREATE TABLE items (id int)`); err != nil {
		t.Fatal(err)
	}
	holder, err := a.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if err := (Driver{}).LockTable(ctx, holder, "evolve", "items"); err != nil {
		t.Fatal(err)
	}
	take := func(db *sql.DB, what, table string) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `SET LOCAL lock_timeout = '300ms'`); err != nil {
			t.Fatal(err)
		}
		return Driver{}.LockTable(context.WithoutCancel(ctx), tx, what, table)
	}
	for _, c := range []struct {
		name        string
		db          *sql.DB
		what, table string
		locked      bool
	}{
		{"another schema's items, not created yet", b, "evolve", "items", false},
		{"another schema's items, qualified", a, "evolve", schemaB + ".items", false},
		{"the same table, ensured", a, "idemport ensure", "items", false},
		{"the same table", a, "evolve", "items", true},
		{"the same table, qualified, from another schema", b, "evolve", schemaA + ".items", true},
	} {
		err := take(c.db, c.what, c.table)
		if got := (Driver{}).Locked(err); got != c.locked || (!c.locked && err != nil) {
			t.Errorf("%s: %v; want locked %v", c.name, err, c.locked)
		}
	}
	// The other schema's table created, its name resolves to it still.
	if _, err := b.ExecContext(ctx, `CREATE TABLE items (id int)`); err != nil {
		t.Fatal(err)
	}
	if err := take(b, "evolve", "items"); err != nil {
		t.Errorf("another schema's items, created: %v; want the lock at once", err)
	}
}

// TestHoldColumnsQuotedName: a table name with double quotes around a dot
// names one table for HoldColumns, HoldColumnsVersion and ColumnsVersion,
// read as every PostgreSQL statement reads it (splitTable: a dot inside
// quotes is part of the name): each holds or reads that table, as another
// session's ACCESS EXCLUSIVE lock on it, not available while they hold
// it, shows.
func TestHoldColumnsQuotedName(t *testing.T) {
	ctx := t.Context()
	db, _ := pgtest.Open(t)
	schema := pgtest.Name()
	name := `"` + schema + `"."a.ted"` // schema idemport_test_…, table a.ted
	if _, err := db.ExecContext(ctx, `CREATE SCHEMA `+q(schema)+`; CREATE TABLE `+quoteTable(name)+` (id bigint PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.ExecContext(context.Background(), `DROP SCHEMA `+q(schema)+` CASCADE`) })
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	drivertest.RunHoldColumnsNamed(t, conn, Driver{}, []string{name}, func() error {
		other, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Rollback()
		if _, err := other.ExecContext(ctx, `LOCK TABLE `+q(schema)+`."a.ted" IN ACCESS EXCLUSIVE MODE NOWAIT`); !lockNotAvailable(err) {
			return fmt.Errorf("the ALTER TABLE lock: %v, want lock_not_available", err)
		}
		return nil
	})
}
