package drivertest

import (
	"context"
	"database/sql"
	"testing"
)

// ColumnsHolder is a driver that holds a table's columns inside a
// partition transaction and reads their version (sink/postgres and
// sink/mysql).
type ColumnsHolder interface {
	HoldColumns(ctx context.Context, tx *sql.Tx, table string) error
	HoldColumnsVersion(ctx context.Context, conn *sql.Conn, table string) (string, error)
	ColumnsVersion(ctx context.Context, tx *sql.Tx, table string) (string, error)
}

// RunHoldColumnsNamed checks that each of names, spellings of one table
// (a quoted part holding a dot, say), names that one table for d's
// HoldColumns, HoldColumnsVersion and ColumnsVersion, in transactions on
// conn: HoldColumnsVersion's version is ColumnsVersion's, not empty, and
// while each holds the table, held, another session's attempt to change
// it, fails; held returns nil when it did, or what it got instead.
func RunHoldColumnsNamed(t *testing.T, conn *sql.Conn, d ColumnsHolder, names []string, held func() error) {
	t.Helper()
	ctx := t.Context()
	for _, name := range names {
		for _, hold := range []string{"HoldColumns", "HoldColumnsVersion"} {
			tx, err := conn.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if hold == "HoldColumns" {
				err = d.HoldColumns(ctx, tx, name)
			} else {
				var v, want string
				if v, err = d.HoldColumnsVersion(ctx, conn, name); err == nil {
					want, err = d.ColumnsVersion(ctx, tx, name)
					if err == nil && (v == "" || v != want) {
						t.Errorf("%s of %s: version %q, want ColumnsVersion's %q", hold, name, v, want)
					}
				}
			}
			if err != nil {
				t.Errorf("%s of %s: %v", hold, name, err)
			} else if err := held(); err != nil {
				t.Errorf("another session's change while %s holds %s: %v", hold, name, err)
			}
			tx.Rollback()
		}
	}
}
