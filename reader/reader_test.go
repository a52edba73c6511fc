package reader

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/idemtype"
)

// readAll plans path and reads every partition back, rendering each value as
// text (nil for null) keyed by column name, in ordinal order.
func readAll(t *testing.T, path string, opts Options, so ScanOptions) (*Plan, []map[string]any, []int64) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	opts.Allocator = mem
	f, err := OpenPath(path, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return readFile(t, f, so)
}

// readFile is readAll over an opened file.
func readFile(t *testing.T, f *File, so ScanOptions) (*Plan, []map[string]any, []int64) {
	t.Helper()
	plan, err := f.Scan(context.Background(), so)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	var rows []map[string]any
	var ords []int64
	for b, err := range f.Batches(plan, plan.Partitions, 3) {
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		for i := 0; i < int(b.Record.NumRows()); i++ {
			row := map[string]any{}
			for c, col := range plan.Schema {
				row[col.Name] = render(b.Record.Column(c), i)
			}
			rows = append(rows, row)
		}
		ords = append(ords, b.Ordinals...)
		b.Release()
	}
	return plan, rows, ords
}

func render(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.String:
		return a.Value(i)
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10)
	case *array.Float64:
		return strconv.FormatFloat(a.Value(i), 'g', -1, 64)
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i))
	case *array.Timestamp:
		return time.UnixMicro(int64(a.Value(i))).UTC().Format("2006-01-02T15:04:05.000000Z")
	}
	panic("unexpected array type " + a.DataType().String())
}

func TestCSVSpectrum(t *testing.T) {
	files, err := filepath.Glob("../testdata/csv-spectrum/csvs/*.csv")
	if err != nil || len(files) != 12 {
		t.Fatalf("want the 12 csv-spectrum files, got %d (%v)", len(files), err)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".csv")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("../testdata/csv-spectrum/json", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var want []map[string]any
			if err := json.Unmarshal(raw, &want); err != nil {
				var one map[string]any // upstream's location_coordinates.json is one object
				if err2 := json.Unmarshal(raw, &one); err2 != nil {
					t.Fatal(err)
				}
				want = []map[string]any{one}
			}
			if name == "location_coordinates" {
				// Upstream's expected JSON has a different phone number than its CSV.
				if want[0]["Contact Phone Number"] != "1234567890" {
					t.Fatalf("the upstream erratum changed: %v", want[0])
				}
				want[0]["Contact Phone Number"] = "2095257564"
			}
			f, err := OpenPath(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			types := map[string]idemtype.Type{}
			for _, h := range f.Header() {
				types[h] = idemtype.String
			}
			plan, got, ords := readAll(t, path, Options{Types: types}, ScanOptions{PartitionRows: 2})
			if plan.Rejected != 0 {
				t.Fatalf("rejected %d rows: %+v", plan.Rejected, plan.Rejects)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %q\nwant %q", got, want)
			}
			for i, o := range ords {
				if o != int64(i+1) {
					t.Fatalf("ordinals %v", ords)
				}
			}
		})
	}
}
