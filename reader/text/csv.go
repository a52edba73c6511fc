package text

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"

	"github.com/idemport/idemport/internal/english"
	"github.com/idemport/idemport/reader/internal/value"
)

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
	cells   []value.Cell
	scratch []byte
	nulls   [][]byte // unquoted fields that are null besides the empty one
	// plain says the current row is ASCII without NUL bytes, as split
	// found it; false when split did not read the row (it has quotes).
	plain bool
	// escapes says a field of the current row has a doubled quote.
	escapes bool
}

// ascii reports whether the row next returned last is ASCII without NUL
// bytes: true only for a row without quotes, as split found it.
func (s *csvScanner) ascii() bool { return s.plain }

func newCSVScanner(r io.Reader, comma byte, quoting bool, maxRow int, offset int64) *csvScanner {
	return &csvScanner{buffer: newBuffer(r, maxRow, offset), comma: comma, quoting: quoting}
}

// null reports whether the unquoted field b is one of the null markers.
func (s *csvScanner) null(b []byte) bool {
	for _, m := range s.nulls {
		if bytes.Equal(b, m) {
			return true
		}
	}
	return false
}

func (s *csvScanner) next() ([]value.Cell, *problem, error) {
	ok, err := s.skipBlank()
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, io.EOF
	}
	s.start = s.offset()
	s.spans = s.spans[:0]
	s.plain, s.escapes = false, false
	var prob *problem
	n, err := s.fast()
	if err != nil {
		return nil, nil, err
	}
	if n < 0 {
		if n, prob, err = s.slow(); err != nil {
			return nil, nil, err
		}
		s.makeCells()
		s.lines += int64(bytes.Count(s.buf[s.pos:s.pos+n], []byte{'\n'}))
	} else {
		if s.nulls != nil {
			for k := range s.cells {
				if c := &s.cells[k]; c.Kind == value.CellText && s.null(c.B) {
					c.Kind = value.CellNull
				}
			}
		}
		s.lines++ // a row without quotes is one line
	}
	s.consume(n)
	return s.cells, prob, nil
}

// fast handles a row without quotes: it makes the row's cells (null
// markers aside) and returns the row's length including its line end, or
// -1 when the row needs the quote-aware path.
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
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		var quoted bool
		if s.cells, quoted, s.plain = split(s.cells[:0], line, s.comma, s.quoting); quoted {
			return -1, nil
		}
		return n, nil
	}
}

// Byte masks of the word-at-a-time search in split.
const (
	lows  = 0x0101010101010101
	highs = 0x7f7f7f7f7f7f7f7f
)

// matches returns the bytes of w equal to the byte whose copies fill
// pattern, each as its top bit (0x80), and no other bit.
func matches(w, pattern uint64) uint64 {
	x := w ^ pattern // a matching byte is 0
	return ^((x&highs + highs) | x | highs)
}

// split appends to cells the fields of line, a row without its line end,
// cut at every comma, each a run of line (its capacity its length), null
// when empty; and reports whether line holds a double quote when quoting
// (then the cells appended are not to be used) and, when it does not,
// whether line is ASCII without NUL bytes (so valid UTF-8 without NUL: what
// value.TextClean tells, told here from the words split reads anyway).
// It reads line eight bytes at a time, rather than searching it once for a
// quote and once per field for the next comma: rows of short fields have as
// many searches as fields, each of a few bytes. It makes the cells itself,
// rather than spans that a second pass over them makes into cells: on rows
// of seven short fields that pass cost two thirds as much as split.
func split(cells []value.Cell, line []byte, comma byte, quoting bool) (_ []value.Cell, quoted, ascii bool) {
	commas, quotes := lows*uint64(comma), lows*uint64('"')
	start, k := 0, 0
	var odd uint64 // the bytes of the words read that are not ASCII or are NUL
	for ; k+8 <= len(line); k += 8 {
		w := binary.LittleEndian.Uint64(line[k:])
		if quoting && matches(w, quotes) != 0 {
			return cells, true, false
		}
		odd |= w&^highs | matches(w, 0)
		for m := matches(w, commas); m != 0; m &= m - 1 {
			i := k + bits.TrailingZeros64(m)/8
			cells = append(cells, runCell(line, start, i))
			start = i + 1
		}
	}
	for ; k < len(line); k++ {
		switch c := line[k]; {
		case quoting && c == '"':
			return cells, true, false
		case c == comma:
			cells = append(cells, runCell(line, start, k))
			start = k + 1
		case c == 0 || c >= 0x80:
			odd = 1
		}
	}
	return append(cells, runCell(line, start, len(line))), false, odd == 0
}

// runCell is the unquoted field line[start:end]: null when empty.
func runCell(line []byte, start, end int) value.Cell {
	if start == end {
		return value.Cell{B: line[start:end:end], Kind: value.CellNull}
	}
	return value.Cell{B: line[start:end:end], Kind: value.CellText}
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
						return sp.end, &problem{code: value.CodeQuote, msg: s.unclosed(sp), column: len(s.spans) - 1}, nil
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
					sp.escaped, s.escapes = true, true
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
					prob = &problem{code: value.CodeQuote, msg: s.stray(s.spans[len(s.spans)-1]), column: len(s.spans) - 1}
				}
				stray = true
				i++
			}
			continue
		}
		// Unquoted field: up to the next delimiter or line end, looked
		// for in the bytes buffered, reading more only when they run out.
		start := i
		for {
			w := s.buf[s.pos+i : s.end]
			j := 0
			for j < len(w) && w[j] != s.comma && w[j] != '\n' {
				j++
			}
			i += j
			if j == len(w) {
				ok, err := s.avail(i)
				if err != nil {
					return 0, nil, err
				}
				if ok {
					continue
				}
				end := i
				if end > start && s.buf[s.pos+end-1] == '\r' {
					end--
				}
				s.spans = append(s.spans, span{start: start, end: end})
				return i, prob, nil
			}
			if w[j] == s.comma {
				s.spans = append(s.spans, span{start: start, end: i})
				i++
				break
			}
			end := i // at a line end
			if end > start && s.buf[s.pos+end-1] == '\r' {
				end--
			}
			s.spans = append(s.spans, span{start: start, end: end})
			return i + 1, prob, nil
		}
	}
}

// line returns the line the byte at i of the current row is on.
func (s *csvScanner) line(i int) int64 {
	return s.lines + 1 + int64(bytes.Count(s.buf[s.pos:s.pos+i], []byte{'\n'}))
}

// unclosed says where the quoted field sp, which the file ends in,
// opened.
func (s *csvScanner) unclosed(sp span) string {
	open, last := s.line(sp.start-1), s.line(max(sp.end-1, sp.start))
	if last == open {
		return fmt.Sprintf("a quoted field opened on line %d is never closed: check for an unescaped quote", open)
	}
	return fmt.Sprintf("a quoted field opened on line %d runs over %s to the end of the file: check for an unescaped quote on line %d", open, english.Plural(last-open+1, "line"), open)
}

// stray says what is wrong with the quoted field sp, after whose closing
// quote a character other than a delimiter or a line end follows.
func (s *csvScanner) stray(sp span) string {
	open, closed := s.line(sp.start-1), s.line(sp.end)
	if closed == open {
		return fmt.Sprintf("unexpected character after a closing quote (line %d): a quote inside a quoted field is written twice", open)
	}
	return fmt.Sprintf("a quoted field opened on line %d runs over %s, to a closing quote on line %d that a character follows: check for an unescaped quote on line %d", open, english.Plural(closed-open+1, "line"), closed, open)
}

// makeCells turns the spans of the current row into cells.
func (s *csvScanner) makeCells() {
	row := s.buf[s.pos:]
	if !s.escapes && s.nulls == nil {
		// Every cell is a run of the row, null when empty and unquoted:
		// stored by index, without append's checks, as most rows are.
		n := len(s.spans)
		if cap(s.cells) < n {
			s.cells = make([]value.Cell, n, 2*n)
		}
		cells := s.cells[:n]
		for k, sp := range s.spans {
			kind := value.CellText
			if sp.start == sp.end && !sp.quoted {
				kind = value.CellNull
			}
			cells[k] = value.Cell{B: row[sp.start:sp.end:sp.end], Kind: kind}
		}
		s.cells = cells
		return
	}
	s.scratch = s.scratch[:0]
	for _, sp := range s.spans {
		if s.escapes && sp.escaped {
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
		kind := value.CellText
		if !sp.quoted && (len(b) == 0 || (s.nulls != nil && s.null(b))) {
			kind = value.CellNull
		}
		s.cells = append(s.cells, value.Cell{B: b, Kind: kind})
	}
}

func unescapedLen(f []byte) int {
	return len(f) - bytes.Count(f, []byte(`""`))
}
