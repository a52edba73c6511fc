package reader

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestGrowingPartitions checks ScanOptions.GrowTo on CSV and JSONL: the
// partitions hold 10, 10, 20, 40, 80, then 100 rows each for
// PartitionRows 10 and GrowTo 100, each is read back whole, and
// PartitionBytes still cuts them; GrowTo no larger than PartitionRows
// changes nothing.
func TestGrowingPartitions(t *testing.T) {
	const rows = 455
	var csv, jsonl strings.Builder
	csv.WriteString("id,s\n")
	for i := 1; i <= rows; i++ {
		fmt.Fprintf(&csv, "%d,s%03d\n", i, i%1000)
		fmt.Fprintf(&jsonl, "{\"id\":%d,\"s\":\"s%03d\"}\n", i, i%1000)
	}
	for _, file := range []struct{ name, body string }{{"grow.csv", csv.String()}, {"grow.jsonl", jsonl.String()}} {
		t.Run(file.name, func(t *testing.T) {
			path := writeFile(t, file.name, []byte(file.body))
			sizes := func(o ScanOptions) []int64 {
				t.Helper()
				f, plan := scanChecked(t, path, Options{}, o)
				var got []int64
				var next int64 = 1
				for _, p := range plan.Partitions {
					if p.First != next {
						t.Fatalf("partition %d begins at row %d, want %d", p.Index, p.First, next)
					}
					if got, _, _, err := readPart(f, plan, p, 7); err != nil || int64(len(got)) != p.Rows {
						t.Fatalf("partition %d of %d rows reads %d rows: %v", p.Index, p.Rows, len(got), err)
					}
					next += p.Rows
					got = append(got, p.Rows)
				}
				if next-1 != rows {
					t.Fatalf("partitions hold %d rows, want %d", next-1, rows)
				}
				return got
			}
			if got, want := sizes(ScanOptions{PartitionRows: 10, GrowTo: 100}), []int64{10, 10, 20, 40, 80, 100, 100, 95}; !slices.Equal(got, want) {
				t.Fatalf("growing partitions hold %v rows, want %v", got, want)
			}
			if got := sizes(ScanOptions{PartitionRows: 10, GrowTo: 10}); len(got) != 46 || got[45] != 5 || slices.Max(got) != 10 {
				t.Fatalf("GrowTo 10 with PartitionRows 10: partitions of %v rows", got)
			}
			// Each row is 6 to 25 bytes: 30 bytes cut after 5 rows at
			// most, whatever the schedule allows.
			bytesCut := sizes(ScanOptions{PartitionRows: 10, GrowTo: 100, PartitionBytes: 30})
			if slices.Max(bytesCut) > 5 {
				t.Fatalf("PartitionBytes 30 with GrowTo: partitions of %v rows", bytesCut)
			}
		})
	}
}
