package text

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/idemport/idemport/reader/internal/value"
)

// splitBySearch is split as a search for the quote, then for each comma.
func splitBySearch(cells []value.Cell, line []byte, comma byte, quoting bool) ([]value.Cell, bool) {
	if quoting && bytes.IndexByte(line, '"') >= 0 {
		return cells, true
	}
	cell := func(start, end int) value.Cell {
		if start == end {
			return value.Cell{B: line[start:end], Kind: value.CellNull}
		}
		return value.Cell{B: line[start:end], Kind: value.CellText}
	}
	start := 0
	for {
		i := bytes.IndexByte(line[start:], comma)
		if i < 0 {
			return append(cells, cell(start, len(line))), false
		}
		cells = append(cells, cell(start, start+i))
		start += i + 1
	}
}

// sameCells reports whether got and want are the same cells of line: the
// same runs of it (not copies), of the same kinds, each with its length
// for capacity, so that appending to one cannot overwrite the next.
func sameCells(line []byte, got, want []value.Cell) bool {
	return slices.EqualFunc(got, want, func(g, w value.Cell) bool {
		return g.Kind == w.Kind && len(g.B) == len(w.B) && cap(g.B) == len(g.B) &&
			(len(g.B) == 0 || unsafe.SliceData(g.B) == unsafe.SliceData(w.B))
	})
}

// TestSplit: split cuts a row where a search for each comma does and finds
// the quote it finds, for rows of every length up to several words, with
// delimiters and quotes at every place (the first and last byte of a word,
// the bytes after the last whole word), bytes with the top bit set next to
// them (the word-at-a-time match must not borrow across bytes), for
// commas, tabs and semicolons, quoting or not.
func TestSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	alphabet := []byte{'a', '1', ' ', 0x80, 0xff, 0xac, 0x2b, 0x2d, 0x00, 0x01, '\t', ',', ';', '"', '"' ^ 0x80, ',' ^ 0x80, ',' + 1, ',' - 1}
	var line []byte
	before := value.Cell{B: []byte("kept"), Kind: value.CellText}
	for range 200_000 {
		line = line[:0]
		n := r.IntN(40)
		for range n {
			if r.IntN(4) == 0 {
				line = append(line, alphabet[r.IntN(len(alphabet))])
			} else {
				line = append(line, byte('a'+r.IntN(26)))
			}
		}
		for _, comma := range []byte{',', '\t', ';'} {
			for _, quoting := range []bool{true, false} {
				want, wantQ := splitBySearch(nil, line, comma, quoting)
				got, gotQ, gotA := split([]value.Cell{before}, line, comma, quoting)
				if gotQ != wantQ || !wantQ && !sameCells(line, got[1:], want) || &got[0].B[0] != &before.B[0] {
					t.Fatalf("split(%q, %q, quoting %v) = %v, %v; want %v, %v", line, comma, quoting, got, gotQ, want, wantQ)
				}
				if wantA := !bytes.ContainsFunc(line, func(r rune) bool { return r == 0 || r >= utf8.RuneSelf }); !gotQ && gotA != wantA {
					t.Fatalf("split(%q, %q, quoting %v) says ASCII without NUL %v, want %v", line, comma, quoting, gotA, wantA)
				}
			}
		}
	}
}
