package reader

import (
	"bytes"
	"fmt"
	"io"
	"unicode/utf16"

	"github.com/valyala/fastjson"
)

// maxJSONColumns bounds the number of distinct keys a JSONL file may have.
const maxJSONColumns = 1000

// jsonlScanner reads one JSON object per line. Keys become columns in the
// order they first appear; a key missing from a line is null there. Blank
// lines are skipped.
type jsonlScanner struct {
	buffer
	parser  fastjson.Parser
	index   map[string]int // column name -> position
	names   []string
	grow    bool // discover new keys (plan pass) or treat them as changes
	cells   []cell
	scratch []byte
	seen    []bool
}

func newJSONLScanner(r io.Reader, maxRow int, offset int64, columns []string, grow bool) *jsonlScanner {
	s := &jsonlScanner{buffer: newBuffer(r, maxRow, offset), index: map[string]int{}, grow: grow}
	for _, c := range columns {
		s.index[c] = len(s.names)
		s.names = append(s.names, c)
	}
	return s
}

// errTooManyKeys is fatal: a file with this many keys is not a table.
var errTooManyKeys = fmt.Errorf("more than %d distinct keys", maxJSONColumns)

func (s *jsonlScanner) next() ([]cell, *problem, error) {
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
		s.cells = append(s.cells, cell{kind: cellNull})
	}
	v, err := s.parser.ParseBytes(line)
	if err != nil {
		return &problem{code: CodeJSON, msg: "invalid JSON: " + err.Error(), column: -1}, nil
	}
	if unpairedSurrogate(line) {
		return &problem{code: CodeUTF8, msg: "a \\u escape is half of a UTF-16 surrogate pair", column: -1}, nil
	}
	obj, err := v.Object()
	if err != nil {
		return &problem{code: CodeJSON, msg: "line is a JSON " + v.Type().String() + ", not an object", column: -1}, nil
	}
	var prob *problem
	var fatal error
	s.scratch = s.scratch[:0]
	type pending struct {
		col        int
		start, end int
		kind       cellKind
	}
	var marks [64]pending
	pend := marks[:0]
	obj.Visit(func(key []byte, v *fastjson.Value) {
		if prob != nil || fatal != nil {
			return
		}
		col, ok := s.index[str(key)]
		if !ok {
			if len(key) == 0 {
				prob = &problem{code: CodeJSON, msg: "object has an empty key", column: -1}
				return
			}
			if code, msg := checkText(key); code != "" {
				prob = &problem{code: code, msg: "key: " + msg, column: -1}
				return
			}
			if !s.grow {
				prob = &problem{code: CodeJSON, msg: fmt.Sprintf("key %q is not a column of the plan", key), column: -1}
				return
			}
			if len(s.names) >= maxJSONColumns {
				fatal = errTooManyKeys
				return
			}
			col = len(s.names)
			name := string(key)
			s.index[name] = col
			s.names = append(s.names, name)
			s.cells = append(s.cells, cell{kind: cellNull})
		}
		start := len(s.scratch)
		var kind cellKind
		switch v.Type() {
		case fastjson.TypeNull:
			pend = append(pend, pending{col: col, kind: cellNull})
			return
		case fastjson.TypeString:
			kind = cellString
			s.scratch = append(s.scratch, v.GetStringBytes()...)
		case fastjson.TypeNumber:
			kind = cellNumber
			s.scratch = v.MarshalTo(s.scratch)
			// fastjson's parser takes NaN, 1.2.3 and +5 for numbers, which
			// would pass inference and fail conversion.
			if !jsonNumber(s.scratch[start:]) {
				prob = &problem{code: CodeJSON, msg: "invalid JSON: not a number", column: col}
				return
			}
		case fastjson.TypeTrue, fastjson.TypeFalse:
			kind = cellBool
			s.scratch = v.MarshalTo(s.scratch)
		default:
			kind = cellJSON
			s.scratch = v.MarshalTo(s.scratch)
		}
		if kind == cellJSON {
			// The parser copies nested text as it is: bad numbers, \q
			// escapes and raw control characters would make a json value
			// that is not JSON. The validator is strict, and recurses safely
			// now that the parser has bounded the nesting depth.
			if err := fastjson.ValidateBytes(s.scratch[start:]); err != nil {
				prob = &problem{code: CodeJSON, msg: "invalid JSON: " + err.Error(), column: col}
				return
			}
		}
		pend = append(pend, pending{col: col, start: start, end: len(s.scratch), kind: kind})
	})
	if fatal != nil {
		return nil, fatal
	}
	for _, p := range pend {
		s.cells[p.col] = cell{b: s.scratch[p.start:p.end:p.end], kind: p.kind}
	}
	return prob, nil
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
func jsonNumber(b []byte) bool {
	digits := func(i int) int {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i
	}
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	j := digits(i)
	if j == i || (b[i] == '0' && j > i+1) {
		return false
	}
	if i = j; i < len(b) && b[i] == '.' {
		if j = digits(i + 1); j == i+1 {
			return false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if j = digits(i); j == i {
			return false
		}
		i = j
	}
	return i == len(b)
}
