package text

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
	"unicode/utf8"
)

// splitBySearch is split as a search for the quote, then for each comma.
func splitBySearch(spans []span, line []byte, comma byte, quoting bool) ([]span, bool) {
	if quoting && bytes.IndexByte(line, '"') >= 0 {
		return spans, true
	}
	start := 0
	for {
		i := bytes.IndexByte(line[start:], comma)
		if i < 0 {
			return append(spans, span{start: start, end: len(line)}), false
		}
		spans = append(spans, span{start: start, end: start + i})
		start += i + 1
	}
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
				got, gotQ, gotA := split([]span{{start: -1}}, line, comma, quoting)
				if gotQ != wantQ || !wantQ && !slices.Equal(got[1:], want) || got[0] != (span{start: -1}) {
					t.Fatalf("split(%q, %q, quoting %v) = %v, %v; want %v, %v", line, comma, quoting, got, gotQ, want, wantQ)
				}
				if wantA := !bytes.ContainsFunc(line, func(r rune) bool { return r == 0 || r >= utf8.RuneSelf }); !gotQ && gotA != wantA {
					t.Fatalf("split(%q, %q, quoting %v) says ASCII without NUL %v, want %v", line, comma, quoting, gotA, wantA)
				}
			}
		}
	}
}
