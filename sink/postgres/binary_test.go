package postgres

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// TestStreamReadSizes: a batch encoded as it is read gives the same COPY
// bytes whatever the sizes of the reads, across many chunks, and they are
// a whole binary COPY stream: header, one tuple per row with its lead
// columns and NULLs, and the trailer. A stream given up halfway shares no
// bytes with the stream after it.
func TestStreamReadSizes(t *testing.T) {
	s := drivertest.Schema(drivertest.I64("id"), drivertest.F64("price"), drivertest.Str("note"), drivertest.TS("at"))
	at := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	const n = 5000 // about 450 KiB: several chunks
	var rows [][]any
	for i := range n {
		note := any(fmt.Sprintf("note %d %s", i, bytes.Repeat([]byte("é"), i%40)))
		if i%7 == 0 {
			note = nil
		}
		rows = append(rows, []any{i - 1<<62, float64(i) / 8, note, at.Add(time.Duration(i) * time.Second)})
	}
	rec := drivertest.Batch(t, s, rows...)
	defer rec.Release()
	enc := encoderOf(t, s, "int8", "float8", "text", "timestamptz")
	lead := func(b []byte, i int) []byte { return appendInt8(appendInt8(b, 42), int64(i)+1) }
	read := func(r io.Reader, size int) []byte {
		var out []byte
		p := make([]byte, size)
		for {
			k, err := r.Read(p)
			out = append(out, p[:k]...)
			if err == io.EOF {
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	want := read(enc.stream(rec, 2, lead), 65531)
	if len(want) < 4*streamChunk {
		t.Fatalf("%d bytes: fewer chunks than the test means to cross", len(want))
	}
	for _, size := range []int{1, 7, 4096, streamChunk + 1, 1 << 20} {
		enc.buf = nil
		if got := read(enc.stream(rec, 2, lead), size); !bytes.Equal(got, want) {
			t.Errorf("reads of %d bytes: %d bytes differ from reads of 65531 (%d)", size, len(got), len(want))
		}
		// What it held encoded at once, now handed back: about a chunk,
		// not the batch.
		if c := cap(enc.buf); c > 2*streamChunk {
			t.Errorf("reads of %d bytes: the stream grew to %d bytes of the batch's %d", size, c, len(want))
		}
	}
	// The stream's tuples: 6 fields each (2 lead), NULLs where the note was nil.
	b := want
	if !bytes.HasPrefix(b, []byte("PGCOPY\n\xff\r\n\x00")) {
		t.Fatalf("no COPY signature: %q", b[:11])
	}
	b = b[19:]
	for i := range n {
		if f := binary.BigEndian.Uint16(b); f != 6 {
			t.Fatalf("row %d: %d fields", i, f)
		}
		b = b[2:]
		for c := range 6 {
			l := int32(binary.BigEndian.Uint32(b))
			b = b[4:]
			if (l == -1) != (c == 4 && i%7 == 0) {
				t.Fatalf("row %d column %d: length %d", i, c, l)
			}
			if c == 1 && int64(binary.BigEndian.Uint64(b)) != int64(i)+1 {
				t.Fatalf("row %d: ordinal %d", i, binary.BigEndian.Uint64(b))
			}
			if l > 0 {
				b = b[l:]
			}
		}
	}
	if !bytes.Equal(b, []byte{0xff, 0xff}) {
		t.Fatalf("after %d rows: %d bytes, not the trailer", n, len(b))
	}
	// Given up halfway, then another stream read whole: the first one's
	// bytes are its own.
	half := enc.stream(rec, 2, lead)
	first := read(io.LimitReader(half, int64(len(want)/2)), 1000)
	read(enc.stream(rec, 2, func(b []byte, i int) []byte { return appendInt8(appendInt8(b, 7), 7) }), 65531)
	if rest := read(half, 65531); !bytes.Equal(append(first, rest...), want) {
		t.Error("a stream read after another stream was made and read differs")
	}
}

// TestStreamRowsAsEachValue: the rows a stream encodes, reading int64,
// float64, timestamp and text columns straight from their buffers, are
// the bytes appendValue writes value by value, for columns with nulls and
// without, of a batch and of slices of it (whose buffers start before
// their first row), and for an int64 column into a float8 one, which is
// not read as its words.
func TestStreamRowsAsEachValue(t *testing.T) {
	s := drivertest.Schema(drivertest.I64("id"), drivertest.I64("n"), drivertest.F64("price"), drivertest.Str("note"),
		drivertest.TS("at"), drivertest.Bool("ok"), drivertest.Dec("amount"), drivertest.JSON("doc"), drivertest.I64("wide"))
	typ := []string{"int8", "int8", "float8", "text", "timestamptz", "bool", "numeric", "jsonb", "float8"}
	at := time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC)
	var rows [][]any
	for i := range 300 {
		row := []any{i - 1<<62, i % 5, float64(i) / 3, fmt.Sprintf("n%d%s", i, bytes.Repeat([]byte("é"), i%9)),
			at.Add(time.Duration(i*i) * time.Hour), i%2 == 0, fmt.Sprintf("%d.%02d", i-150, i%100), fmt.Sprintf(`{"i":%d}`, i), 1<<53 + i}
		if i%4 == 1 {
			for c := 1; c < len(row); c++ {
				row[c] = nil
			}
		}
		rows = append(rows, row)
	}
	rec := drivertest.Batch(t, s, rows...)
	enc := encoderOf(t, s, typ...)
	lead := func(b []byte, i int) []byte { return appendInt8(b, int64(i)) }
	for _, cut := range [][2]int64{{0, 300}, {1, 300}, {77, 211}, {299, 300}} {
		part := rec.NewSlice(cut[0], cut[1])
		st := enc.stream(part, 1, lead)
		for i := range int(part.NumRows()) {
			want := binary.BigEndian.AppendUint16(nil, uint16(1+len(enc.fields)))
			want = lead(want, i)
			for c, col := range part.Columns() {
				if col.IsNull(i) {
					want = binary.BigEndian.AppendUint32(want, 0xffffffff)
					continue
				}
				want = appendValue(want, enc.fields[c], col, i)
			}
			if got := st.row(nil, i); !bytes.Equal(got, want) {
				t.Fatalf("rows %d to %d, row %d: encoded\n%x\nvalue by value\n%x", cut[0], cut[1], i, got, want)
			}
		}
		st.close()
		part.Release()
	}
}

// encoderOf returns the encoder of batches of schema s into columns of
// the same names whose types are typname, one for each of s's fields in
// order; it fails t when newEncoder has none for them.
func encoderOf(t *testing.T, s *arrow.Schema, typname ...string) *encoder {
	t.Helper()
	var fields []field
	for c, f := range s.Fields() {
		k := idemtype.TypeOf(f)
		fields = append(fields, field{name: f.Name, file: k, target: sink.Column{Name: f.Name, Kind: k, TypeName: typname[c]}})
	}
	enc := newEncoder(fields)
	if enc == nil {
		t.Fatalf("no encoder of %v into %v", s, typname)
	}
	return enc
}
