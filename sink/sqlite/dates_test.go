//go:build cgo

package sqlite

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
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

// TestTimestampsStoredAsText: the writer stores each timestamp as
// sink.FormatTimestamp's text, rendered as it writes the row: at the first
// and last microsecond of the years 0000-9999 it can write, at the edges of
// days, months and years, before the epoch, in leap years, and at random
// microseconds across the range; nulls kept, in a batch and in a slice of
// one; in ordinal mode (the batch table) and by a natural key (inserted,
// then found unchanged when written again). A microsecond past either end
// is refused, naming its row.
func TestTimestampsStoredAsText(t *testing.T) {
	at := func(y int, mo time.Month, d, h, mi, s, us int) int64 {
		return time.Date(y, mo, d, h, mi, s, us*1000, time.UTC).UnixMicro()
	}
	first, last := at(0, 1, 1, 0, 0, 0, 0), at(9999, 12, 31, 23, 59, 59, 999999)
	stamps := []int64{
		0, -1, 1, 999999, 1000000, -1000000, -1000001, 86399999999, 86400000000, -86400000000, -86400000001,
		first, first + 1, first + 86400000000 - 1, last, last - 1, at(9999, 12, 31, 0, 0, 0, 0),
		at(0, 2, 29, 12, 0, 0, 5), at(0, 3, 1, 0, 0, 0, 0), at(1, 1, 1, 0, 0, 0, 0), at(0, 12, 31, 23, 59, 59, 999999),
		at(1000, 1, 1, 0, 0, 0, 0), at(999, 12, 31, 23, 59, 59, 999999), at(1969, 12, 31, 23, 59, 59, 999999),
		at(2000, 2, 29, 23, 59, 59, 999999), at(1900, 2, 28, 1, 2, 3, 4), at(1900, 3, 1, 0, 0, 0, 0),
		at(2024, 2, 29, 10, 20, 30, 123456), at(2100, 3, 1, 0, 0, 0, 1), at(1600, 2, 29, 0, 0, 0, 0),
	}
	r := rand.New(rand.NewPCG(7, 8))
	for len(stamps) < 5000 {
		stamps = append(stamps, first+r.Int64N(last-first+1))
	}
	ids := make([]int64, len(stamps))
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	build := func(nulls bool) (arrow.Array, arrow.Array) {
		b := array.NewTimestampBuilder(memory.DefaultAllocator, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"})
		defer b.Release()
		for i, us := range stamps {
			if nulls && i%7 == 3 {
				b.AppendNull()
			} else {
				b.Append(arrow.Timestamp(us))
			}
		}
		ib := array.NewInt64Builder(memory.DefaultAllocator)
		defer ib.Release()
		ib.AppendValues(ids, nil)
		a, id := b.NewArray(), ib.NewArray()
		t.Cleanup(a.Release)
		t.Cleanup(id.Release)
		return id, a
	}
	s := drivertest.Schema(drivertest.I64("id"), drivertest.TS("at"))
	for _, c := range []struct {
		tg     sink.Target
		lo, hi int64 // the slice of the rows written
	}{
		{sink.Target{Table: "ord"}, 0, int64(len(stamps))},
		{sink.Target{Table: "ord_slice"}, 3, int64(len(stamps)) - 2},
		{sink.Target{Table: "by_id", Key: []string{"id"}}, 0, int64(len(stamps))},
		{sink.Target{Table: "by_id_slice", Key: []string{"id"}}, 5, int64(len(stamps)) - 1},
	} {
		t.Run(c.tg.Table, func(t *testing.T) {
			f := drivertest.Open(t, open(t))
			f.MustEnsure(c.tg, s)
			w := f.Writer(c.tg, s)
			idArr, tsArr := build(true)
			col := array.NewSlice(tsArr, c.lo, c.hi)
			defer col.Release()
			idSlice := array.NewSlice(idArr, c.lo, c.hi)
			defer idSlice.Release()
			rec := array.NewRecordBatch(s, []arrow.Array{idSlice, col}, c.hi-c.lo)
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
			for k := range col.Len() {
				id := idSlice.(*array.Int64).Value(k)
				if col.IsNull(k) {
					want = append(want, fmt.Sprintf("%d NULL", id))
				} else {
					want = append(want, fmt.Sprintf("%d text '%s'", id, sink.FormatTimestamp(int64(col.(*array.Timestamp).Value(k)))))
				}
			}
			got := strs(t, f, `SELECT id || ' ' || iif(at IS NULL, 'NULL', typeof(at) || ' ' || quote(at)) FROM `+q(c.tg.Table)+` ORDER BY id`)
			drivertest.WantTable(t, "timestamps", got, want...)
			for _, us := range []int64{first - 1, last + 1, -1 << 62, 1 << 62} {
				out := drivertest.Batch(t, s, []any{len(stamps) + 1, time.UnixMicro(us).UTC()})
				if err := writeErr(t, f, w, 1, out, drivertest.Seq(c.hi+1, c.hi+1)); err == nil || !strings.Contains(err.Error(), "outside the years 0000-9999") {
					t.Errorf("%d µs: %v, want a timestamp outside the years 0000-9999", us, err)
				}
			}
		})
	}
}
