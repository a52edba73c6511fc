package columnar

import (
	"bytes"
	"context"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/partition"
)

// memSource is a file held in memory.
type memSource struct{ data []byte }

func (m *memSource) Name() string       { return "mem.parquet" }
func (m *memSource) Size() int64        { return int64(len(m.data)) }
func (m *memSource) ModTime() time.Time { return time.Time{} }
func (m *memSource) Version() string    { return "" }
func (m *memSource) Close() error       { return nil }
func (m *memSource) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(m.data)) {
		return 0, io.EOF
	}
	n := copy(p, m.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
func (m *memSource) Open(context.Context, int64) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(m.data)), nil
}

// TestLoadedRanges: the ranges load reads into one buffer each hold
// exactly the file's bytes, the CRC is of the ranges in the order given,
// and a range cannot grow into the bytes of the next.
func TestLoadedRanges(t *testing.T) {
	data := make([]byte, 9<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	f := &File{File: &input.File{In: &memSource{data: data}, Path: "mem.parquet"}}
	// Out of file order, as a row group's chunks may be, one of them empty,
	// and large enough for whole huge pages.
	spans := []span64{{off: 5 << 20, len: 3<<20 + 17}, {off: 100, len: 5000}, {off: 7000, len: 0}, {off: 5100, len: 5<<20 - 5100}}
	ld := &loaded{size: int64(len(data))}
	crc, err := ld.load(f, "row group 0", spans, 7)
	if err != nil {
		t.Fatal(err)
	}
	want := uint32(7)
	for _, s := range spans {
		want = crc32.Update(want, partition.Castagnoli, data[s.off:s.off+s.len])
	}
	if crc != want {
		t.Errorf("crc %08x, want %08x", crc, want)
	}
	if len(ld.ranges) != len(spans) {
		t.Fatalf("%d ranges, want %d", len(ld.ranges), len(spans))
	}
	for i, r := range ld.ranges {
		if i > 0 && ld.ranges[i-1].off > r.off {
			t.Errorf("range %d at %d comes after one at %d", i, r.off, ld.ranges[i-1].off)
		}
		if !bytes.Equal(r.data, data[r.off:r.off+int64(len(r.data))]) {
			t.Errorf("range at %d (%d bytes) holds other bytes than the file's", r.off, len(r.data))
		}
		if cap(r.data) != len(r.data) {
			t.Errorf("range at %d: %d bytes with room for %d: an append would write over the next", r.off, len(r.data), cap(r.data))
		}
	}
	for _, s := range spans {
		if got := ld.bytes(s.off, s.len); !bytes.Equal(got, data[s.off:s.off+s.len]) {
			t.Errorf("bytes(%d, %d): other bytes than the file's", s.off, s.len)
		}
	}
	// A read running past a range's end gets that range's bytes only.
	p := make([]byte, 200)
	n, err := ld.ReadAt(p, 5000)
	if n != 100 || err != io.EOF || !bytes.Equal(p[:n], data[5000:5100]) {
		t.Errorf("ReadAt(200 bytes at 5000) = %d, %v; want the 100 bytes of the range, io.EOF", n, err)
	}
}

// TestLoadedBytesEndWithTheirSpan: the bytes of a span have no capacity
// past it, so a page reader that slices past a chunk's end fails rather
// than reading the next chunk's bytes.
func TestLoadedBytesEndWithTheirSpan(t *testing.T) {
	l := &loaded{size: 100, ranges: []loadedRange{{off: 10, data: make([]byte, 50)}}}
	b := l.bytes(20, 10)
	if len(b) != 10 || cap(b) != 10 {
		t.Fatalf("bytes(20, 10): len %d cap %d, want 10 and 10", len(b), cap(b))
	}
	if l.bytes(50, 20) != nil {
		t.Fatal("bytes(50, 20) past the loaded range: want nil")
	}
}
