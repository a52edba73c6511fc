package reader

import (
	"reflect"
	"testing"
)

// rangeShape is a planned partition's Offset, Length and Rows.
type rangeShape struct{ offset, length, rows int64 }

// rangeFile is a file whose large units (Parquet row groups, record
// batches of an Arrow IPC file) are cut into ranges of their rows when
// planned with PartitionRows 300, and what checkRanges expects of it.
type rangeFile struct {
	path string
	want [][]any // the file's rows, in order
	// shapes are the partitions planned; skipped replaces the first three
	// (the first unit's ranges) with SkipLines 5.
	shapes, skipped []rangeShape
	other           int    // a partition of another unit than the first's, whose CRC differs
	alone           int    // the partition read alone
	units           int64  // the units decoded reading every partition in order
	unitName        string // "row groups", "record batches"
}

// checkRanges plans c's file with PartitionRows 300 and checks the
// partitions' shapes, that the first unit's first two ranges carry one CRC
// (the unit's) and another unit's partition another, and that each
// partition, read in order (with and without rows before the table),
// reversed or alone, gives exactly its rows and ordinals; read in order,
// each unit is decoded once.
func checkRanges(t *testing.T, c rangeFile) {
	t.Helper()
	for _, order := range []string{"in_order", "reversed", "alone", "skip_lines"} {
		t.Run(order, func(t *testing.T) {
			opts, skip := Options{}, 0
			if order == "skip_lines" {
				opts.SkipLines, skip = 5, 5
			}
			f, plan := scanChecked(t, c.path, opts, ScanOptions{PartitionRows: 300})
			t.Cleanup(f.cols.Close)
			var got []rangeShape
			for _, p := range plan.Partitions {
				got = append(got, rangeShape{p.Offset, p.Length, p.Rows})
			}
			ws := c.shapes
			if skip > 0 {
				ws = append(append([]rangeShape(nil), c.skipped...), ws[3:]...)
			}
			if !reflect.DeepEqual(got, ws) {
				t.Fatalf("partitions %v, want %v", got, ws)
			}
			if plan.Partitions[0].CRC != plan.Partitions[1].CRC || plan.Partitions[0].CRC == plan.Partitions[c.other].CRC {
				t.Fatalf("CRCs %+v: a unit's partitions carry the unit's", plan.Partitions)
			}
			parts := plan.Partitions
			switch order {
			case "reversed":
				parts = nil
				for k := len(plan.Partitions) - 1; k >= 0; k-- {
					parts = append(parts, plan.Partitions[k])
				}
			case "alone":
				parts = plan.Partitions[c.alone : c.alone+1]
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
					if w := c.want[skip+int(p.First)-1+i]; !reflect.DeepEqual(row, w) {
						t.Fatalf("partition %d, ordinal %d: got %v, want %v", p.Index, ords[i], row, w)
					}
				}
			}
			if order == "in_order" || order == "skip_lines" {
				if d := f.Stats().RowGroupsRead - before; d != c.units {
					t.Fatalf("reading the partitions in order decoded %d %s, want %d", d, c.unitName, c.units)
				}
			}
		})
	}
}
