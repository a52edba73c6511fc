package reader

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/internal/input"
)

// secondsText writes v units of 10^-digits seconds as ISO 8601 seconds.
func secondsText(v int64, digits int) string {
	neg := v < 0
	if neg {
		v = -v
	}
	per := int64(1)
	for range digits {
		per *= 10
	}
	s := fmt.Sprint(v / per)
	if f := v % per; f != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%0*d", digits, f), "0")
	}
	if neg {
		s = "-" + s
	}
	return s
}

func uuidOf(i int) uuid.UUID {
	return uuid.UUID{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0, 1, 2, 3, 4, 5, 6, byte(i)}
}

// ipcSpecs are the columns of commonSpecs and those only Arrow IPC holds.
func ipcSpecs(t testing.TB) []colSpec {
	jsonType, err := extensions.NewJSONType(arrow.BinaryTypes.String)
	if err != nil {
		t.Fatal(err)
	}
	return append(commonSpecs(),
		scalar("sview", arrow.BinaryTypes.StringView, idemtype.String,
			func(b array.Builder, i int) {
				b.(*array.StringViewBuilder).Append(strText(i+2) + strings.Repeat("long ", i))
			},
			func(i int) string { return strText(i+2) + strings.Repeat("long ", i) }),
		scalar("bview", arrow.BinaryTypes.BinaryView, idemtype.String,
			func(b array.Builder, i int) { b.(*array.BinaryViewBuilder).Append([]byte{1, 2, byte(i)}) },
			func(i int) string { return fmt.Sprintf(`\x0102%02x`, i) }),
		scalar("dec32", &arrow.Decimal32Type{Precision: 7, Scale: 3}, idemtype.Decimal,
			func(b array.Builder, i int) { b.(*array.Decimal32Builder).Append(decimal.Decimal32(i*1001 - 5000)) },
			func(i int) string { return wantScaled(big.NewInt(int64(i*1001-5000)), 3) }),
		scalar("dec64", &arrow.Decimal64Type{Precision: 15, Scale: 4}, idemtype.Decimal,
			func(b array.Builder, i int) { b.(*array.Decimal64Builder).Append(decimal.Decimal64(-i * 123456789)) },
			func(i int) string { return wantScaled(big.NewInt(int64(-i*123456789)), 4) }),
		scalar("dur_s", arrow.FixedWidthTypes.Duration_s, idemtype.String,
			func(b array.Builder, i int) { b.(*array.DurationBuilder).Append(arrow.Duration(i*3600 - 100)) },
			func(i int) string { return "PT" + secondsText(int64(i*3600-100), 0) + "S" }),
		scalar("dur_ns", arrow.FixedWidthTypes.Duration_ns, idemtype.String,
			func(b array.Builder, i int) {
				b.(*array.DurationBuilder).Append(arrow.Duration(int64(i)*1_500_000_000 - 7))
			},
			func(i int) string { return "PT" + secondsText(int64(i)*1_500_000_000-7, 9) + "S" }),
		scalar("months", arrow.FixedWidthTypes.MonthInterval, idemtype.String,
			func(b array.Builder, i int) { b.(*array.MonthIntervalBuilder).Append(arrow.MonthInterval(i*13 - 5)) },
			func(i int) string { return fmt.Sprintf("P%dM", i*13-5) }),
		scalar("daytime", arrow.FixedWidthTypes.DayTimeInterval, idemtype.String,
			func(b array.Builder, i int) {
				b.(*array.DayTimeIntervalBuilder).Append(arrow.DayTimeInterval{Days: int32(i), Milliseconds: int32(i * 1500)})
			},
			func(i int) string { return fmt.Sprintf("P%dDT%sS", i, secondsText(int64(i*1500), 3)) }),
		scalar("mdn", arrow.FixedWidthTypes.MonthDayNanoInterval, idemtype.String,
			func(b array.Builder, i int) {
				b.(*array.MonthDayNanoIntervalBuilder).Append(arrow.MonthDayNanoInterval{Months: int32(i), Days: int32(-i), Nanoseconds: int64(i)*1e9 + 1})
			},
			func(i int) string { return fmt.Sprintf("P%dM%dDT%sS", i, -i, secondsText(int64(i)*1e9+1, 9)) }),
		scalar("lview", arrow.ListViewOf(arrow.PrimitiveTypes.Int32), idemtype.JSON,
			func(b array.Builder, i int) {
				lb := b.(*array.ListViewBuilder)
				lb.AppendWithSize(true, 2)
				vb := lb.ValueBuilder().(*array.Int32Builder)
				vb.Append(int32(i))
				vb.Append(int32(i * 2))
			},
			func(i int) string { return fmt.Sprintf("[%d,%d]", i, i*2) }),
		withInit(scalar("dict16", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.PrimitiveTypes.Int64}, idemtype.Int64,
			func(b array.Builder, i int) {
				if err := b.(*array.Int64DictionaryBuilder).Append(int64(i%3) * -1000); err != nil {
					panic(err)
				}
			},
			func(i int) string { return fmt.Sprint(int64(i%3) * -1000) }),
			func(b array.Builder) {
				vals := array.NewInt64Builder(memory.DefaultAllocator)
				defer vals.Release()
				vals.AppendValues([]int64{0, -1000, -2000}, nil)
				arr := vals.NewInt64Array()
				defer arr.Release()
				if err := b.(*array.Int64DictionaryBuilder).InsertDictValues(arr); err != nil {
					panic(err)
				}
			}),
		withInit(scalar("listdict", arrow.ListOf(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}), idemtype.JSON,
			func(b array.Builder, i int) {
				lb := b.(*array.ListBuilder)
				lb.Append(true)
				db := lb.ValueBuilder().(*array.BinaryDictionaryBuilder)
				for k := 0; k < 2; k++ {
					if err := db.AppendString(colors[(i+k)%3]); err != nil {
						panic(err)
					}
				}
			},
			func(i int) string { return fmt.Sprintf(`["%s","%s"]`, colors[i%3], colors[(i+1)%3]) }),
			func(b array.Builder) { primeColors(b.(*array.ListBuilder).ValueBuilder()) }),
		scalar("json", jsonType, idemtype.JSON,
			func(b array.Builder, i int) {
				b.(*array.ExtensionBuilder).StorageBuilder().(*array.StringBuilder).Append(fmt.Sprintf(`{"k": [%d, "é"]}`, i))
			},
			func(i int) string { return fmt.Sprintf(`{"k": [%d, "é"]}`, i) }),
		scalar("uuid", extensions.NewUUIDType(), idemtype.String,
			func(b array.Builder, i int) { b.(*extensions.UUIDBuilder).Append(uuidOf(i)) },
			func(i int) string { return uuidOf(i).String() }),
		scalar("bool8", extensions.NewBool8Type(), idemtype.Bool,
			func(b array.Builder, i int) { b.(*extensions.Bool8Builder).Append(i%2 == 1) },
			func(i int) string { return fmt.Sprint(i%2 == 1) }),
		scalar("ts_neg", &arrow.TimestampType{Unit: arrow.Microsecond}, idemtype.Timestamp,
			func(b array.Builder, i int) { b.(*array.TimestampBuilder).Append(arrow.Timestamp(-int64(i)*1e12 - 1)) },
			func(i int) string { return tsText(time.UnixMicro(-int64(i)*1e12 - 1)) }),
	)
}

// writeIPC writes n rows of specs, in record batches of batchRows rows,
// as an Arrow IPC file, or as a stream when name ends in .arrows (and
// compressed when it ends in .gz or .zst).
func writeIPC(t *testing.T, name string, specs []colSpec, n, batchRows int, opts ...ipc.Option) string {
	t.Helper()
	mem := memory.NewGoAllocator()
	var recs []arrow.RecordBatch
	// Each batch is built alone (arrow-go's IPC writer mishandles some
	// sliced arrays), with the same dictionaries.
	for from := 0; from < n; from += batchRows {
		recs = append(recs, buildRecord(mem, specs, from, min(n, from+batchRows)))
	}
	data, _ := ipcBytes(t, name, specSchema(specs), recs, opts...)
	for _, r := range recs {
		r.Release()
	}
	path := filepath.Join(t.TempDir(), name)
	writeCompressed(t, path, data)
	return path
}

// ipcBytes encodes recs as an IPC file or stream (by name) and returns the
// bytes and, for a stream, the offset at which each record batch ends.
func ipcBytes(t testing.TB, name string, schema *arrow.Schema, recs []arrow.RecordBatch, opts ...ipc.Option) ([]byte, []int) {
	t.Helper()
	var buf bytes.Buffer
	opts = append([]ipc.Option{ipc.WithSchema(schema)}, opts...)
	var ends []int
	if strings.Contains(name, ".arrows") {
		w := ipc.NewWriter(&buf, opts...)
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
			ends = append(ends, buf.Len())
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes(), ends
	}
	w, err := ipc.NewFileWriter(&buf, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), nil
}

func TestIPCTypes(t *testing.T) {
	specs := ipcSpecs(t)
	for _, tc := range []struct {
		name string
		opts []ipc.Option
	}{
		{name: "t.arrow"},
		{name: "t.feather"},
		{name: "t.ipc", opts: []ipc.Option{ipc.WithZstd()}},
		{name: "lz4.arrow", opts: []ipc.Option{ipc.WithLZ4()}},
		{name: "t.arrows"},
		{name: "t.arrows.gz"},
		{name: "t.arrows.zst", opts: []ipc.Option{ipc.WithZstd()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeIPC(t, tc.name, specs, 10, 3, tc.opts...)
			f, _ := checkTyped(t, path, Options{}, specs, 10, []int64{3, 3, 3, 1}, nil)
			want := Arrow
			if strings.Contains(tc.name, ".arrows") {
				want = Arrows
			}
			if f.Format() != want {
				t.Fatalf("format %s, want %s", f.Format(), want)
			}
			if got := strings.Join(f.Header(), ","); got != strings.Join(specNames(specs), ",") {
				t.Fatalf("header %s", got)
			}
		})
	}
}

// TestIPCReadsOnlyItsBatch checks that a partition of an Arrow IPC file
// reads its own record batch (and the dictionaries) and nothing else, and
// that a stream partition decodes only its own batch.
func TestIPCReadsOnlyItsBatch(t *testing.T) {
	specs := benchSpecs()
	for _, name := range []string{"o.arrow", "o.arrows"} {
		t.Run(name, func(t *testing.T) {
			path := writeIPC(t, name, specs, 10000, 1000)
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			// PartitionRows a batch's rows: a partition is one record
			// batch (fewer would cut a file's batches into ranges).
			f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 1000})
			f.Close() // readers opened alone: not the bytes the plan pass left for the last
			if len(plan.Partitions) != 10 {
				t.Fatalf("%d partitions", len(plan.Partitions))
			}
			for _, k := range []int{9, 4, 0} {
				before := f.Stats()
				if _, _, _, err := readPart(f, plan, plan.Partitions[k], 300); err != nil {
					t.Fatal(err)
				}
				after := f.Stats()
				read := after.BytesRead - before.BytesRead
				if after.RowGroupsRead-before.RowGroupsRead != 1 {
					t.Fatalf("partition %d decoded %d batches", k, after.RowGroupsRead-before.RowGroupsRead)
				}
				if name == "o.arrow" && (read < st.Size()/20 || read > st.Size()/8) {
					t.Fatalf("partition %d read %d of %d bytes, want about a tenth", k, read, st.Size())
				}
				if name == "o.arrows" && read < st.Size()*int64(k)/10 {
					t.Fatalf("stream partition %d read %d of %d bytes, want the stream up to it", k, read, st.Size())
				}
			}
		})
	}
}

// TestIPCSourceChanged flips a byte of record batch 1's body: only
// partition 1 notices.
func TestIPCSourceChanged(t *testing.T) {
	specs := commonSpecs()[:6]
	mem := memory.NewGoAllocator()
	var recs []arrow.RecordBatch
	for from := 0; from < 12; from += 3 {
		recs = append(recs, buildRecord(mem, specs, from, from+3))
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for _, name := range []string{"s.arrow", "s.arrows", "s.arrows.gz"} {
		t.Run(name, func(t *testing.T) {
			data, ends := ipcBytes(t, name, specSchema(specs), recs)
			var flip int
			if ends != nil {
				flip = ends[1] - 9 // inside batch 1's body
			} else {
				// A file holds the messages of a stream after its 8 bytes
				// of magic and padding.
				stream, ends := ipcBytes(t, "s.arrows", specSchema(specs), recs)
				if !bytes.Equal(data[8:8+ends[1]], stream[:ends[1]]) {
					t.Fatal("the file's record batches are not the stream's")
				}
				flip = 8 + ends[1] - 9
			}
			path := filepath.Join(t.TempDir(), name)
			writeCompressed(t, path, data)
			f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 3}) // a record batch each
			edited := append([]byte(nil), data...)
			edited[flip] ^= 0x10
			writeCompressed(t, path, edited)
			for k, p := range plan.Partitions {
				_, _, _, err := readPart(f, plan, p, 100)
				if k == 1 {
					var pe *ParseError
					if !errors.Is(err, ErrSourceChanged) || !errors.As(err, &pe) || !strings.Contains(err.Error(), "record batch 1") {
						t.Fatalf("partition 1: got %v, want ErrSourceChanged naming record batch 1", err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("partition %d: %v", k, err)
				}
			}
		})
	}
}

func TestIPCRejects(t *testing.T) {
	mem := memory.NewGoAllocator()
	rec := rejectRecord(mem)
	defer rec.Release()
	for _, name := range []string{"r.arrow", "r.arrows", "r.arrows.zst"} {
		t.Run(name, func(t *testing.T) {
			a, b := rec.NewSlice(0, 4), rec.NewSlice(4, 10)
			defer a.Release()
			defer b.Release()
			data, _ := ipcBytes(t, name, rec.Schema(), []arrow.RecordBatch{a, b})
			path := filepath.Join(t.TempDir(), name)
			writeCompressed(t, path, data)
			checkRejects(t, path)
		})
	}
}

// TestIPCUnsupported checks that a file with a column the reader cannot
// map, or with unusable names, is refused, naming the column.
func TestIPCUnsupported(t *testing.T) {
	mem := memory.NewGoAllocator()
	union := arrow.SparseUnionOf([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int32}}, []arrow.UnionTypeCode{0})
	ree := arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String)
	for _, tc := range []struct {
		name   string
		fields []arrow.Field
		is     error
		column string
		want   string
	}{
		{name: "union", fields: []arrow.Field{{Name: "ok", Type: arrow.PrimitiveTypes.Int64}, {Name: "u", Type: union}}, is: input.ErrType, column: "u", want: "sparse_union"},
		{name: "run_end_encoded", fields: []arrow.Field{{Name: "r", Type: ree}}, is: input.ErrType, column: "r", want: "run_end_encoded"},
		{name: "nested_union", fields: []arrow.Field{{Name: "l", Type: arrow.ListOf(union)}}, is: input.ErrType, column: "l", want: "sparse_union"},
		{name: "duplicate_names", fields: []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "a", Type: arrow.BinaryTypes.String}}, is: input.ErrHeader, want: "both named"},
		{name: "empty_name", fields: []arrow.Field{{Name: "", Type: arrow.PrimitiveTypes.Int64}}, is: input.ErrHeader, want: "named"},
		{name: "no_columns", fields: nil, is: input.ErrHeader, want: "no columns"},
	} {
		for _, ext := range []string{".arrow", ".arrows"} {
			t.Run(tc.name+ext, func(t *testing.T) {
				sc := arrow.NewSchema(tc.fields, nil)
				b := array.NewRecordBuilder(mem, sc)
				rec := b.NewRecordBatch()
				b.Release()
				defer rec.Release()
				data, _ := ipcBytes(t, "x"+ext, sc, []arrow.RecordBatch{rec})
				path := writeFile(t, "x"+ext, data)
				_, err := OpenPath(path, Options{})
				var pe *ParseError
				if !errors.As(err, &pe) || !errors.Is(err, tc.is) || pe.Column != tc.column || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want a *ParseError wrapping %v for column %q with %q", err, tc.is, tc.column, tc.want)
				}
			})
		}
	}
}

// TestIPCCorrupt checks that damaged or foreign bytes give a *ParseError
// naming the file, and the record batch when known.
func TestIPCCorrupt(t *testing.T) {
	specs := commonSpecs()[:8]
	mem := memory.NewGoAllocator()
	var recs []arrow.RecordBatch
	for from := 0; from < 9; from += 3 {
		recs = append(recs, buildRecord(mem, specs, from, from+3))
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	file, _ := ipcBytes(t, "c.arrow", specSchema(specs), recs)
	stream, ends := ipcBytes(t, "c.arrows", specSchema(specs), recs)
	footer := int(int32(binary.LittleEndian.Uint32(file[len(file)-10:])))
	for _, tc := range []struct {
		name string
		ext  string
		data []byte
		want string
	}{
		{name: "random", ext: ".arrow", data: bytes.Repeat([]byte("\x13\x37junk"), 300), want: "not an Arrow IPC file"},
		{name: "stream_named_file", ext: ".arrow", data: stream, want: "needs the .arrows extension"},
		{name: "feather_v1", ext: ".feather", data: append([]byte("FEA1"), make([]byte, 100)...), want: "Feather version 1"},
		{name: "empty", ext: ".arrow", data: nil, want: "file is empty"},
		{name: "truncated", ext: ".arrow", data: file[:len(file)/2], want: "does not end with ARROW1"},
		{name: "footer_length", ext: ".arrow", data: patch(file, len(file)-10, []byte{0xff, 0xff, 0xff, 0x0f}), want: "corrupt footer"},
		{name: "footer_garbage", ext: ".arrow", data: patch(file, len(file)-10-footer, bytes.Repeat([]byte{0x5a}, footer)), want: "footer"},
		{name: "random", ext: ".arrows", data: bytes.Repeat([]byte("\x13\x37junk"), 300), want: "message"},
		{name: "csv", ext: ".arrows", data: []byte("a,b\n1,2\n"), want: "message"},
		{name: "empty", ext: ".arrows", data: nil, want: "file is empty"},
		{name: "cut_in_batch_1", ext: ".arrows", data: stream[:ends[1]-20], want: "record batch 1"},
		{name: "batch_1_metadata_zeroed", ext: ".arrows", data: patch(stream, ends[0]+8, make([]byte, 16)), want: "record batch 1"},
	} {
		t.Run(tc.name+tc.ext, func(t *testing.T) {
			path := writeFile(t, "c"+tc.ext, tc.data)
			err := readWhole(path)
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Path != path || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a *ParseError naming the file with %q", err, tc.want)
			}
		})
	}
}

// TestIPCMutations damages files and streams in many random ways: every
// outcome is a result or a *ParseError, never a panic or a crash.
func TestIPCMutations(t *testing.T) {
	specs := ipcSpecs(t)
	for _, tc := range []struct {
		name string
		opts []ipc.Option
	}{
		{name: "m.arrow"},
		{name: "m.arrows"},
		{name: "z.arrow", opts: []ipc.Option{ipc.WithZstd()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig, err := os.ReadFile(writeIPC(t, tc.name, specs, 7, 3, tc.opts...))
			if err != nil {
				t.Fatal(err)
			}
			mutateAndRead(t, tc.name, orig, 100)
		})
	}
}

func TestIPCFileCompressedRefused(t *testing.T) {
	data, _ := ipcBytes(t, "z.arrow", specSchema(commonSpecs()[:2]), nil)
	for _, name := range []string{"z.arrow.gz", "z.feather.zst"} {
		path := filepath.Join(t.TempDir(), name)
		writeCompressed(t, path, data)
		_, err := OpenPath(path, Options{})
		var pe *ParseError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "needs random access") {
			t.Fatalf("%s: got %v", name, err)
		}
	}
}

func TestFormatNames(t *testing.T) {
	for _, tc := range []struct {
		path string
		f    Format
		c    Compression
	}{
		{"a.parquet", Parquet, None},
		{"A.PARQUET", Parquet, None},
		{"a.parquet.gz", Parquet, input.Gzip},
		{"a.arrow", Arrow, None},
		{"a.feather", Arrow, None},
		{"a.ipc", Arrow, None},
		{"a.arrows", Arrows, None},
		{"a.arrows.zst", Arrows, input.Zstd},
	} {
		f, c, err := Detect(tc.path)
		if err != nil || f != tc.f || c != tc.c {
			t.Fatalf("Detect(%s) = %s %s %v", tc.path, f, c, err)
		}
	}
	for in, want := range map[string]Format{"parquet": Parquet, "arrow": Arrow, "feather": Arrow, "ipc": Arrow, "arrows": Arrows, "Parquet": Parquet} {
		if got, err := ParseFormat(in); got != want || err != nil {
			t.Fatalf("ParseFormat(%s) = %s %v", in, got, err)
		}
	}
	if _, err := ParseFormat("orc"); !errors.Is(err, input.ErrFormat) || !strings.Contains(err.Error(), "parquet") {
		t.Fatalf("orc: %v", err)
	}
	// The format option wins over the name.
	path := writeIPC(t, "data.bin", commonSpecs()[:2], 3, 3)
	f := openChecked(t, path, Options{Format: Arrow})
	if plan, err := f.Scan(context.Background(), ScanOptions{}); err != nil || plan.Rows != 3 {
		t.Fatalf("%v %+v", err, plan)
	}
}

// TestIPCPartitionBatches reads one large record batch in small batches.
func TestIPCPartitionBatches(t *testing.T) {
	specs := commonSpecs()
	path := writeIPC(t, "one.arrow", specs, 50, 50)
	for _, size := range []int{1, 7, 50, 1000} {
		t.Run(fmt.Sprint("batch=", size), func(t *testing.T) {
			f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 10})
			if len(plan.Partitions) != 5 {
				t.Fatalf("a record batch of 50 rows, 10 rows a partition: %+v, want 5 ranges of its rows", plan.Partitions)
			}
			rows, ords := readPlan(t, f, plan, size)
			if !reflect.DeepEqual(ords, seq(1, 50)) || !reflect.DeepEqual(rows, wantRows(specs, 50, nil)) {
				t.Fatalf("ordinals %v", ords)
			}
		})
	}
}

// TestIPCStreamDictionaryReplacement reads a stream whose record batches
// each replace the dictionary: a partition must decode its batch with its
// own dictionary, though it passes over the batches before it.
func TestIPCStreamDictionaryReplacement(t *testing.T) {
	mem := memory.NewGoAllocator()
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	sc := arrow.NewSchema([]arrow.Field{{Name: "d", Type: dt, Nullable: true}}, nil)
	var recs []arrow.RecordBatch
	var want [][]any
	for k := 0; k < 4; k++ {
		b := array.NewRecordBuilder(mem, sc)
		db := b.Field(0).(*array.BinaryDictionaryBuilder)
		for i := 0; i < 3; i++ {
			v := fmt.Sprintf("batch %d value %d", k, (i+k)%3)
			if err := db.AppendString(v); err != nil {
				t.Fatal(err)
			}
			want = append(want, []any{v})
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	data, _ := ipcBytes(t, "d.arrows", sc, recs)
	for _, r := range recs {
		r.Release()
	}
	path := writeFile(t, "d.arrows", data)
	for _, rows := range []int64{1, 0} { // a partition per record batch, and one of them all
		f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: rows})
		rows, ords := readPlan(t, f, plan, 2)
		if !reflect.DeepEqual(rows, want) || !reflect.DeepEqual(ords, seq(1, 12)) {
			t.Fatalf("rows %q", rows)
		}
	}
}

// TestIPCFileBatchesNotCopied checks that the record batches of an Arrow
// IPC file are decoded from the bytes read and checked, not from a copy of
// them: a file of one large record batch (as Arrow JS writes a table) was
// held twice, the bytes read and the decoder's copy of its body.
func TestIPCFileBatchesNotCopied(t *testing.T) {
	cs := commonSpecs()
	specs := []colSpec{cs[4], cs[12], cs[13], cs[21], cs[23], cs[28]} // i64 dec128 ts_ms ts_us str dict
	const n = 20000
	path := writeIPC(t, "one.arrow", specs, n, n) // one record batch
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	mem := &peakAllocator{Allocator: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	f, err := OpenPath(path, Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer f.cols.Close()
	plan, err := f.Scan(context.Background(), ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scanned := mem.peak
	rows, _, _, err := readPart(f, plan, plan.Partitions[0], 300)
	if err != nil {
		t.Fatal(err)
	}
	want := wantRows(specs, n, nil)
	for i, row := range rows {
		for c := range row {
			if !reflect.DeepEqual(row[c], want[i][c]) {
				t.Fatalf("row %d, column %s: got %#v, want %#v", i+1, specs[c].name, row[c], want[i][c])
			}
		}
	}
	if len(rows) != n {
		t.Fatalf("%d rows, want %d", len(rows), n)
	}
	// The converter's batches of 300 rows take a few KB; a copy of the
	// record batch's body takes most of the file.
	if limit := st.Size() / 4; scanned > limit || mem.peak > limit {
		t.Fatalf("the allocator held up to %d bytes in the plan pass, %d reading the partition, of a file of %d bytes: the record batch was copied",
			scanned, mem.peak, st.Size())
	}
	mem.Allocator.(*memory.CheckedAllocator).AssertSize(t, 0)
}

// peakAllocator records the most bytes its allocator held at once.
type peakAllocator struct {
	memory.Allocator
	mu        sync.Mutex
	cur, peak int64
}

func (a *peakAllocator) add(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cur += int64(n)
	a.peak = max(a.peak, a.cur)
}

func (a *peakAllocator) Allocate(n int) []byte {
	a.add(n)
	return a.Allocator.Allocate(n)
}

func (a *peakAllocator) Reallocate(n int, b []byte) []byte {
	a.add(n - len(b))
	return a.Allocator.Reallocate(n, b)
}

func (a *peakAllocator) Free(b []byte) {
	a.add(-len(b))
	a.Allocator.Free(b)
}

// TestIPCOpenReadsNoDictionary checks that Open of an IPC file reads its
// footer, not its dictionaries, which can be as large as its record
// batches (a column of mostly distinct strings stored as a dictionary, as
// Polars' categoricals and Arrow JS's dictionaries are): the plan pass
// reads and checks them, and every value still reads as written.
func TestIPCOpenReadsNoDictionary(t *testing.T) {
	const n = 20000
	mem := memory.NewGoAllocator()
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{{Name: "sku", Type: dt, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	db := b.Field(0).(*array.BinaryDictionaryBuilder)
	for i := range n {
		if err := db.AppendString(fmt.Sprintf("SKU-%08d", i*7919%n)); err != nil {
			t.Fatal(err)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	data, _ := ipcBytes(t, "d.arrow", schema, []arrow.RecordBatch{rec})
	path := filepath.Join(t.TempDir(), "d.arrow")
	writeCompressed(t, path, data)

	f := openChecked(t, path, Options{})
	if got := f.Stats().BytesRead; got > int64(len(data))/10 {
		t.Fatalf("Open read %d of %d bytes, want the footer's", got, len(data))
	}
	plan, err := f.Scan(context.Background(), ScanOptions{})
	if err != nil || plan.Rows != n || plan.Rejected != 0 {
		t.Fatalf("scan: %v %+v", err, plan)
	}
	rows, _, _, err := readPart(f, plan, plan.Partitions[0], 0)
	if err != nil || len(rows) != n {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	for i, r := range rows {
		if want := fmt.Sprintf("SKU-%08d", i*7919%n); r[0] != want {
			t.Fatalf("row %d: %v, want %s", i+1, r[0], want)
		}
	}
}
