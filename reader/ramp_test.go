package reader

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestPartitionRamp checks that a ramped partition reader hands the
// partition's rows in batches of the ramp's rows, doubling up to the
// reader's batch rows, and that its rows, their values, ordinals and the
// bad rows it skipped are exactly those of the reader without a ramp.
func TestPartitionRamp(t *testing.T) {
	const n = 3000
	var csv strings.Builder
	csv.WriteString("id,name,score\n")
	bad := 0
	for i := range n {
		if i%97 == 5 { // a bad row: a field short
			fmt.Fprintf(&csv, "%d,row %d\n", i, i)
			bad++
			continue
		}
		fmt.Fprintf(&csv, "%d,row %d,%d.5\n", i, i, i*7)
	}
	path := filepath.Join(t.TempDir(), "ramp.csv")
	if err := os.WriteFile(path, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: n})
	if len(plan.Partitions) != 1 {
		t.Fatalf("%d partitions, want one", len(plan.Partitions))
	}
	p := plan.Partitions[0]
	const batchRows = 1000
	rows, ords, rejected, err := readPart(f, plan, p, batchRows)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != n-bad || rejected != int64(bad) {
		t.Fatalf("plain read: %d rows and %d bad, want %d and %d", len(rows), rejected, n-bad, bad)
	}

	pr, err := f.Partition(plan, p, batchRows)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	pr.Ramp(100)
	var (
		sizes     []int
		rampRows  [][]any
		rampOrds  []int64
		remaining = n - bad
	)
	for {
		b, err := pr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, int(b.Record.NumRows()))
		for i := range int(b.Record.NumRows()) {
			row := make([]any, len(plan.Schema))
			for c := range plan.Schema {
				row[c] = render(b.Record.Column(c), i)
			}
			rampRows = append(rampRows, row)
		}
		rampOrds = append(rampOrds, b.Ordinals...)
		b.Release()
	}
	var want []int
	for size := 100; remaining > 0; size = min(2*size, batchRows) {
		want = append(want, min(size, remaining))
		remaining -= size
	}
	if !slices.Equal(sizes, want) {
		t.Errorf("ramped batches of %v rows, want %v", sizes, want)
	}
	if !reflect.DeepEqual(rampRows, rows) {
		t.Errorf("ramped read's rows differ from the plain read's")
	}
	if !slices.Equal(rampOrds, ords) {
		t.Errorf("ramped read's ordinals differ from the plain read's")
	}
	if pr.Rejected() != rejected {
		t.Errorf("ramped read skipped %d bad rows, want %d", pr.Rejected(), rejected)
	}
}
