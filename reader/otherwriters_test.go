package reader

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/idemtype"
)

// TestOtherWriters reads the orders data as Polars, the Rust parquet crate
// and Arrow JS wrote it (testdata/otherwriters: decimals, timestamps of
// three units, seconds in Parquet as the bare INT64 the Rust crate writes,
// whose type only the stored Arrow schema gives, dictionaries, string
// views, snappy and zstd, several row groups whose chunks turn from
// dictionary-encoded pages to PLAIN ones when the dictionary is full) and
// checks that every value of every row reads as the CSV file's text, with
// the CSV's types (unit_price read as the decimal the CSV spells), in batches
// of 3 rows (slices of the files' batches, each with part of a
// dictionary's values) and of the reader's own size (whole batches,
// dictionaries longer and shorter than them).
func TestOtherWriters(t *testing.T) {
	dir := "../testdata/otherwriters"
	csvOpts := Options{Types: map[string]idemtype.Type{"unit_price": idemtype.Decimal}}
	for _, batchRows := range []int{3, 0} {
		wantPlan, want := readRows(t, filepath.Join(dir, "orders.csv"), csvOpts, batchRows)
		if len(want) != 300 {
			t.Fatalf("the CSV file has %d rows", len(want))
		}
		for _, name := range []string{"orders-polars-zstd.parquet", "orders-arrow-rs-snappy.parquet", "orders-arrow-rs-seconds.parquet", "orders-arrow-rs-groups.parquet", "orders-polars.arrow", "orders-arrowjs.arrow"} {
			t.Run(fmt.Sprintf("%s/batch-%d", name, batchRows), func(t *testing.T) {
				plan, got := readRows(t, filepath.Join(dir, name), Options{}, batchRows)
				if g, w := schemaString(plan.Schema), schemaString(wantPlan.Schema); g != w {
					t.Fatalf("schema %s, the CSV's %s", g, w)
				}
				if len(got) != len(want) {
					t.Fatalf("%d rows, the CSV has %d", len(got), len(want))
				}
				bad := 0
				for i := range want {
					for c, col := range plan.Schema {
						if got[i][c] != want[i][c] && bad < 10 {
							bad++
							t.Errorf("row %d, %s: %#v, the CSV has %#v", i+1, col.Name, got[i][c], want[i][c])
						}
					}
				}
			})
		}
	}
}

// readRows plans path and reads every partition in batches of at most
// batchRows rows (0: the reader's size), each value as render gives it.
func readRows(t *testing.T, path string, opts Options, batchRows int) (*Plan, [][]any) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	opts.Allocator = mem
	f, plan := scanChecked(t, path, opts, ScanOptions{})
	if plan.Rejected != 0 {
		t.Fatalf("%s: %d bad rows: %+v", filepath.Base(path), plan.Rejected, plan.Rejects)
	}
	var rows [][]any
	for _, p := range plan.Partitions {
		part, _, _, err := readPart(f, plan, p, batchRows)
		if err != nil {
			t.Fatalf("%s: partition %d: %v", filepath.Base(path), p.Index, err)
		}
		rows = append(rows, part...)
	}
	return plan, rows
}

// TestDictionaryTextChecked checks that a dictionary's values are checked
// as text in every batch that uses them, whether the batch is longer than
// the dictionary (which is then checked whole) or shorter (value by
// value): a NUL byte or invalid UTF-8 makes the rows that use it bad, and
// only those.
func TestDictionaryTextChecked(t *testing.T) {
	dict := []string{"red", "nul\x00", "bl\xffue"}
	mem := memory.NewGoAllocator()
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "color", Type: dt, Nullable: true}}, nil)
	const n = 12
	var recs []arrow.RecordBatch
	for from := 0; from < n; from += 6 {
		b := array.NewRecordBuilder(mem, schema)
		vals := array.NewStringBuilder(mem)
		vals.AppendValues(dict, nil)
		arr := vals.NewStringArray()
		if err := b.Field(1).(*array.BinaryDictionaryBuilder).InsertStringDictValues(arr); err != nil {
			t.Fatal(err)
		}
		arr.Release()
		vals.Release()
		for i := from; i < from+6; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			if err := b.Field(1).(*array.BinaryDictionaryBuilder).AppendString(dict[i%3]); err != nil {
				t.Fatal(err)
			}
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	data, _ := ipcBytes(t, "d.arrow", schema, recs)
	for _, r := range recs {
		r.Release()
	}
	path := writeFile(t, "d.arrow", data)
	for _, batchRows := range []int{2, 0} {
		f := openChecked(t, path, Options{})
		plan, err := f.Scan(context.Background(), ScanOptions{KeepRejects: n})
		if err != nil {
			t.Fatal(err)
		}
		want := "[2:nul 3:utf8 5:nul 6:utf8 8:nul 9:utf8 11:nul 12:utf8]"
		if got := badRows(plan); got != want {
			t.Fatalf("bad rows %s, want %s", got, want)
		}
		rows, ords := readPlan(t, f, plan, batchRows)
		if got := fmt.Sprint(rows, ords); got != "[[0 red] [3 red] [6 red] [9 red]] [1 4 7 10]" {
			t.Errorf("batches of %d rows: read %s", batchRows, got)
		}
	}
}

// TestIPCPartitionsShareDictionaries reads the record batches of an IPC
// file whose batches share large dictionaries (Arrow JS's), each several
// times and all at once, on one File: every read must give the rows a
// read alone gives, whichever partition read the dictionaries first.
func TestIPCPartitionsShareDictionaries(t *testing.T) {
	path := "../testdata/otherwriters/orders-arrowjs.arrow"
	_, want := readRows(t, path, Options{}, 0)
	f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 1}) // a partition per record batch
	if len(plan.Partitions) < 2 {
		t.Fatalf("%d partitions", len(plan.Partitions))
	}
	got := make([][][]any, 4*len(plan.Partitions))
	errs := make([]error, len(got))
	var wg sync.WaitGroup
	for r := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[r], _, _, errs[r] = readPart(f, plan, plan.Partitions[r%len(plan.Partitions)], 7)
		}()
	}
	wg.Wait()
	for r, rows := range got {
		p := plan.Partitions[r%len(plan.Partitions)]
		if errs[r] != nil {
			t.Fatalf("read %d of partition %d: %v", r, p.Index, errs[r])
		}
		if g, w := fmt.Sprint(rows), fmt.Sprint(want[p.First-1:p.First-1+p.Rows]); g != w {
			t.Errorf("read %d of partition %d: %s, want %s", r, p.Index, g, w)
		}
	}
}
