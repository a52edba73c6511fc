package pipeline

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/internal/testkit"
)

// TestArrowRecordBatchRanges imports an Arrow IPC file of one record batch
// (as Arrow JS writes a table) cut into partitions of ranges of its rows,
// failing after the third partition commits, then again: the rerun
// resumes from the fourth, and the whole table, value by value as text
// with each row's lineage, is the table the same file makes imported as
// one partition. In ordinal mode and by key, on every target.
//
// The ranges hold more rows than --partition-rows (17 of 7,058 or 7,059
// rows), as most files' do: PostgreSQL reads a partition in batches of
// --partition-rows rows, so a range reader that reads on past its range's
// end shows there only when the range ends inside a batch. Ranges of
// exactly 10,000 rows, each read in one batch of 10,000, hid it.
func TestArrowRecordBatchRanges(t *testing.T) {
	t.Parallel()
	const partRows = 7_000
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, key := range [][]string{nil, {"id"}} {
			t.Run(map[bool]string{true: "key", false: "ordinal"}[key != nil], func(t *testing.T) {
				t.Parallel()
				f := newFx(t, name)
				rec := overlapRecord(t, 0)
				defer rec.Release()
				path := writeArrowFile(t, f.dir, "data.arrow", rec)
				const n = int64(overlapParquetRows)
				req := Request{Path: path, Mapping: Mapping{Table: "t", Key: key}, PartitionRows: partRows, Lease: time.Minute}
				first := f.failing(t, "after-partition-commit:3:error").Import(context.Background(), req)
				if first.Outcome != Failed || first.Partitions.Total != n/partRows || first.Partitions.Committed != 3 {
					t.Fatalf("%s %+v (%v), want failed after 3 of %d partitions", first.Outcome, first.Partitions, first.Err, n/partRows)
				}
				res := f.open(t, Options{}).Import(context.Background(), req)
				if res.Err != nil || res.Outcome != Resumed {
					t.Fatalf("%s: %v", res.Outcome, res.Err)
				}
				if p := res.Partitions; p.Total != n/partRows || p.Skipped != 3 || p.Committed != n/partRows-3 {
					t.Fatalf("the rerun's partitions %+v, want %d, the first 3 skipped", p, n/partRows)
				}
				ref := f.open(t, Options{})
				refReq := Request{Path: path, Mapping: Mapping{Table: "ref", Key: key}, PartitionRows: n, Lease: time.Minute}
				if r := ref.Import(context.Background(), refReq); r.Err != nil || r.Outcome != Imported || r.Partitions.Total != 1 {
					t.Fatalf("the import as one partition: %s %+v (%v)", r.Outcome, r.Partitions, r.Err)
				}
				got, want := parquetTableText(t, f, "t"), parquetTableText(t, f, "ref")
				if int64(len(got)) != n {
					t.Fatalf("t holds %d rows, want %d", len(got), n)
				}
				for i := range max(len(got), len(want)) {
					if i >= len(got) || i >= len(want) || got[i] != want[i] {
						t.Fatalf("t holds %d rows, the import as one partition %d; they differ at row %d:\n%q\n%q",
							len(got), len(want), i, got[min(i, len(got)-1)], want[min(i, len(want)-1)])
					}
				}
			})
		}
	})
}

// writeArrowFile writes rec as an Arrow IPC file of one record batch (as
// Arrow JS writes a table) named name in dir, and returns its path.
func writeArrowFile(t *testing.T, dir, name string, rec arrow.RecordBatch) string {
	t.Helper()
	path := filepath.Join(dir, name)
	testkit.WriteArrowFile(t, path, rec)
	return path
}
