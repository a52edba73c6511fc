package postgres

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// oneByOne is the driver without ApplyTogether: internal/migrate then
// applies each migration in a transaction of its own.
type oneByOne struct{ sink.Driver }

// TestMigrationsTogether: the ledger and checkpoints created in one
// transaction (Ledger.MigrateWith, ApplyTogether) are what one transaction per migration
// creates, table by table, column by column (type, NOT NULL, default),
// constraint by constraint and index by index, with every version recorded
// once; and a ledger that an earlier version left is brought up to date
// the same way.
func TestMigrationsTogether(t *testing.T) {
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	migrate := func(d sink.Driver, upTo sink.Driver) []string {
		t.Helper()
		schema := pgtest.Name()
		db, err := d.Open(ctx, dsn, sink.Settings{StateSchema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			db.DB.ExecContext(context.Background(), `DROP SCHEMA IF EXISTS `+q(schema)+` CASCADE`)
			db.DB.Close()
		})
		if upTo != nil {
			if err := ledger.New(db.DB, upTo, db.Prefix).Migrate(ctx); err != nil {
				t.Fatalf("migrate the earlier ledger: %v", err)
			}
		}
		if err := ledger.New(db.DB, d, db.Prefix).MigrateWith(ctx, "checkpoint"); err != nil {
			t.Fatalf("migrate the ledger and the checkpoints: %v", err)
		}
		return catalog(t, db, schema)
	}
	want := migrate(oneByOne{Driver{}}, nil)
	if len(want) < 50 {
		t.Fatalf("the catalog of the ledger has %d entries:\n%s", len(want), strings.Join(want, "\n"))
	}
	for _, c := range []struct {
		name string
		upTo sink.Driver
	}{
		{"fresh", nil},
		{"from version 7", drivertest.Earlier(Driver{}, 7)},
	} {
		if got := migrate(Driver{}, c.upTo); !slices.Equal(got, want) {
			t.Errorf("%s: together:\n%s\n\none by one:\n%s", c.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// catalog describes what schema holds: each relation, its columns with
// their types, NOT NULL and defaults, constraints and index definitions,
// and the recorded migrations, with the schema's name replaced by S.
func catalog(t *testing.T, db *sink.Database, schema string) []string {
	t.Helper()
	out := drivertest.Strings(t, db.DB, `
		SELECT 'rel ' || c.relkind::text || ' ' || c.relname || ' ' || c.relpersistence::text
		FROM pg_class c WHERE c.relnamespace = $1::regnamespace AND c.relkind <> 't'
		UNION ALL
		SELECT 'col ' || c.relname || ' ' || a.attnum || ' ' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) ||
			CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END || coalesce(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '')
		FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
		WHERE c.relnamespace = $1::regnamespace
		UNION ALL
		SELECT 'con ' || c.relname || ' ' || n.conname || ' ' || pg_get_constraintdef(n.oid)
		FROM pg_constraint n JOIN pg_class c ON c.oid = n.conrelid WHERE n.connamespace = $1::regnamespace
		UNION ALL
		SELECT 'idx ' || pg_get_indexdef(i.indexrelid)
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relnamespace = $1::regnamespace
		ORDER BY 1`, q(schema))
	out = append(out, drivertest.Strings(t, db.DB, `SELECT 'version ' || component || ' ' || version FROM `+db.Prefix+`migrations ORDER BY component, version`)...)
	for i := range out {
		out[i] = strings.ReplaceAll(out[i], schema, "S")
	}
	return out
}

// TestMigrationsLeaveCommitsWaiting: the transaction that migrates a fresh
// state schema commits without waiting for the log's flush, and only it:
// the connection it ran on, which the pool hands to the claim and the
// completion next, still commits as the server says.
func TestMigrationsLeaveCommitsWaiting(t *testing.T) {
	ctx := t.Context()
	schema := pgtest.Name()
	db, err := Driver{}.Open(ctx, pgtest.DSN(t), sink.Settings{StateSchema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.DB.ExecContext(context.Background(), `DROP SCHEMA IF EXISTS `+q(schema)+` CASCADE`)
		db.DB.Close()
	})
	db.DB.SetMaxOpenConns(1)
	var server string
	if err := db.DB.QueryRowContext(ctx, `SELECT reset_val FROM pg_settings WHERE name = 'synchronous_commit'`).Scan(&server); err != nil {
		t.Fatal(err)
	}
	if err := ledger.New(db.DB, Driver{}, db.Prefix).MigrateWith(ctx, "checkpoint"); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if got := drivertest.Strings(t, db.DB, `SELECT current_setting('synchronous_commit')`); len(got) != 1 || got[0] != server {
		t.Fatalf("after the migrations the connection's synchronous_commit is %v, want the server's %s", got, server)
	}
}
