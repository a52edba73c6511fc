package reader

import (
	"fmt"
	"strings"
	"testing"

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
