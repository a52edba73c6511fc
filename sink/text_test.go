package sink_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

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
