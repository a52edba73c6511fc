package mysql

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestAppendFloat: appendFloat appends the text strconv.AppendFloat(b, v,
// 'g', -1, 64) does, for every number of cents of up to 5 digits and
// their negatives, the ends of its range (0.01, 999999.99, 10^6 and past
// it), cents that no float64 holds (0.1+0.2), zeros, NaN, infinities,
// subnormals, and random numbers of cents, decimals and bits.
func TestAppendFloat(t *testing.T) {
	check := func(v float64) {
		t.Helper()
		want := strconv.AppendFloat([]byte("x\t"), v, 'g', -1, 64)
		if got := appendFloat([]byte("x\t"), v); string(got) != string(want) {
			t.Fatalf("appendFloat(%v) = %q, want %q", v, got, want)
		}
	}
	for n := range int64(100_000) {
		check(float64(n) / 100)
		check(-float64(n) / 100)
		check(float64(n) / 10)
		check(float64(n))
	}
	for _, v := range []float64{0.01, 0.009999999999999998, 0.1 + 0.2, 999999.99, 999999.994, 999999.995, 999999.999, 1e6, 1e6 + 0.01,
		99999999.0 / 100, 1e8 / 100, 0.005, 0.015, 1.005, 2.675, 123456.785, math.Copysign(0, -1), 0, math.NaN(), math.Inf(1), math.Inf(-1),
		math.SmallestNonzeroFloat64, math.MaxFloat64, 5e-324 * 100, 1e-5, 12345678.9} {
		check(v)
		check(-v)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		check(float64(r.Int64N(200_000_000)-100_000_000) / 100)
		check(r.Float64() * math.Pow(10, float64(r.IntN(16)-8)))
		check(math.Float64frombits(r.Uint64()))
	}
}
