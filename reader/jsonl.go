package reader

import (
	"bytes"
	"fmt"
	"io"

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
		case fastjson.TypeTrue, fastjson.TypeFalse:
			kind = cellBool
			s.scratch = v.MarshalTo(s.scratch)
		default:
			kind = cellJSON
			s.scratch = v.MarshalTo(s.scratch)
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
