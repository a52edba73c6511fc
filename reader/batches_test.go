package reader

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/idemport/idemport/idemtype"
)

// batchesFiles returns a CSV, a JSONL and a Parquet file of the same 10
// rows (id 1..10, name "n1".."n10"; row 4 of the text files is bad), so
// that Batches is tried on both wings.
func batchesFiles(t *testing.T) map[string]string {
	var csv, jsonl strings.Builder
	csv.WriteString("id,name\n")
	for i := 1; i <= 10; i++ {
		if i == 4 {
			csv.WriteString("x,n4\n")
			jsonl.WriteString(`{"id":"x","name":"n4"}` + "\n")
			continue
		}
		fmt.Fprintf(&csv, "%d,n%d\n", i, i)
		fmt.Fprintf(&jsonl, `{"id":%d,"name":"n%d"}`+"\n", i, i)
	}
	specs := []colSpec{
		{name: "id", dt: arrow.PrimitiveTypes.Int64, typ: idemtype.Int64,
			put: func(b array.Builder, i int) { b.(*array.Int64Builder).Append(int64(i + 1)) }},
		{name: "name", dt: arrow.BinaryTypes.String, typ: idemtype.String,
			put: func(b array.Builder, i int) { b.(*array.StringBuilder).Append(fmt.Sprintf("n%d", i+1)) }},
	}
	return map[string]string{
		"csv":     writeFile(t, "b.csv", []byte(csv.String())),
		"jsonl":   writeFile(t, "b.jsonl", []byte(jsonl.String())),
		"parquet": writeParquet(t, "b.parquet", specs, 10, 3, false),
	}
}

// TestBatches reads every partition of a plan through Batches: the good
// rows of all partitions in ordinal order, in batches of at most batchRows
// rows, and nothing left allocated (openChecked).
func TestBatches(t *testing.T) {
	for format, path := range batchesFiles(t) {
		t.Run(format, func(t *testing.T) {
			types := map[string]idemtype.Type{"id": idemtype.Int64, "name": idemtype.String}
			f, plan := scanChecked(t, path, Options{Types: types}, ScanOptions{PartitionRows: 3, KeepRejects: 10})
			if len(plan.Partitions) < 3 {
				t.Fatalf("%d partitions, want at least 3", len(plan.Partitions))
			}
			var got [][]any
			var ords []int64
			for b, err := range f.Batches(plan, plan.Partitions, 2) {
				if err != nil {
					t.Fatal(err)
				}
				if len(b.Ordinals) > 2 || int(b.Record.NumRows()) != len(b.Ordinals) {
					t.Fatalf("a batch of %d rows with %d ordinals, limit 2", b.Record.NumRows(), len(b.Ordinals))
				}
				for i := range int(b.Record.NumRows()) {
					got = append(got, []any{render(b.Record.Column(0), i), render(b.Record.Column(1), i)})
				}
				ords = append(ords, b.Ordinals...)
				b.Release()
			}
			var want [][]any
			var wantOrds []int64
			for i := int64(1); i <= 10; i++ {
				if i == 4 && format != "parquet" {
					continue
				}
				want = append(want, []any{fmt.Sprint(i), fmt.Sprintf("n%d", i)})
				wantOrds = append(wantOrds, i)
			}
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(ords, wantOrds) {
				t.Fatalf("got rows %q ordinals %v, want %q %v", got, ords, want, wantOrds)
			}
		})
	}
}

// TestBatchesStopEarly stops after the first batch: the partition being
// read is closed, its memory released (openChecked checks at the end).
func TestBatchesStopEarly(t *testing.T) {
	for format, path := range batchesFiles(t) {
		t.Run(format, func(t *testing.T) {
			f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 3})
			n := 0
			for b, err := range f.Batches(plan, plan.Partitions, 2) {
				if err != nil {
					t.Fatal(err)
				}
				n++
				b.Release()
				break
			}
			if n != 1 {
				t.Fatalf("%d batches before the break, want 1", n)
			}
		})
	}
}

// TestBatchesSourceChanged rewrites a text file after its plan: the first
// partition reads as planned, the second yields one error wrapping
// ErrSourceChanged and the sequence ends there.
func TestBatchesSourceChanged(t *testing.T) {
	path := batchesFiles(t)["csv"]
	f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 3})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Same length, another value in the second partition (rows 4-6).
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), "n5", "m5", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	var ords []int64
	var errs []error
	for b, err := range f.Batches(plan, plan.Partitions, 100) {
		if err != nil {
			errs = append(errs, err)
			continue // the sequence must end by itself
		}
		ords = append(ords, b.Ordinals...)
		b.Release()
	}
	if !reflect.DeepEqual(ords, []int64{1, 2, 3}) {
		t.Fatalf("ordinals %v before the error, want 1 2 3", ords)
	}
	if len(errs) != 1 || !errors.Is(errs[0], ErrSourceChanged) {
		t.Fatalf("errors %v, want one wrapping ErrSourceChanged", errs)
	}
}
