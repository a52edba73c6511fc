package columnar

import (
	"bytes"
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"

	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/partition"
)

// TestPlanSkipsColumns checks that a plan pass that leaves the columns it
// has nothing to check in undecoded (planner.skips) makes the plan a pass
// decoding every column makes: the same partitions, CRCs, bad rows and
// rejects, each with all of its row's values, and the same key
// candidates. The files are the other writers' (decimals, timestamps,
// dictionaries, several row groups) and one with bad rows: text that is
// not UTF-8, a uint64 past the int64 maximum, a null in a NOT NULL column.
func TestPlanSkipsColumns(t *testing.T) {
	files := append(otherWritersParquet(t), fixtureFile{"bad.parquet", badRowsParquet(t, 50, 7)},
		fixtureFile{"bad-plain.parquet", badRowsParquet(t, 50, 7, parquet.WithDictionaryDefault(false))},
		fixtureFile{"bad-dict.parquet", badRowsParquet(t, 600, 200, parquet.WithDictionaryDefault(false), parquet.WithDictionaryFor("note", true))},
		// note of an encoding the page decoder leaves to pqarrow, which
		// decodes it for the converter to check, though the pass skips it.
		fixtureFile{"bad-delta.parquet", badRowsParquet(t, 50, 7, parquet.WithDictionaryDefault(false), parquet.WithEncodingFor("note", parquet.Encodings.DeltaLengthByteArray))})
	for _, fl := range files {
		for _, o := range []struct {
			name string
			opts input.Options
			only string // the only file the case is for
		}{
			{"plain", input.Options{}, ""},
			{"key", input.Options{Key: []string{"order_id"}}, ""},
			{"select", input.Options{Select: []string{"note", "order_id", "unit_price"}}, ""},
			{"not_null", input.Options{NotNull: []string{"quantity"}}, ""},
			{"select_ints", input.Options{Select: []string{"order_id", "big", "quantity"}}, "bad.parquet"},
		} {
			if o.only != "" && o.only != fl.name {
				continue
			}
			t.Run(fl.name+"/"+o.name, func(t *testing.T) {
				open := func() *File {
					in := testFile(t, fl.name, fl.data)
					in.Opts.Key, in.Opts.Select, in.Opts.NotNull = o.opts.Key, o.opts.Select, o.opts.NotNull
					f, err := Open(in)
					if err != nil {
						t.Fatal(err)
					}
					return f
				}
				so := partition.ScanOptions{PartitionRows: 20, KeepRejects: 1000}
				whole := open()
				want, wantCands, err := whole.scan(context.Background(), so, false, new(int))
				if err != nil {
					t.Fatal(err)
				}
				whole.Close()
				f := open()
				defer f.Close()
				if s := (&planner{f: f, cv: f.converter(f.schema)}).skips(); s == nil && o.name == "plain" {
					t.Fatal("no column is left undecoded")
				}
				got, gotCands, err := f.Scan(context.Background(), so)
				if err != nil {
					t.Fatal(err)
				}
				if len(got.Partitions) == 0 {
					t.Fatal("no partitions")
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("plan:\n got %+v\nwant %+v", got, want)
				}
				if !reflect.DeepEqual(gotCands, wantCands) {
					t.Errorf("key candidates %v, want %v", gotCands, wantCands)
				}
			})
		}
	}
}

// badRowsParquet returns a Parquet file of n rows in row groups of group
// rows with the orders' column names: order_id int64 (repeating, for key
// candidates), quantity int32 (null every 11th row), unit_price
// decimal(12,2), score float64, big uint64 (past the int64 maximum every
// 13th row), and note, text that is not UTF-8 every 9th row (with props,
// that of the writer's properties, such as its dictionaries: a writer
// keeps note dictionary-encoded only in row groups of many more rows than
// values, such as 200).
func badRowsParquet(t *testing.T, n int, group int64, props ...parquet.WriterProperty) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "order_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "quantity", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "unit_price", Type: &arrow.Decimal128Type{Precision: 12, Scale: 2}, Nullable: true},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64},
		{Name: "big", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i % 37))
		if i%11 == 5 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Int32Builder).Append(int32(i * 3))
		}
		b.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i)*1234 - 5000))
		b.Field(3).(*array.Float64Builder).Append(float64(i) / 7)
		big := uint64(i)
		if i%13 == 4 {
			big = math.MaxInt64 + uint64(i)
		}
		b.Field(4).(*array.Uint64Builder).Append(big)
		note := []byte("note " + string(rune('a'+i%26)))
		if i%9 == 2 {
			note = append(note, 0xff, 0xfe)
		}
		b.Field(5).(*array.StringBuilder).BinaryBuilder.Append(note)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return parquetOf(t, rec, append([]parquet.WriterProperty{parquet.WithMaxRowGroupLength(group), parquet.WithDictionaryDefault(true)}, props...)...)
}

// TestPlanChecksSkippedColumns checks that the plan pass refuses a file
// whose pages are corrupt in a column it leaves undecoded, as its
// partition readers would: a data page of fewer values than its row
// group's rows.
func TestPlanChecksSkippedColumns(t *testing.T) {
	data := badRowsParquet(t, 50, 7)
	in := testFile(t, "bad.parquet", data)
	in.Opts.Select = []string{"order_id", "quantity"}
	f, err := Open(in)
	if err != nil {
		t.Fatal(err)
	}
	if s := (&planner{f: f, cv: f.converter(f.schema)}).skips(); s == nil || !s[0] {
		t.Fatal("order_id is decoded")
	}
	cc, err := f.parquet().md.RowGroup(1).ColumnChunk(0) // order_id
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	// The page header, whose bytes the loader checks, says the page holds
	// 6 values (num_values, field 1 of the DataPageHeader, field 5: zigzag
	// 12), not 7: the chunk's values end a row early.
	bad := withPageHeader(t, data, cc.DataPageOffset(), []byte{0x2c, 0x15, 0x0e}, 0x0c)
	in = testFile(t, "bad.parquet", bad)
	in.Opts.Select = []string{"order_id", "quantity"}
	f, err = Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, _, err := f.Scan(context.Background(), partition.ScanOptions{}); err == nil {
		t.Fatal("the plan pass took the file")
	} else {
		t.Log(err)
	}
}

// TestPlanChecksSkippedDictionaryIndexes checks that the plan pass refuses
// a file whose dictionary indexes, in a column it leaves undecoded (whose
// dictionary's values it does not keep), point past the dictionary, as its
// partition readers would.
func TestPlanChecksSkippedDictionaryIndexes(t *testing.T) {
	data := textParquet(t, 3000, 700, parquet.WithDictionaryDefault(true))
	f, err := Open(testFile(t, "bad.parquet", data))
	if err != nil {
		t.Fatal(err)
	}
	cc, err := f.parquet().md.RowGroup(1).ColumnChunk(4) // qty: 9 values
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !cc.HasDictionaryPage() {
		t.Fatalf("qty has no dictionary: %v", cc.Encodings())
	}
	// The dictionary page header says the page holds 4 values
	// (num_values, field 1 of the DictionaryPageHeader, field 7: zigzag 8),
	// not 9: the indexes 4 to 8 point past it.
	bad := withPageHeader(t, data, cc.DictionaryPageOffset(), []byte{0x4c, 0x15, 0x12}, 0x08)
	in := testFile(t, "bad.parquet", bad)
	in.Opts.Select = []string{"qty", "id"}
	f, err = Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if s := (&planner{f: f, cv: f.converter(f.schema)}).skips(); s == nil || !s[0] {
		t.Fatal("qty is decoded")
	}
	_, _, err = f.Scan(context.Background(), partition.ScanOptions{})
	if err == nil || !strings.Contains(err.Error(), "dictionary index") {
		t.Fatalf("the plan pass took the file: %v", err)
	}
	t.Log(err)
}

// withPageHeader returns a copy of the Parquet file data in which a field
// of the page header at offset at is given another value: field is the
// field's bytes as the file has them (Thrift compact: the nested header's
// field, i32 num_values and its zigzag varint of one byte), found in the
// header's first 32 bytes, and its last byte is set to v. It fails t when
// the header holds no such bytes.
func withPageHeader(t *testing.T, data []byte, at int64, field []byte, v byte) []byte {
	t.Helper()
	bad := bytes.Clone(data)
	hdr := bad[at:][:32]
	i := bytes.Index(hdr, field)
	if i < 0 {
		t.Fatalf("no page header field % x in % x", field, hdr)
	}
	hdr[i+len(field)-1] = v
	return bad
}
