package columnar

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/s2"
)

// A pageChunk reads its column chunk's pages itself, from the chunk's
// bytes in memory (the loaded ranges, checksummed), rather than through
// arrow-go's page reader, which copies each page's compressed bytes out of
// them before it decompresses them (on the Rust crate's 8 MiB
// dictionaries, 6% of an import's CPU time, half of it page faults on the
// copies' fresh memory), and which can only start at the chunk's first
// page. A chunkPages starts where it is told: after the dictionary page
// whose values the plan pass left for the partition reader (see
// chunkDict), so that a dictionary is decompressed and walked once per
// import, not once per pass. It reads what arrow-go's reader reads of a
// page header and checks the same sizes; the page CRC is not checked
// (arrow-go does not check it by default either: the chunk's bytes are
// checked against the plan's CRC-32C).

// Page types (parquet.thrift's PageType).
const (
	pageData   = 0
	pageDict   = 2
	pageDataV2 = 3
)

// Bounds of a page, arrow-go's defaults: a page over them refuses the file.
const (
	maxCompressedPage   = 64 << 20
	maxUncompressedPage = 256 << 20
)

// pageHeader is what a pageChunk reads of a Parquet page header.
type pageHeader struct {
	typ                      int32
	uncompressed, compressed int32
	values                   int32 // num_values of the page's header
	rows                     int32 // a V2 page's num_rows
	enc, defEnc              parquet.Encoding
	defLen, repLen           int32 // a V2 page's level bytes
	v2Compressed             bool  // a V2 page's is_compressed (default true)
}

// chunkPage is a page read: its header and its body, decompressed (a V2
// page's levels, stored uncompressed, then its values). The body is the
// chunk's own bytes when the chunk is not compressed, or a buffer that
// the chunk's next data page reuses; a dictionary page's is a buffer of
// its own, never reused.
type chunkPage struct {
	pageHeader
	data []byte
}

// chunkPages reads the pages of one column chunk.
type chunkPages struct {
	chunk []byte // the chunk's bytes
	pos   int    // where the next page header starts in chunk
	codec compress.Codec
	typ   compress.Compression
	// nrows and seen are the chunk's values (its metadata's num_values)
	// and those of the data pages read: as arrow-go's reader, it reads no
	// page past them.
	nrows, seen int64
	read        int    // the pages next returned
	buf         []byte // the data pages' decompression buffer
	// dicts counts the dictionary pages read, the file's (see
	// parquetFile.dictPages).
	dicts *atomic.Int64
	// bufs, when not nil, lends buf and takes it back (release).
	bufs *pageBufs
}

func newChunkPages(chunk []byte, typ compress.Compression, nrows int64, dicts *atomic.Int64) (*chunkPages, error) {
	codec, err := compress.GetCodec(typ)
	if err != nil {
		return nil, err
	}
	return &chunkPages{chunk: chunk, codec: codec, typ: typ, nrows: nrows, dicts: dicts}, nil
}

// pageBufs holds the data pages' decompression buffers of the column
// chunks closed, for the chunks opened next: a file's pages are of much
// the same size, and a buffer made afresh for each column chunk of each
// row group, by the plan pass and again by the partition readers, is
// memory the kernel faults in a page at a time (or the runtime zeroes).
// On the Rust crate's file of ten row groups the plan pass faulted 23.7k
// pages before, 22.1k with them (most of the rest are the dictionary
// pages, kept for the partition readers, and the groups' loaded bytes).
// Safe for concurrent use; a sync.Pool, so the collector may drop what it
// holds.
type pageBufs struct{ pool sync.Pool }

// get returns a buffer of n bytes, of any contents.
func (b *pageBufs) get(n int) []byte {
	if p, ok := b.pool.Get().(*[]byte); ok {
		if cap(*p) >= n {
			return (*p)[:n]
		}
		b.pool.Put(p) // for a smaller page
	}
	return make([]byte, n, n+n/8)
}

// put takes buf back; nothing may use it after.
func (b *pageBufs) put(buf []byte) {
	if cap(buf) > 0 {
		b.pool.Put(&buf)
	}
}

// release gives the data pages' buffer back to r.bufs: the pages read
// from it are no longer read. It leaves r as if no page was read into it.
func (r *chunkPages) release() {
	if r.bufs != nil && r.buf != nil {
		r.bufs.put(r.buf)
	}
	r.buf = nil
}

// next reads the next page, skipping those of other types (index pages).
// It returns io.ErrUnexpectedEOF past the chunk's last data page.
func (r *chunkPages) next() (chunkPage, error) {
	for r.seen < r.nrows {
		if r.pos >= len(r.chunk) {
			return chunkPage{}, io.ErrUnexpectedEOF
		}
		h, n, err := readPageHeader(r.chunk[r.pos:])
		if err != nil {
			return chunkPage{}, err
		}
		if h.compressed < 0 || h.uncompressed < 0 || h.compressed > maxCompressedPage || h.uncompressed > maxUncompressedPage {
			return chunkPage{}, fmt.Errorf("%w: a page of %d bytes, %d uncompressed", errChunkPage, h.compressed, h.uncompressed)
		}
		body := r.pos + n
		if int64(h.compressed) > int64(len(r.chunk)-body) {
			return chunkPage{}, fmt.Errorf("%w: a page of %d bytes with %d left in its chunk", errChunkPage, h.compressed, len(r.chunk)-body)
		}
		src := r.chunk[body : body+int(h.compressed)]
		r.pos = body + int(h.compressed)
		p := chunkPage{pageHeader: h}
		switch h.typ {
		case pageDict:
			r.dicts.Add(1)
			if p.data, err = r.decompress(src, int(h.uncompressed), nil); err != nil {
				return chunkPage{}, err
			}
		case pageData:
			r.seen += int64(h.values)
			var dst []byte
			if r.typ != compress.Codecs.Uncompressed {
				dst = r.dataBuf(int(h.uncompressed))
			}
			if p.data, err = r.decompress(src, int(h.uncompressed), dst); err != nil {
				return chunkPage{}, err
			}
		case pageDataV2:
			r.seen += int64(h.rows)
			levels := int64(h.defLen) + int64(h.repLen)
			if h.defLen < 0 || h.repLen < 0 || levels > int64(h.compressed) || levels > int64(h.uncompressed) {
				return chunkPage{}, fmt.Errorf("%w: levels of %d and %d bytes in a page of %d", errChunkPage, h.repLen, h.defLen, h.compressed)
			}
			if !h.v2Compressed || r.typ == compress.Codecs.Uncompressed {
				if h.compressed != h.uncompressed {
					return chunkPage{}, fmt.Errorf("%w: an uncompressed page of %d bytes that says %d", errChunkPage, h.compressed, h.uncompressed)
				}
				p.data = src
				break
			}
			buf := r.dataBuf(int(h.uncompressed))
			copy(buf, src[:levels])
			vals, err := r.decompress(src[levels:], int(int64(h.uncompressed)-levels), buf[levels:])
			if err != nil {
				return chunkPage{}, err
			}
			p.data = buf[:levels+int64(len(vals))]
		default:
			continue
		}
		r.read++
		return p, nil
	}
	return chunkPage{}, io.ErrUnexpectedEOF
}

// dataBuf returns the data pages' buffer, of n bytes.
func (r *chunkPages) dataBuf(n int) []byte {
	if cap(r.buf) < n {
		if r.bufs == nil {
			r.buf = make([]byte, n)
		} else {
			r.bufs.put(r.buf)
			r.buf = r.bufs.get(n)
		}
	}
	return r.buf[:n]
}

// decompress returns src decompressed, n bytes, into dst when it is not
// nil (else into a buffer of its own); an uncompressed chunk's src itself.
func (r *chunkPages) decompress(src []byte, n int, dst []byte) ([]byte, error) {
	if r.typ == compress.Codecs.Uncompressed {
		if len(src) != n {
			return nil, fmt.Errorf("%w: an uncompressed page of %d bytes that says %d", errChunkPage, len(src), n)
		}
		return src, nil
	}
	if r.typ == compress.Codecs.Snappy {
		// Checked before it is decoded: the decoder allocates what the
		// block declares when dst is too small.
		if m, err := s2.DecodedLen(src); err != nil || m != n {
			return nil, fmt.Errorf("%w: a snappy block of %d bytes where the page says %d (%v)", errChunkPage, m, n, err)
		}
	}
	if dst == nil {
		// A dictionary page's buffer of its own, fresh memory, advised
		// into huge pages where it spans them (adviseHuge): the Rust
		// crate's 8 MiB dictionary pages faulted in 4 KiB at a time were
		// half the plan pass's page faults (15.8k, 8.4k with the advice).
		dst = make([]byte, n)
		adviseHuge(dst)
	}
	out, err := compress.Decode(r.codec, dst[:n], src)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errChunkPage, err)
	}
	if len(out) != n {
		return nil, fmt.Errorf("%w: a page of %d bytes decompressed where it says %d", errChunkPage, len(out), n)
	}
	return out, nil
}

// readPageHeader reads a PageHeader in Thrift's compact protocol from the
// start of b, and returns it with its length.
func readPageHeader(b []byte) (pageHeader, int, error) {
	c := &thriftCheck{buf: b}
	h := pageHeader{typ: -1, uncompressed: -1, compressed: -1, v2Compressed: true}
	var seen [3]bool // data_page_header, dictionary_page_header, data_page_header_v2
	err := c.fields(0, func(id int64, t byte) (bool, error) {
		switch {
		case id >= 1 && id <= 3 && t == tcI32:
			v, err := c.i32()
			switch id {
			case 1:
				h.typ = v
			case 2:
				h.uncompressed = v
			case 3:
				h.compressed = v
			}
			return true, err
		case id == 5 && t == tcStruct: // DataPageHeader
			seen[0] = true
			return true, c.fields(1, func(id int64, t byte) (bool, error) {
				if t != tcI32 || id < 1 || id > 3 {
					return false, nil
				}
				v, err := c.i32()
				switch id {
				case 1:
					h.values = v
				case 2:
					h.enc = parquet.Encoding(v)
				case 3:
					h.defEnc = parquet.Encoding(v)
				}
				return true, err
			})
		case id == 7 && t == tcStruct: // DictionaryPageHeader
			seen[1] = true
			return true, c.fields(1, func(id int64, t byte) (bool, error) {
				if t != tcI32 || id < 1 || id > 2 {
					return false, nil
				}
				v, err := c.i32()
				if id == 1 {
					h.values = v
				} else {
					h.enc = parquet.Encoding(v)
				}
				return true, err
			})
		case id == 8 && t == tcStruct: // DataPageHeaderV2
			seen[2] = true
			return true, c.fields(1, func(id int64, t byte) (bool, error) {
				if id == 7 && (t == tcTrue || t == tcFalse) {
					h.v2Compressed = t == tcTrue
					return true, nil
				}
				if t != tcI32 || id < 1 || id > 6 || id == 2 {
					return false, nil
				}
				v, err := c.i32()
				switch id {
				case 1:
					h.values = v
				case 3:
					h.rows = v
				case 4:
					h.enc = parquet.Encoding(v)
				case 5:
					h.defLen = v
				case 6:
					h.repLen = v
				}
				return true, err
			})
		}
		return false, nil
	})
	if err != nil {
		return h, 0, fmt.Errorf("%w: page header: %w", errChunkPage, err)
	}
	if h.typ < 0 || h.uncompressed < 0 || h.compressed < 0 {
		return h, 0, fmt.Errorf("%w: a page header without its type or sizes", errChunkPage)
	}
	if (h.typ == pageData && !seen[0]) || (h.typ == pageDict && !seen[1]) || (h.typ == pageDataV2 && !seen[2]) {
		return h, 0, fmt.Errorf("%w: a page header of type %d without its own header", errChunkPage, h.typ)
	}
	if h.values < 0 || h.rows < 0 {
		return h, 0, fmt.Errorf("%w: a page of %d values", errChunkPage, h.values)
	}
	return h, c.pos, nil
}

// fields reads a struct's fields up to its stop, calling fn with each
// field's id and type; a field fn does not read (false) is skipped. It is
// the one loop over a struct's fields, the footer's check (structure)
// and the page headers' reader (readPageHeader) alike.
func (c *thriftCheck) fields(depth int, fn func(id int64, t byte) (bool, error)) error {
	if depth > maxThriftDepth {
		return fmt.Errorf("%w: nested deeper than %d", errThrift, maxThriftDepth)
	}
	var id int64
	for {
		h, err := c.byte1()
		if err != nil {
			return err
		}
		if h == tcStop {
			return nil
		}
		t := h & 0x0f
		if d := int64(h >> 4); d != 0 {
			id += d
		} else {
			v, err := c.varint()
			if err != nil {
				return err
			}
			id = int64(v>>1) ^ -int64(v&1)
		}
		done, err := fn(id, t)
		if err != nil {
			return err
		}
		if !done {
			if err := c.value(t, depth+1, 0); err != nil {
				return err
			}
		}
	}
}

// i32 reads a zigzag varint of 32 bits.
func (c *thriftCheck) i32() (int32, error) {
	v, err := c.varint()
	if err != nil {
		return 0, err
	}
	if v > 1<<32-1 {
		return 0, fmt.Errorf("%w: an i32 of %d bits", errThrift, v)
	}
	return int32(uint32(v>>1) ^ -uint32(v&1)), nil
}
