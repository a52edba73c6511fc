//go:build cgo

package sqlite

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// TestDatesStoredAsText: the writer stores each date as sink.FormatDate's
// text, rendered as it writes the row: at the edges of years and months,
// before the epoch, in leap years, at years 0 and 9999 and beyond them
// (a sign, a fifth digit), at Date32's own edges and at random; nulls
// kept, in a batch and in a slice of one (an array whose data starts at
// an offset); in ordinal mode (the batch table), by a natural key
// (inserted, then found unchanged when written again) and as the key
// itself.
func TestDatesStoredAsText(t *testing.T) {
	day := func(y int, mo time.Month, d int) int32 {
		return int32(time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
	}
	var days []int32
	seen := map[int32]bool{}
	add := func(d int32) {
		if !seen[d] { // distinct: the date is a key below
			seen[d] = true
			days = append(days, d)
		}
	}
	for _, d := range []int32{
		0, -1, 1, math.MinInt32, math.MaxInt32,
		day(1000, 1, 1), day(9999, 12, 31), day(0, 1, 1), day(1, 1, 1), day(-1, 12, 31),
		day(2000, 2, 29), day(1900, 2, 28), day(1900, 3, 1), day(2024, 2, 29), day(2100, 3, 1),
		day(10000, 1, 1), day(-10000, 3, 1), day(12345, 6, 7),
	} {
		add(d)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for lo, hi := day(-50, 1, 1), day(10050, 1, 1); len(days) < 3000; {
		add(lo + r.Int32N(hi-lo))
	}
	build := func(nulls bool) arrow.Array {
		b := array.NewDate32Builder(memory.DefaultAllocator)
		defer b.Release()
		for i, d := range days {
			if nulls && i%7 == 3 {
				b.AppendNull()
			} else {
				b.Append(arrow.Date32(d))
			}
		}
		a := b.NewArray()
		t.Cleanup(a.Release)
		return a
	}
	ids := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range days {
		ids.Append(int64(i + 1))
	}
	idArr := ids.NewArray()
	ids.Release()
	t.Cleanup(idArr.Release)
	s := drivertest.Schema(drivertest.I64("id"), arrow.Field{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true})
	for _, c := range []struct {
		tg     sink.Target
		nulls  bool
		lo, hi int64 // the slice of the rows written
	}{
		{sink.Target{Table: "ord"}, true, 0, int64(len(days))},
		{sink.Target{Table: "ord_slice"}, true, 3, int64(len(days)) - 2},
		{sink.Target{Table: "by_id", Key: []string{"id"}}, true, 0, int64(len(days))},
		{sink.Target{Table: "by_id_slice", Key: []string{"id"}}, true, 5, int64(len(days)) - 1},
		{sink.Target{Table: "by_date", Key: []string{"d"}}, false, 1, int64(len(days))},
	} {
		t.Run(c.tg.Table, func(t *testing.T) {
			f := drivertest.Open(t, open(t))
			f.MustEnsure(c.tg, s)
			w := f.Writer(c.tg, s)
			dates := array.NewSlice(build(c.nulls), c.lo, c.hi)
			defer dates.Release()
			idSlice := array.NewSlice(idArr, c.lo, c.hi)
			defer idSlice.Release()
			rec := array.NewRecordBatch(s, []arrow.Array{idSlice, dates}, c.hi-c.lo)
			defer rec.Release()
			ords := drivertest.Seq(c.lo+1, c.hi)
			if got := f.Write(w, 1, rec, ords); got.Inserted != rec.NumRows() {
				t.Fatalf("inserted %d of %d rows", got.Inserted, rec.NumRows())
			}
			if c.tg.Key != nil {
				if got := f.Write(w, 1, rec, ords); got.Unchanged != rec.NumRows() {
					t.Errorf("written again: %+v, want every row unchanged", got)
				}
			}
			var want []string
			for k := range dates.Len() {
				if dates.IsNull(k) {
					want = append(want, fmt.Sprintf("%d NULL", idSlice.(*array.Int64).Value(k)))
				} else {
					want = append(want, fmt.Sprintf("%d text '%s'", idSlice.(*array.Int64).Value(k), sink.FormatDate(int32(dates.(*array.Date32).Value(k)))))
				}
			}
			got := strs(t, f, `SELECT id || ' ' || iif(d IS NULL, 'NULL', typeof(d) || ' ' || quote(d)) FROM `+q(c.tg.Table)+` ORDER BY id`)
			drivertest.WantTable(t, "dates", got, want...)
		})
	}
}
