package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/idemport/idemport/ledger"
)

// TestMissingDatabase checks an Engine opened read-only where no database
// exists yet (Options.AllowMissing), as plan and --dry-run open one: it
// creates nothing, plans a file as one never imported with the driver's
// limits (the case-folded duplicate column that import refuses), finds no
// events or ledger numbers, and refuses what needs a database.
func TestMissingDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "never.db")
	if _, err := Open(ctx, db, Options{ReadOnly: true}); !errors.Is(err, ErrNoDatabase) {
		t.Fatalf("read-only open of a missing database: %v, want ErrNoDatabase", err)
	}
	e, err := Open(ctx, db, Options{ReadOnly: true, AllowMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.DB() != nil {
		t.Error("DB() is not nil for a database that does not exist")
	}

	good := filepath.Join(dir, "orders.csv")
	if err := os.WriteFile(good, []byte("id,price\n1,2.5\n2,3.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := PlanFile(ctx, e, Request{Path: good})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Decision != ledger.Create.String() || rep.Would != WouldImport || rep.Rows != 2 || rep.Error != "" {
		t.Errorf("plan: decision %s, would %s, %d rows, error %q; want create, %s, 2 rows, none", rep.Decision, rep.Would, rep.Rows, rep.Error, WouldImport)
	}

	// SQLite folds the case of column names: import refuses the file, and
	// so must its plan, database or not.
	folded := filepath.Join(dir, "folded.csv")
	if err := os.WriteFile(folded, []byte("id,price,PRICE\n1,2.5,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep, err = PlanFile(ctx, e, Request{Path: folded}); err != nil {
		t.Fatal(err)
	}
	if rep.Error == "" || rep.Would != WouldRefuse {
		t.Errorf("plan of columns price and PRICE: would %s, error %q; want %s with the driver's limit", rep.Would, rep.Error, WouldRefuse)
	}

	if lm, err := e.LedgerMetrics(ctx); err != nil || lm.Operations != nil {
		t.Errorf("LedgerMetrics: %+v, %v; want none", lm, err)
	}
	if res := e.Import(ctx, Request{Path: good}); !errors.Is(res.Err, ErrNoDatabase) {
		t.Errorf("Import: %v, want ErrNoDatabase", res.Err)
	}
	if _, err := e.ImportAll(ctx, []Request{{Path: good}}, BatchOptions{}); !errors.Is(err, ErrNoDatabase) {
		t.Errorf("ImportAll: %v, want ErrNoDatabase", err)
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: %v; want it not created", db, err)
	}
}
