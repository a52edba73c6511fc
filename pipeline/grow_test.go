package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// growFileRows is the rows of the file of TestGrowingPartitions: three
// growing partitions (100000, 100000, then 100001 of at most 200000), or
// four of at most 100000.
const growFileRows = 3*100000 + 1

// TestGrowingPartitions: an import with a key and no PartitionRows into
// a database that groups commits (SQLite) plans partitions that grow
// (growRows); dry run (PlanFile) predicts the very partitions the import
// stores. A given PartitionRows, an import without a key, or another
// database keeps partitions of PartitionRows. An import failed after its
// first commit resumes on its stored plan, and the table then holds the
// file, value by value.
func TestGrowingPartitions(t *testing.T) {
	t.Parallel()
	ids := make([]int64, growFileRows)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	rand.New(rand.NewPCG(3, 5)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	want := make(map[int64]string, len(ids))
	var b strings.Builder
	b.WriteString("id,v\n")
	for i, id := range ids {
		want[id] = fmt.Sprintf("v%d", i)
		fmt.Fprintf(&b, "%d,%s\n", id, want[id])
	}
	content := b.String()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, c := range []struct {
			name string
			rows int64
			key  []string
		}{{"key", 0, []string{"id"}}, {"key-rows-given", 100000, []string{"id"}}, {"ordinal", 0, nil}} {
			t.Run(c.name, func(t *testing.T) {
				ctx := context.Background()
				f := newFx(t, name)
				req := Request{Path: f.write(t, "items.csv", content), PartitionRows: c.rows, Mapping: Mapping{Table: "items", Key: c.key}}
				wantRows := []int64{100000, 100000, 100000, 1}
				if f.e.st.GroupCommits && c.rows == 0 && c.key != nil {
					wantRows = []int64{100000, 100000, 100001}
				}
				rep, err := PlanFile(ctx, f.e, req)
				if err != nil {
					t.Fatal(err)
				}
				var planned []string
				for _, p := range rep.Partitions {
					planned = append(planned, fmt.Sprint(p.First, p.Rows, p.Offset, p.Length, p.CRC))
				}
				failed := f.failing(t, "after-partition-commit:1:error").Import(ctx, req)
				f.wantOutcome(t, failed, Failed)
				if res := f.e.Import(ctx, req); res.Err != nil || res.Outcome != Resumed {
					t.Fatalf("rerun: %s %v", res.Outcome, res.Err)
				}
				var stored []string
				var sizes []int64
				for _, r := range f.rows(t, `SELECT first_row, row_count, byte_offset, byte_length, crc FROM `+f.tg.Ledger("partitions")+` ORDER BY idx`) {
					stored = append(stored, fmt.Sprint(r...))
					var n int64
					fmt.Sscan(fmt.Sprint(r[1]), &n)
					sizes = append(sizes, n)
				}
				if !slices.Equal(sizes, wantRows) {
					t.Fatalf("partitions of %v rows stored, want %v", sizes, wantRows)
				}
				if !slices.Equal(planned, stored) {
					t.Fatalf("dry run planned partitions %v, the import stored %v", planned, stored)
				}
				got := f.rows(t, `SELECT count(*), count(DISTINCT id) FROM items`)
				if fmt.Sprint(got) != fmt.Sprint([][]any{{int64(growFileRows), int64(growFileRows)}}) {
					t.Fatalf("table rows, distinct ids %v, want %d", got, growFileRows)
				}
				for _, r := range f.rows(t, `SELECT id, v FROM items`) {
					var k int64
					fmt.Sscan(fmt.Sprint(r[0]), &k)
					if v := fmt.Sprint(r[1]); want[k] != v {
						t.Fatalf("id %d: v %q, want %q", k, v, want[k])
					}
				}
			})
		}
	})
}
