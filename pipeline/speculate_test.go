package pipeline

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/reader"
)

// TestImportPlansWhileHashing imports in-process (run it with -race): the
// plan made while the file is hashed (on the hash's read for CSV; by its
// own reads for Parquet) is used, and a rerun with --rehash is a duplicate
// that stops the speculative plan.
func TestImportPlansWhileHashing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csv := filepath.Join(dir, "orders.csv")
	testkit.Orders(t, csv, 5000, 9)
	ids, prices := make([]int64, 5000), make([]float64, 5000)
	for i := range ids {
		ids[i], prices[i] = int64(i)+1, float64(i)/4
	}
	pq := (&fx{dir: dir}).writeParquet(t, "prices.parquet", ids, prices) // row groups of 1024 rows
	for _, c := range []struct {
		path  string
		parts int
	}{{csv, 5}, {pq, 5}} {
		t.Run(filepath.Ext(c.path)[1:], func(t *testing.T) {
			ctx := context.Background()
			e, err := Open(ctx, filepath.Join(t.TempDir(), "t.db"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			// Identifying a new file starts the plan pass, and its plan is
			// the one planning uses.
			r := newRun(e, Request{Path: c.path, PartitionRows: 1000})
			r.sharesRead = true
			r.defaults()
			ident, spec, err := r.identifier().identify(ctx)
			if err != nil {
				t.Fatal(err)
			}
			r.identified(ident)
			in, _, err := r.planner().planInputs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			f, plan, spill, err := spec.result(in, nil)
			spill.close()
			if err != nil || f == nil || plan.Rows != 5000 || len(plan.Partitions) != c.parts {
				t.Fatalf("speculative plan: %v %v", plan, err)
			}
			res := e.Import(ctx, Request{Path: c.path, PartitionRows: 1000})
			if res.Err != nil || res.Outcome != Imported || res.Rows.Inserted != 5000 {
				t.Fatalf("import: %+v %v", res, res.Err)
			}
			again := e.Import(ctx, Request{Path: c.path, PartitionRows: 1000, Rehash: true})
			if again.Err != nil || again.Outcome != Duplicate || again.QuickCheck {
				t.Fatalf("rehashed rerun: %+v %v", again, again.Err)
			}
		})
	}
}

// TestSpeculationEndsBy checks the pace an overlap asks of a plan pass
// (speculation.endsBy): a pass that read a quarter of a file in its first
// second ends three seconds later, not one; one that read all of it has
// ended; one with no partition finished has no pace and is not counted
// on.
func TestSpeculationEndsBy(t *testing.T) {
	const size = 400 << 20
	cut := func(offset, length int64) reader.Cut {
		var c reader.Cut
		c.Partition.Offset, c.Partition.Length = offset, length
		return c
	}
	now := time.Now()
	sp := &speculation{began: now.Add(-time.Second), cut: make(chan struct{}, 1)}
	if sp.endsBy(now.Add(time.Hour), size) {
		t.Error("a pass with no partition finished ends within the hour, want not known")
	}
	sp.add(cut(100, size/8-100))
	sp.add(cut(size/8, size/8))
	for _, c := range []struct {
		by   time.Duration
		want bool
	}{{time.Second, false}, {2900 * time.Millisecond, false}, {3200 * time.Millisecond, true}, {time.Minute, true}} {
		if got := sp.endsBy(now.Add(c.by), size); got != c.want {
			t.Errorf("a quarter read in 1 s: ends within %v: %v, want %v", c.by, got, c.want)
		}
	}
	sp.add(cut(size/4, size*3/4))
	if !sp.endsBy(time.Now(), size) {
		t.Error("a pass that read the whole file does not end by now")
	}
}
