package keys

import (
	"slices"
	"strconv"
	"testing"
)

// TestDefaultBound checks the bound an index made with the default
// (NewIndex(dir, 0), as every plan pass without ScanOptions.KeysHeld
// makes it) keeps, as docs/reference.md states it: 4Mi key hashes, 32 MiB,
// held in memory, and the next one spills them. It counts by the index's
// own accounting (the hashes its chunks hold and the room they take), so a
// default raised or lowered fails it, where TestIndexSpill, which gives
// every bound, passes. Past the bound, a key of the first row repeated by
// the last is still found, through the spill.
func TestDefaultBound(t *testing.T) {
	const documented = 32 << 20 // bytes of hashes held, 8 bytes a key
	dir := t.TempDir()
	k := NewIndex(dir, 0)
	defer k.Close()
	var buf []byte
	for i := int64(1); i <= documented/8; i++ {
		buf = strconv.AppendInt(append(buf[:0], 'k'), i, 10)
		k.Add(i, buf)
	}
	if k.Spilled() {
		t.Fatalf("spilled within the documented %d MiB (%d keys)", documented>>20, documented/8)
	}
	held := func() (n, room int64) {
		for _, c := range k.chunks {
			n += int64(len(c))
			room += 8 * int64(cap(c))
		}
		return n, room
	}
	if n, room := held(); n != documented/8 || room != documented {
		t.Fatalf("holds %d hashes in %d bytes, want %d in %d", n, room, documented/8, documented)
	}
	last := int64(documented/8 + 1)
	k.Add(last, []byte("k1")) // the first row's key again
	if !k.Spilled() {
		t.Fatalf("holds %d keys in memory, past the documented %d MiB, without spilling", last, documented>>20)
	}
	if n, room := held(); n != 1 || room > documented {
		t.Fatalf("after the spill holds %d hashes in %d bytes, want 1 within %d", n, room, documented)
	}
	got, err := k.Candidates()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int64{1, last}) {
		t.Fatalf("candidates %v, want [1 %d]", got[:min(len(got), 8)], last)
	}
}
