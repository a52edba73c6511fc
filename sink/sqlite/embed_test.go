//go:build cgo

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/internal/stdsql"
)

// renamed is a driver made as a new one is: the shared operations
// embedded in its own spelling, which is SQLite's but for two methods of
// its own: QuoteTable places every table under the name "t_"+name, and
// DropTable refuses.
type renamed struct {
	stdsql.Operations[renamed]
	spelling
}

// spelling lends renamed SQLite's methods one level below the shared
// operations, as a new driver's own methods would be.
type spelling struct{ Driver }

var _ sink.Driver = renamed{}

var errRefused = errors.New("refused")

func (renamed) QuoteTable(name string) string { return q("t_" + name) }

func (renamed) DropTable(context.Context, *sql.Tx, string) error { return errRefused }

// TestEmbeddedOperationsTakeTheDriversSpelling: an operation a driver
// declares replaces the embedded one, and the embedded ones are spelled
// by the driver's methods, its own included.
func TestEmbeddedOperationsTakeTheDriversSpelling(t *testing.T) {
	ctx := t.Context()
	db, err := Driver{}.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "t.db"), sink.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.DB.Close()
	if _, err := db.DB.ExecContext(ctx, `CREATE TABLE t_x (`+q(sink.FileColumn)+` INTEGER)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DB.ExecContext(ctx, `INSERT INTO t_x VALUES (7), (7), (8)`); err != nil {
		t.Fatal(err)
	}
	if n, err := (renamed{}).CountFile(ctx, db.DB, "x", 7); err != nil || n != 2 {
		t.Errorf("CountFile of x, file 7: %d, %v; want 2 rows of t_x", n, err)
	}
	tx, err := db.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := (renamed{}).DropTable(ctx, tx, "x"); !errors.Is(err, errRefused) {
		t.Errorf("DropTable: %v, want the driver's own (%v)", err, errRefused)
	}
}
