package text

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/reader/internal/partition"
	"github.com/idemport/idemport/reader/internal/value"
)

// batchBuilder accumulates converted rows into Arrow buffers it fills
// itself. Arrow's builders cost an append per value with its checks, and
// zeroed each buffer they grew a second time after the allocator had:
// about a fifth of the reader's CPU time on the orders file.
type batchBuilder struct {
	mem      memory.Allocator
	schema   *arrow.Schema
	cols     []column
	ordinals []int64
	// capRows is how many rows the columns' buffers hold; rows and each
	// text column's data size them when a batch starts: the rows and
	// bytes of the batch before, so that a batch is built in buffers of
	// its size rather than grown to it by doubling (copying each buffer
	// about as many times as it doubles); both a sixteenth more, as a
	// batch ends at the first row that brings it to partition.BatchBytes,
	// and one of a few more rows or longer texts than the batch before
	// (about every other batch) grew every buffer to twice its size,
	// copying it, for its last rows.
	capRows int
	rows    int
}

// column is one column of a batch being built: its values (a text
// column's offsets), a text column's bytes, and its validity bitmap,
// made at its first null.
type column struct {
	t     value.Type
	dtype arrow.DataType
	vals  *memory.Buffer
	data  *memory.Buffer
	valid *memory.Buffer
	nulls int
	size  int // a text column's bytes so far
	last  int // a text column's bytes in the batch before
	// Views of the buffers above, as their values' type.
	words []uint64 // Int64, Float64, Timestamp, LocalTimestamp
	days  []int32  // Date
	bits  []byte   // Bool
	offs  []int32  // text
	bytes []byte   // text
	vbits []byte   // validity
}

// newBatchBuilder returns a builder of batches of schema s; rows, when
// positive, is how many rows the first batch is expected to hold.
func newBatchBuilder(mem memory.Allocator, s value.Schema, rows int) *batchBuilder {
	b := &batchBuilder{mem: mem, schema: s.Arrow(), rows: rows}
	for i, c := range s {
		b.cols = append(b.cols, column{t: c.Type, dtype: b.schema.Field(i).Type})
	}
	return b
}

// text reports whether c's values are text: strings, JSON and decimals.
func (c *column) text() bool {
	switch c.t {
	case value.Bool, value.Int64, value.Float64, value.Timestamp, value.LocalTimestamp, value.Date:
		return false
	}
	return true
}

// start gives the empty builder buffers for rows rows.
func (b *batchBuilder) start() {
	b.capRows = max(b.rows+b.rows/16, 64)
	for i := range b.cols {
		c := &b.cols[i]
		c.vals = memory.NewResizableBuffer(b.mem)
		if c.text() {
			c.data = memory.NewResizableBuffer(b.mem)
			c.data.Reserve(max(c.last+c.last/16, 64))
			c.bytes = c.data.Buf()
		}
		c.grow(b.capRows)
	}
}

// grow makes c's buffers hold rows rows, keeping what they hold.
func (c *column) grow(rows int) {
	switch {
	case c.text():
		c.vals.Reserve((rows + 1) * arrow.Int32SizeBytes)
		c.offs = arrow.Int32Traits.CastFromBytes(c.vals.Buf())
	case c.t == value.Bool:
		c.vals.Reserve(int(bitutil.BytesForBits(int64(rows))))
		c.bits = c.vals.Buf()
	case c.t == value.Date:
		c.vals.Reserve(rows * arrow.Int32SizeBytes)
		c.days = arrow.Int32Traits.CastFromBytes(c.vals.Buf())
	default:
		c.vals.Reserve(rows * arrow.Uint64SizeBytes)
		c.words = arrow.Uint64Traits.CastFromBytes(c.vals.Buf())
	}
	if c.valid != nil {
		c.valid.Reserve(int(bitutil.BytesForBits(int64(rows))))
		c.vbits = c.valid.Buf()
	}
}

// null makes row n of c a null.
func (c *column) null(mem memory.Allocator, n, capRows int) {
	if c.valid == nil {
		c.valid = memory.NewResizableBuffer(mem)
		c.valid.Reserve(int(bitutil.BytesForBits(int64(capRows))))
		c.vbits = c.valid.Buf()
		for i := range n {
			bitutil.SetBit(c.vbits, i)
		}
	}
	bitutil.ClearBit(c.vbits, n)
	c.nulls++
	switch {
	case c.text():
		c.offs[n+1] = int32(c.size)
	case c.t == value.Bool:
		bitutil.ClearBit(c.bits, n)
	case c.t == value.Date:
		c.days[n] = 0
	default:
		c.words[n] = 0
	}
}

func (b *batchBuilder) add(ordinal int64, vals []value.Value) {
	n := len(b.ordinals)
	if n == 0 {
		b.start()
	} else if n == b.capRows {
		b.capRows *= 2
		for i := range b.cols {
			b.cols[i].grow(b.capRows)
		}
	}
	b.ordinals = append(b.ordinals, ordinal)
	for i := range vals {
		v, c := &vals[i], &b.cols[i]
		if v.Null {
			c.null(b.mem, n, b.capRows)
			continue
		}
		if c.valid != nil {
			bitutil.SetBit(c.vbits, n)
		}
		switch c.t {
		case value.Bool:
			bitutil.SetBitTo(c.bits, n, v.I != 0)
		case value.Int64, value.Timestamp, value.LocalTimestamp:
			c.words[n] = uint64(v.I)
		case value.Float64:
			c.words[n] = math.Float64bits(v.F)
		case value.Date:
			c.days[n] = int32(v.I)
		default:
			if end := c.size + len(v.B); end > len(c.bytes) {
				c.data.Reserve(c.want(end, n, b.capRows))
				c.bytes = c.data.Buf()
			}
			c.size += copy(c.bytes[c.size:], v.B)
			c.offs[n+1] = int32(c.size)
		}
	}
}

// projectRows is how many rows of a batch with no batch before it tell
// the width of a text column's values well enough to size its bytes by.
const projectRows = 16

// want is the size c's text bytes grow to when end bytes do not fit them
// at row n of a batch sized for capRows rows: twice what they hold, or,
// in the first batch of a builder (a partition reader's first, with no
// size from a batch before) once projectRows rows have told the values'
// width, that width for every row the batch is sized for and a sixteenth
// more, at most partition.BatchBytes (a batch holds no more bytes of the
// file; one whose later values are longer grows on by doubling). Doubled
// from 64 bytes, each text buffer of a partition's first batch was
// copied about once more, its bytes allocated twice over.
func (c *column) want(end, n, capRows int) int {
	w := max(end, 2*len(c.bytes))
	if c.last == 0 && n >= projectRows {
		w = max(w, min(end*capRows/(n+1)*17/16, partition.BatchBytes))
	}
	return w
}

func (b *batchBuilder) len() int { return len(b.ordinals) }

// flush returns the rows added so far as a Batch and starts a new one.
func (b *batchBuilder) flush() partition.Batch {
	n := len(b.ordinals)
	cols := make([]arrow.Array, len(b.cols))
	for i := range b.cols {
		cols[i] = b.cols[i].array(n)
	}
	b.rows = n
	rec := array.NewRecordBatch(b.schema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	out := partition.Batch{Record: rec, Ordinals: b.ordinals}
	b.ordinals = make([]int64, 0, cap(b.ordinals))
	return out
}

// array returns c's n rows as an array, and leaves c without buffers.
func (c *column) array(n int) arrow.Array {
	var bufs []*memory.Buffer
	switch {
	case c.text():
		c.offs[0] = 0
		c.vals.ResizeNoShrink((n + 1) * arrow.Int32SizeBytes)
		c.data.ResizeNoShrink(c.size)
		bufs = []*memory.Buffer{c.valid, c.vals, c.data}
	case c.t == value.Bool:
		c.vals.ResizeNoShrink(int(bitutil.BytesForBits(int64(n))))
		bufs = []*memory.Buffer{c.valid, c.vals}
	case c.t == value.Date:
		c.vals.ResizeNoShrink(n * arrow.Int32SizeBytes)
		bufs = []*memory.Buffer{c.valid, c.vals}
	default:
		c.vals.ResizeNoShrink(n * arrow.Uint64SizeBytes)
		bufs = []*memory.Buffer{c.valid, c.vals}
	}
	if c.valid != nil {
		c.valid.ResizeNoShrink(int(bitutil.BytesForBits(int64(n))))
	}
	d := array.NewData(c.dtype, n, bufs, nil, c.nulls, 0)
	c.release()
	c.last, c.size, c.nulls = c.size, 0, 0
	defer d.Release()
	return array.MakeFromData(d)
}

// release drops c's buffers.
func (c *column) release() {
	for _, buf := range []*memory.Buffer{c.vals, c.data, c.valid} {
		if buf != nil {
			buf.Release()
		}
	}
	c.vals, c.data, c.valid = nil, nil, nil
	c.words, c.days, c.bits, c.offs, c.bytes, c.vbits = nil, nil, nil, nil, nil, nil
}

func (b *batchBuilder) release() {
	for i := range b.cols {
		b.cols[i].release()
	}
}
