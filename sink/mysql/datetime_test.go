package mysql

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestAppendDatetime: the DATETIME text a load's line holds is the text
// AppendFormat makes of loadDatetimeLayout, for every point in time: at
// the edges of years, months, days and seconds, before the epoch, in leap
// years, at DATETIME's least and greatest values, and beyond them (years
// 10000 and -1, which the server refuses as before), with fractions of
// every length (whole seconds with none, .5, .05, … .000001), and at
// random.
func TestAppendDatetime(t *testing.T) {
	at := func(y int, mo time.Month, d, h, mi, s, us int) int64 {
		return time.Date(y, mo, d, h, mi, s, us*1000, time.UTC).UnixMicro()
	}
	cases := []int64{
		0, -1, 1, 999_999, -999_999, 1_000_000, -1_000_000,
		at(1000, 1, 1, 0, 0, 0, 0), at(9999, 12, 31, 23, 59, 59, 999_999),
		at(0, 1, 1, 0, 0, 0, 0), at(1, 1, 1, 0, 0, 0, 1), at(1969, 12, 31, 23, 59, 59, 999_999),
		at(2000, 2, 29, 12, 30, 45, 123_456), at(1900, 2, 28, 23, 59, 59, 0), at(2024, 2, 29, 0, 0, 0, 10),
		at(2025, 12, 4, 2, 17, 40, 0), at(2038, 1, 19, 3, 14, 8, 900_000),
		at(10000, 1, 1, 0, 0, 0, 0), at(-1, 12, 31, 23, 59, 59, 999_999), at(12345, 6, 7, 8, 9, 10, 11),
		at(10000, 1, 1, 0, 0, 0, 500_000), at(-1, 12, 31, 23, 59, 59, 0),
	}
	for _, us := range []int{500_000, 50_000, 5_000, 500, 50, 5, 100_000, 10_000, 1_000, 100, 10, 1, 120_000, 102_030, 999_990} {
		cases = append(cases, at(2023, 4, 22, 0, 0, 21, us), at(1969, 12, 31, 23, 59, 59, us))
	}
	r := rand.New(rand.NewPCG(1, 2))
	lo, hi := at(-50, 1, 1, 0, 0, 0, 0), at(10050, 1, 1, 0, 0, 0, 0)
	for range 200_000 {
		cases = append(cases, lo+r.Int64N(hi-lo))
	}
	for range 20_000 { // whole seconds
		cases = append(cases, (lo+r.Int64N(hi-lo))/1_000_000*1_000_000)
	}
	for _, us := range cases {
		want := time.UnixMicro(us).UTC().Format(loadDatetimeLayout)
		if got := string(appendDatetime([]byte("x\t"), us)); got != "x\t"+want {
			t.Fatalf("appendDatetime(%d) = %q, want %q", us, got, "x\t"+want)
		}
	}
}
