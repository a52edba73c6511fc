package columnar

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/value"
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
	pages  *chunkPages
	col    *schema.Column
	dt     arrow.DataType // STRING or BINARY
	mem    memory.Allocator
	maxDef int16
	width  int // of a fixed-width value; 0: BYTE_ARRAY
	// checkOnly says the chunk is only skipped (a column the plan pass
	// leaves undecoded): a text dictionary's values are checked as its
	// page is read (dirty says one is not clean text), and no value of
	// the chunk is copied out.
	checkOnly bool
	dirty     bool

	leaf int // the chunk's column index
	// The dictionary: value i is dict[offs[i]+4:offs[i+1]] (the page's
	// PLAIN values as they are, each after its 4-byte length), or of a
	// fixed width, dict[i*width:(i+1)*width]; ndict values. It is the
	// dictionary page's memory, not a copy: chunkPages decompresses a
	// dictionary page into a buffer of its own (or, in a chunk not
	// compressed, leaves it where it lies in the chunk's bytes), which no
	// data page reuses and which is written again only by a second
	// dictionary page (refused); the batches hold copies of its values,
	// never the page. A copy cost an import of the Rust crate's 8 MiB
	// dictionaries 10k page faults of fresh memory, and its partition
	// reader a fifth of its CPU time. dictEnd is where the chunk's pages
	// after it start, when it is the chunk's first page (else 0).
	dict    []byte
	offs    []int32
	ndict   int
	dictEnd int

	// The data page being read: values left in it (nulls included), its
	// definition levels, and its values, dictionary indexes or PLAIN.
	left  int
	defs  hybrid
	idx   hybrid
	plain []byte
	byIdx bool

	// Scratch for the rows of a batch in one page: the dictionary
	// indexes of those with a value, and their definition levels.
	index  []uint32
	levels []uint32
	// perRow is the bytes of text per row of the batch read last.
	perRow float64
}

// newPageChunk returns a pageChunk over field's column chunk in row group
// k, whose bytes ld holds (loaded by s.load). d, when not nil, is the
// chunk's dictionary as a pageChunk over the same bytes read it: the
// chunk then starts past its dictionary page, which is not read again.
func newPageChunk(s *parquetFile, ld *loaded, k int, field pqarrow.SchemaField, mem memory.Allocator, d *chunkDict) (*pageChunk, error) {
	col := s.md.Schema.Column(field.ColIndex)
	w := chunkWidth(col.PhysicalType(), field.Field.Type)
	if w < 0 {
		return nil, fmt.Errorf("column %d: not a column of strings or integers", field.ColIndex)
	}
	spans, err := s.spans(s.md, k)
	if err != nil {
		return nil, err
	}
	if field.ColIndex >= len(spans) {
		return nil, fmt.Errorf("column %d: no column chunk", field.ColIndex)
	}
	sp := spans[field.ColIndex]
	chunk := ld.bytes(sp.off, sp.len)
	if chunk == nil {
		return nil, errOutside
	}
	cc, err := s.md.RowGroup(k).ColumnChunk(field.ColIndex)
	if err != nil {
		return nil, err
	}
	pages, err := newChunkPages(chunk, cc.Compression(), cc.NumValues(), &s.dictPages)
	if err != nil {
		return nil, err
	}
	pages.bufs = &s.pageBufs
	c := &pageChunk{pages: pages, col: col, dt: field.Field.Type, mem: mem, maxDef: col.MaxDefinitionLevel(), width: w, leaf: field.ColIndex}
	if d != nil && d.end > 0 && d.end <= len(chunk) && d.width == w && (w > 0 || len(d.offs) == d.n+1) {
		// The plan pass's dictionary of these very bytes (see chunkDict):
		// the pages start after it.
		c.dict, c.offs, c.ndict, c.dictEnd = d.dict, d.offs, d.n, d.end
		pages.pos = d.end
	}
	return c, nil
}

// chunkDict is a column chunk's dictionary as a pageChunk read it from
// its first page: its values (see pageChunk.dict), and where the pages
// after it start in the chunk's bytes. own says its values are memory of
// their own (a decompressed page), not the chunk's bytes.
type chunkDict struct {
	dict  []byte
	offs  []int32
	n     int
	width int
	end   int
	own   bool
}

// dictionary returns the chunk's dictionary once its first page, a
// dictionary page, is read; else nil.
func (c *pageChunk) dictionary() *chunkDict {
	if c.dictEnd == 0 || c.dict == nil {
		return nil
	}
	return &chunkDict{dict: c.dict, offs: c.offs, n: c.ndict, width: c.width, end: c.dictEnd, own: c.pages.typ != compress.Codecs.Uncompressed}
}

// close gives the chunk's data page buffer back to its file (see
// pageBufs): the batches hold copies of the values, never the page. No
// read or skip may follow.
func (c *pageChunk) close() {
	c.pages.release()
	c.plain, c.defs, c.idx = nil, hybrid{}, hybrid{} // a read after it fails, never reads the buffer
}

var errChunkPage = errors.New("corrupt page")

// page moves to the chunk's next data page, reading a dictionary page on
// the way.
func (c *pageChunk) page() error {
	for {
		p, err := c.pages.next()
		if err != nil {
			return err
		}
		data := p.data
		switch p.typ {
		case pageDict:
			if e := p.enc; e != parquet.Encodings.Plain && e != parquet.Encodings.PlainDict {
				return fmt.Errorf("%w: a dictionary page of encoding %s", errChunkPage, e)
			}
			if c.dict != nil {
				return fmt.Errorf("%w: a second dictionary page", errChunkPage)
			}
			n := int(p.values)
			if c.pages.read == 1 {
				c.dictEnd = c.pages.pos
			}
			if c.width > 0 {
				if n < 0 || n > len(data)/c.width {
					return fmt.Errorf("%w: a dictionary page of %d values in %d bytes", errChunkPage, n, len(data))
				}
				if c.dict, c.ndict = data[:n*c.width:n*c.width], n; c.dict == nil {
					c.dict = []byte{}
				}
				continue
			}
			if n < 0 || n > len(data)/4 {
				return fmt.Errorf("%w: a dictionary page of %d values in %d bytes", errChunkPage, n, len(data))
			}
			c.ndict = n
			c.offs = make([]int32, n+1)
			all, at := data, 0
			for i := range n {
				v, rest, err := plainValue(data)
				if err != nil {
					return err
				}
				at += 4 + len(v)
				c.offs[i+1] = int32(at)
				data = rest
				if c.checkOnly && !c.dirty && !value.TextClean(v) {
					c.dirty = true
				}
			}
			if c.dict = all[:at:at]; c.dict == nil {
				c.dict = []byte{}
			}
			continue
		case pageData:
			c.left = int(p.values)
			if c.maxDef > 0 {
				if p.defEnc != parquet.Encodings.RLE || len(data) < 4 {
					return fmt.Errorf("%w: definition levels of encoding %s", errChunkPage, p.defEnc)
				}
				n := binary.LittleEndian.Uint32(data)
				if uint64(n) > uint64(len(data)-4) {
					return fmt.Errorf("%w: definition levels of %d bytes in a page of %d", errChunkPage, n, len(data))
				}
				c.defs = hybrid{buf: data[4 : 4+n], width: 1}
				data = data[4+n:]
			}
			return c.values(p.enc, data)
		case pageDataV2:
			c.left = int(p.values)
			rep, def := int(p.repLen), int(p.defLen)
			if rep != 0 || def > len(data) {
				return fmt.Errorf("%w: levels of %d and %d bytes in a page of %d", errChunkPage, rep, def, len(data))
			}
			if c.maxDef > 0 {
				c.defs = hybrid{buf: data[:def], width: 1}
			}
			return c.values(p.enc, data[def:])
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

// markNulls reads the definition levels of the page's next m rows, rows i
// to i+m-1 of a batch of n, into c.levels, and returns them with present,
// the count of those rows with a value (a level not 0). defs is nil when
// all m rows have one (present is m), as is every row of a column without
// levels. When some row has none and keep is set, its bit is cleared in
// *valid, the batch's validity bitmap, which is made, n bits all set, at
// the batch's first null row (nil until then: no row is null).
func (c *pageChunk) markNulls(m, i, n int, keep bool, valid **memory.Buffer) (defs []uint32, present int, err error) {
	if c.maxDef == 0 {
		return nil, m, nil
	}
	c.levels = slices.Grow(c.levels[:0], m)[:m]
	defs = c.levels
	if err := c.defs.fill(defs); err != nil {
		return nil, 0, err
	}
	present = m
	for _, d := range defs {
		if d == 0 {
			present--
		}
	}
	if present == m {
		return nil, m, nil
	}
	if keep {
		if *valid == nil {
			*valid = memory.NewResizableBuffer(c.mem)
			(*valid).Resize(int(bitutil.BytesForBits(int64(n))))
			bitutil.SetBitsTo((*valid).Bytes(), 0, int64(n), true)
		}
		bits := (*valid).Bytes()
		for j, d := range defs {
			if d == 0 {
				bitutil.ClearBit(bits, i+j)
			}
		}
	}
	return defs, present, nil
}

// ownPanic is a panic of the reader's own page decoder (pageChunk and
// chunkPages) under input.RaiseOwnPanics, with the stack it was raised
// on: File.recovered raises it again rather than report corrupt data.
type ownPanic struct {
	v     any
	stack string
}

func (p ownPanic) String() string { return fmt.Sprintf("%v\n%s", p.v, p.stack) }

// marking, deferred by the page decoder's entry points under
// input.RaiseOwnPanics, marks a panic in them as the decoder's own.
func marking() {
	if v := recover(); v != nil {
		if _, ok := v.(ownPanic); !ok {
			v = ownPanic{v: v, stack: string(debug.Stack())}
		}
		panic(v)
	}
}

// read returns the chunk's next n rows as an array of c.dt.
func (c *pageChunk) read(n int) (arrow.Array, error) {
	if input.RaiseOwnPanics.Load() {
		defer marking()
	}
	if c.width > 0 {
		return c.readFixed(n)
	}
	return c.text(n, true)
}

// skip reads the chunk's next n rows as read does, checking them as it
// does, but keeps no value: what read would refuse, skip refuses. A chunk
// marked checkOnly must only be skipped.
func (c *pageChunk) skip(n int) error {
	if input.RaiseOwnPanics.Load() {
		defer marking()
	}
	if c.width == 0 {
		_, err := c.text(n, false)
		return err
	}
	_, err := c.fixed(n, false)
	return err
}

// text reads the next n rows of a text chunk, into an array of c.dt when
// keep is set. It reads them a page at a time: the levels and indexes of
// the page's rows (a run at a time, hybrid.fill), the size of their
// values, then the values, copied into the batch's buffer straight from
// the dictionary or the page (whose memory chunkPages reuses for
// the next page). The buffer is reserved for the bytes per row of the
// chunk's batch before (c.perRow).
//
// Without keep (skip), it refuses what it would refuse with keep, and
// checks each value as the converter checks text (valid UTF-8, no NUL)
// where it lies, in the page or, once for all rows, in the dictionary
// (c.dirty), rather than copying the values into a batch to check them
// there. A value that is not clean text, or rows of a dictionary that
// holds one, is errRescan: the pass starts again, decoding the column,
// and the converter finds the rows.
func (c *pageChunk) text(n int, keep bool) (arrow.Array, error) {
	var offBuf, dataBuf, valid *memory.Buffer
	var offs []int32
	if keep {
		offBuf = memory.NewResizableBuffer(c.mem)
		offBuf.Resize(4 * (n + 1))
		dataBuf = memory.NewResizableBuffer(c.mem)
		if c.perRow > 0 {
			dataBuf.Reserve(int(min(c.perRow*float64(n)*1.125+64, maxReserve)))
		}
		offs = arrow.Int32Traits.CastFromBytes(offBuf.Bytes())
		offs[0] = 0
	}
	release := func() {
		if keep {
			offBuf.Release()
			dataBuf.Release()
		}
		if valid != nil {
			valid.Release()
		}
	}
	size, nulls := int64(0), 0
	for i := 0; i < n; {
		if c.left == 0 {
			if err := c.page(); err != nil {
				release()
				return nil, err
			}
			continue
		}
		m := min(c.left, n-i)
		defs, present, err := c.markNulls(m, i, n, keep, &valid)
		if err != nil {
			release()
			return nil, err
		}
		nulls += m - present
		// The size of the values, checked as they are found.
		seg := int64(0)
		var idx []uint32
		plain := c.plain
		if c.byIdx {
			c.index = slices.Grow(c.index[:0], present)[:present]
			idx = c.index
			if err := c.idx.fill(idx); err != nil {
				release()
				return nil, err
			}
			for _, v := range idx {
				if int(v) >= c.ndict {
					release()
					return nil, fmt.Errorf("%w: dictionary index %d of %d values", errChunkPage, v, c.ndict)
				}
				seg += int64(c.offs[v+1] - c.offs[v] - 4)
			}
			if c.dirty && present > 0 {
				release()
				return nil, errRescan
			}
		} else {
			rest := c.plain
			for range present {
				v, r, err := plainValue(rest)
				if err != nil {
					release()
					return nil, err
				}
				if !keep && !value.TextClean(v) {
					release()
					return nil, errRescan
				}
				rest = r
				seg += int64(len(v))
			}
			c.plain = rest
		}
		if size+seg > math.MaxInt32 {
			release()
			return nil, fmt.Errorf("a batch of more than 2 GiB of text in one column")
		}
		if keep {
			if need := int(size + seg); need > dataBuf.Cap() {
				// Grown to the batch's rows at the bytes per row of
				// those so far (the chunk's first batch, or one past
				// its reservation), rather than doubled page by page,
				// each a copy into fresh memory.
				want := max(need, 2*dataBuf.Cap())
				if done := i + m; done < n {
					want = max(want, int(min(float64(need)/float64(done)*float64(n)*1.125+64, maxReserve)))
				}
				dataBuf.Reserve(want)
			}
			dataBuf.ResizeNoShrink(int(size + seg))
			out := dataBuf.Bytes()
			pos := int32(size)
			q := 0
			for j := range m {
				if defs == nil || defs[j] != 0 {
					if idx != nil {
						x := idx[q]
						pos = int32(putValue(out, int(pos), c.dict, int(c.offs[x])+4, int(c.offs[x+1]-c.offs[x]-4)))
					} else {
						l := binary.LittleEndian.Uint32(plain)
						pos = int32(putValue(out, int(pos), plain, 4, int(l)))
						plain = plain[4+l:]
					}
					q++
				}
				offs[i+j+1] = pos
			}
		}
		size += seg
		c.left -= m
		i += m
	}
	if !keep {
		return nil, nil
	}
	if n > 0 {
		c.perRow = float64(size) / float64(n)
	}
	data := array.NewData(c.dt, n, []*memory.Buffer{valid, offBuf, dataBuf}, nil, nulls, 0)
	defer data.Release()
	release()
	return array.MakeFromData(data), nil
}

// readFixed is read for values of c.width bytes.
func (c *pageChunk) readFixed(n int) (arrow.Array, error) { return c.fixed(n, true) }

// fixed reads the next n rows of values of c.width bytes, into an array
// when keep is set. A page's levels, and its indexes, are decoded a run at
// a time (hybrid.fill) before its values are placed.
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
		defs, present, err := c.markNulls(m, i, n, keep, &valid)
		if err != nil {
			release()
			return nil, err
		}
		nulls += m - present
		var dst []byte
		if keep {
			dst = out[i*w : (i+m)*w]
		}
		if c.byIdx {
			c.index = slices.Grow(c.index[:0], present)[:present]
			idx := c.index
			if err := c.idx.fill(idx); err != nil {
				release()
				return nil, err
			}
			for _, v := range idx {
				if int(v) >= c.ndict {
					release()
					return nil, fmt.Errorf("%w: dictionary index %d of %d values", errChunkPage, v, c.ndict)
				}
			}
			if keep {
				c.gather(dst, idx, defs)
			}
		} else {
			if len(c.plain) < present*w {
				release()
				return nil, fmt.Errorf("%w: PLAIN values cut short", errChunkPage)
			}
			vals := c.plain[:present*w]
			c.plain = c.plain[present*w:]
			if keep {
				c.spread(dst, vals, defs)
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

// gather writes into dst the dictionary values of indexes idx, one for
// each row whose definition level in defs is not 0 (nil: every row), and
// zeros for the others.
func (c *pageChunk) gather(dst []byte, idx []uint32, defs []uint32) {
	w, dict := c.width, c.dict
	if defs == nil && w == 8 {
		for j, v := range idx {
			binary.LittleEndian.PutUint64(dst[j*8:], binary.LittleEndian.Uint64(dict[int(v)*8:]))
		}
		return
	}
	if defs == nil && w == 4 {
		for j, v := range idx {
			binary.LittleEndian.PutUint32(dst[j*4:], binary.LittleEndian.Uint32(dict[int(v)*4:]))
		}
		return
	}
	q := 0
	for j := range len(dst) / w {
		if defs != nil && defs[j] == 0 {
			clear(dst[j*w : (j+1)*w])
			continue
		}
		copy(dst[j*w:(j+1)*w], dict[int(idx[q])*w:])
		q++
	}
}

// spread writes into dst the PLAIN values vals, one for each row whose
// definition level in defs is not 0 (nil: every row), and zeros for the
// others.
func (c *pageChunk) spread(dst, vals []byte, defs []uint32) {
	w := c.width
	if defs == nil {
		copy(dst, vals)
		return
	}
	q := 0
	for j, d := range defs {
		if d == 0 {
			clear(dst[j*w : (j+1)*w])
			continue
		}
		copy(dst[j*w:(j+1)*w], vals[q:q+w])
		q += w
	}
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

// run starts the next run when the current one is used up.
func (h *hybrid) run() error {
	for h.rle == 0 && h.nbits == 0 {
		hdr, n := binary.Uvarint(h.buf)
		if n <= 0 {
			return errHybrid
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
						return errHybrid
					}
					bytes = groups * uint64(h.width)
				} else if h.width > 0 {
					return errHybrid
				}
			}
			h.bits, h.buf, h.nbits, h.at = h.buf[:bytes], h.buf[bytes:], int(groups*8), 0
			continue
		}
		run := hdr >> 1
		w := int(h.width+7) / 8
		if run == 0 || run > math.MaxInt32 || len(h.buf) < w {
			return errHybrid
		}
		var v uint32
		for i := range w {
			v |= uint32(h.buf[i]) << (8 * i)
		}
		h.buf = h.buf[w:]
		h.rle, h.val = int(run), v
	}
	return nil
}

// packed returns the bit-packed value at bit h.at of the current run.
// Bit-packed values are little-endian, least significant bit first.
func (h *hybrid) packed() uint32 {
	byteAt, shift := h.at/8, h.at%8
	var word uint64
	if int(byteAt)+8 <= len(h.bits) {
		word = binary.LittleEndian.Uint64(h.bits[byteAt:])
	} else {
		for i := uint(0); i < 5 && int(byteAt+i) < len(h.bits); i++ {
			word |= uint64(h.bits[byteAt+i]) << (8 * i)
		}
	}
	return uint32(word>>shift) & uint32(uint64(1)<<h.width-1)
}

// fill reads the next len(dst) values into dst, a run at a time.
func (h *hybrid) fill(dst []uint32) error {
	for i := 0; i < len(dst); {
		if err := h.run(); err != nil {
			return err
		}
		if h.rle > 0 {
			k := min(h.rle, len(dst)-i)
			v := h.val
			for j := range dst[i : i+k] {
				dst[i+j] = v
			}
			h.rle -= k
			i += k
			continue
		}
		k := min(h.nbits, len(dst)-i)
		h.nbits -= k
		if h.width == 0 {
			clear(dst[i : i+k])
			i += k
			continue
		}
		for j := range dst[i : i+k] {
			dst[i+j] = h.packed()
			h.at += h.width
		}
		i += k
	}
	return nil
}
