package pipeline

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestImportPlansWhileHashing imports in-process (run it with -race): the
// plan made on the shared read is used, and a rerun with --rehash is a
// duplicate that stops the speculative plan.
func TestImportPlansWhileHashing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "orders.csv")
	testkit.Orders(t, path, 5000, 9)
	ctx := context.Background()
	e, err := Open(ctx, filepath.Join(dir, "t.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// Identifying a new file starts the plan pass on the hash's read, and
	// its plan is the one planning uses.
	r := &run{e: e, req: Request{Path: path, PartitionRows: 1000}, sharesRead: true}
	r.defaults()
	r.res = &Result{}
	if err := r.identify(ctx); err != nil {
		t.Fatal(err)
	}
	in, _, err := r.planInputs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, plan, spill, err := r.spec.result(in, nil)
	spill.close()
	if err != nil || f == nil || plan.Rows != 5000 || len(plan.Partitions) != 5 {
		t.Fatalf("speculative plan: %v %v", plan, err)
	}
	res := e.Import(ctx, Request{Path: path, PartitionRows: 1000})
	if res.Err != nil || res.Outcome != Imported || res.Rows.Inserted != 5000 {
		t.Fatalf("import: %+v %v", res, res.Err)
	}
	again := e.Import(ctx, Request{Path: path, PartitionRows: 1000, Rehash: true})
	if again.Err != nil || again.Outcome != Duplicate || again.QuickCheck {
		t.Fatalf("rehashed rerun: %+v %v", again, again.Err)
	}
}
