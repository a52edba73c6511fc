package reader

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestParquetRowGroupRanges checks that a row group of at least twice
// PartitionRows rows is planned as partitions of about PartitionRows rows
// each (Offset the group, Length 1 plus the group's rows before the
// partition, the group's CRC), that reading them in order decodes the
// group once, and that each partition, read in order, out of order or
// alone, gives exactly its rows.
func TestParquetRowGroupRanges(t *testing.T) {
	cs := commonSpecs()
	specs := []colSpec{cs[4], cs[12], cs[13], cs[21], cs[23], cs[28]} // i64 dec128 ts_ms ts_us str dict
	// Row groups of 1000, 1000 and 150 rows: the first two cut in 3
	// partitions of 334, 333 and 333 rows, the last one whole.
	path := writeParquet(t, "r.parquet", specs, 2150, 1000, true)
	checkRanges(t, rangeFile{
		path:   path,
		want:   wantRows(specs, 2150, nil),
		shapes: []rangeShape{{0, 1, 334}, {0, 335, 333}, {0, 668, 333}, {1, 1, 334}, {1, 335, 333}, {1, 668, 333}, {2, 1, 150}},
		// 995 rows left in the first group: 332, 332 and 331.
		skipped:  []rangeShape{{0, 6, 332}, {0, 338, 332}, {0, 670, 331}},
		other:    3,
		alone:    4,
		units:    3,
		unitName: "row groups",
	})
	t.Run("changed_group", func(t *testing.T) {
		f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 300})
		t.Cleanup(f.cols.Close)
		bad := plan.Partitions[1]
		bad.Length, bad.Rows = 900, 333 // past the group's 1000 rows
		if _, _, _, err := readPart(f, plan, bad, 64); !errors.Is(err, ErrSourceChanged) {
			t.Fatalf("got %v", err)
		}
	})
}

// TestParquetKeptDecodersReleased checks that the decoder a reader of a
// range of a row group's rows leaves for the next range is released when no
// reader will take it up, rather than held until the File is collected:
// when the next range's reader has started already (partitions read out of
// order, as workers read them), when a loop of Batches ends, and on Close.
func TestParquetKeptDecodersReleased(t *testing.T) {
	cs := commonSpecs()
	specs := []colSpec{cs[4], cs[12], cs[23], cs[28]} // i64 dec128 str dict
	path := writeParquet(t, "r.parquet", specs, 1000, 1000, true)
	want := wantRows(specs, 1000, nil)
	for _, tc := range []struct {
		name  string
		parts []int
		read  func(f *File, plan *Plan, parts []Partition) error
	}{
		{name: "reversed", parts: []int{2, 1, 0}, read: func(f *File, plan *Plan, parts []Partition) error {
			for _, p := range parts {
				if err := checkPart(f, plan, p, want); err != nil {
					return err
				}
			}
			return nil
		}},
		{name: "batches", parts: []int{0, 1}, read: func(f *File, plan *Plan, parts []Partition) error {
			rows := 0
			for b, err := range f.Batches(plan, parts, 64) {
				if err != nil {
					return err
				}
				rows += int(b.Record.NumRows())
				b.Release()
			}
			if rows != int(parts[0].Rows+parts[1].Rows) {
				return fmt.Errorf("%d rows", rows)
			}
			return nil
		}},
		{name: "close", parts: []int{0}, read: func(f *File, plan *Plan, parts []Partition) error {
			if err := checkPart(f, plan, parts[0], want); err != nil {
				return err
			}
			f.Close()
			f.Close()
			return checkPart(f, plan, plan.Partitions[2], want) // usable after Close
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			f, err := OpenPath(path, Options{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			plan, err := f.Scan(context.Background(), ScanOptions{PartitionRows: 300})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Partitions) != 3 {
				t.Fatalf("%d partitions, want 3", len(plan.Partitions))
			}
			var parts []Partition
			for _, k := range tc.parts {
				parts = append(parts, plan.Partitions[k])
			}
			if err := tc.read(f, plan, parts); err != nil {
				t.Fatal(err)
			}
			if n := mem.CurrentAlloc(); n != 0 {
				t.Fatalf("%d bytes still held by decoders kept for partitions no reader will read", n)
			}
		})
	}
}

// checkPart reads partition p and compares its rows with want's.
func checkPart(f *File, plan *Plan, p Partition, want [][]any) error {
	rows, ords, _, err := readPart(f, plan, p, 64)
	if err != nil {
		return fmt.Errorf("partition %d: %w", p.Index, err)
	}
	if !reflect.DeepEqual(ords, seq(p.First, p.Rows)) {
		return fmt.Errorf("partition %d: ordinals %v…", p.Index, ords[:min(len(ords), 5)])
	}
	for i, row := range rows {
		if w := want[int(p.First)-1+i]; !reflect.DeepEqual(row, w) {
			return fmt.Errorf("partition %d, ordinal %d: got %v, want %v", p.Index, ords[i], row, w)
		}
	}
	return nil
}
