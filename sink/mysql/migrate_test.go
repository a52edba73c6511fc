package mysql

import (
	"slices"
	"strings"
	"testing"

	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// oneByOne is the driver without ApplyTogether: internal/migrate then
// applies each migration on its own.
type oneByOne struct{ sink.Driver }

// TestMigrationsTogether: the ledger and checkpoints made by one message
// of statements (Ledger.MigrateWith, ApplyTogether) are what one
// migration at a time makes, table by table (SHOW CREATE TABLE), with
// every version recorded once; and a ledger that an earlier version left
// is brought up to date the same way.
func TestMigrationsTogether(t *testing.T) {
	ctx := t.Context()
	migrate := func(d sink.Driver, upTo sink.Driver) []string {
		t.Helper()
		db, err := d.Open(ctx, freshDSN(t), sink.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.DB.Close()
		if upTo != nil {
			if err := ledger.New(db.DB, upTo, db.Prefix).Migrate(ctx); err != nil {
				t.Fatalf("migrate the earlier ledger: %v", err)
			}
		}
		if err := ledger.New(db.DB, d, db.Prefix).MigrateWith(ctx, "checkpoint"); err != nil {
			t.Fatalf("migrate the ledger and the checkpoints: %v", err)
		}
		var out []string
		for _, table := range drivertest.Strings(t, db.DB, `SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY 1`) {
			var name, def string
			if err := db.DB.QueryRowContext(ctx, `SHOW CREATE TABLE `+q(table)).Scan(&name, &def); err != nil {
				t.Fatal(err)
			}
			out = append(out, def)
		}
		return append(out, drivertest.Strings(t, db.DB, `SELECT 'version ' || component || ' ' || version FROM `+db.Prefix+`migrations ORDER BY component, version`)...)
	}
	want := migrate(oneByOne{Driver{}}, nil)
	if len(want) < 15 {
		t.Fatalf("the ledger has %d tables and versions:\n%s", len(want), strings.Join(want, "\n"))
	}
	for _, c := range []struct {
		name string
		upTo sink.Driver
	}{
		{"fresh", nil},
		{"from version 1", drivertest.Earlier(Driver{}, 1)},
	} {
		if got := migrate(Driver{}, c.upTo); !slices.Equal(got, want) {
			t.Errorf("%s: together:\n%s\n\none by one:\n%s", c.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestFreshMigrationsInOneMessage: the migrations of a fresh state, the
// ledger's and the checkpoints', cost one look-up of the versions table
// and one message of statements, not five round trips per migration: on
// a loaded server each round trip waits for the server's thread to be
// scheduled, and the import's first row waits for them all.
func TestFreshMigrationsInOneMessage(t *testing.T) {
	ctx := t.Context()
	dsn, sent := messageProxy(t, freshDSN(t))
	db, err := Driver{}.Open(ctx, dsn, sink.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.DB.Close()
	db.DB.SetMaxOpenConns(1) // no new connection's session set-up counted
	before := sent()
	if err := ledger.New(db.DB, Driver{}, db.Prefix).MigrateWith(ctx, "checkpoint"); err != nil {
		t.Fatal(err)
	}
	if n := sent() - before; n > 2 {
		t.Errorf("migrating a fresh state sent %d messages, want 2 (the versions table's look-up, the migrations)", n)
	}
	var n int
	if err := db.DB.QueryRowContext(ctx, `SELECT count(*) FROM `+db.Prefix+`migrations`).Scan(&n); err != nil || n < 4 {
		t.Fatalf("%d versions recorded, %v", n, err)
	}
}
