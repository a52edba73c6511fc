package batchkey

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// text renders a string array's value; the tests' arrays of other types
// never reach it.
func text(a arrow.Array, i int) string { return a.(*array.String).Value(i) }

// rounds numbers the values of a, one key column compared by cmp, and
// returns each row's round and the number of rounds.
func rounds(a arrow.Array, cmp Compare) ([]int32, int32) {
	var r Rounds
	n := r.Number(a.Len(), func(buf []byte, i int) []byte { return Append(buf, a, i, cmp, text) })
	return r.Of, n
}

func texts(t *testing.T, vals ...any) arrow.Array {
	t.Helper()
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	for _, v := range vals {
		if v == nil {
			b.AppendNull()
		} else {
			b.Append(v.(string))
		}
	}
	a := b.NewArray()
	t.Cleanup(a.Release)
	return a
}

// TestRounds: rows whose key values the database holds as one key share a
// round count, in file order; others do not.
func TestRounds(t *testing.T) {
	fb := array.NewFloat64Builder(memory.DefaultAllocator)
	defer fb.Release()
	fb.AppendValues([]float64{0, math.Copysign(0, -1), 0.1, 0.1, 0.30000000000000004, 0.3}, nil)
	floats := fb.NewArray()
	defer floats.Release()
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	defer ib.Release()
	ib.AppendValues([]int64{math.MinInt64, 7, math.MinInt64, -7}, nil)
	ints := ib.NewArray()
	defer ints.Release()

	cases := []struct {
		name   string
		a      arrow.Array
		cmp    Compare
		want   []int32
		rounds int32
	}{
		{"text", texts(t, "a", "a ", "A", "a", "", nil, "", nil, "a"), Text, []int32{0, 0, 0, 1, 0, 0, 1, 1, 2}, 3},
		{"number", texts(t, "1.5", "1.50", "1", "1.0", "10", "1.", "100", "0.000", "0"), Number, []int32{0, 1, 0, 1, 0, 2, 0, 0, 1}, 3},
		{"padded", texts(t, "ab", "ab  ", " ab", "ab"), Padded, []int32{0, 1, 0, 2}, 3},
		{"floats", floats, Text, []int32{0, 1, 0, 1, 0, 0}, 2},
		{"ints", ints, Text, []int32{0, 0, 1, 0}, 2},
		{"distinct", texts(t, "x", "y", "z"), Text, []int32{0, 0, 0}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, n := rounds(c.a, c.cmp)
			if !slices.Equal(got, c.want) || n != c.rounds {
				t.Errorf("rounds %v (%d), want %v (%d)", got, n, c.want, c.rounds)
			}
		})
	}
}

// TestColumnsDoNotRunTogether: a key of two columns tells ("ab", "c")
// from ("a", "bc"), also where the text holds the bytes that mark a
// value, and NULL from the empty string in either place.
func TestColumnsDoNotRunTogether(t *testing.T) {
	left := texts(t, "ab", "a", "", nil, "x", "y\x01", "y")
	right := texts(t, "c", "bc", nil, "", "", "z", "\x01z")
	var r Rounds
	n := r.Number(left.Len(), func(buf []byte, i int) []byte {
		return Append(Append(buf, left, i, Text, text), right, i, Text, text)
	})
	if n != 1 {
		t.Errorf("%d rounds (%v), want 1: every key differs", n, fmt.Sprint(r.Of))
	}
}
