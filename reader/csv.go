package reader

import (
	"bytes"
	"errors"
	"hash/crc32"
	"io"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

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
	next() ([]cell, *problem, error)
	// offset is the byte offset, in the decompressed stream, of the first
	// byte not yet consumed: after next, where the following row starts.
	offset() int64
	// rowStart is the byte offset where the row last returned by next starts.
	rowStart() int64
	// raw returns the bytes of the row last returned by next.
	raw() []byte
	// crcNow returns the CRC-32C of the bytes consumed since resetCRC.
	crcNow() uint32
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
	crc    uint32
	start  int64 // offset of the current row
}

const (
	initialBuffer = 1 << 20
	headerBuffer  = 64 << 10
)

func newBuffer(r io.Reader, maxRow int, offset int64) buffer {
	// The buffer never exceeds maxRow, so that fill can tell a row too large.
	return buffer{r: r, buf: make([]byte, min(initialBuffer, maxRow)), maxRow: maxRow, base: offset}
}

var errRowTooLarge = errors.New("row too large")

// fill reads more data, keeping buf[pos:end]. It returns errRowTooLarge when
// the unfinished row already fills maxRow bytes.
func (b *buffer) fill() error {
	if b.eof {
		return nil
	}
	if b.pos > 0 {
		n := copy(b.buf, b.buf[b.pos:b.end])
		b.base += int64(b.pos)
		b.end = n
		b.pos = 0
	}
	if b.end == len(b.buf) {
		if len(b.buf) >= b.maxRow {
			return errRowTooLarge
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
func (b *buffer) consume(n int) {
	b.crc = crc32.Update(b.crc, castagnoli, b.buf[b.pos:b.pos+n])
	b.pos += n
}

func (b *buffer) offset() int64 { return b.base + int64(b.pos) }

// raw returns the bytes of the row next returned last, from its first byte
// to its line end; they alias the buffer until the next call to next.
func (b *buffer) raw() []byte     { return b.buf[b.start-b.base : b.pos] }
func (b *buffer) rowStart() int64 { return b.start }
func (b *buffer) crcNow() uint32  { return b.crc }
func (b *buffer) resetCRC()       { b.crc = 0 }

// skipBOM drops a UTF-8 byte order mark at the start of the stream.
func (b *buffer) skipBOM() error {
	for i := 0; i < 3; i++ {
		ok, err := b.avail(i)
		if err != nil || !ok {
			return err
		}
	}
	if bytes.HasPrefix(b.buf[b.pos:b.end], []byte("\xef\xbb\xbf")) {
		b.pos += 3
	}
	return nil
}

// skipBlank consumes empty lines before a row. It reports false at the end.
func (b *buffer) skipBlank() (bool, error) {
	for {
		ok, err := b.avail(0)
		if err != nil || !ok {
			return false, err
		}
		switch b.buf[b.pos] {
		case '\n':
			b.consume(1)
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
				continue
			}
		}
		return true, nil
	}
}

// span locates one field inside the current row, relative to its start.
type span struct {
	start, end int
	quoted     bool
	escaped    bool // contains "" pairs to collapse
}

// csvScanner splits RFC 4180 text into rows. Quotes are special only at the
// start of a field; a quote inside an unquoted field is kept as a character.
// Inside quotes, delimiters, CR and LF are data. Blank lines are skipped.
type csvScanner struct {
	buffer
	comma   byte
	quoting bool
	spans   []span
	cells   []cell
	scratch []byte
}

func newCSVScanner(r io.Reader, comma byte, quoting bool, maxRow int, offset int64) *csvScanner {
	return &csvScanner{buffer: newBuffer(r, maxRow, offset), comma: comma, quoting: quoting}
}

func (s *csvScanner) next() ([]cell, *problem, error) {
	ok, err := s.skipBlank()
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, io.EOF
	}
	s.start = s.offset()
	s.spans = s.spans[:0]
	var prob *problem
	n, err := s.fast()
	if err != nil {
		return nil, nil, err
	}
	if n < 0 {
		if n, prob, err = s.slow(); err != nil {
			return nil, nil, err
		}
	}
	s.makeCells()
	s.consume(n)
	return s.cells, prob, nil
}

// fast handles a row without quotes: it returns the row's length including
// its line end, or -1 when the row needs the quote-aware path.
func (s *csvScanner) fast() (int, error) {
	for {
		line := s.buf[s.pos:s.end]
		nl := bytes.IndexByte(line, '\n')
		if nl < 0 && !s.eof {
			if err := s.fill(); err != nil {
				return 0, err
			}
			continue
		}
		n := len(line) // row runs to the end of the stream
		if nl >= 0 {
			line = line[:nl]
			n = nl + 1
		}
		if s.quoting && bytes.IndexByte(line, '"') >= 0 {
			return -1, nil
		}
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		start := 0
		for {
			i := bytes.IndexByte(line[start:], s.comma)
			if i < 0 {
				s.spans = append(s.spans, span{start: start, end: len(line)})
				return n, nil
			}
			s.spans = append(s.spans, span{start: start, end: start + i})
			start += i + 1
		}
	}
}

// slow scans a row that contains quotes, byte by byte.
func (s *csvScanner) slow() (int, *problem, error) {
	s.spans = s.spans[:0]
	var prob *problem
	i := 0
	for {
		ok, err := s.avail(i)
		if err != nil {
			return 0, nil, err
		}
		if !ok { // the stream ends right after a delimiter: one more empty field
			s.spans = append(s.spans, span{start: i, end: i})
			return i, prob, nil
		}
		if s.buf[s.pos+i] == '"' {
			sp := span{start: i + 1, quoted: true}
			i++
			closed := false
			for !closed {
				j := bytes.IndexByte(s.buf[s.pos+i:s.end], '"')
				if j < 0 {
					if s.eof {
						sp.end = s.end - s.pos
						s.spans = append(s.spans, sp)
						return sp.end, &problem{code: CodeQuote, msg: "quoted field is never closed", column: len(s.spans) - 1}, nil
					}
					if err := s.fill(); err != nil {
						return 0, nil, err
					}
					continue
				}
				i += j
				ok, err := s.avail(i + 1)
				if err != nil {
					return 0, nil, err
				}
				if ok && s.buf[s.pos+i+1] == '"' {
					sp.escaped = true
					i += 2
					continue
				}
				closed = true
			}
			sp.end = i
			s.spans = append(s.spans, sp)
			i++ // past the closing quote
			// After a closing quote only a delimiter or a line end may follow.
			stray := false
			for {
				ok, err := s.avail(i)
				if err != nil {
					return 0, nil, err
				}
				if !ok {
					return i, prob, nil
				}
				c := s.buf[s.pos+i]
				if c == s.comma {
					i++
					break
				}
				if c == '\n' {
					return i + 1, prob, nil
				}
				if c == '\r' {
					ok, err := s.avail(i + 1)
					if err != nil {
						return 0, nil, err
					}
					if !ok {
						return i + 1, prob, nil
					}
					if s.buf[s.pos+i+1] == '\n' {
						return i + 2, prob, nil
					}
				}
				if !stray && prob == nil {
					prob = &problem{code: CodeQuote, msg: "unexpected character after a closing quote", column: len(s.spans) - 1}
				}
				stray = true
				i++
			}
			continue
		}
		// Unquoted field: up to the next delimiter or line end.
		start := i
		for {
			ok, err := s.avail(i)
			if err != nil {
				return 0, nil, err
			}
			if !ok {
				end := i
				if end > start && s.buf[s.pos+end-1] == '\r' {
					end--
				}
				s.spans = append(s.spans, span{start: start, end: end})
				return i, prob, nil
			}
			c := s.buf[s.pos+i]
			if c == s.comma {
				s.spans = append(s.spans, span{start: start, end: i})
				i++
				break
			}
			if c == '\n' {
				end := i
				if end > start && s.buf[s.pos+end-1] == '\r' {
					end--
				}
				s.spans = append(s.spans, span{start: start, end: end})
				return i + 1, prob, nil
			}
			i++
		}
	}
}

// makeCells turns the spans of the current row into cells.
func (s *csvScanner) makeCells() {
	row := s.buf[s.pos:]
	s.scratch = s.scratch[:0]
	for _, sp := range s.spans {
		if sp.escaped {
			f := row[sp.start:sp.end]
			for len(f) > 0 {
				i := bytes.IndexByte(f, '"')
				if i < 0 {
					s.scratch = append(s.scratch, f...)
					break
				}
				s.scratch = append(s.scratch, f[:i+1]...)
				f = f[i+2:]
			}
		}
	}
	s.cells = s.cells[:0]
	at := 0
	for _, sp := range s.spans {
		var b []byte
		if sp.escaped {
			n := unescapedLen(row[sp.start:sp.end])
			b = s.scratch[at : at+n : at+n]
			at += n
		} else {
			b = row[sp.start:sp.end:sp.end]
		}
		kind := cellText
		if len(b) == 0 && !sp.quoted {
			kind = cellNull
		}
		s.cells = append(s.cells, cell{b: b, kind: kind})
	}
}

func unescapedLen(f []byte) int {
	return len(f) - bytes.Count(f, []byte(`""`))
}
