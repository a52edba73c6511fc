package columnar

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// The text columns of a Parquet row group (flat BYTE_ARRAY columns read as
// Arrow strings or binary) are decoded here, from their pages, rather than
// by pqarrow. pqarrow's dictionary decoder (arrow-go v18.8.0) decodes a
// dictionary page's values as the indexes reach them, 1,024 indexes at a
// time, appending them to a slice of slice headers that grows by a quarter
// each time, so that a dictionary of mostly distinct values (the Rust
// crate's writer keeps a column dictionary-encoded until the page is
// full) is copied about five times over, as fresh memory, by every
// decoder of every row group, and each value is then copied once more into
// the batch. A pageChunk decodes the dictionary page once into one buffer
// of the values and their offsets, and gathers each batch's values from it
// by the indexes. Only the encodings it knows (PLAIN and dictionary values,
// RLE levels, data pages of both versions) are read here: a chunk that
// declares another is left to pqarrow (pageColumns).

// pageColumns returns the places in the batches of row group k's decoders,
// among read (the fields decoded, by their place), of the text columns a
// pageChunk reads: flat, of at most one definition level, read as STRING
// or BINARY, of encodings it knows.
func (s *parquetFile) pageColumns(fr *pqarrow.FileReader, k int, read []int) []int {
	fields := fr.Manifest.Fields
	if slices.ContainsFunc(fields, func(f pqarrow.SchemaField) bool { return !f.IsLeaf() }) {
		return nil
	}
	rg := s.md.RowGroup(k)
	var out []int
	for at, i := range read {
		if i >= len(fields) || fields[i].Field == nil {
			continue
		}
		col := s.md.Schema.Column(fields[i].ColIndex)
		if chunkWidth(col.PhysicalType(), fields[i].Field.Type) < 0 || col.MaxRepetitionLevel() != 0 || col.MaxDefinitionLevel() > 1 {
			continue
		}
		cc, err := rg.ColumnChunk(fields[i].ColIndex)
		if err != nil {
			continue
		}
		known := true
		for _, e := range cc.Encodings() {
			switch e {
			case parquet.Encodings.Plain, parquet.Encodings.PlainDict, parquet.Encodings.RLEDict, parquet.Encodings.RLE:
			default:
				known = false
			}
		}
		if known {
			out = append(out, at)
		}
	}
	return out
}

// chunkWidth returns the width of the values of a column of Parquet type
// pt read as Arrow type dt that a pageChunk decodes: 0 for BYTE_ARRAY
// values read as strings or binary, 4 or 8 for INT32 and INT64 values
// read as Arrow values of the same bits (pqarrow copies them as they are),
// or -1 for any other column.
func chunkWidth(pt parquet.Type, dt arrow.DataType) int {
	switch {
	case pt == parquet.Types.ByteArray && (dt.ID() == arrow.STRING || dt.ID() == arrow.BINARY):
		return 0
	case pt == parquet.Types.Int64 && (dt.ID() == arrow.INT64 || dt.ID() == arrow.UINT64 || dt.ID() == arrow.TIMESTAMP):
		return 8
	case pt == parquet.Types.Int32 && (dt.ID() == arrow.INT32 || dt.ID() == arrow.UINT32 || dt.ID() == arrow.DATE32):
		return 4
	}
	return -1
}

// pageChunk decodes one column chunk of a row group.
type pageChunk struct {
	pr     file.PageReader
	col    *schema.Column
	dt     arrow.DataType // STRING or BINARY
	mem    memory.Allocator
	maxDef int16
	width  int // of a fixed-width value; 0: BYTE_ARRAY

	// The dictionary: value i is dict[offs[i]:offs[i+1]], or of a fixed
	// width, dict[i*width:(i+1)*width]; ndict values.
	dict  []byte
	offs  []int32
	ndict int

	// The data page being read: values left in it (nulls included), its
	// definition levels, and its values, dictionary indexes or PLAIN.
	left  int
	defs  hybrid
	idx   hybrid
	plain []byte
	byIdx bool

	// Scratch for a batch: which rows have a value, and where it is: an
	// index into the dictionary, or (with plainBit, and its length) the
	// next value in plainBuf, a PLAIN value copied there because the page
	// reader reuses a page's memory for the next page.
	present  []bool
	index    []uint32
	plainBuf []byte
}

func newPageChunk(fr *pqarrow.FileReader, k int, field pqarrow.SchemaField, mem memory.Allocator) (*pageChunk, error) {
	pr, err := fr.ParquetReader().RowGroup(k).GetColumnPageReader(field.ColIndex)
	if err != nil {
		return nil, err
	}
	col := fr.ParquetReader().MetaData().Schema.Column(field.ColIndex)
	w := chunkWidth(col.PhysicalType(), field.Field.Type)
	if w < 0 {
		pr.Close()
		return nil, fmt.Errorf("column %d: not a column of strings or integers", field.ColIndex)
	}
	return &pageChunk{pr: pr, col: col, dt: field.Field.Type, mem: mem, maxDef: col.MaxDefinitionLevel(), width: w}, nil
}

func (c *pageChunk) close() { c.pr.Close() }

var errChunkPage = errors.New("corrupt page")

// plainBit marks a pageChunk's index of a PLAIN value.
const plainBit = 1 << 31

// page moves to the chunk's next data page, reading a dictionary page on
// the way.
func (c *pageChunk) page() error {
	for {
		if !c.pr.Next() {
			if err := c.pr.Err(); err != nil {
				return err
			}
			return io.ErrUnexpectedEOF
		}
		pg := c.pr.Page()
		data := pg.Data()
		switch p := pg.(type) {
		case *file.DictionaryPage:
			if e := parquet.Encoding(p.Encoding()); e != parquet.Encodings.Plain && e != parquet.Encodings.PlainDict {
				return fmt.Errorf("%w: a dictionary page of encoding %s", errChunkPage, e)
			}
			if c.dict != nil {
				return fmt.Errorf("%w: a second dictionary page", errChunkPage)
			}
			n := int(p.NumValues())
			if c.width > 0 {
				if n < 0 || n > len(data)/c.width {
					return fmt.Errorf("%w: a dictionary page of %d values in %d bytes", errChunkPage, n, len(data))
				}
				c.dict, c.ndict = slices.Clone(data[:n*c.width]), n
				if c.dict == nil {
					c.dict = []byte{}
				}
				continue
			}
			if n < 0 || n > len(data)/4 {
				return fmt.Errorf("%w: a dictionary page of %d values in %d bytes", errChunkPage, n, len(data))
			}
			c.ndict = n
			c.offs = make([]int32, n+1)
			c.dict = make([]byte, 0, len(data)-4*n)
			for i := range n {
				v, rest, err := plainValue(data)
				if err != nil {
					return err
				}
				c.dict = append(c.dict, v...)
				c.offs[i+1] = int32(len(c.dict))
				data = rest
			}
			continue
		case *file.DataPageV1:
			c.left = int(p.NumValues())
			if c.maxDef > 0 {
				if p.DefinitionLevelEncoding() != parquet.Encodings.RLE || len(data) < 4 {
					return fmt.Errorf("%w: definition levels of encoding %s", errChunkPage, p.DefinitionLevelEncoding())
				}
				n := binary.LittleEndian.Uint32(data)
				if uint64(n) > uint64(len(data)-4) {
					return fmt.Errorf("%w: definition levels of %d bytes in a page of %d", errChunkPage, n, len(data))
				}
				c.defs = hybrid{buf: data[4 : 4+n], width: 1}
				data = data[4+n:]
			}
			return c.values(parquet.Encoding(p.Encoding()), data)
		case *file.DataPageV2:
			c.left = int(p.NumValues())
			rep, def := int(p.RepetitionLevelByteLen()), int(p.DefinitionLevelByteLen())
			if rep != 0 || def > len(data) {
				return fmt.Errorf("%w: levels of %d and %d bytes in a page of %d", errChunkPage, rep, def, len(data))
			}
			if c.maxDef > 0 {
				c.defs = hybrid{buf: data[:def], width: 1}
			}
			return c.values(parquet.Encoding(p.Encoding()), data[def:])
		}
	}
}

// values starts reading a data page's values, data, of encoding e.
func (c *pageChunk) values(e parquet.Encoding, data []byte) error {
	switch e {
	case parquet.Encodings.Plain:
		c.byIdx, c.plain = false, data
	case parquet.Encodings.PlainDict, parquet.Encodings.RLEDict:
		if c.dict == nil {
			return fmt.Errorf("%w: dictionary indexes without a dictionary page", errChunkPage)
		}
		if len(data) < 1 || data[0] > 32 {
			return fmt.Errorf("%w: dictionary indexes of no bit width", errChunkPage)
		}
		c.byIdx, c.idx = true, hybrid{buf: data[1:], width: uint(data[0])}
	default:
		return fmt.Errorf("%w: values of encoding %s", errChunkPage, e)
	}
	return nil
}

// plainValue returns the first PLAIN BYTE_ARRAY value of data and the rest.
func plainValue(data []byte) ([]byte, []byte, error) {
	if len(data) < 4 {
		return nil, nil, fmt.Errorf("%w: a value's length cut short", errChunkPage)
	}
	n := binary.LittleEndian.Uint32(data)
	if uint64(n) > uint64(len(data)-4) {
		return nil, nil, fmt.Errorf("%w: a value of %d bytes with %d left", errChunkPage, n, len(data)-4)
	}
	return data[4 : 4+n], data[4+n:], nil
}

// read returns the chunk's next n rows as an array of c.dt.
func (c *pageChunk) read(n int) (arrow.Array, error) {
	if c.width > 0 {
		return c.readFixed(n)
	}
	c.present = slices.Grow(c.present[:0], n)[:n]
	c.index = slices.Grow(c.index[:0], n)[:n]
	c.plainBuf = c.plainBuf[:0]
	size, nulls := int64(0), 0
	// First the levels and indexes, page by page, and the size of the
	// values.
	for i := 0; i < n; {
		if c.left == 0 {
			if err := c.page(); err != nil {
				return nil, err
			}
			continue
		}
		m := min(c.left, n-i)
		for j := i; j < i+m; j++ {
			if c.maxDef > 0 {
				d, err := c.defs.next()
				if err != nil {
					return nil, err
				}
				if d == 0 {
					c.present[j] = false
					nulls++
					continue
				}
			}
			c.present[j] = true
			if c.byIdx {
				v, err := c.idx.next()
				if err != nil {
					return nil, err
				}
				if int(v) >= c.ndict {
					return nil, fmt.Errorf("%w: dictionary index %d of %d values", errChunkPage, v, c.ndict)
				}
				c.index[j] = v
				size += int64(c.offs[v+1] - c.offs[v])
			} else {
				v, rest, err := plainValue(c.plain)
				if err != nil {
					return nil, err
				}
				c.plain = rest
				c.plainBuf = append(c.plainBuf, v...)
				c.index[j] = plainBit | uint32(len(v)) // a page is less than 2 GiB
				size += int64(len(v))
			}
			if size > math.MaxInt32 {
				return nil, fmt.Errorf("a batch of more than 2 GiB of text in one column")
			}
		}
		c.left -= m
		i += m
	}
	// Then the values, gathered into one buffer.
	offBuf := memory.NewResizableBuffer(c.mem)
	offBuf.Resize(4 * (n + 1))
	dataBuf := memory.NewResizableBuffer(c.mem)
	dataBuf.Resize(int(size))
	offs := arrow.Int32Traits.CastFromBytes(offBuf.Bytes())
	out := dataBuf.Bytes()
	var valid *memory.Buffer
	var bits []byte
	if nulls > 0 {
		valid = memory.NewResizableBuffer(c.mem)
		valid.Resize(int(bitutil.BytesForBits(int64(n))))
		bits = valid.Bytes()
		clear(bits)
	}
	pos := int32(0)
	offs[0] = 0
	plain := c.plainBuf
	for j := range n {
		if c.present[j] {
			if x := c.index[j]; x&plainBit == 0 {
				pos += int32(copy(out[pos:], c.dict[c.offs[x]:c.offs[x+1]]))
			} else {
				m := int(x &^ plainBit)
				pos += int32(copy(out[pos:], plain[:m]))
				plain = plain[m:]
			}
			if bits != nil {
				bitutil.SetBit(bits, j)
			}
		}
		offs[j+1] = pos
	}
	data := array.NewData(c.dt, n, []*memory.Buffer{valid, offBuf, dataBuf}, nil, nulls, 0)
	defer data.Release()
	offBuf.Release()
	dataBuf.Release()
	if valid != nil {
		valid.Release()
	}
	return array.MakeFromData(data), nil
}

// skip reads the chunk's next n rows as read does, checking them as it
// does, but keeps no value: what read would refuse, skip refuses.
func (c *pageChunk) skip(n int) error {
	if c.width == 0 {
		a, err := c.read(n)
		if err == nil {
			a.Release()
		}
		return err
	}
	_, err := c.fixed(n, false)
	return err
}

// readFixed is read for values of c.width bytes.
func (c *pageChunk) readFixed(n int) (arrow.Array, error) { return c.fixed(n, true) }

// fixed reads the next n rows of values of c.width bytes, into an array
// when keep is set.
func (c *pageChunk) fixed(n int, keep bool) (arrow.Array, error) {
	w := c.width
	var dataBuf *memory.Buffer
	var out []byte
	if keep {
		dataBuf = memory.NewResizableBuffer(c.mem)
		dataBuf.Resize(w * n)
		out = dataBuf.Bytes()
	}
	var valid *memory.Buffer
	var bits []byte
	nulls := 0
	release := func() {
		if dataBuf != nil {
			dataBuf.Release()
		}
		if valid != nil {
			valid.Release()
		}
	}
	for i := 0; i < n; {
		if c.left == 0 {
			if err := c.page(); err != nil {
				release()
				return nil, err
			}
			continue
		}
		m := min(c.left, n-i)
		for j := i; j < i+m; j++ {
			var dst []byte
			if keep {
				dst = out[j*w : (j+1)*w]
			}
			if c.maxDef > 0 {
				d, err := c.defs.next()
				if err != nil {
					release()
					return nil, err
				}
				if d == 0 {
					if valid == nil && keep {
						valid = memory.NewResizableBuffer(c.mem)
						valid.Resize(int(bitutil.BytesForBits(int64(n))))
						bits = valid.Bytes()
						bitutil.SetBitsTo(bits, 0, int64(n), true)
					}
					if keep {
						bitutil.ClearBit(bits, j)
					}
					nulls++
					clear(dst)
					continue
				}
			}
			if c.byIdx {
				v, err := c.idx.next()
				if err != nil {
					release()
					return nil, err
				}
				if int(v) >= c.ndict {
					release()
					return nil, fmt.Errorf("%w: dictionary index %d of %d values", errChunkPage, v, c.ndict)
				}
				copy(dst, c.dict[int(v)*w:])
			} else {
				if len(c.plain) < w {
					release()
					return nil, fmt.Errorf("%w: PLAIN values cut short", errChunkPage)
				}
				copy(dst, c.plain[:w])
				c.plain = c.plain[w:]
			}
		}
		c.left -= m
		i += m
	}
	if !keep {
		return nil, nil
	}
	data := array.NewData(c.dt, n, []*memory.Buffer{valid, dataBuf}, nil, nulls, 0)
	defer data.Release()
	release()
	return array.MakeFromData(data), nil
}

// hybrid reads values of the RLE / bit-packed hybrid encoding of width
// bits each, the encoding of Parquet's levels and dictionary indexes.
type hybrid struct {
	buf   []byte
	width uint
	rle   int    // values left in the current RLE run
	val   uint32 // its value
	bits  []byte // the current bit-packed run
	nbits int    // its values left
	at    uint   // bit offset of the next one
}

var errHybrid = fmt.Errorf("%w: levels or indexes cut short", errChunkPage)

func (h *hybrid) next() (uint32, error) {
	for h.rle == 0 && h.nbits == 0 {
		hdr, n := binary.Uvarint(h.buf)
		if n <= 0 {
			return 0, errHybrid
		}
		h.buf = h.buf[n:]
		if hdr&1 == 1 {
			groups := hdr >> 1
			bytes := groups * uint64(h.width)
			if groups == 0 || bytes > uint64(len(h.buf)) {
				if groups != 0 && h.width > 0 {
					// A writer may end the last run early: the values it
					// holds are those of the bytes there are.
					bytes = uint64(len(h.buf))
					groups = bytes / uint64(h.width)
					if groups == 0 {
						return 0, errHybrid
					}
					bytes = groups * uint64(h.width)
				} else if h.width > 0 {
					return 0, errHybrid
				}
			}
			h.bits, h.buf, h.nbits, h.at = h.buf[:bytes], h.buf[bytes:], int(groups*8), 0
			continue
		}
		run := hdr >> 1
		w := int(h.width+7) / 8
		if run == 0 || run > math.MaxInt32 || len(h.buf) < w {
			return 0, errHybrid
		}
		var v uint32
		for i := range w {
			v |= uint32(h.buf[i]) << (8 * i)
		}
		h.buf = h.buf[w:]
		h.rle, h.val = int(run), v
	}
	if h.rle > 0 {
		h.rle--
		return h.val, nil
	}
	h.nbits--
	if h.width == 0 {
		return 0, nil
	}
	// Bit-packed values are little-endian, least significant bit first.
	byteAt, shift := h.at/8, h.at%8
	var word uint64
	for i := uint(0); i < 5 && int(byteAt+i) < len(h.bits); i++ {
		word |= uint64(h.bits[byteAt+i]) << (8 * i)
	}
	h.at += h.width
	return uint32(word>>shift) & uint32(uint64(1)<<h.width-1), nil
}
