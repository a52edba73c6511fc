package reader

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestIPCRecordBatchRanges checks that a record batch of an Arrow IPC file
// of at least twice PartitionRows rows is a partition of its own, cut into
// ranges of its rows as a Parquet row group is (Offset the batch, Length 1
// plus the batch's rows before the range, the CRC of the dictionaries and
// the batch), that the small batches before it end their partition there,
// that reading the partitions in order decodes each record batch once,
// and that each partition, read in order, out of order or alone, gives
// exactly its rows.
func TestIPCRecordBatchRanges(t *testing.T) {
	cs := commonSpecs()
	specs := []colSpec{cs[4], cs[12], cs[13], cs[21], cs[23], cs[28]} // i64 dec128 ts_ms ts_us str dict
	// Record batches of 1000, 100, 1000 and 150 rows: the large ones cut
	// in 3 partitions of 334, 333 and 333 rows, the small ones whole.
	mem := memory.NewGoAllocator()
	var recs []arrow.RecordBatch
	for _, r := range [][2]int{{0, 1000}, {1000, 1100}, {1100, 2100}, {2100, 2250}} {
		recs = append(recs, buildRecord(mem, specs, r[0], r[1]))
	}
	data, _ := ipcBytes(t, "r.arrow", specSchema(specs), recs)
	for _, r := range recs {
		r.Release()
	}
	path := filepath.Join(t.TempDir(), "r.arrow")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	checkRanges(t, rangeFile{
		path:   path,
		want:   wantRows(specs, 2250, nil),
		shapes: []rangeShape{{0, 1, 334}, {0, 335, 333}, {0, 668, 333}, {1, 1, 100}, {2, 1, 334}, {2, 335, 333}, {2, 668, 333}, {3, 1, 150}},
		// 995 rows left in the first batch: 332, 332 and 331.
		skipped:  []rangeShape{{0, 6, 332}, {0, 338, 332}, {0, 670, 331}},
		other:    4,
		alone:    5,
		units:    4,
		unitName: "record batches",
	})
	t.Run("run", func(t *testing.T) {
		// Record batches of 299 and 599 rows: a run of 898 rows, more
		// than twice PartitionRows but not one batch, is not cut.
		var recs []arrow.RecordBatch
		for _, r := range [][2]int{{0, 299}, {299, 898}} {
			recs = append(recs, buildRecord(mem, specs, r[0], r[1]))
		}
		data, _ := ipcBytes(t, "run.arrow", specSchema(specs), recs)
		for _, r := range recs {
			r.Release()
		}
		path := filepath.Join(t.TempDir(), "run.arrow")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 300})
		t.Cleanup(f.cols.Close)
		if len(plan.Partitions) != 1 || plan.Partitions[0].Rows != 898 {
			t.Fatalf("partitions %+v, want one of 898 rows", plan.Partitions)
		}
		if err := checkPart(f, plan, plan.Partitions[0], wantRows(specs, 898, nil)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("changed_batch", func(t *testing.T) {
		f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 300})
		t.Cleanup(f.cols.Close)
		bad := plan.Partitions[1]
		bad.Length, bad.Rows = 900, 333 // past the batch's 1000 rows
		if _, _, _, err := readPart(f, plan, bad, 64); !errors.Is(err, ErrSourceChanged) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("changed_dictionary", func(t *testing.T) {
		// A range's CRC covers the dictionaries its values are decoded
		// from: one of their strings changed in place (same length) after
		// the plan, a rerun's reader of a range, opened alone, refuses
		// the file instead of reading another colour.
		path := filepath.Join(t.TempDir(), "r.arrow")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 300})
		if n := bytes.Count(data, []byte("green")); n != 1 {
			t.Fatalf("%q occurs %d times in the file, want once (in its dictionary)", "green", n)
		}
		changed := bytes.Replace(data, []byte("green"), []byte("grEen"), 1)
		if err := os.WriteFile(path, changed, 0o644); err != nil {
			t.Fatal(err)
		}
		f := openChecked(t, path, Options{})
		t.Cleanup(f.cols.Close)
		for _, k := range []int{1, 5} {
			if _, _, _, err := readPart(f, plan, plan.Partitions[k], 64); !errors.Is(err, ErrSourceChanged) {
				t.Fatalf("partition %d: got %v, want the source changed", k, err)
			}
		}
	})
}
