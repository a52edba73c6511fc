package columnar

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestAppendScaled checks the decimal text of 64-bit integers at every
// scale from -3 to 45 against the digits of math/big: zeros before and
// after the point, both signs, and the extremes of int64.
func TestAppendScaled(t *testing.T) {
	vals := []int64{0, 1, -1, 5, -5, 9, 10, -10, 99, 100, -100, 12345, -12345, 1e17, -1e17, 999999999999999999,
		math.MaxInt64, math.MinInt64, math.MinInt64 + 1, math.MaxInt32, math.MinInt32}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		vals = append(vals, r.Int64()>>r.IntN(63))
		vals = append(vals, -(r.Int64() >> r.IntN(63)))
	}
	for _, v := range vals {
		for scale := int32(-3); scale <= 45; scale++ {
			want := string(appendBig([]byte("x"), big.NewInt(v), scale))
			if got := string(appendScaled([]byte("x"), v, scale)); got != want {
				t.Fatalf("appendScaled(%d, %d) = %s, want %s", v, scale, got, want)
			}
		}
	}
}
