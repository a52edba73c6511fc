package postgres

import (
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/sink/drivertest"
)

// conforming is a pool of one connection of the test's schema whose
// session has standard_conforming_strings set to setting: on, the
// default, or off, as a server, a role or a database may set it, where a
// backslash in a plain '…' literal escapes.
func conforming(t *testing.T, setting string) (*sql.DB, string) {
	t.Helper()
	db, schema := pgtest.Open(t)
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(t.Context(), `SET standard_conforming_strings = `+setting); err != nil {
		t.Fatal(err)
	}
	return db, schema
}

// TestLiteralsWithEitherConformingStrings: the statements that carry
// values as literals rather than parameters mean the same values in a
// session with standard_conforming_strings on and in one with it off
// (a literal right under one setting only, such as '…' with its
// backslashes doubled, fails the other): ApplyTogether records components
// with backslashes and quotes as they are, and OpenPartition,
// HoldColumnsVersion and HoldColumnsDescribed find, lock and describe a
// table whose name has both.
func TestLiteralsWithEitherConformingStrings(t *testing.T) {
	for _, setting := range []string{"on", "off"} {
		t.Run(setting, func(t *testing.T) { literalsMeanTheirValues(t, setting) })
	}
}

func literalsMeanTheirValues(t *testing.T, setting string) {
	db, schema := conforming(t, setting)
	ctx := t.Context()
	components := []string{`back\slash`, `it's`, `both\'`, `end\`}
	err := Driver{}.ApplyTogether(ctx, db, q(schema)+".versions", components, []int{1, 1, 1, 1},
		[]string{"SELECT 1", "SELECT 2", "SELECT 3", "SELECT 4"}, time.Unix(0, 0))
	if err != nil {
		t.Errorf("apply migrations of components %q: %v", components, err)
	} else {
		got := drivertest.Strings(t, db, `SELECT component FROM `+q(schema)+`.versions ORDER BY component`)
		if want := slices.Sorted(slices.Values(components)); !slices.Equal(got, want) {
			t.Errorf("components recorded %q, want %q", got, want)
		}
	}

	table := `odd\name'q`
	if _, err := db.ExecContext(ctx, `CREATE TABLE `+q(table)+` (id bigint PRIMARY KEY, n bigint)`); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want1, err := Driver{}.ColumnsVersion(ctx, tx, table)
	tx.Rollback()
	if err != nil || want1 == "" {
		t.Fatalf("ColumnsVersion of %s: %q, %v", table, want1, err)
	}
	for _, lazy := range []bool{true, false} {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		v, tbl, err := Driver{}.HoldColumnsDescribed(ctx, conn, table, lazy)
		tx.Rollback()
		if err != nil {
			t.Fatalf("lazy %v: %v", lazy, err)
		}
		if v != want1 {
			t.Errorf("lazy %v: version of %s %q, want ColumnsVersion's %q", lazy, table, v, want1)
		}
		if tbl == nil || tbl.Column("n") == nil || len(tbl.Keys) != 1 {
			t.Errorf("lazy %v: %s described as %+v, want its columns id and n and its key", lazy, table, tbl)
		}
	}
}
