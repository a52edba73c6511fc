package pipeline

import (
	"context"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestVerifyDecidesAsImport checks that verify finds a file in order
// exactly where an import of it would be a duplicate, and otherwise says
// why, from the same decision: a dropped table (an import would apply it
// again), other content (a conflict), an import that did not complete.
func TestVerifyDecidesAsImport(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		f := newFx(t, name)
		ctx := context.Background()
		verify := func(req Request) []string {
			t.Helper()
			rep, err := f.e.Verify(ctx, req)
			if err != nil {
				t.Fatalf("verify %s: %v", req.Path, err)
			}
			return rep.Differences
		}
		done := Request{Path: f.write(t, "items.csv", items(3, 1)), FileID: "day1"}
		f.wantOutcome(t, f.e.Import(ctx, done), Imported)
		if d := verify(done); len(d) != 0 {
			t.Fatalf("a completed import: %v", d)
		}
		reapply := done
		reapply.Reapply = true // what an import would do with it changes nothing
		if d := verify(reapply); len(d) != 0 {
			t.Fatalf("a completed import, asked with --reapply: %v", d)
		}
		f.write(t, "other.csv", items(3, 2))
		if d := verify(Request{Path: f.dir + "/other.csv", FileID: "day1", Mapping: Mapping{Table: "items"}}); len(d) != 1 || !strings.Contains(d[0], "content differs") {
			t.Fatalf("other content: %v", d)
		}
		f.exec(t, `DROP TABLE items`)
		if d := verify(done); len(d) != 1 || !strings.Contains(d[0], "no longer exists") {
			t.Fatalf("a dropped table: %v", d)
		}
		failed := Request{Path: f.write(t, "more.csv", items(4, 1)), PartitionRows: 2}
		f.wantOutcome(t, f.failing(t, "after-partition-commit:1:error").Import(ctx, failed), Failed)
		if d := verify(failed); len(d) != 1 || !strings.Contains(d[0], "the import is failed, not completed") {
			t.Fatalf("a failed import: %v", d)
		}
	})
}
