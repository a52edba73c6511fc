package keys

// Within one file only the last occurrence of a key is applied (with a
// version column, the newest version's, the last among equals). The plan
// pass finds the others, the superseded rows, in two steps: while it reads
// the rows it keeps a 64-bit hash of each good row's key, in ordinal order
// (8 bytes a row); at its end the hashes that occur more than once
// name the candidate rows, and only when there are any, the partitions that
// hold them are read again and the candidates' typed key values compared
// exactly. A hash collision thus costs a second look, never a row; a file
// whose keys do not repeat costs the hashing alone.

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"slices"
	"strconv"

	"github.com/idemport/idemport/reader/internal/value"
)

// keyChunk is how many hashes one chunk of an Index holds: the index
// grows a chunk at a time, so no slice of all the hashes is ever copied.
const keyChunk = 1 << 16

// Index collects the key hashes of a plan pass: 8 bytes a row, and 8
// more while candidates runs. It is not safe for concurrent use.
type Index struct {
	seed   maphash.Seed
	chunks [][]uint64 // hash of row ordinal i+1 at chunks[i/keyChunk][i%keyChunk]; 0 for a bad row
	n      int64      // rows recorded
	Buf    []byte     // scratch for one row's key
}

func NewIndex() *Index { return &Index{seed: maphash.MakeSeed()} }

func (k *Index) push(h uint64) {
	if k.n%keyChunk == 0 {
		k.chunks = append(k.chunks, make([]uint64, 0, keyChunk))
	}
	c := &k.chunks[len(k.chunks)-1]
	*c = append(*c, h)
	k.n++
}

// add records the key bytes of the good row with the given ordinal; rows
// skipped since the last call are bad rows, which have no key.
func (k *Index) Add(ordinal int64, key []byte) {
	for k.n < ordinal-1 {
		k.push(0)
	}
	k.push(maphash.Bytes(k.seed, key) | 1) // never 0
}

// candidates returns, in ordinal order, the ordinals of the rows whose key
// hash occurs more than once, and frees the index. It copies the hashes
// grouped by their top bits (8 more bytes a row), finds the repeated ones
// group by group in a table that fits a cache, and only when there are
// any, looks the rows up in order.
func (k *Index) Candidates() []int64 {
	defer func() { k.chunks, k.Buf = nil, nil }()
	if k.n < 2 {
		return nil
	}
	bits := 1
	for int64(1)<<bits < k.n/256 && bits < 24 {
		bits++
	}
	shift := 64 - bits
	start := make([]int64, 1<<bits+1)
	for _, c := range k.chunks {
		for _, h := range c {
			if h != 0 {
				start[h>>shift+1]++
			}
		}
	}
	for b := 1; b < len(start); b++ {
		start[b] += start[b-1]
	}
	grouped := make([]uint64, start[len(start)-1])
	next := slices.Clone(start[:len(start)-1])
	for _, c := range k.chunks {
		for _, h := range c {
			if h != 0 {
				b := h >> shift
				grouped[next[b]] = h
				next[b]++
			}
		}
	}
	next = nil
	repeated := map[uint64]bool{}
	var table []uint64 // open addressing; 0 marks a free slot
	for b := 0; b+1 < len(start); b++ {
		group := grouped[start[b]:start[b+1]]
		if len(group) < 2 {
			continue
		}
		size := 4
		for size < 2*len(group) {
			size <<= 1
		}
		table = slices.Grow(table[:0], size)[:size]
		clear(table)
		mask := uint64(size - 1)
		for _, h := range group {
			j := h & mask
			for table[j] != 0 && table[j] != h {
				j = (j + 1) & mask
			}
			if table[j] == h {
				repeated[h] = true
			}
			table[j] = h
		}
	}
	grouped = nil
	if len(repeated) == 0 {
		return nil
	}
	var out []int64
	var i int64
	for _, c := range k.chunks {
		for _, h := range c {
			i++
			if h != 0 && repeated[h] {
				out = append(out, i)
			}
		}
	}
	return out
}

// AppendText appends the key bytes of a text cell of a column whose type
// the pass is still inferring. Values that can be equal under the type the
// column ends up with append the same bytes (1, 1.0 and 1e0 as an integer
// or a decimal; the same instant written in two zones; TRUE and true), so
// repeats are not missed; values equal only so, in a column that turns out
// to be text, are told apart by the exact comparison.
func AppendText(dst []byte, c value.Cell) []byte {
	b := c.B
	if c.Kind == value.CellText || c.Kind == value.CellNumber {
		if value.IsInteger(b) { // canonical: its text is the number's
			if len(b) == 2 && b[0] == '-' && b[1] == '0' {
				b = b[1:]
			}
			return AppendBytes(dst, 'i', b)
		}
		if canonical, ok := value.CanonicalDecimal(b); ok {
			return AppendDecimal(dst, canonical)
		}
	}
	if c.Kind == value.CellText || c.Kind == value.CellString {
		if us, ok := value.ParseTimestamp(b, false); ok {
			return binary.BigEndian.AppendUint64(append(dst, 't'), uint64(us))
		}
	}
	if c.Kind == value.CellText || c.Kind == value.CellBool {
		if v, ok := value.ParseBool(b, false); ok {
			return append(dst, 'b', byte(v))
		}
	}
	return AppendBytes(dst, 's', b)
}

// AppendDecimal appends the key bytes of a decimal's canonical text,
// which are those of its number: a key column compares decimals by value,
// as PostgreSQL's numeric does, so 1.5 and 1.50 are one key, and 1, 1.0
// and 1e0 are (as an integer's) another. The digits are the canonical
// text's without the zeros that end its fraction (and without the point
// when nothing is left after it); zero has no sign in canonical text.
func AppendDecimal(dst, canonical []byte) []byte {
	num := canonical[:NumberLen(canonical)]
	if slices.Contains(num, '.') {
		return AppendBytes(dst, 'n', num)
	}
	return AppendBytes(dst, 'i', num)
}

// NumberLen returns how long a prefix of a decimal's canonical text names
// its number: all of it, less the zeros that end a fraction and then a
// point left with nothing after it (1.50 is 1.5, 10.0 is 10; 100 stays
// 100).
func NumberLen(canonical []byte) int {
	if !slices.Contains(canonical, '.') {
		return len(canonical)
	}
	n := len(canonical)
	for n > 1 && canonical[n-1] == '0' {
		n--
	}
	if n > 1 && canonical[n-1] == '.' {
		n--
	}
	return n
}

// appendInt appends the key bytes of an integer: its decimal text, as
// AppendText keys an integer's text.
func appendInt(dst []byte, n int64) []byte {
	var d [20]byte
	return AppendBytes(dst, 'i', strconv.AppendInt(d[:0], n, 10))
}

// AppendFloat appends the key bytes of a float: an integral one as that
// integer, so that it meets the same integer written without a fraction.
func AppendFloat(dst []byte, f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
		return appendInt(dst, int64(f))
	}
	return binary.BigEndian.AppendUint64(append(dst, 'f'), math.Float64bits(f))
}

func AppendBytes(dst []byte, tag byte, b []byte) []byte {
	dst = binary.AppendUvarint(append(dst, tag), uint64(len(b)))
	return append(dst, b...)
}

// AppendValue appends the key bytes of a value converted to type t.
func AppendValue(dst []byte, v value.Value, t value.Type) []byte {
	switch t {
	case value.Int64:
		return appendInt(dst, v.I)
	case value.Float64:
		return AppendFloat(dst, v.F)
	case value.Timestamp, value.LocalTimestamp, value.Date:
		return binary.BigEndian.AppendUint64(append(dst, 't'), uint64(v.I))
	case value.Bool:
		return append(dst, 'b', byte(v.I))
	case value.Decimal:
		return AppendDecimal(dst, v.B)
	}
	return AppendBytes(dst, 's', v.B)
}

// Columns returns the positions in names of the key columns, or nil
// when some key column is not among them.
func Columns(names, key []string) []int {
	var cols []int
	for _, k := range key {
		i := slices.Index(names, k)
		if i < 0 {
			return nil
		}
		cols = append(cols, i)
	}
	return cols
}
