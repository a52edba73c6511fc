package batchkey

import (
	"slices"
	"testing"
)

// TestRoundsLoose: with Loose, keys a collation may compare as one take
// rounds of their own, in batch order; without it, only equal bytes do.
func TestRoundsLoose(t *testing.T) {
	keys := []string{"a", "A", "c ", "c", "É", "e", "x", "Ｋ", "k", "ß", "s", "ﬁ", "FI"}
	key := func(buf []byte, i int) []byte { return append(append(buf, 1), keys[i]...) }
	var r Rounds
	if n := r.Number(len(keys), key); n != 1 || !slices.Equal(r.Of, []int32{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}) {
		t.Errorf("exact: %d rounds %v", n, r.Of)
	}
	r.Loose = true
	if n := r.Number(len(keys), key); n != 2 || !slices.Equal(r.Of, []int32{0, 1, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1}) {
		t.Errorf("loose: %d rounds %v", n, r.Of)
	}
}
