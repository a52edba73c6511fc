package reader

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestNarrowIntegersAndShortTextRead reads an Arrow file whose integer
// columns are of fewer than 64 bits, none null (widened straight into
// their arrays) but one, beside a dictionary column of values of 0 to 40 bytes
// (gathered 16 bytes at a time where they are short): every row must read
// its own values, in batches of whole record batches and of slices, and
// with a bad row in a batch (the builders' path) as without.
func TestNarrowIntegersAndShortTextRead(t *testing.T) {
	var dict []string
	for n := range 41 {
		dict = append(dict, strings.Repeat(string(rune('a'+n%26)), n)) // n bytes
	}
	const rows = 300
	for _, bad := range []bool{false, true} {
		t.Run(fmt.Sprintf("bad=%v", bad), func(t *testing.T) {
			mem := memory.NewGoAllocator()
			schema := arrow.NewSchema([]arrow.Field{
				{Name: "i8", Type: arrow.PrimitiveTypes.Int8},
				{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
				{Name: "i32", Type: arrow.PrimitiveTypes.Int32},
				{Name: "u8", Type: arrow.PrimitiveTypes.Uint8},
				{Name: "u16", Type: arrow.PrimitiveTypes.Uint16},
				{Name: "u32", Type: arrow.PrimitiveTypes.Uint32},
				{Name: "word", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}},
			}, nil)
			intSchema := arrow.NewSchema(schema.Fields()[:6], nil)
			words := append([]string(nil), dict...)
			if bad {
				words = append(words, "nul\x00") // a bad row's value
			}
			sb := array.NewStringBuilder(mem)
			sb.AppendValues(words, nil)
			values := sb.NewArray()
			sb.Release()
			defer values.Release()
			dt := schema.Field(6).Type.(*arrow.DictionaryType)
			var recs []arrow.RecordBatch
			var want []string
			for from := 0; from < rows; from += 100 {
				b := array.NewRecordBuilder(mem, intSchema)
				ib := array.NewInt32Builder(mem)
				for i := from; i < from+100; i++ {
					v := int64(i*7919) - 150000
					b.Field(0).(*array.Int8Builder).Append(int8(v))
					i16 := fmt.Sprint(int16(v))
					if i%13 == 0 {
						b.Field(1).(*array.Int16Builder).AppendNull()
						i16 = "null"
					} else {
						b.Field(1).(*array.Int16Builder).Append(int16(v))
					}
					b.Field(2).(*array.Int32Builder).Append(int32(v * 4099))
					b.Field(3).(*array.Uint8Builder).Append(uint8(v))
					b.Field(4).(*array.Uint16Builder).Append(uint16(v))
					b.Field(5).(*array.Uint32Builder).Append(uint32(v * 4099))
					j := (i * 17) % len(dict)
					if bad && i == 150 {
						j = len(dict)
					}
					ib.Append(int32(j))
					if j < len(dict) {
						want = append(want, fmt.Sprintf("%d %s %d %d %d %d %q", int8(v), i16, int32(v*4099), uint8(v), uint16(v), uint32(v*4099), words[j]))
					}
				}
				ints := b.NewRecordBatch()
				indexes := ib.NewArray()
				words := array.NewDictionaryArray(dt, indexes, values)
				recs = append(recs, array.NewRecordBatch(schema, append(ints.Columns()[:6:6], words), 100))
				for _, r := range []interface{ Release() }{ints, indexes, words, ib, b} {
					r.Release()
				}
			}
			path := writeRecords(t, "n.arrow", schema, recs)
			for _, batchRows := range []int{7, 0} {
				f := openChecked(t, path, Options{})
				plan, err := f.Scan(context.Background(), ScanOptions{KeepRejects: 10})
				if err != nil {
					t.Fatal(err)
				}
				got, _ := readPlan(t, f, plan, batchRows)
				if len(got) != len(want) {
					t.Fatalf("batches of %d rows: %d rows, want %d", batchRows, len(got), len(want))
				}
				for i, row := range got {
					if row[1] == nil {
						row[1] = "null"
					}
					if g := fmt.Sprintf("%s %s %s %s %s %s %q", row...); g != want[i] {
						t.Fatalf("batches of %d rows: row %d is %s, want %s", batchRows, i, g, want[i])
					}
				}
			}
		})
	}
}
