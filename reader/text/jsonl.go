package text

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/value"
)

// MaxJSONColumns bounds the number of distinct keys a JSONL file may have.
const MaxJSONColumns = 1000

// jsonlScanner reads one JSON object per line. Keys become columns in the
// order they first appear; a key missing from a line is null there. Blank
// lines are skipped.
type jsonlScanner struct {
	buffer
	parser  fastjson.Parser
	index   map[string]int  // key in the file -> position
	keys    []string        // the columns' keys in the file
	names   []string        // the columns' names (after Options.Rename)
	plain   []bool          // keys[i] is written in a line as it is, without escapes
	opts    *input.Options  // Select and Rename
	skipped map[string]bool // keys Options.Select leaves out
	grow    bool            // discover new keys (plan pass) or treat them as changes
	cells   []value.Cell
	scratch []byte
	// opaque is set when the cells of the row last parsed may hold a NUL
	// or invalid UTF-8 that its bytes do not show: a \u0000 escape, or a
	// row the general parser read.
	opaque bool
}

func (s *jsonlScanner) verbatim() bool { return !s.opaque }

// addKey adds the column of a key.
func (s *jsonlScanner) addKey(key string) {
	s.index[key] = len(s.keys)
	s.keys = append(s.keys, key)
	name := key
	if n, ok := s.opts.Rename[key]; ok {
		name = n
	}
	s.names = append(s.names, name)
	s.plain = append(s.plain, key != "" && plainLen([]byte(key)) == len(key))
}

// read reports whether the values of key are read: Options.Select names
// it, or names nothing.
func (s *jsonlScanner) read(key []byte) bool {
	if len(s.opts.Select) == 0 {
		return true
	}
	if skip, ok := s.skipped[value.Str(key)]; ok {
		return !skip
	}
	k := string(key)
	skip := !slices.Contains(s.opts.Select, k)
	if len(s.skipped) < MaxJSONColumns {
		s.skipped[k] = skip
	}
	return !skip
}

// newJSONLScanner returns a scanner of the JSONL lines of r, which starts
// at offset. columns are the names (after opts.Rename) of the columns
// known so far; grow says whether keys not among them are new columns
// (the plan pass) or defects (a partition of a plan).
func newJSONLScanner(r io.Reader, maxRow int, offset int64, columns []string, grow bool, opts *input.Options) *jsonlScanner {
	s := &jsonlScanner{buffer: newBuffer(r, maxRow, offset), index: map[string]int{}, grow: grow, opts: opts, skipped: map[string]bool{}}
	for _, c := range columns {
		s.addKey(opts.SourceName(c))
	}
	return s
}

// ErrTooManyKeys is fatal: a file with this many keys is not a table.
var ErrTooManyKeys = fmt.Errorf("more than %d distinct keys", MaxJSONColumns)

func (s *jsonlScanner) next() ([]value.Cell, *problem, error) {
	ok, err := s.skipBlank()
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, io.EOF
	}
	s.start = s.offset()
	var line []byte
	n := 0
	for {
		data := s.buf[s.pos:s.end]
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 && !s.eof {
			if err := s.fill(); err != nil {
				return nil, nil, err
			}
			continue
		}
		line, n = data, len(data)
		if nl >= 0 {
			line, n = data[:nl], nl+1
		}
		break
	}
	line = bytes.TrimRight(line, "\r")
	prob, err := s.parse(line)
	s.consume(n)
	return s.cells, prob, err
}

func (s *jsonlScanner) parse(line []byte) (*problem, error) {
	s.cells = s.cells[:0]
	for range s.names {
		s.cells = append(s.cells, value.Cell{Kind: value.CellNull})
	}
	s.opaque = false
	if s.parseFlat(line) {
		return nil, nil
	}
	for i := range s.cells {
		s.cells[i] = value.Cell{Kind: value.CellNull}
	}
	s.opaque = true
	return s.parseAny(line)
}

// parseAny fills s.cells, all null on entry, from any line, and says what is
// wrong with a line that is not a JSON object of scalar and nested values.
func (s *jsonlScanner) parseAny(line []byte) (*problem, error) {
	v, err := s.parser.ParseBytes(line)
	if err != nil {
		return &problem{code: value.CodeJSON, msg: "invalid JSON: " + err.Error(), column: -1}, nil
	}
	if unpairedSurrogate(line) {
		return &problem{code: value.CodeUTF8, msg: "a \\u escape is half of a UTF-16 surrogate pair", column: -1}, nil
	}
	obj, err := v.Object()
	if err != nil {
		return &problem{code: value.CodeJSON, msg: "line is a JSON " + v.Type().String() + ", not an object", column: -1}, nil
	}
	var prob *problem
	var fatal error
	s.scratch = s.scratch[:0]
	type pending struct {
		col        int
		start, end int
		kind       value.CellKind
	}
	var marks [64]pending
	pend := marks[:0]
	obj.Visit(func(key []byte, v *fastjson.Value) {
		if prob != nil || fatal != nil {
			return
		}
		col, ok := s.index[value.Str(key)]
		if !ok && len(key) > 0 && !s.read(key) {
			return // a column --select leaves out
		}
		if !ok {
			if len(key) == 0 {
				prob = &problem{code: value.CodeJSON, msg: "object has an empty key", column: -1}
				return
			}
			if code, msg := value.CheckText(key); code != "" {
				prob = &problem{code: code, msg: "key: " + msg, column: -1}
				return
			}
			if !s.grow {
				prob = &problem{code: value.CodeJSON, msg: fmt.Sprintf("key %q is not a column of the plan", key), column: -1}
				return
			}
			if len(s.names) >= MaxJSONColumns {
				fatal = ErrTooManyKeys
				return
			}
			col = len(s.names)
			s.addKey(string(key))
			if j := slices.Index(s.names, s.names[col]); j != col {
				fatal = fmt.Errorf("%w: keys %q and %q would both be column %q", input.ErrOption, s.keys[j], key, s.names[col])
				return
			}
			s.cells = append(s.cells, value.Cell{Kind: value.CellNull})
		}
		start := len(s.scratch)
		var kind value.CellKind
		switch v.Type() {
		case fastjson.TypeNull:
			pend = append(pend, pending{col: col, kind: value.CellNull})
			return
		case fastjson.TypeString:
			kind = value.CellString
			s.scratch = append(s.scratch, v.GetStringBytes()...)
		case fastjson.TypeNumber:
			kind = value.CellNumber
			s.scratch = v.MarshalTo(s.scratch)
			// fastjson's parser takes NaN, 1.2.3 and +5 for numbers, which
			// would pass inference and fail conversion.
			if !jsonNumber(s.scratch[start:]) {
				prob = &problem{code: value.CodeJSON, msg: "invalid JSON: not a number", column: col}
				return
			}
		case fastjson.TypeTrue, fastjson.TypeFalse:
			kind = value.CellBool
			s.scratch = v.MarshalTo(s.scratch)
		default:
			kind = value.CellJSON
			s.scratch = v.MarshalTo(s.scratch)
		}
		if kind == value.CellJSON {
			// The parser copies nested text as it is: bad numbers, \q
			// escapes and raw control characters would make a json value
			// that is not JSON. The validator is strict, and recurses safely
			// now that the parser has bounded the nesting depth.
			if err := fastjson.ValidateBytes(s.scratch[start:]); err != nil {
				prob = &problem{code: value.CodeJSON, msg: "invalid JSON: " + err.Error(), column: col}
				return
			}
		}
		pend = append(pend, pending{col: col, start: start, end: len(s.scratch), kind: kind})
	})
	if fatal != nil {
		return nil, fatal
	}
	for _, p := range pend {
		s.cells[p.col] = value.Cell{B: s.scratch[p.start:p.end:p.end], Kind: p.kind}
	}
	return prob, nil
}

// parseFlat fills s.cells from line when line is the common case: one
// object whose keys are known columns written without escapes, and whose
// values are strings, numbers, true, false or null, all well formed. It
// reports false for anything else, having changed nothing but s.cells and
// s.scratch, and parse then reads the line with the general parser, which
// gives the same cells for every line parseFlat takes, and the problems of
// the lines it does not.
func (s *jsonlScanner) parseFlat(line []byte) bool {
	s.scratch = s.scratch[:0]
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return false
	}
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		return skipSpace(line, i+1) == len(line)
	}
	next := 0 // the column the next key usually is
	for {
		// "key"
		if i >= len(line) || line[i] != '"' {
			return false
		}
		var end, col int
		if next < len(s.keys) && s.plain[next] && hasKey(line[i+1:], s.keys[next]) {
			// The usual case: the key is the column after the last one.
			end, col = i+1+len(s.keys[next]), next
		} else if end = i + 1 + plainLen(line[i+1:]); end >= len(line) || line[end] != '"' || end == i+1 {
			return false
		} else if c, ok := s.index[value.Str(line[i+1:end])]; ok {
			col = c
		} else if !s.read(line[i+1 : end]) {
			col = -1 // a column --select leaves out: its value is read, not kept
		} else {
			return false // a new key: the general parser adds it
		}
		if col >= 0 {
			next = col + 1
		}
		i = skipSpace(line, end+1)
		if i >= len(line) || line[i] != ':' {
			return false
		}
		i = skipSpace(line, i+1)
		if i >= len(line) {
			return false
		}
		// value
		var c value.Cell
		switch b := line[i]; {
		case b == '"':
			var ok bool
			if c.B, i, ok = s.flatString(line, i); !ok {
				return false
			}
			c.Kind = value.CellString
		case b == '-' || b >= '0' && b <= '9':
			end := numberEnd(line, i)
			if end < 0 {
				return false
			}
			c = value.Cell{B: line[i:end:end], Kind: value.CellNumber}
			i = end
		case b == 't' && hasWord(line[i:], "true"), b == 'f' && hasWord(line[i:], "false"):
			n := 4
			if b == 'f' {
				n = 5
			}
			c = value.Cell{B: line[i : i+n : i+n], Kind: value.CellBool}
			i += n
		case b == 'n' && hasWord(line[i:], "null"):
			c = value.Cell{Kind: value.CellNull}
			i += 4
		default:
			return false // an object, an array, or not JSON
		}
		if col >= 0 {
			s.cells[col] = c
		}
		i = skipSpace(line, i)
		if i >= len(line) {
			return false
		}
		if line[i] == '}' {
			return skipSpace(line, i+1) == len(line)
		}
		if line[i] != ',' {
			return false
		}
		i = skipSpace(line, i+1)
	}
}

// flatString reads the JSON string starting at line[i] (a quote) and
// returns its text, the position after it, and whether it is one parseFlat
// takes: no raw control characters, and escapes that are valid and, for
// \u escapes, not half of a surrogate pair. Text without escapes is a slice
// of line; unescaped text is in s.scratch.
func (s *jsonlScanner) flatString(line []byte, i int) ([]byte, int, bool) {
	start := i + 1
	end := start + plainLen(line[start:])
	if end < len(line) && line[end] == '"' {
		return line[start:end:end], end + 1, true
	}
	if end >= len(line) || line[end] != '\\' {
		return nil, 0, false
	}
	// Escapes: unescape into scratch. Appending may move scratch, so cells
	// that point into it are taken only after the line is done: the text
	// is returned as a slice of the current scratch, and a later append
	// that moves it leaves this slice on the old array, which stays valid.
	at := len(s.scratch)
	s.scratch = append(s.scratch, line[start:end]...)
	j := end
	for {
		if j >= len(line) {
			return nil, 0, false
		}
		switch b := line[j]; {
		case b == '"':
			out := s.scratch[at:len(s.scratch):len(s.scratch)]
			return out, j + 1, true
		case b < 0x20:
			return nil, 0, false
		case b != '\\':
			k := j + 1 + plainLen(line[j+1:])
			s.scratch = append(s.scratch, line[j:k]...)
			j = k
			continue
		}
		if j+1 >= len(line) {
			return nil, 0, false
		}
		switch e := line[j+1]; e {
		case '"', '\\', '/':
			s.scratch = append(s.scratch, e)
		case 'b':
			s.scratch = append(s.scratch, '\b')
		case 'f':
			s.scratch = append(s.scratch, '\f')
		case 'n':
			s.scratch = append(s.scratch, '\n')
		case 'r':
			s.scratch = append(s.scratch, '\r')
		case 't':
			s.scratch = append(s.scratch, '\t')
		case 'u':
			if j+6 > len(line) || !isHex4(line[j+2:j+6]) {
				return nil, 0, false
			}
			r := hex4(line[j+2 : j+6])
			if utf16.IsSurrogate(r) {
				if r >= 0xdc00 || j+12 > len(line) || line[j+6] != '\\' || line[j+7] != 'u' || !isHex4(line[j+8:j+12]) {
					return nil, 0, false
				}
				r2 := hex4(line[j+8 : j+12])
				if r2 < 0xdc00 || r2 > 0xdfff {
					return nil, 0, false
				}
				r = utf16.DecodeRune(r, r2)
				j += 6
			}
			if r == 0 {
				s.opaque = true // the row's bytes have no NUL to show it
			}
			s.scratch = utf8.AppendRune(s.scratch, r)
			j += 4
		default:
			return nil, 0, false
		}
		j += 2
	}
}

// hasKey reports whether b starts with name and a closing quote.
func hasKey(b []byte, name string) bool {
	return len(b) > len(name) && b[len(name)] == '"' && string(b[:len(name)]) == name
}

// skipSpace returns the position of the first byte at or after i that is
// not JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// plainLen returns the length of the run at the start of b of bytes that
// are neither a quote, a backslash nor a control character: the text of a
// JSON string that needs no unescaping. It tests eight bytes at a time: a
// byte is flagged by the borrow trick (x-n)&^x&0x80 when it is below n (for
// n = 0x20), or zero after an exclusive or with the quote or the backslash;
// a flag can be wrong only above a right one, so the lowest is exact.
func plainLen(b []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ (ones * '"')
		e := x ^ (ones * '\\')
		if m := ((x-ones*0x20)&^x | (q-ones)&^q | (e-ones)&^e) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			break
		}
	}
	return i
}

// numberEnd returns the end of the JSON number starting at b[i], or -1
// when the run of number bytes there (digits, signs, points and
// exponents) is not one number as JSON writes them: the same answer as
// jsonNumber over that run, in one pass.
func numberEnd(b []byte, i int) int {
	digits := func(i int) int {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	j := digits(i)
	if j == i || (b[i] == '0' && j > i+1) {
		return -1
	}
	if i = j; i < len(b) && b[i] == '.' {
		if j = digits(i + 1); j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if j = digits(i); j == i {
			return -1
		}
		i = j
	}
	if i < len(b) && isNumberByte(b[i]) {
		return -1
	}
	return i
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// hasWord reports whether b starts with w not followed by more of a word.
func hasWord(b []byte, w string) bool {
	return len(b) >= len(w) && string(b[:len(w)]) == w && (len(b) == len(w) || !isWordByte(b[len(w)]))
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// unpairedSurrogate reports whether the JSON text b has a \u escape
// that is half of a UTF-16 surrogate pair without its other half. fastjson
// would keep such an escape as its six characters, or decode it with the
// escape after it into U+FFFD, losing that one.
func unpairedSurrogate(b []byte) bool {
	for {
		i := bytes.IndexByte(b, '\\')
		if i < 0 || i+1 >= len(b) {
			return false
		}
		if b = b[i+1:]; b[0] != 'u' || len(b) < 5 || !isHex4(b[1:5]) {
			// The escaped character, which may be a backslash, or the u of
			// a \u escape without four hex digits, which fastjson keeps as
			// it is (in a top-level string, where it is not validated).
			b = b[1:]
			continue
		}
		r := hex4(b[1:5])
		b = b[5:]
		if !utf16.IsSurrogate(r) {
			continue
		}
		if r >= 0xdc00 || len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
			return true
		}
		if r2 := hex4(b[2:6]); !isHex4(b[2:6]) || r2 < 0xdc00 || r2 > 0xdfff {
			return true
		}
		b = b[6:]
	}
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// hex4 decodes four hexadecimal digits.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// jsonNumber reports whether b is a number as JSON writes them:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func jsonNumber(b []byte) bool { return numberEnd(b, 0) == len(b) }
