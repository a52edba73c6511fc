package sink_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/sink"
)

// TestAppendDate: AppendDate writes FormatDate's text for every date: at
// the edges of years and months, before the epoch, in leap years, at years
// 0 and 9999, beyond them (left to FormatDate), at Date32's own edges, and
// at random.
func TestAppendDate(t *testing.T) {
	day := func(y int, mo time.Month, d int) int32 {
		return int32(time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
	}
	cases := []int32{
		0, -1, 1, math.MinInt32, math.MaxInt32,
		day(1000, 1, 1), day(9999, 12, 31), day(0, 1, 1), day(1, 1, 1), day(1969, 12, 31),
		day(2000, 2, 29), day(1900, 2, 28), day(1900, 3, 1), day(2024, 2, 29), day(2100, 3, 1),
		day(10000, 1, 1), day(-1, 12, 31), day(12345, 6, 7),
	}
	r := rand.New(rand.NewPCG(3, 4))
	lo, hi := day(-50, 1, 1), day(10050, 1, 1)
	for range 200_000 {
		cases = append(cases, lo+r.Int32N(hi-lo))
	}
	for _, d := range cases {
		want := sink.FormatDate(d)
		if got := string(sink.AppendDate([]byte("x,"), d)); got != "x,"+want {
			t.Fatalf("AppendDate(%d) = %q, want %q", d, got, "x,"+want)
		}
	}
}

// TestTextualDates: Textual turns a date column into FormatDate's text,
// row by row, nulls kept, in a column with and without nulls and in a
// slice of one (an array whose data starts at an offset); other columns
// are left as they are.
func TestTextualDates(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	days := []int32{0, -1, 19_000, 2_932_896, -719_528, 3_000_000, math.MinInt32, 20_000, 1, 365}
	db := array.NewDate32Builder(mem)
	ib := array.NewInt64Builder(mem)
	for i, d := range days {
		if i%4 == 3 {
			db.AppendNull()
		} else {
			db.Append(arrow.Date32(d))
		}
		ib.Append(int64(i))
	}
	withNulls := db.NewArray()
	defer withNulls.Release()
	for _, d := range days {
		db.Append(arrow.Date32(d))
	}
	whole := db.NewArray()
	defer whole.Release()
	ints := ib.NewArray()
	defer ints.Release()
	db.Release()
	ib.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true}, {Name: "i", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for _, c := range []struct {
		name string
		date arrow.Array
		i, j int64
	}{
		{"nulls", withNulls, 0, int64(len(days))},
		{"no nulls", whole, 0, int64(len(days))},
		{"slice with nulls", withNulls, 2, 9},
		{"slice", whole, 3, 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			date := array.NewSlice(c.date, c.i, c.j)
			defer date.Release()
			in := array.NewSlice(ints, c.i, c.j)
			defer in.Release()
			rec := array.NewRecordBatch(schema, []arrow.Array{date, in}, c.j-c.i)
			defer rec.Release()
			got := sink.Textual(rec)
			defer got.Release()
			text, ok := got.Column(0).(*array.String)
			if !ok {
				t.Fatalf("column 0 is %s, want a string column", got.Column(0).DataType())
			}
			if got.Column(1) != in {
				t.Errorf("column 1 changed")
			}
			if text.Len() != date.Len() || text.NullN() != date.NullN() {
				t.Fatalf("%d rows, %d null; want %d, %d", text.Len(), text.NullN(), date.Len(), date.NullN())
			}
			for k := range date.Len() {
				switch {
				case date.IsNull(k) != text.IsNull(k):
					t.Errorf("row %d: null %v, want %v", k, text.IsNull(k), date.IsNull(k))
				case date.IsValid(k) && text.Value(k) != sink.FormatDate(int32(date.(*array.Date32).Value(k))):
					t.Errorf("row %d: %q, want %q", k, text.Value(k), sink.FormatDate(int32(date.(*array.Date32).Value(k))))
				}
			}
		})
	}
}
