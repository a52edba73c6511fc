package columnar

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/reader/internal/value"
)

// TestTextCleanMatchesValueByValue: the check of a string column's bytes
// all at once says clean exactly when every value, checked on its own,
// is valid UTF-8 without NUL, including values that are fine together but
// not apart (a character cut between two values) and slices of an array.
func TestTextCleanMatchesValueByValue(t *testing.T) {
	pieces := []string{"a", "ok", "é", "\xc3", "\xa9", "€", "\xe2\x82", "\xac", "\x00", "\xff", "", "😀", "\xf0\x9f", "\x98\x80"}
	cases := [][]string{
		{"a\xc3", "\xa9b"},        // é cut in two: clean together, not apart
		{"€", "\xe2\x82", "\xac"}, // likewise, a 3-byte character
		{"plain", "ascii", ""},    // clean
		{"ütf-8", "ñ", "日本語"},     // clean
		{"nul\x00"},               // NUL
		{"", "", ""},              // empty values
		{"x", "\xff"},             // invalid byte
		{"\xc3\xa9", "\xa9"},      // a value that is only a continuation byte
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := 1 + rng.IntN(6)
		var vs []string
		for range n {
			var v string
			for range rng.IntN(4) {
				v += pieces[rng.IntN(len(pieces))]
			}
			vs = append(vs, v)
		}
		cases = append(cases, vs)
	}
	fast := 0
	for _, vs := range cases {
		for _, binary := range []bool{false, true} {
			a := stringArray(t, vs, binary)
			for off := 0; off < len(vs); off++ {
				for end := off; end <= len(vs); end++ {
					s := array.NewSlice(a, int64(off), int64(end))
					want := true
					for _, v := range vs[off:end] {
						want = want && value.TextClean([]byte(v))
					}
					if got := textClean(s); got != want {
						t.Errorf("values %q (binary %v): textClean %v, value by value %v", vs[off:end], binary, got, want)
					}
					if want {
						fast++
					}
					s.Release()
				}
			}
			a.Release()
		}
	}
	if fast == 0 {
		t.Fatal("no case was clean: the test checked nothing")
	}
}

func stringArray(t *testing.T, vs []string, binary bool) arrow.Array {
	t.Helper()
	if binary {
		b := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
		defer b.Release()
		for _, v := range vs {
			b.Append([]byte(v))
		}
		return b.NewArray()
	}
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	for _, v := range vs {
		b.Append(v)
	}
	return b.NewArray()
}
