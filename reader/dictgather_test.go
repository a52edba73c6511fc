package reader

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// dictRecord returns a batch of an id column, a dictionary column of
// strings with indexes of type index (null where idx is -1) over dict
// (null where dict's value is "<null>"), and a decimal(10,2) column of
// cents (null where valid is false).
func dictRecord(t *testing.T, mem memory.Allocator, schema *arrow.Schema, first int, idx []int, dict []string, cents []int64, valid []bool) arrow.RecordBatch {
	t.Helper()
	dt := schema.Field(1).Type.(*arrow.DictionaryType)
	ib := array.NewBuilder(mem, dt.IndexType)
	defer ib.Release()
	for _, j := range idx {
		if j < 0 {
			ib.AppendNull()
			continue
		}
		switch b := ib.(type) {
		case *array.Int8Builder:
			b.Append(int8(j))
		case *array.Uint16Builder:
			b.Append(uint16(j))
		case *array.Int32Builder:
			b.Append(int32(j))
		case *array.Uint64Builder:
			b.Append(uint64(j))
		default:
			t.Fatalf("index type %s", dt.IndexType)
		}
	}
	indexes := ib.NewArray()
	defer indexes.Release()
	sb := array.NewStringBuilder(mem)
	defer sb.Release()
	for _, s := range dict {
		if s == "<null>" {
			sb.AppendNull()
		} else {
			sb.Append(s)
		}
	}
	values := sb.NewArray()
	defer values.Release()
	colors := array.NewDictionaryArray(dt, indexes, values)
	defer colors.Release()
	ids := array.NewInt64Builder(mem)
	defer ids.Release()
	prices := array.NewDecimal128Builder(mem, schema.Field(2).Type.(*arrow.Decimal128Type))
	defer prices.Release()
	for i := range idx {
		ids.Append(int64(first + i))
		if valid[i] {
			prices.Append(decimal128.FromI64(cents[i]))
		} else {
			prices.AppendNull()
		}
	}
	idArr, priceArr := ids.NewArray(), prices.NewArray()
	defer idArr.Release()
	defer priceArr.Release()
	return array.NewRecordBatch(schema, []arrow.Array{idArr, colors, priceArr}, int64(len(idx)))
}

// TestDictionaryColumnsRead reads Arrow files whose string column is a
// dictionary, under each kind of index, with null indexes, null
// dictionary values and a value that makes its rows bad, beside a decimal
// column with nulls: every good row must read its own value, or null,
// in batches of whole record batches and of slices shorter than the
// dictionary, and the bad rows none.
func TestDictionaryColumnsRead(t *testing.T) {
	dict := []string{"red", "<null>", "green", "nul\x00", "", "blue"}
	idx := []int{0, -1, 1, 2, 3, 4, 5, 0, 2, -1, 3, 1, 5, 4}
	cents := []int64{1250, 0, -5, 0, 999, 7, 100, 1, -123456, 3, 0, 42, 5, 10}
	valid := []bool{true, false, true, true, true, true, true, false, true, true, false, true, true, true}
	var want []string
	for i, j := range idx {
		if j == 3 {
			continue // the NUL: a bad row
		}
		color := "<nil>"
		if j >= 0 && dict[j] != "<null>" {
			color = dict[j]
		}
		price := "<nil>"
		if valid[i] {
			price = fmt.Sprintf("%s%d.%02d", map[bool]string{true: "-"}[cents[i] < 0], max(cents[i], -cents[i])/100, max(cents[i], -cents[i])%100)
		}
		want = append(want, fmt.Sprintf("%d %s %s", i+1, color, price))
	}
	for _, index := range []arrow.DataType{arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Uint64} {
		t.Run(index.String(), func(t *testing.T) {
			mem := memory.NewGoAllocator()
			schema := arrow.NewSchema([]arrow.Field{
				{Name: "id", Type: arrow.PrimitiveTypes.Int64},
				{Name: "color", Type: &arrow.DictionaryType{IndexType: index, ValueType: arrow.BinaryTypes.String}, Nullable: true},
				{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
			}, nil)
			// Two record batches sharing the dictionary.
			var recs []arrow.RecordBatch
			for from := 0; from < len(idx); from += 7 {
				recs = append(recs, dictRecord(t, mem, schema, from+1, idx[from:from+7], dict, cents[from:from+7], valid[from:from+7]))
			}
			path := writeRecords(t, "d.arrow", schema, recs)
			for _, batchRows := range []int{2, 0} {
				f := openChecked(t, path, Options{})
				plan, err := f.Scan(context.Background(), ScanOptions{KeepRejects: 10})
				if err != nil {
					t.Fatal(err)
				}
				if got := badRows(plan); got != "[5:nul 11:nul]" {
					t.Fatalf("bad rows %s", got)
				}
				rows, ords := readPlan(t, f, plan, batchRows)
				var got []string
				for i, row := range rows {
					color, price := "<nil>", "<nil>"
					if row[1] != nil {
						color = row[1].(string)
					}
					if row[2] != nil {
						price = row[2].(string)
					}
					got = append(got, fmt.Sprintf("%d %s %s", ords[i], color, price))
				}
				if g, w := fmt.Sprintf("%q", got), fmt.Sprintf("%q", want); g != w {
					t.Errorf("batches of %d rows:\n got %s\nwant %s", batchRows, g, w)
				}
			}
		})
	}
}

// TestReplacedDictionaryChecked reads an IPC stream whose dictionary, longer
// than the batches read, is replaced by another of the same length holding
// a NUL: the rows that use it are bad, though the first dictionary was
// clean.
func TestReplacedDictionaryChecked(t *testing.T) {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "color", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, Nullable: true},
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	}, nil)
	first := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	second := []string{"a", "b", "c", "d", "e", "f", "nul\x00", "h"}
	idx := []int{0, 6, 2, 6}
	cents, valid := []int64{1, 2, 3, 4}, []bool{true, true, true, true}
	recs := []arrow.RecordBatch{
		dictRecord(t, mem, schema, 1, idx, first, cents, valid),
		dictRecord(t, mem, schema, 5, idx, second, cents, valid),
	}
	path := writeRecords(t, "d.arrows", schema, recs)
	for _, batchRows := range []int{2, 0} {
		f := openChecked(t, path, Options{})
		plan, err := f.Scan(context.Background(), ScanOptions{KeepRejects: 10})
		if err != nil {
			t.Fatal(err)
		}
		if got := badRows(plan); got != "[6:nul 8:nul]" {
			t.Fatalf("bad rows %s, want [6:nul 8:nul]", got)
		}
		rows, ords := readPlan(t, f, plan, batchRows)
		if got := fmt.Sprint(rows, ords); got != "[[1 a 0.01] [2 g 0.02] [3 c 0.03] [4 g 0.04] [5 a 0.01] [7 c 0.03]] [1 2 3 4 5 7]" {
			t.Errorf("batches of %d rows: read %s", batchRows, got)
		}
	}
}

// TestTimestampUnitsConverted reads timestamps of seconds, milliseconds and
// nanoseconds from an Arrow file, columns without nulls and with them: a
// value past 9999-12-31 or with a part finer than a microsecond makes its
// row bad, and every other reads as its instant, whether the batch has a
// bad row or not.
func TestTimestampUnitsConverted(t *testing.T) {
	mem := memory.NewGoAllocator()
	ms := &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}
	ns := &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}
	sec := &arrow.TimestampType{Unit: arrow.Second, TimeZone: "UTC"}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ms", Type: ms}, {Name: "ns", Type: ns}, {Name: "s", Type: sec, Nullable: true},
	}, nil)
	build := func(msv, nsv, sv []int64, sValid []bool) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		for i := range msv {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(msv[i]))
			b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(nsv[i]))
			if sValid[i] {
				b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(sv[i]))
			} else {
				b.Field(2).(*array.TimestampBuilder).AppendNull()
			}
		}
		return b.NewRecordBatch()
	}
	recs := []arrow.RecordBatch{
		// Every row good.
		build([]int64{0, 1_700_000_000_123, -1}, []int64{1_000, -2_000, 1_700_000_000_123_456_000}, []int64{0, 1, -86_400}, []bool{true, false, true}),
		// Row 5 past the year 9999 in ms, row 6 finer than a microsecond.
		build([]int64{86_400_000, 253_402_300_800_000, 5}, []int64{0, 0, 1_001}, []int64{2, 3, 4}, []bool{true, true, true}),
	}
	data, _ := ipcBytes(t, "t.arrow", schema, recs)
	for _, r := range recs {
		r.Release()
	}
	path := writeFile(t, "t.arrow", data)
	f := openChecked(t, path, Options{})
	plan, err := f.Scan(context.Background(), ScanOptions{KeepRejects: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := badRows(plan); got != "[5:range 6:precision]" {
		t.Fatalf("bad rows %s, want [5:range 6:precision]", got)
	}
	rows, ords := readPlan(t, f, plan, 0)
	want := "[[1970-01-01T00:00:00.000000Z 1970-01-01T00:00:00.000001Z 1970-01-01T00:00:00.000000Z] " +
		"[2023-11-14T22:13:20.123000Z 1969-12-31T23:59:59.999998Z <nil>] " +
		"[1969-12-31T23:59:59.999000Z 2023-11-14T22:13:20.123456Z 1969-12-31T00:00:00.000000Z] " +
		"[1970-01-02T00:00:00.000000Z 1970-01-01T00:00:00.000000Z 1970-01-01T00:00:02.000000Z]] [1 2 3 4]"
	if got := fmt.Sprint(rows, ords); got != want {
		t.Errorf("read\n%s\nwant\n%s", got, want)
	}
}

// writeRecords writes recs (released) as an Arrow IPC file, or stream when
// name ends in .arrows, named name in the test's directory, and returns
// its path.
func writeRecords(t *testing.T, name string, schema *arrow.Schema, recs []arrow.RecordBatch) string {
	t.Helper()
	data, _ := ipcBytes(t, name, schema, recs)
	for _, r := range recs {
		r.Release()
	}
	return writeFile(t, name, data)
}

// badRows lists the bad rows plan kept, as ordinal:code.
func badRows(plan *Plan) string {
	var bad []string
	for _, r := range plan.Rejects {
		bad = append(bad, fmt.Sprintf("%d:%s", r.Ordinal, r.Code))
	}
	return fmt.Sprint(bad)
}
