package reader

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
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// keyChunk is how many hashes one chunk of a keyIndex holds: the index
// grows a chunk at a time, so no slice of all the hashes is ever copied.
const keyChunk = 1 << 16

// keyIndex collects the key hashes of a plan pass: 8 bytes a row, and 8
// more while candidates runs. It is not safe for concurrent use.
type keyIndex struct {
	seed   maphash.Seed
	chunks [][]uint64 // hash of row ordinal i+1 at chunks[i/keyChunk][i%keyChunk]; 0 for a bad row
	n      int64      // rows recorded
	buf    []byte     // scratch for one row's key
}

func newKeyIndex() *keyIndex { return &keyIndex{seed: maphash.MakeSeed()} }

func (k *keyIndex) push(h uint64) {
	if k.n%keyChunk == 0 {
		k.chunks = append(k.chunks, make([]uint64, 0, keyChunk))
	}
	c := &k.chunks[len(k.chunks)-1]
	*c = append(*c, h)
	k.n++
}

// add records the key bytes of the good row with the given ordinal; rows
// skipped since the last call are bad rows, which have no key.
func (k *keyIndex) add(ordinal int64, key []byte) {
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
func (k *keyIndex) candidates() []int64 {
	defer func() { k.chunks, k.buf = nil, nil }()
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

// appendTextKey appends the key bytes of a text cell of a column whose type
// the pass is still inferring. Values that can be equal under the type the
// column ends up with append the same bytes (1 and 1e0 as an integer or a
// decimal; the same instant written in two zones; TRUE and true), so
// repeats are not missed; values equal only so, in a column that turns out
// to be text, are told apart by the exact comparison.
func appendTextKey(dst []byte, c cell) []byte {
	b := c.b
	if c.kind == cellText || c.kind == cellNumber {
		if isInteger(b) { // canonical: its text is the number's
			if len(b) == 2 && b[0] == '-' && b[1] == '0' {
				b = b[1:]
			}
			return appendBytesKey(dst, 'i', b)
		}
		if d, ok := parseDecimal(b); ok && !d.zeros && !d.plus && !d.bare && d.fitsDecimal() {
			return appendDecimalKey(dst, appendDecimal(nil, &d))
		}
	}
	if c.kind == cellText || c.kind == cellString {
		if us, ok := parseTimestamp(b, false); ok {
			return binary.BigEndian.AppendUint64(append(dst, 't'), uint64(us))
		}
	}
	if c.kind == cellText || c.kind == cellBool {
		if v, ok := parseBool(b, false); ok {
			return append(dst, 'b', byte(v))
		}
	}
	return appendBytesKey(dst, 's', b)
}

// appendDecimalKey appends the key bytes of a decimal's canonical text: as
// an integer's when it has no fraction, so that 1e0 meets 1.
func appendDecimalKey(dst, canonical []byte) []byte {
	if slices.Contains(canonical, '.') {
		return appendBytesKey(dst, 'n', canonical)
	}
	return appendBytesKey(dst, 'i', canonical)
}

// appendIntKey appends the key bytes of an integer: its decimal text, as
// appendTextKey keys an integer's text.
func appendIntKey(dst []byte, n int64) []byte {
	var d [20]byte
	return appendBytesKey(dst, 'i', strconv.AppendInt(d[:0], n, 10))
}

// appendFloatKey appends the key bytes of a float: an integral one as that
// integer, so that it meets the same integer written without a fraction.
func appendFloatKey(dst []byte, f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
		return appendIntKey(dst, int64(f))
	}
	return binary.BigEndian.AppendUint64(append(dst, 'f'), math.Float64bits(f))
}

func appendBytesKey(dst []byte, tag byte, b []byte) []byte {
	dst = binary.AppendUvarint(append(dst, tag), uint64(len(b)))
	return append(dst, b...)
}

// appendValueKey appends the key bytes of a value converted to type t.
func appendValueKey(dst []byte, v value, t Type) []byte {
	switch t {
	case Int64:
		return appendIntKey(dst, v.i)
	case Float64:
		return appendFloatKey(dst, v.f)
	case Timestamp:
		return binary.BigEndian.AppendUint64(append(dst, 't'), uint64(v.i))
	case Bool:
		return append(dst, 'b', byte(v.i))
	case Decimal:
		return appendDecimalKey(dst, v.b)
	}
	return appendBytesKey(dst, 's', v.b)
}

// appendArrowKey appends the key bytes of row i of a column of a Parquet or
// Arrow file, as the file types it: equal values append equal bytes.
func (r *renderer) appendArrowKey(dst []byte, a arrow.Array, i int) []byte {
	switch a := a.(type) {
	case *array.Int64:
		return binary.BigEndian.AppendUint64(append(dst, 'i'), uint64(a.Value(i)))
	case *array.Int32:
		return binary.BigEndian.AppendUint64(append(dst, 'i'), uint64(a.Value(i)))
	case *array.String:
		return appendBytesKey(dst, 's', []byte(a.Value(i)))
	case *array.Float64:
		return appendFloatKey(dst, a.Value(i))
	}
	n := len(dst)
	dst = r.text(append(dst, 'x', 0, 0, 0, 0), a, i)
	binary.BigEndian.PutUint32(dst[n+1:], uint32(len(dst)-n-5))
	return dst
}

// appendBatchKey appends the exact key of row i of a batch the reader
// built: the values the target receives.
func appendBatchKey(dst []byte, rec arrow.RecordBatch, cols []int, i int) []byte {
	for _, k := range cols {
		switch a := rec.Column(k).(type) {
		case *array.Int64:
			dst = binary.BigEndian.AppendUint64(append(dst, 'i'), uint64(a.Value(i)))
		case *array.Float64:
			f := a.Value(i)
			if f == 0 {
				f = 0 // -0 is 0
			}
			dst = binary.BigEndian.AppendUint64(append(dst, 'f'), math.Float64bits(f))
		case *array.Timestamp:
			dst = binary.BigEndian.AppendUint64(append(dst, 't'), uint64(a.Value(i)))
		case *array.Boolean:
			b := byte(0)
			if a.Value(i) {
				b = 1
			}
			dst = append(dst, 'b', b)
		case *array.String:
			dst = appendBytesKey(dst, 's', []byte(a.Value(i)))
		default:
			dst = appendBytesKey(dst, 'x', []byte(a.ValueStr(i)))
		}
	}
	return dst
}

// keyColumns returns the positions in names of the key columns, or nil
// when some key column is not among them.
func keyColumns(names, key []string) []int {
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

// supersede settles the candidate rows of a plan: it reads the partitions
// that hold them and records, in each partition's Superseded, the ordinals
// of the rows that lose to another row with the same key (Options.Key),
// comparing the keys' typed values. Memory: the exact keys of the
// candidates.
func (f *File) supersede(ctx context.Context, plan *Plan, cands []int64) error {
	if len(cands) == 0 {
		return nil
	}
	names := make([]string, len(plan.Schema))
	for i, c := range plan.Schema {
		names[i] = c.Name
	}
	cols := keyColumns(names, f.opts.Key)
	// The partitions that hold candidates. A text file is read once from
	// the first of them to the last: a compressed one cannot seek.
	var reads []Partition
	next := 0
	for _, p := range plan.Partitions {
		lo, _ := slices.BinarySearch(cands, p.First)
		if lo < len(cands) && cands[lo] < p.First+p.Rows {
			reads = append(reads, p)
		}
	}
	if f.units == nil && len(reads) > 1 {
		a, z := reads[0], reads[len(reads)-1]
		span := Partition{Index: a.Index, First: a.First, Rows: z.First + z.Rows - a.First, Offset: a.Offset, Length: z.Offset + z.Length - a.Offset}
		for _, q := range plan.Partitions[a.Index : z.Index+1] {
			span.Rejected += q.Rejected
		}
		reads = []Partition{span}
	}
	vcol := slices.Index(names, f.opts.Version)
	type winner struct {
		ordinal int64
		version version
	}
	best := map[string]winner{} // exact key → its winning occurrence so far
	var superseded []int64
	var buf []byte
	for _, p := range reads {
		if err := ctx.Err(); err != nil {
			return err
		}
		pr, err := f.Partition(plan, p, 4096)
		if err != nil {
			return err
		}
		pr.span = f.units == nil
		for {
			b, err := pr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				pr.Close()
				return err
			}
			for i, o := range b.Ordinals {
				for next < len(cands) && cands[next] < o {
					next++ // not returned: a bad row now, which the apply will find changed
				}
				if next == len(cands) || cands[next] != o {
					continue
				}
				next++
				buf = appendBatchKey(buf[:0], b.Record, cols, i)
				w := winner{ordinal: o}
				if vcol >= 0 {
					w.version = versionOf(b.Record.Column(vcol), i)
				}
				prev, ok := best[string(buf)]
				switch {
				case !ok:
				case w.version.older(prev.version):
					superseded = append(superseded, o) // an older version never wins
					continue
				default:
					superseded = append(superseded, prev.ordinal)
				}
				best[string(buf)] = w
			}
			b.Release()
		}
		if err := pr.Close(); err != nil {
			return err
		}
	}
	slices.Sort(superseded)
	plan.Superseded = int64(len(superseded))
	for i := range plan.Partitions {
		p := &plan.Partitions[i]
		lo, _ := slices.BinarySearch(superseded, p.First)
		hi, _ := slices.BinarySearch(superseded, p.First+p.Rows)
		if hi > lo {
			p.Superseded = slices.Clip(superseded[lo:hi])
		}
	}
	return nil
}

// version is a value of the version column, compared as the target
// compares it.
type version struct {
	set bool // false: NULL, or no version column
	i   int64
	f   float64
	s   string
}

func versionOf(a arrow.Array, i int) version {
	if a.IsNull(i) {
		return version{}
	}
	switch a := a.(type) {
	case *array.Int64:
		return version{set: true, i: a.Value(i)}
	case *array.Timestamp:
		return version{set: true, i: int64(a.Value(i))}
	case *array.Float64:
		return version{set: true, f: a.Value(i)}
	case *array.Boolean:
		if a.Value(i) {
			return version{set: true, i: 1}
		}
		return version{set: true}
	case *array.String:
		return version{set: true, s: a.Value(i)}
	}
	return version{set: true, s: a.ValueStr(i)}
}

// older reports whether v is older than w: NULL is older than any value.
func (v version) older(w version) bool {
	if !v.set || !w.set {
		return !v.set && w.set
	}
	return v.i < w.i || (v.i == w.i && (v.f < w.f || (v.f == w.f && v.s < w.s)))
}

// supersededError reports a partition whose superseded rows are not what
// the plan says: the file changed.
func supersededError(f *File, p Partition, got int64) error {
	return &ParseError{Path: f.path, Row: p.First, Offset: p.Offset,
		Err: fmt.Errorf("%w: partition %d has %d superseded rows, the plan says %d", ErrSourceChanged, p.Index, got, len(p.Superseded))}
}
