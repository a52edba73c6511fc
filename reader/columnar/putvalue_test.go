package columnar

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestPutValue fills buffers in order with values of 0 to 40 bytes taken
// from anywhere in their source, its last bytes included, as the
// gatherers do: what putValue writes must be the values one after the
// other, however near either end a short value lies.
func TestPutValue(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 2000 {
		data := make([]byte, r.IntN(64))
		for i := range data {
			data[i] = byte(r.IntN(256))
		}
		type val struct{ start, n int }
		var vals []val
		var want []byte
		for range r.IntN(12) {
			n := min(r.IntN(41), len(data))
			start := r.IntN(len(data) - n + 1)
			if r.IntN(4) == 0 {
				start = len(data) - n // at the very end
			}
			vals = append(vals, val{start, n})
			want = append(want, data[start:start+n]...)
		}
		dst := make([]byte, len(want))
		pos := 0
		for _, v := range vals {
			pos = putValue(dst, pos, data, v.start, v.n)
		}
		if pos != len(want) || !bytes.Equal(dst, want) {
			t.Fatalf("round %d: values %v of % x: wrote % x (to %d), want % x", round, vals, data, dst, pos, want)
		}
	}
}
