package reader

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
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
	want := wantRows(specs, 2250, nil)
	type shape struct{ offset, length, rows int64 }
	wantShape := []shape{{0, 1, 334}, {0, 335, 333}, {0, 668, 333}, {1, 1, 100}, {2, 1, 334}, {2, 335, 333}, {2, 668, 333}, {3, 1, 150}}
	for _, order := range []string{"in_order", "reversed", "alone", "skip_lines"} {
		t.Run(order, func(t *testing.T) {
			opts, skip := Options{}, 0
			if order == "skip_lines" {
				opts.SkipLines, skip = 5, 5
			}
			f, plan := scanChecked(t, path, opts, ScanOptions{PartitionRows: 300})
			t.Cleanup(f.cols.Close)
			var got []shape
			for _, p := range plan.Partitions {
				got = append(got, shape{p.Offset, p.Length, p.Rows})
			}
			ws := wantShape
			if skip > 0 { // 995 rows left in the first batch: 332, 332 and 331
				ws = append([]shape{{0, 6, 332}, {0, 338, 332}, {0, 670, 331}}, ws[3:]...)
			}
			if !reflect.DeepEqual(got, ws) {
				t.Fatalf("partitions %v, want %v", got, ws)
			}
			if plan.Partitions[0].CRC != plan.Partitions[1].CRC || plan.Partitions[0].CRC == plan.Partitions[4].CRC {
				t.Fatalf("CRCs %+v: a record batch's partitions carry the batch's", plan.Partitions)
			}
			parts := plan.Partitions
			switch order {
			case "reversed":
				parts = nil
				for k := len(plan.Partitions) - 1; k >= 0; k-- {
					parts = append(parts, plan.Partitions[k])
				}
			case "alone":
				parts = plan.Partitions[5:6]
			}
			before := f.Stats().RowGroupsRead
			for _, p := range parts {
				rows, ords, _, err := readPart(f, plan, p, 64)
				if err != nil {
					t.Fatalf("partition %d: %v", p.Index, err)
				}
				if !reflect.DeepEqual(ords, seq(p.First, p.Rows)) {
					t.Fatalf("partition %d: ordinals %v…", p.Index, ords[:min(len(ords), 5)])
				}
				for i, row := range rows {
					if w := want[skip+int(p.First)-1+i]; !reflect.DeepEqual(row, w) {
						t.Fatalf("partition %d, ordinal %d: got %v, want %v", p.Index, ords[i], row, w)
					}
				}
			}
			if order == "in_order" || order == "skip_lines" {
				if d := f.Stats().RowGroupsRead - before; d != 4 {
					t.Fatalf("reading the partitions in order decoded %d record batches, want 4", d)
				}
			}
		})
	}
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
}
