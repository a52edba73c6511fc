package reader

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
)

// readAll scans path with opts and reads every partition, returning the
// rows in ordinal order as readPart renders them.
func readSelected(t *testing.T, path string, opts Options) ([][]any, error) {
	t.Helper()
	f, err := OpenPath(path, opts)
	if err != nil {
		return nil, err
	}
	plan, err := f.Scan(context.Background(), ScanOptions{})
	if err != nil {
		return nil, err
	}
	var all [][]any
	for _, p := range plan.Partitions {
		rows, _, _, err := readPart(f, plan, p, 2)
		if err != nil {
			return nil, err
		}
		all = append(all, rows...)
	}
	return all, nil
}

// pick returns the columns at cols of each row, in that order.
func pick(rows [][]any, cols ...int) [][]any {
	out := make([][]any, len(rows))
	for i, r := range rows {
		for _, c := range cols {
			out[i] = append(out[i], r[c])
		}
	}
	return out
}

// TestParquetSelectDecodesOnlySelected checks that a Parquet file read with
// Options.Select decodes only the selected columns, by the plan pass and
// by partition readers alike: a column whose pages are corrupt fails the
// file read whole, and goes unnoticed when it is not selected, while the
// selected columns come back exactly, in Select's order.
func TestParquetSelectDecodesOnlySelected(t *testing.T) {
	t.Run("corrupt_unselected_column", func(t *testing.T) {
		specs := commonSpecs()[:8]
		good := writeParquet(t, "g.parquet", specs, 12, 3, true)
		orig, err := os.ReadFile(good)
		if err != nil {
			t.Fatal(err)
		}
		r, err := file.OpenParquetFile(good, false)
		if err != nil {
			t.Fatal(err)
		}
		cc, err := r.MetaData().RowGroup(1).ColumnChunk(2) // column i16
		if err != nil {
			t.Fatal(err)
		}
		page := cc.DataPageOffset()
		r.Close()
		bad := make([]byte, 24)
		for i := range bad {
			bad[i] = 0xff
		}
		path := writeFile(t, "x.parquet", patch(orig, int(page), bad))
		if _, err := readSelected(t, path, Options{}); err == nil {
			t.Fatal("the file read whole despite its corrupt i16 pages")
		}
		got, err := readSelected(t, path, Options{Select: []string{"u16", "b", "i64", "i8"}})
		if err != nil {
			t.Fatalf("with i16 left out: %v", err)
		}
		if want := pick(wantRows(specs, 12, nil), 6, 0, 4, 1); !reflect.DeepEqual(got, want) {
			t.Fatalf("got  %v\nwant %v", got, want)
		}
	})
	// A bare INT64 column whose stored Arrow type is a timestamp keeps it
	// when it is not in its file place among the columns decoded.
	t.Run("stored_seconds_column", func(t *testing.T) {
		path := filepath.Join("..", "testdata", "otherwriters", "orders-arrow-rs-seconds.parquet")
		whole, err := readSelected(t, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := readSelected(t, path, Options{Select: []string{"created_at", "sku", "order_id"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(whole) != 300 {
			t.Fatalf("%d rows, want 300", len(whole))
		}
		if want := pick(whole, 6, 2, 0); !reflect.DeepEqual(got, want) {
			t.Fatalf("got  %v\nwant %v", got[:3], want[:3])
		}
	})
}
