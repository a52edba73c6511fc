package reader

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/value"
)

// colSpec is a test column: how to append row i to its builder and what
// the reader must return for it, as render (reader_test.go) shows values:
// a string, or nil for null.
type colSpec struct {
	name string
	dt   arrow.DataType
	typ  idemtype.Type
	put  func(b array.Builder, i int)
	want func(i int) any
	// init, if set, prepares a new builder: dictionary columns insert
	// their values first, so that every batch has the same dictionary.
	init func(b array.Builder)
}

// nullRow says which rows of a spec column are null.
func nullRow(i int) bool { return i%4 == 3 }

// scalar builds a spec whose null rows are nullRow and whose other rows are
// appended by put.
func scalar(name string, dt arrow.DataType, typ idemtype.Type, put func(b array.Builder, i int), want func(i int) string) colSpec {
	return colSpec{name: name, dt: dt, typ: typ,
		put: func(b array.Builder, i int) {
			if nullRow(i) {
				b.AppendNull()
				return
			}
			put(b, i)
		},
		want: func(i int) any {
			if nullRow(i) {
				return nil
			}
			return want(i)
		},
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// wantScaled writes v × 10^-scale the slow, obvious way.
func wantScaled(v *big.Int, scale int) string {
	neg := v.Sign() < 0
	s := new(big.Int).Abs(v).String()
	for len(s) <= scale {
		s = "0" + s
	}
	s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	if neg {
		s = "-" + s
	}
	return s
}

func tsText(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

var (
	epochDay = time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)
	baseTS   = time.Date(2024, 2, 29, 13, 45, 30, 0, time.UTC)
)

// commonSpecs are columns of every type both Parquet and Arrow IPC files
// hold, with the reader type and the value text they must come back as.
func commonSpecs() []colSpec {
	big35 := new(big.Int).Exp(big.NewInt(10), big.NewInt(35), nil)
	dec256 := func(i int) *big.Int {
		v := new(big.Int).Add(big35, big.NewInt(int64(i)))
		if i%2 == 1 {
			v.Neg(v)
		}
		return v
	}
	day := func(i int) int64 {
		if i == 0 {
			return -1 // 1969-12-31
		}
		return int64(epochDay.Unix()/86400) + int64(i*37)
	}
	return []colSpec{
		scalar("b", arrow.FixedWidthTypes.Boolean, idemtype.Bool,
			func(b array.Builder, i int) { b.(*array.BooleanBuilder).Append(i%2 == 0) },
			func(i int) string { return fmt.Sprint(i%2 == 0) }),
		scalar("i8", arrow.PrimitiveTypes.Int8, idemtype.Int64,
			func(b array.Builder, i int) { b.(*array.Int8Builder).Append(int8(i%9*30 - 128)) },
			func(i int) string { return fmt.Sprint(i%9*30 - 128) }),
		scalar("i16", arrow.PrimitiveTypes.Int16, idemtype.Int64,
			func(b array.Builder, i int) { b.(*array.Int16Builder).Append(int16(i%20*3000 - 32768)) },
			func(i int) string { return fmt.Sprint(i%20*3000 - 32768) }),
		scalar("i32", arrow.PrimitiveTypes.Int32, idemtype.Int64,
			func(b array.Builder, i int) { b.(*array.Int32Builder).Append(int32(i%20*200_000_000 - 2_000_000_000)) },
			func(i int) string { return fmt.Sprint(i%20*200_000_000 - 2_000_000_000) }),
		scalar("i64", arrow.PrimitiveTypes.Int64, idemtype.Int64,
			func(b array.Builder, i int) { b.(*array.Int64Builder).Append(int64(i%18)*1e18 - math.MaxInt64) },
			func(i int) string { return fmt.Sprint(int64(i%18)*1e18 - math.MaxInt64) }),
		scalar("u8", arrow.PrimitiveTypes.Uint8, idemtype.Int64,
			func(b array.Builder, i int) { b.(*array.Uint8Builder).Append(uint8(255 - i)) },
			func(i int) string { return fmt.Sprint(255 - i) }),
		scalar("u16", arrow.PrimitiveTypes.Uint16, idemtype.Int64,
			func(b array.Builder, i int) { b.(*array.Uint16Builder).Append(uint16(65535 - i)) },
			func(i int) string { return fmt.Sprint(65535 - i) }),
		scalar("u32", arrow.PrimitiveTypes.Uint32, idemtype.Int64,
			func(b array.Builder, i int) { b.(*array.Uint32Builder).Append(uint32(math.MaxUint32 - i)) },
			func(i int) string { return fmt.Sprint(math.MaxUint32 - i) }),
		scalar("u64", arrow.PrimitiveTypes.Uint64, idemtype.Int64,
			func(b array.Builder, i int) { b.(*array.Uint64Builder).Append(math.MaxInt64 - uint64(i)) },
			func(i int) string { return fmt.Sprint(math.MaxInt64 - uint64(i)) }),
		scalar("f16", arrow.FixedWidthTypes.Float16, idemtype.Float64,
			func(b array.Builder, i int) { b.(*array.Float16Builder).Append(float16.New(float32(i) + 0.5)) },
			func(i int) string { return fmt.Sprint(float64(i) + 0.5) }),
		scalar("f32", arrow.PrimitiveTypes.Float32, idemtype.Float64,
			func(b array.Builder, i int) { b.(*array.Float32Builder).Append(float32(i) / 4) },
			func(i int) string { return fmt.Sprint(float64(i) / 4) }),
		scalar("f64", arrow.PrimitiveTypes.Float64, idemtype.Float64,
			func(b array.Builder, i int) { b.(*array.Float64Builder).Append(float64(i)*1.1 - 3) },
			func(i int) string { return fmt.Sprint(float64(i)*1.1 - 3) }),
		scalar("dec128", &arrow.Decimal128Type{Precision: 10, Scale: 2}, idemtype.Decimal,
			func(b array.Builder, i int) {
				b.(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i*125 - 300)))
			},
			func(i int) string { return wantScaled(big.NewInt(int64(i*125-300)), 2) }),
		scalar("dec256", &arrow.Decimal256Type{Precision: 40, Scale: 3}, idemtype.Decimal,
			func(b array.Builder, i int) { b.(*array.Decimal256Builder).Append(decimal256.FromBigInt(dec256(i))) },
			func(i int) string { return wantScaled(dec256(i), 3) }),
		scalar("date32", arrow.FixedWidthTypes.Date32, idemtype.String,
			func(b array.Builder, i int) { b.(*array.Date32Builder).Append(arrow.Date32(day(i))) },
			func(i int) string { return time.Unix(day(i)*86400, 0).UTC().Format("2006-01-02") }),
		scalar("date64", arrow.FixedWidthTypes.Date64, idemtype.String,
			func(b array.Builder, i int) { b.(*array.Date64Builder).Append(arrow.Date64(day(i) * 86_400_000)) },
			func(i int) string { return time.Unix(day(i)*86400, 0).UTC().Format("2006-01-02") }),
		scalar("time32s", arrow.FixedWidthTypes.Time32s, idemtype.String,
			func(b array.Builder, i int) { b.(*array.Time32Builder).Append(arrow.Time32(i % 20 * 3661)) },
			func(i int) string { return time.Unix(int64(i%20*3661), 0).UTC().Format("15:04:05") }),
		scalar("time32ms", arrow.FixedWidthTypes.Time32ms, idemtype.String,
			func(b array.Builder, i int) { b.(*array.Time32Builder).Append(arrow.Time32(i % 20 * 3661010)) },
			func(i int) string { return time.UnixMilli(int64(i % 20 * 3661010)).UTC().Format("15:04:05.999999999") }),
		scalar("time64ns", arrow.FixedWidthTypes.Time64ns, idemtype.String,
			func(b array.Builder, i int) {
				b.(*array.Time64Builder).Append(arrow.Time64(int64(i%20) * 3661000000123))
			},
			func(i int) string { return time.Unix(0, int64(i%20)*3661000000123).UTC().Format("15:04:05.999999999") }),
		scalar("ts_s", &arrow.TimestampType{Unit: arrow.Second}, idemtype.Timestamp,
			func(b array.Builder, i int) {
				b.(*array.TimestampBuilder).Append(arrow.Timestamp(baseTS.Unix() + int64(i)*86461))
			},
			func(i int) string { return tsText(baseTS.Add(time.Duration(i) * 86461 * time.Second)) }),
		scalar("ts_ms", &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, idemtype.Timestamp,
			func(b array.Builder, i int) {
				b.(*array.TimestampBuilder).Append(arrow.Timestamp(baseTS.UnixMilli() - int64(i)*1e11 - 7))
			},
			func(i int) string { return tsText(time.UnixMilli(baseTS.UnixMilli() - int64(i)*1e11 - 7)) }),
		scalar("ts_us", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "America/New_York"}, idemtype.Timestamp,
			func(b array.Builder, i int) {
				b.(*array.TimestampBuilder).Append(arrow.Timestamp(baseTS.UnixMicro() + int64(i)*1000001))
			},
			func(i int) string { return tsText(time.UnixMicro(baseTS.UnixMicro() + int64(i)*1000001)) }),
		scalar("ts_ns", &arrow.TimestampType{Unit: arrow.Nanosecond}, idemtype.Timestamp,
			func(b array.Builder, i int) {
				b.(*array.TimestampBuilder).Append(arrow.Timestamp(baseTS.UnixNano() + int64(i)*7000))
			},
			func(i int) string { return tsText(time.Unix(0, baseTS.UnixNano()+int64(i)*7000)) }),
		scalar("str", arrow.BinaryTypes.String, idemtype.String,
			func(b array.Builder, i int) { b.(*array.StringBuilder).Append(strText(i)) },
			strText),
		scalar("lstr", arrow.BinaryTypes.LargeString, idemtype.String,
			func(b array.Builder, i int) { b.(*array.LargeStringBuilder).Append(strText(i + 1)) },
			func(i int) string { return strText(i + 1) }),
		scalar("bin", arrow.BinaryTypes.Binary, idemtype.String,
			func(b array.Builder, i int) { b.(*array.BinaryBuilder).Append([]byte{0, byte(i), 0xff}) },
			func(i int) string { return fmt.Sprintf(`\x00%02xff`, i) }),
		scalar("lbin", arrow.BinaryTypes.LargeBinary, idemtype.String,
			func(b array.Builder, i int) { b.(*array.BinaryBuilder).Append(bytes.Repeat([]byte{0xab}, i)) },
			func(i int) string { return `\x` + strings.Repeat("ab", i) }),
		scalar("fsb", &arrow.FixedSizeBinaryType{ByteWidth: 3}, idemtype.String,
			func(b array.Builder, i int) { b.(*array.FixedSizeBinaryBuilder).Append([]byte{'A', byte(i), 0x7f}) },
			func(i int) string { return fmt.Sprintf(`\x41%02x7f`, i) }),
		withInit(scalar("dict", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}, idemtype.String,
			func(b array.Builder, i int) {
				if err := b.(*array.BinaryDictionaryBuilder).AppendString(colors[i%3]); err != nil {
					panic(err)
				}
			},
			func(i int) string { return colors[i%3] }), primeColors),
		scalar("list", arrow.ListOf(arrow.PrimitiveTypes.Int32), idemtype.JSON,
			func(b array.Builder, i int) {
				lb := b.(*array.ListBuilder)
				lb.Append(true)
				if i%4 == 1 {
					return // an empty list
				}
				vb := lb.ValueBuilder().(*array.Int32Builder)
				vb.Append(int32(i))
				vb.AppendNull()
				vb.Append(int32(-i))
			},
			func(i int) string {
				if i%4 == 1 {
					return "[]"
				}
				return fmt.Sprintf("[%d,null,%d]", i, -i)
			}),
		scalar("llist", arrow.LargeListOf(arrow.BinaryTypes.String), idemtype.JSON,
			func(b array.Builder, i int) {
				lb := b.(*array.LargeListBuilder)
				lb.Append(true)
				vb := lb.ValueBuilder().(*array.StringBuilder)
				vb.Append("q\"uote\\")
				vb.Append(fmt.Sprintf("line\n%d\t\x01é", i))
			},
			func(i int) string { return fmt.Sprintf(`["q\"uote\\","line\n%d\t\u0001é"]`, i) }),
		// Parquet cannot write a null fixed-size list (its null slots
		// have values), so this one is never null.
		{name: "fsl", dt: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float64), typ: idemtype.JSON,
			put: func(b array.Builder, i int) {
				lb := b.(*array.FixedSizeListBuilder)
				lb.Append(true)
				vb := lb.ValueBuilder().(*array.Float64Builder)
				vb.Append(float64(i) / 2)
				if i%4 == 2 {
					vb.AppendNull()
				} else {
					vb.Append(float64(i)*1e300 - 0.25)
				}
			},
			want: func(i int) any {
				if i%4 == 2 {
					return fmt.Sprintf("[%v,null]", ftoa(float64(i)/2))
				}
				return fmt.Sprintf("[%v,%v]", ftoa(float64(i)/2), ftoa(float64(i)*1e300-0.25))
			}},
		scalar("struct", structType, idemtype.JSON,
			func(b array.Builder, i int) {
				sb := b.(*array.StructBuilder)
				sb.Append(true)
				sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(i))
				if i == 2 {
					sb.FieldBuilder(1).AppendNull()
				} else {
					sb.FieldBuilder(1).(*array.StringBuilder).Append(fmt.Sprint("x", i))
				}
				sb.FieldBuilder(2).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i*125 + 5)))
				sb.FieldBuilder(3).(*array.Date32Builder).Append(arrow.Date32(day(i)))
				sb.FieldBuilder(4).(*array.TimestampBuilder).Append(arrow.Timestamp(baseTS.UnixMilli() + int64(i)))
				sb.FieldBuilder(5).(*array.BinaryBuilder).Append([]byte{byte(i)})
			},
			func(i int) string {
				b := `"x` + fmt.Sprint(i) + `"`
				if i == 2 {
					b = "null"
				}
				return fmt.Sprintf(`{"a":%d,"b":%s,"d":%s,"t":"%s","ts":"%s","bin":"\\x%02x"}`, i, b,
					wantScaled(big.NewInt(int64(i*125+5)), 2), time.Unix(day(i)*86400, 0).UTC().Format("2006-01-02"),
					time.UnixMilli(baseTS.UnixMilli()+int64(i)).UTC().Format("2006-01-02T15:04:05.999Z"), i)
			}),
		scalar("map", arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), idemtype.JSON,
			func(b array.Builder, i int) {
				mb := b.(*array.MapBuilder)
				mb.Append(true)
				for k := 0; k < i%3; k++ {
					mb.KeyBuilder().(*array.StringBuilder).Append(fmt.Sprint("k", k))
					if k == 1 {
						mb.ItemBuilder().AppendNull()
					} else {
						mb.ItemBuilder().(*array.Int64Builder).Append(int64(i * k))
					}
				}
			},
			func(i int) string {
				parts := []string{}
				for k := 0; k < i%3; k++ {
					v := fmt.Sprint(i * k)
					if k == 1 {
						v = "null"
					}
					parts = append(parts, fmt.Sprintf(`"k%d":%s`, k, v))
				}
				return "{" + strings.Join(parts, ",") + "}"
			}),
		{name: "nulls", dt: arrow.Null, typ: idemtype.String,
			put:  func(b array.Builder, i int) { b.AppendNull() },
			want: func(int) any { return nil }},
	}
}

var colors = []string{"red", "green", "blue"}

func withInit(s colSpec, init func(array.Builder)) colSpec {
	s.init = init
	return s
}

// primeColors inserts colors into a string dictionary builder.
func primeColors(b array.Builder) {
	vals := array.NewStringBuilder(memory.DefaultAllocator)
	defer vals.Release()
	vals.AppendValues(colors, nil)
	arr := vals.NewStringArray()
	defer arr.Release()
	if err := b.(*array.BinaryDictionaryBuilder).InsertStringDictValues(arr); err != nil {
		panic(err)
	}
}

var structType = arrow.StructOf(
	arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
	arrow.Field{Name: "d", Type: &arrow.Decimal128Type{Precision: 6, Scale: 2}, Nullable: true},
	arrow.Field{Name: "t", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	arrow.Field{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
	arrow.Field{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
)

// strText is text with multi-byte characters, quotes and an empty string.
func strText(i int) string {
	if i == 1 {
		return ""
	}
	return fmt.Sprintf("héllo, \"wörld\" %d ✓", i)
}

// buildRecord builds rows from..to-1 of specs with mem.
func buildRecord(mem memory.Allocator, specs []colSpec, from, to int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, specSchema(specs))
	defer b.Release()
	for k, s := range specs {
		if s.init != nil {
			s.init(b.Field(k))
		}
	}
	for i := from; i < to; i++ {
		for k, s := range specs {
			s.put(b.Field(k), i)
		}
	}
	return b.NewRecordBatch()
}

func specSchema(specs []colSpec) *arrow.Schema {
	fields := make([]arrow.Field, len(specs))
	for k, s := range specs {
		fields[k] = arrow.Field{Name: s.name, Type: s.dt, Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}

// wantRows returns the rows the reader must return for specs, in ordinal
// order, skipping the 0-based rows in skip.
func wantRows(specs []colSpec, n int, skip map[int]bool) [][]any {
	var out [][]any
	for i := 0; i < n; i++ {
		if skip[i] {
			continue
		}
		row := make([]any, len(specs))
		for k, s := range specs {
			row[k] = s.want(i)
		}
		out = append(out, row)
	}
	return out
}

func wantSchema(specs []colSpec) string {
	var s Schema
	for _, c := range specs {
		s = append(s, value.Column{Name: c.name, Type: c.typ})
	}
	return schemaString(s)
}

// writeParquet writes n rows of specs to a new Parquet file of row groups
// of groupRows rows, with the Arrow schema stored when storeSchema is set.
// Each row group is written from its own record: arrow-go v18.8.0's writer
// ignores the offset of a sliced fixed_size_list, so pqarrow.WriteTable
// would repeat the first row group's lists in the others.
func writeParquet(t testing.TB, name string, specs []colSpec, n int, groupRows int64, storeSchema bool, opts ...parquet.WriterProperty) string {
	t.Helper()
	mem := memory.NewGoAllocator()
	path := filepath.Join(t.TempDir(), name)
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var ap []pqarrow.WriterOption
	if storeSchema {
		ap = append(ap, pqarrow.WithStoreSchema())
	}
	fw, err := pqarrow.NewFileWriter(specSchema(specs), out, parquet.NewWriterProperties(opts...), pqarrow.NewArrowWriterProperties(ap...))
	if err != nil {
		t.Fatal(err)
	}
	for from := 0; from < n; from += int(groupRows) {
		rec := buildRecord(mem, specs, from, min(n, from+int(groupRows)))
		err := fw.Write(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeParquetRecord(t testing.TB, name string, rec arrow.RecordBatch, groupRows int64, storeSchema bool, opts ...parquet.WriterProperty) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	tbl := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	defer tbl.Release()
	var ap []pqarrow.WriterOption
	if storeSchema {
		ap = append(ap, pqarrow.WithStoreSchema())
	}
	if err := pqarrow.WriteTable(tbl, out, groupRows, parquet.NewWriterProperties(opts...), pqarrow.NewArrowWriterProperties(ap...)); err != nil {
		t.Fatal(err)
	}
	return path
}

// parquetGroupBytes returns the bytes of each row group's column chunks,
// what a partition reader must read and nothing more.
func parquetGroupBytes(t *testing.T, path string) []int64 {
	t.Helper()
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []int64
	for k := 0; k < r.NumRowGroups(); k++ {
		rg := r.MetaData().RowGroup(k)
		var n int64
		for c := 0; c < rg.NumColumns(); c++ {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			n += cc.TotalCompressedSize()
		}
		out = append(out, n)
	}
	return out
}

// checkTyped plans path, checks its schema and partitions, and reads each
// partition on its own, last first, checking its rows, ordinals and the
// reader's counters. It returns the file and plan.
func checkTyped(t *testing.T, path string, opts Options, specs []colSpec, n int, partRows []int64, groupBytes []int64) (*File, *Plan) {
	t.Helper()
	f, plan := scanChecked(t, path, opts, ScanOptions{PartitionRows: 2, KeepRejects: 10})
	if got, want := schemaString(plan.Schema), wantSchema(specs); got != want {
		t.Fatalf("schema\n got %s\nwant %s", got, want)
	}
	if plan.Rows != int64(n) || plan.Rejected != 0 {
		t.Fatalf("rows %d rejected %d (%+v), want %d and 0", plan.Rows, plan.Rejected, plan.Rejects, n)
	}
	if len(plan.Partitions) != len(partRows) {
		t.Fatalf("%d partitions, want %d: %+v", len(plan.Partitions), len(partRows), plan.Partitions)
	}
	first := int64(1)
	for k, p := range plan.Partitions {
		if p.Index != k || p.First != first || p.Rows != partRows[k] || p.Offset != int64(k) || p.Length != 1 || p.Rejected != 0 {
			t.Fatalf("partition %d: %+v, want first %d rows %d offset %d", k, p, first, partRows[k], k)
		}
		first += p.Rows
	}
	if got := f.Stats().RowGroupsRead; got != int64(len(partRows)) {
		t.Fatalf("the plan pass decoded %d units, want %d", got, len(partRows))
	}
	want := wantRows(specs, n, nil)
	for k := len(plan.Partitions) - 1; k >= 0; k-- {
		p := plan.Partitions[k]
		before := f.Stats()
		rows, ords, rejected, err := readPart(f, plan, p, 2)
		if err != nil {
			t.Fatalf("partition %d: %v", k, err)
		}
		after := f.Stats()
		if d := after.RowGroupsRead - before.RowGroupsRead; d != 1 {
			t.Fatalf("partition %d decoded %d units, want 1", k, d)
		}
		if groupBytes != nil {
			want := groupBytes[k]
			if k == len(plan.Partitions)-1 {
				want = 0 // read first: the bytes the plan pass left (see TestPlanPassBytes)
			}
			if d := after.BytesRead - before.BytesRead; d != want {
				t.Fatalf("partition %d read %d bytes, want %d (its row group has %d)", k, d, want, groupBytes[k])
			}
		}
		if rejected != 0 {
			t.Fatalf("partition %d rejected %d rows", k, rejected)
		}
		if !reflect.DeepEqual(ords, seq(p.First, p.Rows)) {
			t.Fatalf("partition %d: ordinals %v", k, ords)
		}
		for i, row := range rows {
			wantRow := want[p.First-1+int64(i)]
			for c := range row {
				if !reflect.DeepEqual(row[c], wantRow[c]) {
					t.Fatalf("partition %d, ordinal %d, column %s: got %#v, want %#v", k, ords[i], specs[c].name, row[c], wantRow[c])
				}
			}
		}
	}
	return f, plan
}

func TestParquetTypes(t *testing.T) {
	specs := commonSpecs()
	for _, tc := range []struct {
		name  string
		store bool
		opts  []parquet.WriterProperty
	}{
		{name: "arrow_schema_stored", store: true},
		{name: "parquet_schema_only", store: false},
		{name: "dictionary_snappy", store: true, opts: []parquet.WriterProperty{parquet.WithDictionaryDefault(true), parquet.WithCompression(compressSnappy)}},
		{name: "zstd_v1_pages", store: false, opts: []parquet.WriterProperty{parquet.WithCompression(compressZstd), parquet.WithDataPageVersion(parquet.DataPageV1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Without the stored Arrow schema, a dictionary reads back as its
			// values, large strings as strings, date64 as date32: the reader
			// maps them to the same types and text.
			s := specs
			path := writeParquet(t, "t.parquet", s, 10, 3, tc.store, tc.opts...)
			f, _ := checkTyped(t, path, Options{}, s, 10, []int64{3, 3, 3, 1}, parquetGroupBytes(t, path))
			if f.Format() != Parquet || f.Compression() != None {
				t.Fatalf("format %s %s", f.Format(), f.Compression())
			}
			if got, want := strings.Join(f.Header(), ","), strings.Join(specNames(s), ","); got != want {
				t.Fatalf("header %s, want %s", got, want)
			}
		})
	}
}

func specNames(specs []colSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.name)
	}
	return out
}

// TestParquetConcurrentPartitions reads every partition at once, as the
// pipeline's workers do (run with -race).
func TestParquetConcurrentPartitions(t *testing.T) {
	specs := commonSpecs()
	path := writeParquet(t, "c.parquet", specs, 40, 4, true)
	f, plan := scanChecked(t, path, Options{}, ScanOptions{})
	if len(plan.Partitions) != 10 {
		t.Fatalf("%d partitions", len(plan.Partitions))
	}
	want := wantRows(specs, 40, nil)
	var wg sync.WaitGroup
	errs := make([]error, len(plan.Partitions))
	for k, p := range plan.Partitions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rows, ords, _, err := readPart(f, plan, p, 3)
			if err == nil && !reflect.DeepEqual(rows, want[p.First-1:p.First-1+p.Rows]) {
				err = fmt.Errorf("rows differ: %v\n got %q\nwant %q", ords, rows, want[p.First-1:p.First-1+p.Rows])
			}
			errs[k] = err
		}()
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			t.Fatalf("partition %d: %v", k, err)
		}
	}
	if got := f.Stats().RowGroupsRead; got != 20 {
		t.Fatalf("decoded %d row groups, want 10 by the plan and 10 by the partitions", got)
	}
}

// TestParquetSourceChanged flips one byte inside row group 1's data: only
// partition 1 notices, and says so with ErrSourceChanged.
func TestParquetSourceChanged(t *testing.T) {
	specs := commonSpecs()[:6]
	path := writeParquet(t, "s.parquet", specs, 12, 3, true, parquet.WithDictionaryDefault(false))
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := r.MetaData().RowGroup(1).ColumnChunk(4)
	if err != nil {
		t.Fatal(err)
	}
	flip := cc.DataPageOffset() + cc.TotalCompressedSize() - 2 // a value byte of the last page
	r.Close()
	for _, tc := range []struct {
		name    string
		edit    func([]byte) []byte
		changed []bool
	}{
		{name: "byte_in_row_group_1", edit: func(b []byte) []byte { b[flip] ^= 0x40; return b }, changed: []bool{false, true, false, false}},
		{name: "truncated_footer_kept", edit: func(b []byte) []byte { return b[:flip] }, changed: []bool{false, true, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			p2 := filepath.Join(t.TempDir(), "s.parquet")
			if err := os.WriteFile(p2, orig, 0o644); err != nil {
				t.Fatal(err)
			}
			f, plan := scanChecked(t, p2, Options{}, ScanOptions{})
			f.Close() // the last group's reader reads the file too, not the plan pass's bytes (see TestPlanPassBytes)
			if err := os.WriteFile(p2, tc.edit(append([]byte(nil), orig...)), 0o644); err != nil {
				t.Fatal(err)
			}
			want := wantRows(specs, 12, nil)
			for k, p := range plan.Partitions {
				rows, _, _, err := readPart(f, plan, p, 100)
				if tc.changed[k] {
					if !errors.Is(err, ErrSourceChanged) {
						t.Fatalf("partition %d: got %v, want ErrSourceChanged", k, err)
					}
					var pe *ParseError
					if !errors.As(err, &pe) || pe.Path != p2 || !strings.Contains(err.Error(), fmt.Sprintf("row group %d", k)) {
						t.Fatalf("partition %d: %v is not a *ParseError naming the file and row group", k, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("partition %d: %v", k, err)
				}
				if !reflect.DeepEqual(rows, want[p.First-1:p.First-1+p.Rows]) {
					t.Fatalf("partition %d: rows differ", k)
				}
			}
			// A new plan of the edited file differs from the old one.
			if tc.name == "byte_in_row_group_1" {
				g := openChecked(t, p2, Options{})
				plan2, err := g.Scan(context.Background(), ScanOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if plan2.Partitions[1].CRC == plan.Partitions[1].CRC || plan2.Partitions[0].CRC != plan.Partitions[0].CRC {
					t.Fatalf("CRCs: old %+v new %+v", plan.Partitions, plan2.Partitions)
				}
			}
		})
	}
}

// TestParquetRejects checks uint64 overflow, sub-microsecond timestamps,
// invalid text and NotNull columns become bad rows with the right codes and
// ordinals, in the plan and in the partition readers.
func TestParquetRejects(t *testing.T) {
	mem := memory.NewGoAllocator()
	rec := rejectRecord(mem)
	defer rec.Release()
	path := writeParquetRecord(t, "r.parquet", rec, 4, true)
	checkRejects(t, path)
}

// rejectRecord holds 10 rows (ordinals 1-10) with a defect in ordinals 2,
// 4, 5, 7 and 9.
func rejectRecord(mem memory.Allocator) arrow.RecordBatch {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "u", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "old", Type: &arrow.TimestampType{Unit: arrow.Second}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	for i := 0; i < 10; i++ {
		ord := i + 1
		if ord == 7 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(int64(ord))
		}
		switch ord {
		case 2:
			b.Field(1).(*array.Uint64Builder).Append(math.MaxUint64)
		case 4:
			b.Field(1).(*array.Uint64Builder).Append(1 << 63)
		default:
			b.Field(1).(*array.Uint64Builder).Append(math.MaxInt64)
		}
		switch ord {
		case 4, 5:
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(baseTS.UnixNano() + 1500)) // 1.5 µs
		default:
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(baseTS.UnixNano() + 3000))
		}
		switch ord {
		case 9:
			b.Field(3).(*array.StringBuilder).BinaryBuilder.Append([]byte("bad \xff utf8"))
		case 10:
			b.Field(3).(*array.StringBuilder).Append("nul\x00byte") // checked after NotNull; see below
		default:
			b.Field(3).(*array.StringBuilder).Append(fmt.Sprint("ok ", ord))
		}
		if ord == 3 {
			b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(-62167219201)) // 1 s before year 0000
		} else {
			b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(0))
		}
	}
	return b.NewRecordBatch()
}

func checkRejects(t *testing.T, path string) {
	t.Helper()
	f, plan := scanChecked(t, path, Options{NotNull: []string{"id"}}, ScanOptions{KeepRejects: 100})
	type rej struct {
		Ordinal int64
		Column  string
		Value   string
		Code    string
	}
	var got []rej
	for _, r := range plan.Rejects {
		got = append(got, rej{r.Ordinal, r.Column, r.Value, r.Code})
	}
	want := []rej{
		{2, "u", "18446744073709551615", value.CodeRange},
		{3, "old", "-0001-12-31T23:59:59", value.CodeRange},
		{4, "u", "9223372036854775808", value.CodeRange},
		{5, "ts", "2024-02-29T13:45:30.0000015Z", value.CodePrecision},
		{7, "id", "", value.CodeNull},
		{9, "s", "bad \xff utf8", CodeUTF8},
		{10, "s", "nul\x00byte", value.CodeNUL},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rejects\n got %+v\nwant %+v", got, want)
	}
	if plan.Rejected != int64(len(want)) || plan.Rows != 10 {
		t.Fatalf("rows %d rejected %d", plan.Rows, plan.Rejected)
	}
	rows, ords := readPlan(t, f, plan, 2)
	if !reflect.DeepEqual(ords, []int64{1, 6, 8}) {
		t.Fatalf("good ordinals %v", ords)
	}
	wantTS := tsText(time.Unix(0, baseTS.UnixNano()+3000))
	if rows[1][0] != "6" || rows[1][1] != "9223372036854775807" || rows[1][2] != wantTS || rows[1][3] != "ok 6" {
		t.Fatalf("row 6: %q", rows[1])
	}
	// Keeping fewer rejects keeps the first ones but counts them all.
	_, plan2 := scanChecked(t, path, Options{NotNull: []string{"id"}}, ScanOptions{KeepRejects: 2})
	if len(plan2.Rejects) != 2 || plan2.Rejects[1].Ordinal != 3 || plan2.Rejected != 7 {
		t.Fatalf("keep 2: %+v, %d", plan2.Rejects, plan2.Rejected)
	}
}

// TestParquetForcedTypes checks Options.Types: a column may be forced to
// its own type, to string or to json; anything else is a clear error.
func TestParquetForcedTypes(t *testing.T) {
	specs := commonSpecs()
	path := writeParquet(t, "f.parquet", specs, 6, 4, true)
	pick := func(names ...string) []colSpec {
		var out []colSpec
		for _, s := range specs {
			for _, n := range names {
				if s.name == n {
					out = append(out, s)
				}
			}
		}
		return out
	}
	for _, tc := range []struct {
		column string
		typ    idemtype.Type
		want   []any // rows 0..5
		err    string
	}{
		{column: "i64", typ: idemtype.Int64, want: []any{"-9223372036854775807", "-8223372036854775807", "-7223372036854775807", nil, "-5223372036854775807", "-4223372036854775807"}},
		{column: "i8", typ: idemtype.String, want: []any{"-128", "-98", "-68", nil, "-8", "22"}},
		{column: "i8", typ: idemtype.JSON, want: []any{"-128", "-98", "-68", nil, "-8", "22"}},
		{column: "b", typ: idemtype.JSON, want: []any{"true", "false", "true", nil, "true", "false"}},
		{column: "f32", typ: idemtype.String, want: []any{"0", "0.25", "0.5", nil, "1", "1.25"}},
		{column: "ts_ns", typ: idemtype.String, want: []any{"2024-02-29T13:45:30", "2024-02-29T13:45:30.000007", "2024-02-29T13:45:30.000014", nil, "2024-02-29T13:45:30.000028", "2024-02-29T13:45:30.000035"}},
		{column: "ts_ms", typ: idemtype.JSON, want: msJSON(0, 1, 2, -1, 4, 5)},
		{column: "str", typ: idemtype.JSON, want: []any{`"héllo, \"wörld\" 0 ✓"`, `""`, `"héllo, \"wörld\" 2 ✓"`, nil, `"héllo, \"wörld\" 4 ✓"`, `"héllo, \"wörld\" 5 ✓"`}},
		{column: "dec128", typ: idemtype.JSON, want: []any{"-3.00", "-1.75", "-0.50", nil, "2.00", "3.25"}},
		{column: "list", typ: idemtype.String, want: []any{"[0,null,0]", "[]", "[2,null,-2]", nil, "[4,null,-4]", "[]"}},
		{column: "bin", typ: idemtype.JSON, want: []any{`"\\x0000ff"`, `"\\x0001ff"`, `"\\x0002ff"`, nil, `"\\x0004ff"`, `"\\x0005ff"`}},
		{column: "i8", typ: idemtype.Bool, err: `column "i8"`},
		{column: "str", typ: idemtype.Int64, err: `cannot be read as int64`},
		{column: "list", typ: idemtype.Timestamp, err: `(only as json or string)`},
	} {
		t.Run(tc.column+"_as_"+tc.typ.String(), func(t *testing.T) {
			opts := Options{Types: map[string]idemtype.Type{tc.column: tc.typ}}
			if tc.err != "" {
				_, err := OpenPath(path, opts)
				var pe *ParseError
				if !errors.As(err, &pe) || !errors.Is(err, input.ErrType) || pe.Column != tc.column || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want a *ParseError wrapping ErrType naming %q with %q", err, tc.column, tc.err)
				}
				return
			}
			f, plan := scanChecked(t, path, opts, ScanOptions{})
			k := plan.Schema.Index(tc.column)
			if plan.Schema[k].Type != tc.typ {
				t.Fatalf("column type %s", plan.Schema[k].Type)
			}
			rows, _ := readPlan(t, f, plan, 4)
			var got []any
			for _, r := range rows {
				got = append(got, r[k])
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
			// The other columns are unchanged.
			for _, s := range pick("u16", "str") {
				c := plan.Schema.Index(s.name)
				if s.name != tc.column && (rows[2][c] != s.want(2) || plan.Schema[c].Type != s.typ) {
					t.Fatalf("column %s: %v", s.name, rows[2][c])
				}
			}
		})
	}
}

// TestParquetJSONAnnotation reads a Parquet JSON column written without the
// Arrow schema, which the Arrow mapping alone would read as binary.
func TestParquetJSONAnnotation(t *testing.T) {
	mem := memory.NewGoAllocator()
	jt, err := extensions.NewJSONType(arrow.BinaryTypes.String)
	if err != nil {
		t.Fatal(err)
	}
	sc := arrow.NewSchema([]arrow.Field{{Name: "doc", Type: jt, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, sc)
	sb := b.Field(0).(*array.ExtensionBuilder).StorageBuilder().(*array.StringBuilder)
	for _, v := range []string{`{"a":[1,2]}`, `"text"`, `not json`, ``} {
		sb.Append(v)
	}
	sb.AppendNull()
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	for _, store := range []bool{false, true} {
		t.Run(fmt.Sprint("stored_schema=", store), func(t *testing.T) {
			path := writeParquetRecord(t, "j.parquet", rec, 10, store)
			f, plan := scanChecked(t, path, Options{}, ScanOptions{KeepRejects: 10})
			if schemaString(plan.Schema) != "doc:json" {
				t.Fatalf("schema %s", schemaString(plan.Schema))
			}
			if plan.Rejected != 2 || plan.Rejects[0].Ordinal != 3 || plan.Rejects[0].Code != CodeJSON || plan.Rejects[1].Ordinal != 4 {
				t.Fatalf("rejects %+v", plan.Rejects)
			}
			rows, ords := readPlan(t, f, plan, 10)
			if !reflect.DeepEqual(rows, [][]any{{`{"a":[1,2]}`}, {`"text"`}, {nil}}) || !reflect.DeepEqual(ords, []int64{1, 2, 5}) {
				t.Fatalf("rows %q ords %v", rows, ords)
			}
		})
	}
}

// TestParquetCorrupt checks that a file that is not Parquet, or is damaged,
// gives a *ParseError naming the file (and the row group when known) and
// never a panic.
func TestParquetCorrupt(t *testing.T) {
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
	cc, err := r.MetaData().RowGroup(1).ColumnChunk(2)
	if err != nil {
		t.Fatal(err)
	}
	page := cc.DataPageOffset()
	r.Close()
	footerLen := int(binary.LittleEndian.Uint32(orig[len(orig)-8:]))
	rnd := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 5000)
	for i := range random {
		random[i] = byte(rnd.Uint32())
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string // in the message
		at   string // "open" or "scan": where it must fail
	}{
		{name: "random_bytes", data: random, want: "not a Parquet file", at: "open"},
		{name: "csv_named_parquet", data: []byte("a,b\n1,2\n"), want: "not a Parquet file", at: "open"},
		{name: "magic_only", data: []byte("PAR1PAR1"), want: "too short", at: "open"},
		{name: "empty", data: nil, want: "file is empty", at: "open"},
		{name: "truncated_half", data: orig[:len(orig)/2], want: "does not end with PAR1", at: "open"},
		{name: "truncated_last_byte", data: orig[:len(orig)-1], want: "does not end with PAR1", at: "open"},
		{name: "footer_length_too_big", data: patch(orig, len(orig)-8, []byte{0xff, 0xff, 0xff, 0x7f}), want: "corrupt footer", at: "open"},
		{name: "footer_garbage", data: patch(orig, len(orig)-8-footerLen, bytes.Repeat([]byte{0xee}, footerLen/2)), want: "footer", at: "open"},
		{name: "footer_zeroed", data: patch(orig, len(orig)-8-footerLen, make([]byte, footerLen)), want: "footer", at: "open"},
		{name: "page_header_garbage", data: patch(orig, int(page), bytes.Repeat([]byte{0xff}, 24)), want: "row group 1 (rows 4-6)", at: "scan"},
		{name: "page_header_zeroed", data: patch(orig, int(page), make([]byte, 24)), want: "row group 1 (rows 4-6)", at: "scan"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "x.parquet", tc.data)
			f, err := OpenPath(path, Options{})
			if err == nil {
				if tc.at == "open" {
					t.Fatal("Open succeeded")
				}
				_, err = f.Scan(context.Background(), ScanOptions{})
			} else if tc.at != "open" {
				t.Fatalf("Open: %v", err)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Path != path || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a *ParseError naming the file with %q", err, tc.want)
			}
		})
	}
}

// msJSON is the JSON of the ts_ms spec column's rows (-1 for null).
func msJSON(rows ...int) []any {
	var out []any
	for _, i := range rows {
		if i < 0 {
			out = append(out, nil)
			continue
		}
		v := baseTS.UnixMilli() - int64(i)*1e11 - 7
		out = append(out, `"`+time.UnixMilli(v).UTC().Format("2006-01-02T15:04:05.999")+`Z"`)
	}
	return out
}

func patch(b []byte, at int, with []byte) []byte {
	out := append([]byte(nil), b...)
	copy(out[at:], with)
	return out
}

// TestParquetMutations damages a file in many random ways and reads it in
// full each time: every outcome must be a result or an error, never a
// panic, and every error a *ParseError.
func TestParquetMutations(t *testing.T) {
	specs := commonSpecs()
	orig, err := os.ReadFile(writeParquet(t, "m.parquet", specs, 9, 4, true, parquet.WithCompression(compressSnappy)))
	if err != nil {
		t.Fatal(err)
	}
	mutateAndRead(t, "m.parquet", orig, 150)
}

// mutateAndRead reads n damaged copies of orig: flipped bytes, cuts and
// overwritten runs.
func mutateAndRead(t *testing.T, name string, orig []byte, n int) {
	t.Helper()
	rnd := rand.New(rand.NewPCG(7, uint64(len(orig))))
	dir := t.TempDir()
	failed := 0
	for i := 0; i < n; i++ {
		data := append([]byte(nil), orig...)
		switch i % 3 {
		case 0:
			for j := 0; j < 1+rnd.IntN(4); j++ {
				data[rnd.IntN(len(data))] ^= byte(1 + rnd.IntN(255))
			}
		case 1:
			data = data[:rnd.IntN(len(data))]
		case 2:
			at := rnd.IntN(len(data))
			for j := at; j < min(len(data), at+1+rnd.IntN(64)); j++ {
				data[j] = byte(rnd.Uint32())
			}
		}
		path := filepath.Join(dir, fmt.Sprint(i, "-", name))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		err := readWhole(path)
		if err == nil {
			continue
		}
		failed++
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Path != path {
			t.Fatalf("mutation %d: %v (%T) is not a *ParseError naming the file", i, err, err)
		}
	}
	if failed == 0 {
		t.Fatal("no mutation was noticed")
	}
}

// readWhole opens, plans and reads every partition of path.
func readWhole(path string) error {
	f, err := OpenPath(path, Options{})
	if err != nil {
		return err
	}
	plan, err := f.Scan(context.Background(), ScanOptions{})
	if err != nil {
		return err
	}
	for b, err := range f.Batches(plan, plan.Partitions, 5) {
		if err != nil {
			return err
		}
		b.Release()
	}
	return nil
}

// TestParquetCompressedRefused checks that a Parquet file inside gzip or
// zstd is refused with a clear error, since it needs random access.
func TestParquetCompressedRefused(t *testing.T) {
	orig, err := os.ReadFile(writeParquet(t, "z.parquet", commonSpecs()[:3], 5, 5, true))
	if err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{".gz", ".zst"} {
		t.Run(ext[1:], func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "z.parquet"+ext)
			writeCompressed(t, path, orig)
			_, err := OpenPath(path, Options{})
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, input.ErrFormat) || !strings.Contains(err.Error(), "needs random access") ||
				!strings.Contains(err.Error(), "decompress it first") {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// TestParquetEmpty reads Parquet files with columns but no rows: without
// row groups, and with one empty row group.
func TestParquetEmpty(t *testing.T) {
	specs := commonSpecs()[:4]
	empty := buildRecord(memory.NewGoAllocator(), specs, 0, 0)
	defer empty.Release()
	for name, path := range map[string]string{
		"no_row_group":    writeParquet(t, "e.parquet", specs, 0, 10, true),
		"empty_row_group": writeParquetRecord(t, "e.parquet", empty, 10, true),
	} {
		t.Run(name, func(t *testing.T) {
			f, plan := scanChecked(t, path, Options{}, ScanOptions{})
			if plan.Rows != 0 || len(plan.Partitions) != 0 || schemaString(plan.Schema) != "b:bool,i8:int64,i16:int64,i32:int64" {
				t.Fatalf("plan %+v", plan)
			}
			if got := f.Stats().RowGroupsRead; got != 0 {
				t.Fatalf("decoded %d row groups", got)
			}
		})
	}
}

// TestParquetPlanMismatch reads a partition with a plan whose schema is not
// the file's: an error, not a wrong batch.
func TestParquetPlanMismatch(t *testing.T) {
	path := writeParquet(t, "p.parquet", commonSpecs()[:3], 5, 5, true)
	f, plan := scanChecked(t, path, Options{}, ScanOptions{})
	other := *plan
	other.Schema = append(Schema(nil), plan.Schema...)
	other.Schema[1].Type = idemtype.String
	if _, err := f.Partition(&other, plan.Partitions[0], 10); !errors.Is(err, ErrSourceChanged) {
		t.Fatalf("got %v", err)
	}
	bad := plan.Partitions[0]
	bad.Offset = 7
	if _, _, _, err := readPart(f, plan, bad, 10); !errors.Is(err, ErrSourceChanged) {
		t.Fatalf("row group 7: got %v", err)
	}
	bad = plan.Partitions[0]
	bad.Rows = 6 // fewer would be a range of the group's rows (its bytes, the CRC's, are the plan's)
	if _, _, _, err := readPart(f, plan, bad, 10); !errors.Is(err, ErrSourceChanged) {
		t.Fatalf("rows: got %v", err)
	}
	bad = plan.Partitions[0]
	bad.Rejected = 1
	if _, _, _, err := readPart(f, plan, bad, 10); !errors.Is(err, ErrSourceChanged) {
		t.Fatalf("rejected: got %v", err)
	}
}

// TestStatsText checks that text formats count the bytes read from disk,
// so that a resumed import can show it did not re-read done partitions.
func TestStatsText(t *testing.T) {
	var b strings.Builder
	b.WriteString("id,name\n")
	for i := 1; i <= 30000; i++ {
		fmt.Fprintf(&b, "%d,name number %d\n", i, i)
	}
	data := b.String()
	path := writeFile(t, "s.csv", []byte(data))
	f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 10000})
	afterScan := f.Stats().BytesRead
	// Open reads the header in pieces of at most 64 KiB, Scan the whole
	// file; a partition reader reads at most its buffer (1 MiB) past the
	// partition.
	const headerBuffer, initialBuffer = 64 << 10, 1 << 20
	if afterScan < int64(len(data)) || afterScan > int64(len(data))+headerBuffer {
		t.Fatalf("read %d bytes for a file of %d, want the file and at most %d bytes for its header", afterScan, len(data), headerBuffer)
	}
	last := plan.Partitions[2]
	if _, _, _, err := readPart(f, plan, last, 1000); err != nil {
		t.Fatal(err)
	}
	d := f.Stats().BytesRead - afterScan
	if d < last.Length || d > last.Length+int64(initialBuffer) {
		t.Fatalf("the last partition read %d bytes, its length is %d", d, last.Length)
	}
	if f.Stats().RowGroupsRead != 0 {
		t.Fatal("row groups counted for CSV")
	}
}

// The compressions the tests write Parquet with.
var (
	compressSnappy = compress.Codecs.Snappy
	compressZstd   = compress.Codecs.Zstd
)

// BenchmarkParquetVsCSV measures the plan pass and a full partition read
// of the same 1M rows of 8 mixed columns, as Parquet and as CSV.
func BenchmarkParquetVsCSV(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	specs := benchSpecs()
	mem := memory.NewGoAllocator()
	rec := buildRecord(mem, specs, 0, n)
	defer rec.Release()
	pq := writeParquetRecord(b, "bench.parquet", rec, 128*1024, true, parquet.WithCompression(compressSnappy))
	csvPath := filepath.Join(dir, "bench.csv")
	writeBenchCSV(b, csvPath, rec)
	for _, path := range []string{pq, csvPath} {
		st, _ := os.Stat(path)
		b.Logf("%s: %d bytes", filepath.Base(path), st.Size())
		b.Run(filepath.Ext(path)[1:]+"/plan", func(b *testing.B) { benchPlan(b, path, n, Options{}) })
		f, err := OpenPath(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		plan, err := f.Scan(context.Background(), ScanOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Ext(path)[1:]+"/read", func(b *testing.B) {
			for range b.N {
				var rows int64
				for _, p := range plan.Partitions {
					pr, err := f.Partition(plan, p, 1024)
					if err != nil {
						b.Fatal(err)
					}
					for {
						bt, err := pr.Next()
						if err == io.EOF {
							break
						}
						if err != nil {
							b.Fatal(err)
						}
						rows += bt.Record.NumRows()
						bt.Release()
					}
					pr.Close()
				}
				if rows != n {
					b.Fatalf("read %d rows", rows)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// benchSpecs are 8 mixed columns without nulls.
func benchSpecs() []colSpec {
	return []colSpec{
		{name: "id", dt: arrow.PrimitiveTypes.Int64, put: func(b array.Builder, i int) { b.(*array.Int64Builder).Append(int64(i + 1)) }},
		{name: "qty", dt: arrow.PrimitiveTypes.Int32, put: func(b array.Builder, i int) { b.(*array.Int32Builder).Append(int32(i % 1000)) }},
		{name: "price", dt: arrow.PrimitiveTypes.Float64, put: func(b array.Builder, i int) { b.(*array.Float64Builder).Append(float64(i%10000) / 100) }},
		{name: "ok", dt: arrow.FixedWidthTypes.Boolean, put: func(b array.Builder, i int) { b.(*array.BooleanBuilder).Append(i%3 == 0) }},
		{name: "at", dt: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, put: func(b array.Builder, i int) {
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(baseTS.UnixMicro() + int64(i)*1_000_003))
		}},
		{name: "name", dt: arrow.BinaryTypes.String, put: func(b array.Builder, i int) { b.(*array.StringBuilder).Append(fmt.Sprint("customer ", i%50000)) }},
		{name: "city", dt: arrow.BinaryTypes.String, put: func(b array.Builder, i int) { b.(*array.StringBuilder).Append(colors[i%3] + " city") }},
		{name: "note", dt: arrow.BinaryTypes.String, put: func(b array.Builder, i int) {
			b.(*array.StringBuilder).Append(fmt.Sprintf("order %d shipped in %d days", i, i%9))
		}},
	}
}

// writeBenchCSV writes rec as CSV, values as the reader renders them.
func writeBenchCSV(b *testing.B, path string, rec arrow.RecordBatch) {
	out, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	var buf []byte
	for k := 0; k < int(rec.NumCols()); k++ {
		if k > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, rec.ColumnName(k)...)
	}
	buf = append(buf, '\n')
	for i := 0; i < int(rec.NumRows()); i++ {
		for k := 0; k < int(rec.NumCols()); k++ {
			if k > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, rec.Column(k).ValueStr(i)...)
		}
		buf = append(buf, '\n')
		if len(buf) > 1<<20 {
			if _, err := out.Write(buf); err != nil {
				b.Fatal(err)
			}
			buf = buf[:0]
		}
	}
	if _, err := out.Write(buf); err != nil {
		b.Fatal(err)
	}
}

// TestParquetSplitDecode: the plan pass decodes a flat row group as two
// halves of its columns, on one goroutine or two, with the same plan (the
// halves' failures are columnar's TestSplitUnitHalves).
func TestParquetSplitDecode(t *testing.T) {
	rec := rejectRecord(memory.NewGoAllocator())
	defer rec.Release()
	path := writeParquetRecord(t, "r.parquet", rec, 3, true)
	scan := func(second chan struct{}) *Plan {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		f, err := OpenPath(path, Options{NotNull: []string{"id"}, Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		o := ScanOptions{KeepRejects: 100}
		if second != nil {
			o.secondCore = second
		}
		plan, err := f.Scan(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		return plan
	}
	two, one := scan(nil), scan(make(chan struct{}))
	if !reflect.DeepEqual(two, one) || two.Rejected != 7 || len(two.Partitions) != 4 {
		t.Fatalf("two goroutines %+v\none %+v", two, one)
	}
}

// TestParquetClaimedSizes reads a file whose footer claims that its string
// column's chunk decompresses to far more than it does. The decoders
// reserve each batch's string bytes by that claim: one no batch could
// need must not become an allocation (of a terabyte, which ends the
// process; or of a product past int64), and the file, whose pages give
// their own sizes, reads as written.
func TestParquetClaimedSizes(t *testing.T) {
	specs := []colSpec{scalar("s", arrow.BinaryTypes.String, idemtype.String,
		func(b array.Builder, i int) { b.(*array.StringBuilder).Append(strText(i)) }, strText)}
	const n = 1000
	orig, err := os.ReadFile(writeParquet(t, "s.parquet", specs, n, n, false))
	if err != nil {
		t.Fatal(err)
	}
	r, err := file.NewParquetReader(bytes.NewReader(orig))
	if err != nil {
		t.Fatal(err)
	}
	cc, err := r.MetaData().RowGroup(0).ColumnChunk(0)
	if err != nil {
		t.Fatal(err)
	}
	unc, comp := cc.TotalUncompressedSize(), cc.TotalCompressedSize()
	r.Close()
	// Compact Thrift: ColumnMetaData's fields 6 and 7, each an i64 one
	// field id after the last (0x16), as a zigzag varint.
	sizes := func(unc, comp int64) []byte {
		b := binary.AppendUvarint([]byte{0x16}, uint64(unc)<<1)
		return binary.AppendUvarint(append(b, 0x16), uint64(comp)<<1)
	}
	footerLen := int(binary.LittleEndian.Uint32(orig[len(orig)-8:]))
	body, footer := orig[:len(orig)-8-footerLen], orig[len(orig)-8-footerLen:len(orig)-8]
	if c := bytes.Count(footer, sizes(unc, comp)); c != 1 {
		t.Fatalf("the chunk's sizes are %d times in the footer", c)
	}
	for _, claim := range []int64{1 << 40, 1 << 62} {
		t.Run(fmt.Sprint(claim), func(t *testing.T) {
			f := bytes.Replace(footer, sizes(unc, comp), sizes(claim, comp), 1)
			data := append(append(append([]byte(nil), body...), f...), binary.LittleEndian.AppendUint32(nil, uint32(len(f)))...)
			path := writeFile(t, "claimed.parquet", append(data, "PAR1"...))
			_, rows := readRows(t, path, Options{}, 0)
			if got, want := fmt.Sprint(rows), fmt.Sprint(wantRows(specs, n, nil)); got != want {
				t.Errorf("read %.200s…, want %.200s…", got, want)
			}
		})
	}
}
