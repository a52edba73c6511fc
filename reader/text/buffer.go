package text

import (
	"bytes"
	"hash/crc32"
	"io"

	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/partition"
	"github.com/idemport/idemport/reader/internal/value"
)

// problem is a row-level defect: the row is rejected, the scan goes on.
type problem struct {
	code, msg string
	column    int // -1 when it concerns the whole row
}

// rowScanner yields the rows of a text format one at a time.
type rowScanner interface {
	// next returns the cells of the next row, which alias internal buffers
	// valid until the next call, and a non-nil problem when the row is
	// defective but the scan can continue. It returns io.EOF after the last row.
	next() ([]value.Cell, *problem, error)
	// offset is the byte offset, in the decompressed stream, of the first
	// byte not yet consumed: after next, where the following row starts.
	offset() int64
	// rowStart is the byte offset where the row last returned by next starts.
	rowStart() int64
	// raw returns the bytes of the row last returned by next.
	raw() []byte
	// ascii reports whether the row last returned by next is ASCII
	// without NUL bytes, as the scanner found it without looking again:
	// then value.TextClean(raw) is true. False says only that the scanner
	// did not find it so.
	ascii() bool
	// verbatim reports whether the cells of the row last returned by next
	// are made of its bytes as they are, less quotes and delimiters, or of
	// escapes that decode to neither a NUL nor invalid UTF-8: then checking
	// raw once (textClean) checks every cell.
	verbatim() bool
	// crcNow returns the CRC-32C of the bytes consumed since resetCRC.
	crcNow() uint32
	// crcTo returns the CRC-32C of the bytes consumed since resetCRC up
	// to offset end, where the row last returned by next ended: once next
	// has returned io.EOF, the blank lines it consumed after that row are
	// not counted.
	crcTo(end int64) uint32
	resetCRC()
}

// buffer is the refillable window over a stream that the text scanners share.
// Unread data is buf[pos:end]; buf[0] is at stream offset base.
type buffer struct {
	r      io.Reader
	buf    []byte
	pos    int
	end    int
	base   int64
	eof    bool
	maxRow int
	// crc is the CRC-32C of the bytes consumed up to buf[crcPos]; the
	// bytes consumed after it, buf[crcPos:pos], are added when the CRC is
	// asked for or the buffer moves, in long runs rather than a row at a
	// time (a call per row of 100 bytes cost about three times as much).
	crc    uint32
	crcPos int
	// blankCRC is the CRC when skipBlank last began consuming blank
	// lines, at offset blankAt: where the row before them ended.
	blankCRC uint32
	blankAt  int64
	start    int64 // offset of the current row
	// lines counts the line ends consumed, where the scanner counts them
	// (from the file's start in a plan pass, see input.File.DataLine):
	// the current row starts on line lines+1.
	lines int64
}

const (
	initialBuffer = 1 << 20
	headerBuffer  = 64 << 10
)

func newBuffer(r io.Reader, maxRow int, offset int64) buffer {
	// The buffer never exceeds maxRow, so that fill can tell a row too large.
	return buffer{r: r, buf: make([]byte, min(initialBuffer, maxRow)), maxRow: maxRow, base: offset}
}

// fill reads more data, keeping buf[pos:end]. It returns errRowTooLarge when
// the unfinished row already fills maxRow bytes.
func (b *buffer) fill() error {
	if b.eof {
		return nil
	}
	if b.pos > 0 {
		b.sumCRC()
		b.crcPos = 0
		n := copy(b.buf, b.buf[b.pos:b.end])
		b.base += int64(b.pos)
		b.end = n
		b.pos = 0
	}
	if b.end == len(b.buf) {
		if len(b.buf) >= b.maxRow {
			return input.ErrRowTooLarge
		}
		// Grow fourfold: refusing a row over the limit then allocates
		// about 4/3 of the limit in all (1+4+16+64 MiB for 64), where
		// doubling allocated twice the limit (1+2+...+64).
		size := min(4*len(b.buf), b.maxRow)
		nb := make([]byte, size)
		copy(nb, b.buf[:b.end])
		b.buf = nb
	}
	for {
		n, err := b.r.Read(b.buf[b.end:])
		b.end += n
		if err == io.EOF {
			b.eof = true
			return nil
		}
		if err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
	}
}

// avail reports whether the byte at pos+i is buffered, reading more if
// needed. i is relative to the start of the current row.
func (b *buffer) avail(i int) (bool, error) {
	for b.pos+i >= b.end {
		if b.eof {
			return false, nil
		}
		if err := b.fill(); err != nil {
			return false, err
		}
	}
	return true, nil
}

// consume marks n bytes from pos as read.
func (b *buffer) consume(n int) { b.pos += n }

// sumCRC adds the bytes consumed since the last call to the CRC.
func (b *buffer) sumCRC() {
	if b.crcPos < b.pos {
		b.crc = crc32.Update(b.crc, partition.Castagnoli, b.buf[b.crcPos:b.pos])
	}
	b.crcPos = b.pos
}

func (b *buffer) offset() int64 { return b.base + int64(b.pos) }

// raw returns the bytes of the row next returned last, from its first byte
// to its line end; they alias the buffer until the next call to next.
func (b *buffer) raw() []byte     { return b.buf[b.start-b.base : b.pos] }
func (b *buffer) rowStart() int64 { return b.start }

// verbatim is true for CSV and TSV, whose cells are runs of the row's
// bytes (a quote doubled inside a quoted field is one of them).
func (b *buffer) verbatim() bool { return true }

// ascii is false: a scanner that finds rows ASCII says so itself.
func (b *buffer) ascii() bool { return false }
func (b *buffer) crcNow() uint32 {
	b.sumCRC()
	return b.crc
}

func (b *buffer) crcTo(end int64) uint32 {
	if end != b.offset() && end == b.blankAt {
		return b.blankCRC
	}
	return b.crcNow()
}

func (b *buffer) resetCRC() {
	b.crc, b.crcPos = 0, b.pos
}

// skipBOM drops a UTF-8 byte order mark at the start of the stream.
func (b *buffer) skipBOM() error {
	for i := 0; i < 3; i++ {
		ok, err := b.avail(i)
		if err != nil || !ok {
			return err
		}
	}
	if bytes.HasPrefix(b.buf[b.pos:b.end], []byte("\xef\xbb\xbf")) {
		b.sumCRC()
		b.pos += 3
		b.crcPos = b.pos
	}
	return nil
}

// skipBlank consumes empty lines before a row. It reports false at the end.
func (b *buffer) skipBlank() (bool, error) {
	for first := true; ; first = false {
		ok, err := b.avail(0)
		if err != nil || !ok {
			return false, err
		}
		if c := b.buf[b.pos]; first && (c == '\n' || c == '\r') {
			b.blankCRC, b.blankAt = b.crcNow(), b.offset()
		}
		switch b.buf[b.pos] {
		case '\n':
			b.consume(1)
			b.lines++
			continue
		case '\r':
			ok, err := b.avail(1)
			if err != nil {
				return false, err
			}
			if !ok { // a CR ending the stream ends an empty line, as CRLF would
				b.consume(1)
				continue
			}
			if b.buf[b.pos+1] == '\n' {
				b.consume(2)
				b.lines++
				continue
			}
		}
		return true, nil
	}
}

// skipLines consumes n lines, each up to and including its LF (the last
// one may end the stream instead), whatever they hold: the lines before a
// header that --skip-lines names.
func (b *buffer) skipLines(n int) error {
	for ; n > 0; n-- {
		for {
			if nl := bytes.IndexByte(b.buf[b.pos:b.end], '\n'); nl >= 0 {
				b.consume(nl + 1)
				b.lines++
				break
			}
			if b.eof {
				b.consume(b.end - b.pos)
				return nil
			}
			if err := b.fill(); err != nil {
				return err
			}
		}
	}
	return nil
}
