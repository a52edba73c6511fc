package reader

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/idemport/idemport/reader/internal/input"
)

// The fuzz targets of the columnar formats' footers and schemas: opening
// a Parquet file reads its footer (Thrift) and maps its schema; opening an
// Arrow IPC file reads its footer and schema (flatbuffers), and an Arrow
// IPC stream its schema message. Whatever the bytes, opening returns a
// File or a *ParseError, never panics, and allocates no more than the
// input's size allows: openAllocLimit.
//
// Their seeds are small files of every column type (written here, not
// stored), the hostile files of footer_test.go that are small, and any
// file in testdata/fuzz/FuzzParquet or FuzzArrow.

// openAllocLimit is the most that opening a columnar file of n bytes may
// allocate: a few megabytes, and a bounded multiple of its bytes (a struct
// of one byte on the wire is a few hundred in memory).
func openAllocLimit(n int) uint64 { return 4<<20 + 512*uint64(n) }

// fuzzOpen opens data as a file called name and checks the contract.
func fuzzOpen(t *testing.T, dir, name string, data []byte) {
	path := fuzzFile(t, dir, name, data)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f, err := OpenPath(path, Options{Allocator: memory.NewGoAllocator()})
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > openAllocLimit(len(data)) {
		t.Fatalf("opening %d bytes allocated %d (at most %d): %v", len(data), n, openAllocLimit(len(data)), err)
	}
	if err != nil {
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("not a *ParseError: %T %v", err, err)
		}
		return
	}
	if len(f.Header()) == 0 {
		t.Fatal("opened without columns")
	}
}

// addColumnarSeeds adds the files in testdata/fuzz/<dir>, if there are
// any: one in Go's corpus format as it is (a crasher, moved there), any
// other as the data, with args after it.
func addColumnarSeeds(f *testing.F, dir string, args func(name string) []any) {
	entries, _ := os.ReadDir(filepath.Join(seedRoot, dir))
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(seedRoot, dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		if bytes.HasPrefix(data, []byte(corpusHeader)) {
			vals, err := parseCorpusFile(data)
			if err != nil {
				f.Fatalf("%s: %v", path, err)
			}
			f.Add(vals...)
			continue
		}
		f.Add(append([]any{data}, args(e.Name())...)...)
	}
}

// smallHostile returns the bytes of the hostile files of footer_test.go
// small enough to seed a fuzzer, by name.
func smallHostile(f *testing.F) map[string][]byte {
	out := map[string][]byte{}
	for _, h := range hostileColumnarFiles(f, f.TempDir(), false) {
		if st, err := os.Stat(h.path); err == nil && st.Size() <= 64<<10 {
			data, err := os.ReadFile(h.path)
			if err != nil {
				f.Fatal(err)
			}
			out[filepath.Base(h.path)] = data
		}
	}
	return out
}

// FuzzParquet opens Parquet files.
func FuzzParquet(f *testing.F) {
	specs := commonSpecs()
	for _, p := range []struct {
		specs  []colSpec
		rows   int
		groups int64
		store  bool
	}{{specs, 20, 7, true}, {specs[:3], 3, 3, false}, {specs[3:5], 0, 1, true}} {
		path := writeParquet(f, "seed.parquet", p.specs, p.rows, p.groups, p.store, parquet.WithStats(true), parquet.WithDictionaryDefault(true))
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for name, data := range smallHostile(f) {
		if strings.HasSuffix(name, ".parquet") {
			f.Add(data)
		}
	}
	addColumnarSeeds(f, "FuzzParquet", func(string) []any { return nil })
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzOpen(t, dir, "f.parquet", data)
	})
}

// FuzzArrow opens Arrow IPC files, and streams when stream is set.
func FuzzArrow(f *testing.F) {
	specs := commonSpecs()
	mem := memory.NewGoAllocator()
	for _, name := range []string{"seed.arrow", "seed.arrows"} {
		for _, cut := range [][2]int{{0, 20}, {10, 13}} {
			rec := buildRecord(mem, specs, cut[0], cut[1])
			data, _ := ipcBytes(f, name, specSchema(specs), []arrow.RecordBatch{rec})
			rec.Release()
			f.Add(data, strings.HasSuffix(name, ".arrows"))
		}
	}
	for name, data := range smallHostile(f) {
		if strings.Contains(name, ".arrow") {
			f.Add(data, strings.HasSuffix(name, ".arrows"))
		}
	}
	addColumnarSeeds(f, "FuzzArrow", func(name string) []any { return []any{strings.HasSuffix(name, ".arrows")} })
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, stream bool) {
		name := "f.arrow"
		if stream {
			name = "f.arrows"
		}
		fuzzOpen(t, dir, name, data)
	})
}

// pageAllocLimit is the most that planning and reading a Parquet file of n
// bytes twice may allocate: the pages' stated sizes are capped as
// arrow-go's are (a page states at most 256 MiB uncompressed), so a few of
// them, and a bounded multiple of its bytes.
func pageAllocLimit(n int) uint64 { return 1<<30 + 4096*uint64(n) }

// readPages reads every partition of plan with f, in order, and returns
// the batches and the first error, which must be a *ParseError.
func readPages(t *testing.T, f *File, plan *Plan) ([]arrow.RecordBatch, error) {
	t.Helper()
	var out []arrow.RecordBatch
	for _, p := range plan.Partitions {
		pr, err := f.Partition(plan, p, 100)
		if err == nil {
			for {
				var b Batch
				if b, err = pr.Next(); err != nil {
					break
				}
				b.Record.Retain()
				out = append(out, b.Record)
				b.Release()
			}
			pr.Close()
			if err == io.EOF {
				err = nil
			}
		}
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("partition %d: not a *ParseError: %T %v", p.Index, err, err)
			}
			return out, err
		}
	}
	return out, nil
}

// FuzzParquetPages plans Parquet files and reads every partition, as the
// pipeline does: the File that planned reads the partitions, so the row
// groups' readers take the dictionaries the plan pass read. Whatever
// the bytes, it never panics, allocates no more than pageAllocLimit, and
// fails only with a *ParseError; and what it reads equals what a fresh
// File, which reads every dictionary page from the bytes itself, reads of
// the same plan (both fail, or both succeed with equal batches). A panic
// in the reader's own page decoder is raised (input.RaiseOwnPanics), not
// recovered as corrupt data.
//
// Its seeds are the other writers' files of testdata/otherwriters, small
// arrow-go files (dictionaries, several row groups, snappy and zstd, data
// pages of both versions), the hostile Parquet files FuzzParquet uses,
// and any file in testdata/fuzz/FuzzParquetPages.
func FuzzParquetPages(f *testing.F) {
	for _, name := range []string{"orders-arrow-rs-groups.parquet", "orders-arrow-rs-snappy.parquet", "orders-arrow-rs-seconds.parquet", "orders-polars-zstd.parquet"} {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "otherwriters", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	specs := commonSpecs()
	for _, v := range []parquet.DataPageVersion{parquet.DataPageV1, parquet.DataPageV2} {
		for _, codec := range []compress.Compression{compress.Codecs.Snappy, compress.Codecs.Zstd, compress.Codecs.Uncompressed} {
			path := writeParquet(f, "seed.parquet", specs[:5], 40, 15, false, parquet.WithDictionaryDefault(true),
				parquet.WithDataPageVersion(v), parquet.WithCompression(codec), parquet.WithDataPageSize(64), parquet.WithDictionaryPageSizeLimit(200))
			data, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	for name, data := range smallHostile(f) {
		if strings.HasSuffix(name, ".parquet") {
			f.Add(data)
		}
	}
	addColumnarSeeds(f, "FuzzParquetPages", func(string) []any { return nil })
	// A panic in the reader's own page decoder is a bug to see, not
	// corrupt data: it is raised, not recovered.
	input.RaiseOwnPanics.Store(true)
	f.Cleanup(func() { input.RaiseOwnPanics.Store(false) })
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := fuzzFile(t, dir, "f.parquet", data)
		opts := Options{Allocator: memory.NewGoAllocator(), MaxRowBytes: fuzzMaxRow}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		defer func() {
			runtime.ReadMemStats(&after)
			if n := after.TotalAlloc - before.TotalAlloc; n > pageAllocLimit(len(data)) {
				t.Fatalf("%d bytes allocated %d (at most %d)", len(data), n, pageAllocLimit(len(data)))
			}
		}()
		file, err := OpenPath(path, opts)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("open: not a *ParseError: %T %v", err, err)
			}
			return
		}
		defer file.Close()
		plan, err := file.Scan(context.Background(), ScanOptions{PartitionRows: 50})
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("scan: not a *ParseError: %T %v", err, err)
			}
			return
		}
		got, gotErr := readPages(t, file, plan)
		fresh, err := OpenPath(path, opts)
		if err != nil {
			t.Fatalf("second open: %v", err)
		}
		defer fresh.Close()
		want, wantErr := readPages(t, fresh, plan)
		defer func() {
			for _, r := range append(got, want...) {
				r.Release()
			}
		}()
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("with the plan's dictionaries: %v; fresh: %v", gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%d batches, fresh %d", len(got), len(want))
		}
		for i := range got {
			if !array.RecordEqual(got[i], want[i]) {
				t.Fatalf("batch %d:\n got %v\nwant %v", i, got[i], want[i])
			}
		}
	})
}
