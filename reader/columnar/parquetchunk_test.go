package columnar

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/partition"
)

// TestPageChunkMatchesPqarrow checks that the columns a pageChunk
// decodes (text, integers, timestamps) hold, value by value and null by null, what pqarrow decodes
// from the same pages, in batches of several sizes: the other writers'
// files (the Rust crate's pages that turn from dictionary indexes to PLAIN
// when the dictionary is full, Polars' zstd) and files arrow-go writes
// with data pages of both versions, small pages and dictionaries, nulls
// and required columns, dictionary and PLAIN pages.
func TestPageChunkMatchesPqarrow(t *testing.T) {
	files := map[string][]byte{}
	for _, f := range otherWritersParquet(t) {
		files[f.name] = f.data
	}
	for _, v := range []parquet.DataPageVersion{parquet.DataPageV1, parquet.DataPageV2} {
		for _, dict := range []bool{true, false} {
			name := fmt.Sprintf("arrowgo-v%d-dict-%v.parquet", v+1, dict)
			files[name] = textParquet(t, 3000, 700, parquet.WithDataPageVersion(v), parquet.WithDictionaryDefault(dict),
				parquet.WithDictionaryPageSizeLimit(2000), parquet.WithDataPageSize(900), parquet.WithCompression(compress.Codecs.Snappy))
		}
	}
	checked := 0
	for name, data := range files {
		for _, batch := range []int{1, 3, 700, 64 << 10} {
			t.Run(fmt.Sprintf("%s/batch-%d", name, batch), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				eachRowGroup(t, name, data, batch, func(s *parquetFile, ld *loaded, k int, fr *pqarrow.FileReader, text []int) {
					if len(text) == 0 {
						t.Fatalf("row group %d: no column for a pageChunk", k)
					}
					rr, err := fr.GetRecordReader(context.Background(), text, []int{k})
					if err != nil {
						t.Fatal(err)
					}
					var chunks []*pageChunk
					for _, at := range text {
						c, err := newPageChunk(s, ld, k, fr.Manifest.Fields[at], mem, nil)
						if err != nil {
							t.Fatal(err)
						}
						chunks = append(chunks, c)
					}
					row := 0
					for rr.Next() {
						rec := rr.RecordBatch()
						for j, c := range chunks {
							got, err := c.read(int(rec.NumRows()))
							if err != nil {
								t.Fatalf("row group %d, column %d, row %d: %v", k, text[j], row, err)
							}
							if want := rec.Column(j); !array.Equal(got, want) || got.NullN() != want.NullN() {
								t.Fatalf("row group %d, column %d, rows %d-%d:\n got %v\nwant %v", k, text[j], row, row+int(rec.NumRows())-1, got, want)
							}
							checked += got.Len()
							got.Release()
						}
						row += int(rec.NumRows())
					}
					if err := rr.Err(); err != nil {
						t.Fatal(err)
					}
					rr.Release()
					for _, c := range chunks {
						c.close()
					}
				})
			})
		}
	}
	if checked == 0 {
		t.Fatal("no value compared")
	}
}

// textParquet returns a Parquet file of n rows in row groups of group
// rows: an id, a required text column of few distinct values, a nullable
// one of mostly distinct values of every length up to 40 bytes (empty
// among them), a binary column, and nullable int32, timestamp and date
// columns and a uint64 column past the int64 maximum.
func textParquet(t *testing.T, n int, group int64, opts ...parquet.WriterProperty) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "status", Type: arrow.BinaryTypes.String},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "raw", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "big", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append([]string{"paid", "shipped", "", "délivré"}[i%4])
		switch {
		case i%7 == 3 || i%500 < 20:
			b.Field(2).AppendNull()
		default:
			b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("%0*d", i%41, i*7919%100003)[:i%41])
		}
		if i%5 == 0 {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.BinaryBuilder).Append([]byte{byte(i), 0, byte(i >> 8)})
		}
		if i%6 == 1 {
			b.Field(4).AppendNull()
			b.Field(5).AppendNull()
			b.Field(7).AppendNull()
		} else {
			b.Field(4).(*array.Int32Builder).Append(int32(i%9 - 4))
			b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i)*86_399_999 - 1e12))
			b.Field(7).(*array.Date32Builder).Append(arrow.Date32(i*37%20000 - 10000))
		}
		b.Field(6).(*array.Uint64Builder).Append(uint64(i) * 0x9E3779B97F4A7C15)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return parquetOf(t, rec, append(opts, parquet.WithMaxRowGroupLength(group))...)
}

// fixtureFile is a test Parquet file's name and bytes.
type fixtureFile struct {
	name string
	data []byte
}

// otherWritersParquet returns the Parquet files of testdata/otherwriters
// that other writers wrote (the Rust crate's row groups, snappy pages and
// second timestamps; Polars' zstd).
func otherWritersParquet(t *testing.T) []fixtureFile {
	t.Helper()
	var files []fixtureFile
	for _, name := range []string{"orders-arrow-rs-groups.parquet", "orders-arrow-rs-snappy.parquet", "orders-arrow-rs-seconds.parquet", "orders-polars-zstd.parquet"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "otherwriters", name))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fixtureFile{name, data})
	}
	return files
}

// eachRowGroup opens the Parquet file data under name and calls f for
// each of its row groups k with a reader of batch rows per batch and the
// columns (of all the file's) that a pageChunk reads.
func eachRowGroup(t *testing.T, name string, data []byte, batch int, f func(s *parquetFile, ld *loaded, k int, fr *pqarrow.FileReader, text []int)) {
	t.Helper()
	file, err := Open(testFile(t, name, data))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	s := file.parquet()
	ld := &loaded{size: s.size}
	for k := 0; k < s.groups; k++ {
		if _, err := s.load(s.md, ld, k); err != nil {
			t.Fatal(err)
		}
		fr, err := s.reader(s.md, ld, batch, false)
		if err != nil {
			t.Fatal(err)
		}
		read := make([]int, len(fr.Manifest.Fields))
		for i := range read {
			read[i] = i
		}
		f(s, ld, k, fr, s.pageColumns(fr, k, read))
	}
}

// parquetOf returns rec written by arrow-go's Parquet writer with props.
func parquetOf(t *testing.T, rec arrow.RecordBatch, props ...parquet.WriterProperty) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, parquet.NewWriterProperties(props...), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestPageChunkDictionaryKept checks that a chunk's dictionary, which is
// the memory chunkPages decompressed its dictionary page into, not a
// copy, holds the same bytes from its page to the chunk's last row while
// the chunk's data pages are read after it (of both versions, compressed
// and not, dictionary indexes turning to PLAIN values): a page reader
// that decoded a later page into that memory would change the values of
// every batch after it.
func TestPageChunkDictionaryKept(t *testing.T) {
	files := map[string][]byte{}
	for _, f := range otherWritersParquet(t) {
		files[f.name] = f.data
	}
	for _, v := range []parquet.DataPageVersion{parquet.DataPageV1, parquet.DataPageV2} {
		for _, codec := range []compress.Compression{compress.Codecs.Snappy, compress.Codecs.Uncompressed} {
			files[fmt.Sprintf("arrowgo-v%d-%s.parquet", v+1, codec)] = textParquet(t, 3000, 3000, parquet.WithDataPageVersion(v),
				parquet.WithDictionaryPageSizeLimit(20000), parquet.WithDataPageSize(900), parquet.WithCompression(codec))
		}
	}
	kept := 0
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			eachRowGroup(t, name, data, 100, func(s *parquetFile, ld *loaded, k int, fr *pqarrow.FileReader, text []int) {
				for _, at := range text {
					c, err := newPageChunk(s, ld, k, fr.Manifest.Fields[at], memory.DefaultAllocator, nil)
					if err != nil {
						t.Fatal(err)
					}
					var dict []byte
					for left := s.md.RowGroup(k).NumRows(); left > 0; left -= 100 {
						a, err := c.read(int(min(left, 100)))
						if err != nil {
							t.Fatal(err)
						}
						a.Release()
						switch {
						case dict == nil && len(c.dict) > 0:
							dict = bytes.Clone(c.dict)
							kept++
						case dict != nil && !bytes.Equal(c.dict, dict):
							t.Fatalf("row group %d, column %d: the dictionary changed with %d rows left to read", k, at, left)
						}
					}
					c.close()
				}
			})
		})
	}
	if kept == 0 {
		t.Fatal("no dictionary read")
	}
}

// TestPartitionTakesPlanDictionaries checks that the partition readers
// of a Parquet file's row groups take the dictionaries the plan pass read
// from the same bytes (chunkDict) rather than read their dictionary pages
// again (the last group's with its bytes, the others' from leftDicts, but
// for those of chunks stored uncompressed), and that they decode the same
// values as readers that read them: the other writers' files (row
// groups, snappy, zstd) and arrow-go's of one row group, with data pages
// of both versions, compressed or not, whose dictionaries turn to PLAIN
// values when full.
func TestPartitionTakesPlanDictionaries(t *testing.T) {
	files := map[string][]byte{}
	for _, f := range otherWritersParquet(t) {
		files[f.name] = f.data
	}
	for _, v := range []parquet.DataPageVersion{parquet.DataPageV1, parquet.DataPageV2} {
		for _, codec := range []compress.Compression{compress.Codecs.Snappy, compress.Codecs.Uncompressed, compress.Codecs.Zstd} {
			files[fmt.Sprintf("arrowgo-v%d-%s.parquet", v+1, codec)] = textParquet(t, 3000, 3000, parquet.WithDataPageVersion(v),
				parquet.WithDictionaryPageSizeLimit(20000), parquet.WithDataPageSize(900), parquet.WithCompression(codec))
		}
	}
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			f, err := Open(testFile(t, name, data))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			plan, _, err := f.Scan(context.Background(), partition.ScanOptions{PartitionRows: 1000})
			if err != nil {
				t.Fatal(err)
			}
			planned := f.parquet().dictPages.Load()
			got, after := readPartitions(t, f, plan)
			// The same partitions read by a File the plan pass left
			// nothing to.
			fresh, err := Open(testFile(t, name, data))
			if err != nil {
				t.Fatal(err)
			}
			defer fresh.Close()
			want, all := readPartitions(t, fresh, plan)
			// The dictionary pages of the chunks whose dictionaries are
			// handed over, and of those read again.
			handed, again := dictionaryChunks(t, f.parquet())
			if planned == 0 || handed == 0 {
				t.Fatalf("the plan pass read %d dictionary pages, %d of them to hand over", planned, handed)
			}
			if after != again || all != handed+again {
				t.Errorf("the partition readers read %d dictionary pages after the plan pass, want %d (%d, less the %d handed over)", after, again, all, handed)
			}
			sameBatches(t, got, want)
		})
	}
}

// sameBatches fails t unless got and want are the same batches, value by
// value, in the same order; it releases them all.
func sameBatches(t *testing.T, got, want []arrow.RecordBatch) {
	t.Helper()
	defer func() {
		for _, b := range slices.Concat(got, want) {
			b.Release()
		}
	}()
	if len(got) != len(want) {
		t.Fatalf("%d batches, want %d", len(got), len(want))
	}
	for i := range got {
		if !array.RecordEqual(got[i], want[i]) {
			t.Fatalf("batch %d:\n got %v\nwant %v", i, got[i], want[i])
		}
	}
}

// readPartitions returns every batch of the plan's partitions, read in
// order by f, and the dictionary pages f read meanwhile.
func readPartitions(t *testing.T, f *File, plan *partition.Plan) ([]arrow.RecordBatch, int64) {
	t.Helper()
	pq := f.parquet()
	before := pq.dictPages.Load()
	var out []arrow.RecordBatch
	for _, p := range plan.Partitions {
		r, err := f.Partition(plan, p, 500)
		if err != nil {
			t.Fatal(err)
		}
		for {
			b, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b.Record.Retain()
			out = append(out, b.Record)
			b.Release()
		}
		r.Close()
	}
	return out, pq.dictPages.Load() - before
}

// dictionaryChunks counts the column chunks of pq with a dictionary page
// that a pageChunk reads: those whose dictionaries the plan pass hands to
// the partition readers (the last row group's, and the others' stored
// compressed), and the others.
func dictionaryChunks(t *testing.T, pq *parquetFile) (handed, again int64) {
	t.Helper()
	last := pq.groups - 1
	for last > 0 && pq.md.RowGroup(last).NumRows() == 0 {
		last--
	}
	for k := range pq.groups {
		if pq.md.RowGroup(k).NumRows() == 0 {
			continue
		}
		ld := &loaded{size: pq.size}
		if _, err := pq.load(pq.md, ld, k); err != nil {
			t.Fatal(err)
		}
		fr, err := pq.reader(pq.md, ld, 100, false)
		if err != nil {
			t.Fatal(err)
		}
		cols := make([]int, len(fr.Manifest.Fields))
		for i := range cols {
			cols[i] = i
		}
		for _, at := range pq.pageColumns(fr, k, cols) {
			cc, err := pq.md.RowGroup(k).ColumnChunk(fr.Manifest.Fields[at].ColIndex)
			if err != nil || !cc.HasDictionaryPage() {
				continue
			}
			if k == last || cc.Compression() != compress.Codecs.Uncompressed {
				handed++
			} else {
				again++
			}
		}
	}
	return handed, again
}

// TestChunkPagesCutShort checks that the page reader refuses a page whose
// stated size runs past its column chunk's bytes (errChunkPage), rather
// than slice past them: every column chunk of the other writers' files and
// of arrow-go's (page versions 1 and 2, snappy, zstd or none), cut one
// byte short of the end of each of its pages.
func TestChunkPagesCutShort(t *testing.T) {
	files := otherWritersParquet(t)
	for _, v := range []parquet.DataPageVersion{parquet.DataPageV1, parquet.DataPageV2} {
		for _, codec := range []compress.Compression{compress.Codecs.Snappy, compress.Codecs.Uncompressed, compress.Codecs.Zstd} {
			files = append(files, fixtureFile{fmt.Sprintf("arrowgo-v%d-%s.parquet", v+1, codec), textParquet(t, 600, 300, parquet.WithDataPageVersion(v),
				parquet.WithDataPageSize(900), parquet.WithCompression(codec))})
		}
	}
	for _, f := range files {
		t.Run(f.name, func(t *testing.T) {
			var cuts int
			eachRowGroup(t, f.name, f.data, 100, func(s *parquetFile, ld *loaded, k int, fr *pqarrow.FileReader, text []int) {
				spans, err := s.spans(s.md, k)
				if err != nil {
					t.Fatal(err)
				}
				for c, sp := range spans {
					cc, err := s.md.RowGroup(k).ColumnChunk(c)
					if err != nil {
						t.Fatal(err)
					}
					chunk := ld.bytes(sp.off, sp.len)
					var dicts atomic.Int64
					whole, err := newChunkPages(chunk, cc.Compression(), cc.NumValues(), &dicts)
					if err != nil {
						t.Fatal(err)
					}
					var ends []int
					for {
						if _, err := whole.next(); err != nil {
							break
						}
						ends = append(ends, whole.pos)
					}
					for _, end := range ends {
						r, err := newChunkPages(chunk[:end-1], cc.Compression(), cc.NumValues(), &dicts)
						if err != nil {
							t.Fatal(err)
						}
						for r.pos < end-1 {
							if _, err = r.next(); err != nil {
								break
							}
						}
						if !errors.Is(err, errChunkPage) {
							t.Fatalf("row group %d column %d cut to %d bytes: %v, want errChunkPage", k, c, end-1, err)
						}
						cuts++
					}
				}
			})
			if cuts == 0 {
				t.Fatal("no page cut")
			}
		})
	}
}

// TestLeftDictionariesBounded checks that the dictionaries the plan pass
// keeps for the row groups before the last (leftDicts) stay within their
// bound, the latest groups' kept, that a group's are taken once and only
// with the CRC they were read under, and that a dictionary in a chunk's
// own bytes (stored uncompressed) is not kept; and, on the Rust crate's
// file of row groups with a bound of about one group's dictionaries, that
// the groups before the bound's read theirs again and decode the same
// values.
func TestLeftDictionariesBounded(t *testing.T) {
	dict := func(size int, own bool) *chunkDict {
		return &chunkDict{dict: make([]byte, size), n: 1, width: size, end: 1, own: own}
	}
	l := &leftDicts{limit: 100}
	if !l.leave(0, 7, map[int]*chunkDict{0: dict(60, true), 1: dict(1000, false)}) || l.held != 60 {
		t.Fatalf("group 0 not kept as 60 bytes (%d held): the dictionary of the chunk's bytes counts, or it was refused", l.held)
	}
	if !l.leave(1, 8, map[int]*chunkDict{0: dict(50, true)}) || l.held != 50 {
		t.Fatalf("group 1 not kept in group 0's place (%d bytes held)", l.held)
	}
	if d := l.take(0, 7); d != nil {
		t.Fatal("group 0 kept past the bound")
	}
	if l.leave(2, 9, map[int]*chunkDict{0: dict(5, false)}) {
		t.Fatal("group 2 kept without a dictionary of its own")
	}
	if l.leave(3, 9, map[int]*chunkDict{0: dict(101, true)}) || l.held != 50 {
		t.Fatalf("group 3, over the bound alone, kept or made room (%d bytes held)", l.held)
	}
	if d := l.take(1, 7); d != nil {
		t.Fatal("group 1 taken under another CRC")
	}
	if d := l.take(1, 8); len(d) != 1 || d[0] == nil || l.held != 0 {
		t.Fatalf("group 1 taken as %v, %d bytes still held", d, l.held)
	}
	if d := l.take(1, 8); d != nil {
		t.Fatal("group 1 taken twice")
	}

	var data []byte
	for _, f := range otherWritersParquet(t) {
		if f.name == "orders-arrow-rs-groups.parquet" {
			data = f.data
		}
	}
	f, err := Open(testFile(t, "groups.parquet", data))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pq := f.parquet()
	if pq.groups < 3 {
		t.Fatalf("%d row groups", pq.groups)
	}
	// The bound: about the first group's dictionaries, as the pass keeps
	// them.
	probe, err := Open(testFile(t, "groups.parquet", data))
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	if _, _, err := probe.Scan(context.Background(), partition.ScanOptions{PartitionRows: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	g0, ok := probe.dicts.groups[0]
	if !ok {
		t.Fatal("no dictionaries kept for row group 0")
	}
	f.dicts.limit = g0.size * 3 / 2
	plan, _, err := f.Scan(context.Background(), partition.ScanOptions{PartitionRows: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.dicts.order) != 1 || f.dicts.order[0] != int64(pq.groups-2) || f.dicts.held > f.dicts.limit {
		t.Fatalf("the dictionaries of row groups %v kept, %d bytes, want row group %d's within %d", f.dicts.order, f.dicts.held, pq.groups-2, f.dicts.limit)
	}
	got, after := readPartitions(t, f, plan)
	fresh, err := Open(testFile(t, "groups.parquet", data))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	want, all := readPartitions(t, fresh, plan)
	if after <= 0 || after >= all {
		t.Errorf("the partition readers read %d of the %d dictionary pages again, want some (the groups past the bound)", after, all)
	}
	sameBatches(t, got, want)
}

// TestOwnPanicsRaised checks that under input.RaiseOwnPanics a panic in
// the page decoder (here a chunk without its pages) comes out of a
// reader's recover as a panic, with the stack it was raised on, where it
// is otherwise a corrupt-data *ParseError; and that a panic elsewhere (a
// third-party decoder's) is still recovered as one.
func TestOwnPanicsRaised(t *testing.T) {
	f := &File{File: &input.File{Path: "x.parquet"}}
	// run calls fn as a reader does, recovering what it raises.
	run := func(fn func()) (raised any, err error) {
		defer func() { raised = recover() }()
		func() {
			defer func() {
				if v := recover(); v != nil {
					err = f.recovered(v, "row group 0")
				}
			}()
			fn()
		}()
		return nil, err
	}
	broken := func() { _, _ = (&pageChunk{width: 8, mem: memory.DefaultAllocator}).read(1) }
	other := func() { panic("a third-party decoder") }
	defer input.RaiseOwnPanics.Store(false)
	for _, raise := range []bool{false, true} {
		input.RaiseOwnPanics.Store(raise)
		raised, err := run(broken)
		var pe *input.ParseError
		switch {
		case !raise && (raised != nil || !errors.As(err, &pe)):
			t.Errorf("without the switch: %v raised, %v returned; want a *ParseError", raised, err)
		case raise && (err != nil || raised == nil || !strings.Contains(fmt.Sprint(raised), "(*pageChunk).page")):
			t.Errorf("with the switch: %v returned, %v raised; want the page decoder's panic and its stack", err, raised)
		}
		if raised, err := run(other); raised != nil || !errors.As(err, &pe) {
			t.Errorf("switch %v: a third-party panic gave %v raised, %v returned; want a *ParseError", raise, raised, err)
		}
	}
}

// reallocCounter is an allocator that counts its reallocations.
type reallocCounter struct {
	memory.Allocator
	n int
}

func (a *reallocCounter) Reallocate(size int, b []byte) []byte {
	a.n++
	return a.Allocator.Reallocate(size, b)
}

// TestTextBufferGrowsToTheBatch checks that a text chunk's first batch,
// which has no batch before it to reserve its bytes by, grows its buffer
// of values to the batch's rows at the bytes per row of its first page,
// not by doubling it page after page: a batch of 3,000 rows of 900-byte
// pages of mostly distinct text, PLAIN and dictionary-encoded, is
// reallocated at most twice.
func TestTextBufferGrowsToTheBatch(t *testing.T) {
	for _, dict := range []bool{false, true} {
		data := textParquet(t, 3000, 3000, parquet.WithDictionaryDefault(dict), parquet.WithDataPageSize(900), parquet.WithBatchSize(50))
		eachRowGroup(t, "text.parquet", data, 3000, func(s *parquetFile, ld *loaded, k int, fr *pqarrow.FileReader, text []int) {
			at := slices.IndexFunc(fr.Manifest.Fields, func(f pqarrow.SchemaField) bool { return f.Field.Name == "note" })
			mem := &reallocCounter{Allocator: memory.NewGoAllocator()}
			c, err := newPageChunk(s, ld, k, fr.Manifest.Fields[at], mem, nil)
			if err != nil {
				t.Fatal(err)
			}
			a, err := c.read(3000)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Release()
			if pages := c.pages.read; pages < 8 || mem.n > 2 {
				t.Errorf("dictionary %v: the values of %d pages reallocated %d times, want at most 2", dict, pages, mem.n)
			}
		})
	}
}
