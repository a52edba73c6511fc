// Package batchkey tells apart the rows of a batch that share a natural
// key, for the drivers' Writers, which apply such rows in rounds, in file
// order: the first occurrence of each key, then the second, and so on.
// A key is the bytes Append writes for each of its columns, so that
// values the database holds as one key make the same bytes.
package batchkey

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Compare says which differences between two texts a key column ignores.
type Compare uint8

const (
	// Text compares text byte by byte.
	Text Compare = iota
	// Number compares decimal text by its number: zeros ending the
	// fraction, and then a bare point, do not count (1.5 is 1.50, 1 is
	// 1.0). Text without a point is kept whole.
	Number
	// Padded compares text as a fixed-length character column does:
	// spaces ending it do not count.
	Padded
)

// Append appends row i of a to buf as one column of a batch key and
// returns the extended buffer. NULL is apart from every value; -0 is 0; an
// integer or a float is its shortest digits; any other value is the text
// the caller's text renders, less what cmp ignores. Values equal only
// under rules idemport does not know (a case-insensitive collation) make
// different bytes. Each column's bytes end with 0xff, which no UTF-8 text
// holds, so that columns do not run into each other.
func Append(buf []byte, a arrow.Array, i int, cmp Compare, text func(arrow.Array, int) string) []byte {
	if a.IsNull(i) {
		return append(buf, 0, 0xff)
	}
	buf = append(buf, 1)
	switch v := a.(type) {
	case *array.Float64:
		if v.Value(i) == 0 {
			buf = append(buf, '0')
			break
		}
		buf = strconv.AppendFloat(buf, v.Value(i), 'g', -1, 64)
	case *array.Int64:
		buf = strconv.AppendInt(buf, v.Value(i), 10)
	default:
		t := text(a, i)
		switch {
		case cmp == Padded:
			t = strings.TrimRight(t, " ")
		case cmp == Number && strings.Contains(t, "."):
			t = strings.TrimRight(strings.TrimRight(t, "0"), ".")
		}
		buf = append(buf, t...)
	}
	return append(buf, 0xff)
}

// Rounds numbers the rows of a batch by the occurrence of their key. The
// zero value is ready for use; it is not safe for concurrent use.
type Rounds struct {
	// Of holds, after Number, each row's round: the number of earlier
	// rows of the batch with its key.
	Of []int32
	// Loose, when set, numbers keys a collation may compare as one (case,
	// spaces, accents: 'a' and 'A'; sink.Target.Loose) as one key, so that
	// no round holds two rows the table takes for one key. It is coarser
	// than any collation: keys apart to the table may share a key here,
	// which costs a round, never a row.
	Loose bool
	seen  map[string]int32
	buf   []byte
	lbuf  []byte
}

// Number sets r.Of for a batch of n rows, row i's key appended to a buffer
// by key(buf, i) (Append for each key column), and returns the number of
// rounds: at least 1, and 1 when no two rows share a key.
func (r *Rounds) Number(n int, key func(buf []byte, i int) []byte) int32 {
	r.Of = r.Of[:0]
	if r.seen == nil {
		r.seen = map[string]int32{}
	}
	clear(r.seen)
	rounds := int32(1)
	for i := range n {
		r.buf = key(r.buf[:0], i)
		if r.Loose {
			r.lbuf = loosen(r.lbuf[:0], r.buf)
			r.buf, r.lbuf = r.lbuf, r.buf
		}
		k := r.seen[string(r.buf)]
		r.seen[string(r.buf)] = k + 1
		r.Of = append(r.Of, k)
		rounds = max(rounds, k+1)
	}
	return rounds
}

// loosen appends to dst key bytes b without spaces, ASCII letters in lower
// case, and each other letter without its marks (its NFKD decomposition:
// a full-width 'Ｋ' is 'k', a ligature 'ﬁ' 'fi', as to an ICU collation),
// in lower case, 'ß' as 's' (as utf8mb4_general_ci has it), as the plan
// pass loosens keys (reader/internal/keys.Loosen): a pair of keys it
// finds one, and so tells the writer of, must share a key here too, or
// both rows meet in one round (on PostgreSQL the merge fails: "ON
// CONFLICT DO UPDATE command cannot affect row a second time"). Bytes
// that are not UTF-8 (the columns' ends) stay.
func loosen(dst, b []byte) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c == ' ':
			case 'A' <= c && c <= 'Z':
				dst = append(dst, c+'a'-'A')
			default:
				dst = append(dst, c)
			}
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, c)
			i++
			continue
		}
		nfd := norm.NFKD.Properties(b[i : i+size]).Decomposition() // a table's bytes: no copy
		if nfd == nil {
			nfd = b[i : i+size]
		}
		for len(nfd) > 0 {
			m, k := utf8.DecodeRune(nfd)
			nfd = nfd[k:]
			if !unicode.Is(unicode.Mn, m) {
				if m = unicode.ToLower(unicode.ToUpper(m)); m == 'ß' || m == 'ẞ' {
					m = 's'
				}
				dst = utf8.AppendRune(dst, m)
			}
		}
		i += size
	}
	return dst
}
