package reader

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/idemtype"
)

// TestPartitionedReportsEachCut checks ScanOptions.Partitioned: each
// partition but the last, which the file's end cuts short, is reported once, in order, as the final plan
// has it (offsets, lengths, CRCs, rows, bad rows), with the types the
// rows up to its end infer: an integer column that a later row makes text
// is reported int64 until that row's partition.
func TestPartitionedReportsEachCut(t *testing.T) {
	var b strings.Builder
	b.WriteString("id,n,s\n")
	for i := 1; i <= 53; i++ {
		switch {
		case i == 17:
			b.WriteString("17,5\n") // a bad row: too few fields
		case i == 45:
			b.WriteString("45,x,late\n") // n turns text in partition 4
		default:
			fmt.Fprintf(&b, "%d,%d,s%d\n", i, i*2, i)
		}
	}
	path := writeFile(t, "cuts.csv", []byte(b.String()))
	var cuts []Cut
	_, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 10, Partitioned: func(c Cut) { cuts = append(cuts, c) }})
	if len(cuts) != len(plan.Partitions)-1 {
		t.Fatalf("%d partitions reported, want %d (all but the short last)", len(cuts), len(plan.Partitions)-1)
	}
	for i, c := range cuts {
		if fmt.Sprint(c.Partition) != fmt.Sprint(plan.Partitions[i]) {
			t.Fatalf("partition %d reported as %+v, the plan has %+v", i, c.Partition, plan.Partitions[i])
		}
		want := idemtype.Int64
		if i >= 4 {
			want = idemtype.String
		}
		if got := c.Schema[1].Type; got != want || c.Schema[0].Type != idemtype.Int64 {
			t.Fatalf("partition %d reported with %v, want n %s", i, c.Schema, want)
		}
	}
	if cuts[1].Partition.Rejected != 1 || plan.Partitions[1].Rejected != 1 {
		t.Fatalf("partition 1 reported %d bad rows, the plan %d, want 1", cuts[1].Partition.Rejected, plan.Partitions[1].Rejected)
	}
}

// TestPartitionedReportsParquetCuts checks ScanOptions.Partitioned on
// Parquet files: row groups that are partitions, and one row group cut
// into partitions, with and without a bad row that makes the pass that
// leaves columns undecoded start again (in partition 2). Each row group
// but the last is reported once, in order, as the final plan has it, with
// the file's columns and its row group's bytes; the ranges of a row group
// cut into partitions are not reported.
func TestPartitionedReportsParquetCuts(t *testing.T) {
	for _, c := range []struct {
		name      string
		groupRows int64
		bad       int // ordinal of a uint64 past the int64 maximum; 0: none
	}{
		{name: "groups", groupRows: 11},
		{name: "one-group", groupRows: 53},
		{name: "groups-rescan", groupRows: 11, bad: 24},
		{name: "one-group-rescan", groupRows: 53, bad: 24},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := arrow.NewSchema([]arrow.Field{
				{Name: "id", Type: arrow.PrimitiveTypes.Int64},
				{Name: "u", Type: arrow.PrimitiveTypes.Uint64},
				{Name: "s", Type: arrow.BinaryTypes.String},
			}, nil)
			b := array.NewRecordBuilder(memory.NewGoAllocator(), sc)
			defer b.Release()
			for ord := 1; ord <= 53; ord++ {
				b.Field(0).(*array.Int64Builder).Append(int64(ord))
				if ord == c.bad {
					b.Field(1).(*array.Uint64Builder).Append(math.MaxUint64)
				} else {
					b.Field(1).(*array.Uint64Builder).Append(uint64(ord))
				}
				b.Field(2).(*array.StringBuilder).Append(fmt.Sprint("s", ord))
			}
			rec := b.NewRecordBatch()
			defer rec.Release()
			path := writeParquetRecord(t, "cuts.parquet", rec, c.groupRows, false)
			var cuts []Cut
			_, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 10, KeepRejects: 10, Partitioned: func(c Cut) { cuts = append(cuts, c) }})
			if len(plan.Partitions) != 5 {
				t.Fatalf("%d partitions, want 5", len(plan.Partitions))
			}
			want := len(plan.Partitions) - 1 // all but the last
			if c.groupRows == 53 {
				want = 0 // ranges of one row group
			}
			if len(cuts) != want {
				t.Fatalf("%d partitions reported, want %d: %+v", len(cuts), want, cuts)
			}
			for i, cut := range cuts {
				if fmt.Sprint(cut.Partition) != fmt.Sprint(plan.Partitions[i]) {
					t.Fatalf("partition %d reported as %+v, the plan has %+v", i, cut.Partition, plan.Partitions[i])
				}
				if fmt.Sprint(cut.Schema) != fmt.Sprint(plan.Schema) || cut.Bytes <= 0 {
					t.Fatalf("partition %d reported with %v and %d bytes, the plan has %v", i, cut.Schema, cut.Bytes, plan.Schema)
				}
			}
			if c.bad > 0 && (plan.Rejected != 1 || want > 0 && cuts[2].Partition.Rejected != 1) {
				t.Fatalf("the plan has %d bad rows, want 1 (reported: %+v)", plan.Rejected, cuts)
			}
		})
	}
}
