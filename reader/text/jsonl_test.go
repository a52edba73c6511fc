package text

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/value"
)

// TestFlatParser: the flat parser takes the common lines and gives them the
// cells the general parser gives; it leaves every other line to the general
// parser.
func TestFlatParser(t *testing.T) {
	known := `{"a": 1, "b": "x", "c": true, "d": null}`
	for _, c := range []struct {
		line string
		flat bool
	}{
		{`{"a": 1, "b": "x", "c": true, "d": null}`, true},
		{` { "d" : false ,"c":null,  "b":"" , "a":-0.5e+10 } `, true},
		{"{\t\"a\":0,\r\"b\":\"tab\"}", true},
		{`{}`, true},
		{`{"b": "a\"q\\b\/c\n\r\t\b\f", "a": 2}`, true},
		{`{"b": "caf\u00e9 \ud83d\ude00 ok"}`, true},
		{`{"b": "nul \u0000 inside"}`, true},
		{`{"b": "é ü 中"}`, true},
		{`{"a": 1, "a": 2}`, true},
		{`{"a": 1, "e": 2}`, false},      // a new key
		{`{"a": {"x": 1}}`, false},       // nested
		{`{"a": [1, 2]}`, false},         // nested
		{`{"b": "\ud83d alone"}`, false}, // half a surrogate pair
		{`{"b": "\q"}`, false},           // not an escape
		{"{\"b\": \"raw\ttab\"}", false}, // a control character
		{`{"a": 01}`, false},
		{`{"a": 1.}`, false},
		{`{"a": NaN}`, false},
		{`{"a": tru}`, false},
		{`{"a": truex}`, false},
		{`{"a": 1} x`, false},
		{`{"a": 1,}`, false},
		{`{"a" 1}`, false},
		{`{"\u0061": 1}`, false}, // an escaped key
		{`[1]`, false},
		{`{"a": 1`, false},
		{`{"b": "open`, false},
	} {
		s := newJSONLScanner(bytes.NewReader(nil), 1<<20, 0, nil, true, &input.Options{})
		for _, l := range []string{known, c.line} {
			s.cells = s.cells[:0]
			for range s.names {
				s.cells = append(s.cells, value.Cell{Kind: value.CellNull})
			}
			if l == known {
				if _, err := s.parseAny([]byte(l)); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if got := s.parseFlat([]byte(l)); got != c.flat {
				t.Errorf("%s: flat parser takes it: %v, want %v", l, got, c.flat)
			}
		}
		checkFlatAgrees(t, [][]byte{[]byte(known), []byte(c.line)})
	}
}

// FuzzJSONLFlat: every line the flat parser takes gets the same cells from
// the general parser, with no problem (the reader's FuzzJSONL checks what
// the lines become).
func FuzzJSONLFlat(f *testing.F) {
	for _, s := range []string{`{"a": 1, "b": "x", "c": true, "d": null}`, "{\"a\": 1}\n{\"a\": 2, \"b\": \"\\u00e9\"}\n{\"b\": [1]}",
		"{\"a\": 1}\r\n{\"a\": \"x\\ud83d\"}\n", `{"a": 01}`} {
		f.Add([]byte(s))
	}
	// The reader's JSONL seeds (testdata/fuzz/README.md): plain files, and
	// the []byte argument of those in Go's corpus format.
	dir := filepath.Join("..", "..", "testdata", "fuzz", "FuzzJSONL")
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		if rest, ok := bytes.CutPrefix(data, []byte("go test fuzz v1\n")); ok {
			arg, _, _ := bytes.Cut(rest, []byte("\n"))
			lit, ok := bytes.CutPrefix(arg, []byte("[]byte("))
			if !ok || !bytes.HasSuffix(lit, []byte(")")) {
				continue
			}
			s, err := strconv.Unquote(string(lit[:len(lit)-1]))
			if err != nil {
				f.Fatalf("%s: %v", e.Name(), err)
			}
			data = []byte(s)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var lines [][]byte
		for _, l := range bytes.Split(data, []byte("\n")) {
			if l = bytes.TrimRight(l, "\r"); len(l) > 0 {
				lines = append(lines, l)
			}
		}
		checkFlatAgrees(t, lines)
	})
}

// checkFlatAgrees checks that every line the flat parser takes gets the
// same cells from the general parser, with no problem.
func checkFlatAgrees(t *testing.T, lines [][]byte) {
	s := newJSONLScanner(bytes.NewReader(nil), 1<<20, 0, nil, true, &input.Options{})
	nulls := func() {
		s.cells = s.cells[:0]
		for range s.names {
			s.cells = append(s.cells, value.Cell{Kind: value.CellNull})
		}
	}
	for i, l := range lines {
		// The general parser first, so that the line's keys are known.
		nulls()
		prob, err := s.parseAny(l)
		if err != nil {
			return
		}
		var want []value.Cell
		for _, c := range s.cells {
			want = append(want, value.Cell{B: bytes.Clone(c.B), Kind: c.Kind})
		}
		nulls()
		if !s.parseFlat(l) {
			continue
		}
		if prob != nil {
			t.Fatalf("line %d %q: the flat parser takes it, the general one says %s", i+1, l, prob.msg)
		}
		for k := range want {
			if s.cells[k].Kind != want[k].Kind || !bytes.Equal(s.cells[k].B, want[k].B) {
				t.Fatalf("line %d %q, column %d: flat %d %q, general %d %q", i+1, l, k, s.cells[k].Kind, s.cells[k].B, want[k].Kind, want[k].B)
			}
		}
	}
}

// TestPlainLen checks the eight-bytes-at-a-time scan against the byte
// loop it stands for: every byte value at every place of runs of every
// length around a word, after plain bytes of both halves of the byte range.
func TestPlainLen(t *testing.T) {
	naive := func(b []byte) int {
		for i, c := range b {
			if c == '"' || c == '\\' || c < 0x20 {
				return i
			}
		}
		return len(b)
	}
	for _, fill := range []byte{'a', 0x20, 0x7f, 0x80, 0xff, 0x21, 0x5b, 0x5d, 0x23} {
		for n := 0; n <= 25; n++ {
			for at := 0; at < n; at++ {
				for v := 0; v < 256; v++ {
					b := bytes.Repeat([]byte{fill}, n)
					b[at] = byte(v)
					if got, want := plainLen(b), naive(b); got != want {
						t.Fatalf("plainLen(%q) = %d, want %d", b, got, want)
					}
					// A second stop after the first: the first still wins.
					if at+1 < n {
						b[at+1] = 0
						if got, want := plainLen(b), naive(b); got != want {
							t.Fatalf("plainLen(%q) = %d, want %d", b, got, want)
						}
					}
				}
			}
		}
	}
}

// TestNumberEnd checks the one-pass number scan against JSON's grammar
// over the run of number bytes, what the flat parser used to check, on
// numbers and near misses followed by what may follow a value.
func TestNumberEnd(t *testing.T) {
	grammar := regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)
	for _, n := range []string{
		"0", "-0", "1", "-1", "10", "01", "-01", "00", "1.", "1.5", "1.5.5", ".5", "-", "--1", "+1",
		"1e", "1e5", "1E+5", "1e-5", "1e+", "1e5e5", "1.5e-07", "0.0", "0e0", "-0.0e-0", "1-2", "1+2",
		"9223372036854775808", "123456789012345678901234567890.123456789e-400", "1ee5", "1.e5", "0x10",
	} {
		for _, tail := range []string{"", ",", "}", " ", "x", "\"", "]"} {
			b := []byte(n + tail)
			run := 0
			for run < len(b) && isNumberByte(b[run]) {
				run++
			}
			want := -1
			if grammar.Match(b[:run]) {
				want = run
			}
			if got := numberEnd(b, 0); got != want {
				t.Errorf("numberEnd(%q) = %d, want %d", b, got, want)
			}
			pre := append([]byte(`{"a":`), b...)
			if got := numberEnd(pre, 5); (got < 0) != (want < 0) || want >= 0 && got != want+5 {
				t.Errorf("numberEnd(%q, 5) = %d, want %d", pre, got, want+5)
			}
		}
	}
}
