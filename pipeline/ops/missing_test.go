package ops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline"
)

// TestMissingDatabase checks an Operator opened read-only where no
// database exists yet: without AllowMissing the open fails with
// ErrNoDatabase; with it the Operator has no database, finds no
// operations, refuses what needs one, and creates nothing.
func TestMissingDatabase(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "never.db")
	if _, err := Open(ctx, db, pipeline.Options{ReadOnly: true}); !errors.Is(err, pipeline.ErrNoDatabase) {
		t.Fatalf("read-only open of a missing database: %v, want ErrNoDatabase", err)
	}
	o, err := Open(ctx, db, pipeline.Options{ReadOnly: true, AllowMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if o.Exists() {
		t.Error("Exists() = true for a database that does not exist")
	}
	if ops, err := o.Status(ctx, ledger.Filter{}); err != nil || len(ops) != 0 {
		t.Errorf("Status: %v, %v; want nothing", ops, err)
	}
	if _, _, err := o.History(ctx, "orders.csv", ""); !errors.Is(err, pipeline.ErrNoDatabase) {
		t.Errorf("History: %v, want ErrNoDatabase", err)
	}
	if ds, err := o.Outbox(ctx, ""); err != nil || len(ds) != 0 {
		t.Errorf("Outbox: %v, %v; want nothing", ds, err)
	}
	if _, err := o.Deliver(ctx, time.Second); !errors.Is(err, pipeline.ErrNoDatabase) {
		t.Errorf("Deliver: %v, want ErrNoDatabase", err)
	}
	if _, err := o.Undo(ctx, UndoRequest{FileOrID: "orders.csv"}); !errors.Is(err, pipeline.ErrNoDatabase) {
		t.Errorf("Undo: %v, want ErrNoDatabase", err)
	}
	if _, err := o.Replay(ctx, "fixed.csv"); !errors.Is(err, pipeline.ErrNoDatabase) {
		t.Errorf("Replay: %v, want ErrNoDatabase", err)
	}
	if _, err := o.GC(ctx, 0, true); !errors.Is(err, pipeline.ErrNoDatabase) {
		t.Errorf("GC: %v, want ErrNoDatabase", err)
	}
	if _, err := o.Verify(ctx, pipeline.Request{Path: "orders.csv"}); !errors.Is(err, pipeline.ErrNoDatabase) {
		t.Errorf("Verify: %v, want ErrNoDatabase", err)
	}
	if _, _, err := o.Recorded(ctx, "orders.csv", "", ""); !errors.Is(err, pipeline.ErrNoDatabase) {
		t.Errorf("Recorded: %v, want ErrNoDatabase", err)
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: %v; want it not created", db, err)
	}
}

// TestUsageError checks that a DSN no driver serves is a
// *pipeline.UsageError, as pipeline.Open makes it, which the command
// turns into its usage exit status.
func TestUsageError(t *testing.T) {
	_, err := Open(context.Background(), "unknown://nowhere/db", pipeline.Options{ReadOnly: true})
	var ue *pipeline.UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("open of a DSN no driver serves: %v, want a *pipeline.UsageError", err)
	}
}
