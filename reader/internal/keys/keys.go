package keys

// Within one file only the last occurrence of a key is applied (with a
// version column, the newest version's, the last among equals). The plan
// pass finds the others, the superseded rows, in two steps: while it reads
// the rows it keeps a 64-bit hash of each good row's key, in ordinal order
// (8 bytes a row); at its end the hashes that occur more than once
// name the candidate rows, and only when there are any, the partitions that
// hold them are read again and the candidates' typed key values compared
// exactly. A hash collision thus costs a second look, never a row; a file
// whose keys do not repeat costs the hashing alone. Keys of one integer
// column that each exceed the one before (an id counting up, the commonest
// key) cannot repeat: while they come so, the index keeps the steps between
// them (AddInt), about a byte a row, hashes nothing and searches nothing;
// the first key that breaks the order (or is not such an integer) has
// every key before it hashed, as Add would have.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/idemport/idemport/internal/proc"
	"github.com/idemport/idemport/reader/internal/value"
)

// keyChunk is how many hashes one chunk of an Index holds: the index
// grows a chunk at a time, so no slice of all the hashes is ever copied.
const keyChunk = 1 << 16

// DefaultHeld is how many key hashes an Index holds in memory (8 bytes
// each: 32 MiB) before it spills them to a temporary file.
const DefaultHeld = 4 << 20

// Index collects the key hashes of a plan pass: 8 bytes a row, and 8
// more while candidates runs, up to its bound; past it the hashes go to a
// temporary file, and Candidates finds the repeated ones partition by
// partition of their top bits, two partitions at a time, each searched
// within about half the bound. It is not safe for concurrent use.
type Index struct {
	seed   maphash.Seed
	chunks [][]uint64 // hash of row ordinal spilled+i+1 at chunks[i/chunk][i%chunk]; 0 for a bad row
	n      int64      // rows recorded
	Buf    []byte     // scratch for one row's key

	held    int64  // the bound: hashes held in memory
	chunk   int    // hashes a chunk holds
	dir     string // where the spill goes
	spill   *os.File
	w       *bufio.Writer
	spilled int64 // rows whose hashes are in the spill, in ordinal order
	err     error // the spill's first error, returned by Candidates
	parts   []*os.File
	maxOpen int // partition files open at once: maxParts
	workers int // goroutines that search for repeated hashes
	r       hashReader

	// While each key so far is an integer above the one before (AddInt),
	// the index keeps the keys, not their hashes: stretches of rows of
	// consecutive ordinals, each its first key and then the steps from one
	// key to the next as uvarints in steps (a byte a row where ids count
	// up by less than 128), up to the bytes its held hashes would take.
	// hashed says a key was not so: from then on every key is hashed. The
	// kept keys are hashed before they are freed, so for that moment the
	// index holds up to twice its bound (64 MiB at DefaultHeld).
	stretches []stretch
	steps     []byte
	lastInt   int64 // the last key kept
	hashed    bool
}

// stretch is n rows of consecutive ordinals from ord, whose keys count up
// from first by the steps from steps[at].
type stretch struct {
	ord, first, n int64
	at            int
}

// NewIndex returns an index that holds up to held hashes in memory (0
// means DefaultHeld) and spills the rest to a temporary file in dir ("":
// os.TempDir()). Candidates or Close removes what it spilled.
func NewIndex(dir string, held int) *Index {
	if held <= 0 {
		held = DefaultHeld
	}
	return &Index{seed: maphash.MakeSeed(), held: int64(held), chunk: min(keyChunk, held), dir: dir, maxOpen: maxParts, workers: min(2, runtime.GOMAXPROCS(0))}
}

func (k *Index) push(h uint64) {
	if (k.n-k.spilled)%int64(k.chunk) == 0 {
		if k.n-k.spilled >= k.held {
			k.spillHeld()
		}
		if i := (k.n - k.spilled) / int64(k.chunk); i < int64(len(k.chunks)) {
			k.chunks[i] = k.chunks[i][:0] // reused after a spill
		} else {
			k.chunks = append(k.chunks, make([]uint64, 0, k.chunk))
		}
	}
	c := &k.chunks[(k.n-k.spilled)/int64(k.chunk)]
	*c = append(*c, h)
	k.n++
}

// spillHeld writes the hashes held in memory to the spill, in ordinal
// order, and empties the chunks for reuse.
func (k *Index) spillHeld() {
	if k.err == nil && k.spill == nil {
		proc.SweepOwned(k.dir, "idemport-keys", "") // what killed passes left
		proc.SweepOwned(k.dir, "idemport-keyparts", "")
		k.spill, k.err = proc.CreateOwned(k.dir, "idemport-keys", "")
		if k.err == nil {
			k.w = bufio.NewWriterSize(k.spill, 1<<20)
		}
	}
	for _, c := range k.chunks {
		for len(c) > 0 && k.err == nil {
			if k.w.Available() < 8 {
				k.err = k.w.Flush()
				continue
			}
			m := min(len(c), k.w.Available()/8)
			b := k.w.AvailableBuffer()
			for _, h := range c[:m] {
				b = binary.LittleEndian.AppendUint64(b, h)
			}
			_, k.err = k.w.Write(b)
			c = c[m:]
		}
	}
	for i := range k.chunks {
		k.chunks[i] = k.chunks[i][:0]
	}
	k.spilled = k.n
}

// Spilled reports whether the index has moved hashes to a temporary file.
func (k *Index) Spilled() bool { return k.spill != nil }

// Close removes the index's temporary files and frees it; it may be
// called more than once, and on a nil Index.
func (k *Index) Close() {
	if k == nil {
		return
	}
	for _, f := range append(k.parts, k.spill) {
		if f != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}
	k.spill, k.w, k.parts, k.chunks, k.Buf, k.r, k.stretches, k.steps = nil, nil, nil, nil, nil, hashReader{}, nil, nil
}

// Add records the key bytes of the good row with the given ordinal; rows
// skipped since the last call are bad rows, which have no key. Ordinals
// increase from call to call, of Add and AddInt alike.
func (k *Index) Add(ordinal int64, key []byte) {
	if !k.hashed {
		k.hashKept()
	}
	for k.n < ordinal-1 {
		k.push(0)
	}
	k.push(maphash.Bytes(k.seed, key) | 1) // never 0
}

// AddInt records the key of the good row with the given ordinal when it
// is the integer n of a key of one column: its key bytes are those of n
// (AppendValue of an Int64, AppendText of n's canonical text; TextInt).
// While each such key exceeds the one before, it is kept, not hashed.
func (k *Index) AddInt(ordinal, n int64) {
	if !k.hashed && len(k.steps)+40*len(k.stretches) < 8*int(k.held) {
		last := len(k.stretches) - 1
		switch {
		case last >= 0 && n <= k.lastInt:
			// a key that does not count up: hashed, with those before
		case last >= 0 && ordinal == k.stretches[last].ord+k.stretches[last].n:
			k.steps = binary.AppendUvarint(k.steps, uint64(n)-uint64(k.lastInt))
			k.stretches[last].n++
			k.lastInt = n
			return
		default: // the first key, or the first after bad rows
			k.stretches = append(k.stretches, stretch{ord: ordinal, first: n, n: 1, at: len(k.steps)})
			k.lastInt = n
			return
		}
	}
	k.Buf = appendInt(k.Buf[:0], n)
	k.Add(ordinal, k.Buf)
}

// hashKept hashes the keys AddInt kept, as Add would have, and makes every
// later key hashed.
func (k *Index) hashKept() {
	k.hashed = true
	var buf []byte
	for _, s := range k.stretches {
		n, at := s.first, s.at
		for i := range s.n {
			if i > 0 {
				step, w := binary.Uvarint(k.steps[at:])
				n, at = int64(uint64(n)+step), at+w
			}
			buf = appendInt(buf[:0], n)
			k.Add(s.ord+i, buf)
		}
	}
	k.stretches, k.steps = nil, nil
}

// Candidates returns, in ordinal order, the ordinals of the rows whose key
// hash occurs more than once, and frees the index (as Close does). An
// error is the spill's: the temporary file could not be written or read.
//
// It runs at the end of the plan pass, when the pass's second core is
// idle and the writer waits for the plan: the search for repeated hashes
// runs on two goroutines (one under GOMAXPROCS=1), each over hashes of its
// own (a held index's half of the rows, then half of the groups; a
// spilled index's partitions, one at a time each).
func (k *Index) Candidates() ([]int64, error) {
	defer k.Close()
	if !k.hashed {
		return nil, nil // no key, or each above the one before: none repeats
	}
	if k.spill == nil && k.err == nil {
		return k.candidatesHeld(), nil
	}
	k.spillHeld()
	if k.err == nil {
		k.err = k.w.Flush()
	}
	if k.err != nil {
		return nil, fmt.Errorf("spill key hashes: %w", k.err)
	}
	k.chunks = nil
	repeated, err := k.repeatedSpilled()
	if err != nil {
		return nil, fmt.Errorf("spill key hashes: %w", err)
	}
	if len(repeated) == 0 {
		return nil, nil
	}
	var out []int64
	var i int64
	err = k.r.each(k.spill, func(hs []uint64) {
		for _, h := range hs {
			i++
			if h != 0 && repeated[h] {
				out = append(out, i)
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("spill key hashes: %w", err)
	}
	return out, nil
}

// hashBlock is how many hashes a hashReader reads at once.
const hashBlock = 1 << 17

// hashReader reads files of hashes a block at a time, into buffers it
// keeps for the next file.
type hashReader struct {
	b  []byte
	hs []uint64
}

// each calls fn with every hash of f from its start, in order, a block at
// a time; fn must not keep the block.
func (r *hashReader) each(f *os.File, fn func([]uint64)) error {
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if block := int(min(size/8+1, hashBlock)); len(r.hs) < block {
		r.b, r.hs = make([]byte, 8*block), make([]uint64, block)
	}
	for {
		n, err := io.ReadFull(f, r.b)
		if n%8 != 0 {
			return fmt.Errorf("%s: %d bytes, not whole hashes", f.Name(), n)
		}
		for i := range n / 8 {
			r.hs[i] = binary.LittleEndian.Uint64(r.b[8*i:])
		}
		if n > 0 {
			fn(r.hs[:n/8])
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// maxParts is how many partition files are open at once; more partitions
// take more reads of the spill. minPart is the fewest hashes a partition
// is made for: smaller ones would cost more files than they save memory.
const (
	maxParts = 256
	minPart  = 256
)

// repeatedSpilled returns the hashes of the spill that occur more than
// once. The hashes are split by their top bits into partitions of about
// held/4 each, written to files; each partition is then searched on its
// own, two at a time. One of the size expected is read into memory and
// searched as a held index is (repeats); a larger one, which only a
// repeated hash makes (a partition of one repeated hash holds it n times),
// is read into a table of its distinct hashes (repeatsStreamed), so
// memory stays within the bound whatever the row count.
func (k *Index) repeatedSpilled() (map[uint64]bool, error) {
	bits := 0
	part := max(k.held/4, minPart)
	for k.n>>bits > part && bits < 32 {
		bits++
	}
	nparts := 1 << bits
	repeated := map[uint64]bool{}
	workers := k.workers
	scratch := make([]searcher, workers)
	found := make([]map[uint64]bool, workers)
	for base := 0; base < nparts; base += k.maxOpen {
		count := min(k.maxOpen, nparts-base)
		k.parts = make([]*os.File, count)
		for i := range k.parts {
			f, err := proc.CreateOwned(k.dir, "idemport-keyparts", "")
			if err != nil {
				return nil, err
			}
			k.parts[i] = f
		}
		// Each partition's hashes gather in a buffer of its own, written
		// when full.
		size := 8 * max(512, (4<<20)/8/count)
		bufs := make([][]byte, count)
		sizes := make([]int64, count) // hashes in each partition
		var werr error
		err := k.r.each(k.spill, func(hs []uint64) {
			for _, h := range hs {
				p := 0
				if bits > 0 {
					p = int(h>>(64-bits)) - base
				}
				if h == 0 || p < 0 || p >= count {
					continue
				}
				if bufs[p] == nil {
					bufs[p] = make([]byte, 0, size)
				}
				bufs[p] = binary.LittleEndian.AppendUint64(bufs[p], h)
				sizes[p]++
				if len(bufs[p]) == size && werr == nil {
					_, werr = k.parts[p].Write(bufs[p])
					bufs[p] = bufs[p][:0]
				}
			}
		})
		if err == nil {
			err = werr
		}
		for i := 0; err == nil && i < count; i++ {
			if len(bufs[i]) > 0 {
				_, err = k.parts[i].Write(bufs[i])
			}
		}
		bufs = nil
		if err != nil {
			return nil, err
		}
		var next atomic.Int64
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			if found[w] == nil {
				found[w] = map[uint64]bool{}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= count || errs[w] != nil {
						return
					}
					f := k.parts[i]
					if sizes[i] <= part+part/4 {
						errs[w] = scratch[w].repeatsRead(f, sizes[i], uint(bits), found[w])
					} else {
						errs[w] = scratch[w].repeatsStreamed(f, found[w])
					}
				}
			}()
		}
		wg.Wait()
		for i, f := range k.parts {
			f.Close()
			os.Remove(f.Name())
			k.parts[i] = nil
		}
		k.parts = nil
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	for _, m := range found {
		for h := range m {
			repeated[h] = true
		}
	}
	return repeated, nil
}

// searcher holds the scratch memory of one goroutine's search for
// repeated hashes.
type searcher struct {
	hashes  []uint64 // a partition's, read from its file
	grouped []uint64
	count   []int64 // hashes a group holds, then where its next one goes
	table   []uint64
	found   map[uint64]bool
	r       hashReader
}

// repeatsRead reads the n hashes of partition file f, whose top skip bits
// are all the same, and adds those that occur more than once to
// repeated.
func (s *searcher) repeatsRead(f *os.File, n int64, skip uint, repeated map[uint64]bool) error {
	s.hashes = slices.Grow(s.hashes[:0], int(n))
	err := s.r.each(f, func(hs []uint64) { s.hashes = append(s.hashes, hs...) })
	if err != nil {
		return err
	}
	ss := []searcher{*s}
	search([][]uint64{s.hashes}, skip, ss, repeated)
	*s = ss[0]
	return nil
}

// repeatsStreamed adds the hashes of partition file f that occur more
// than once to repeated, reading them into a table of its distinct
// hashes.
func (s *searcher) repeatsStreamed(f *os.File, repeated map[uint64]bool) error {
	s.hashes, s.grouped = nil, nil // the table alone takes the memory
	distinct := 0
	s.table = slices.Grow(s.table[:0], 1024)[:1024]
	clear(s.table)
	return s.r.each(f, func(hs []uint64) {
		for _, h := range hs {
			if 2*(distinct+1) > len(s.table) {
				old := slices.Clone(s.table)
				s.table = slices.Grow(s.table[:0], 2*len(old))[:2*len(old)]
				clear(s.table)
				for _, o := range old {
					if o != 0 {
						insertHash(s.table, o)
					}
				}
			}
			if insertHash(s.table, h) {
				distinct++
			} else {
				repeated[h] = true
			}
		}
	})
}

// parallel runs fn(0), …, fn(n-1), each on a goroutine of its own when n
// is more than one, and waits for them.
func parallel(n int, fn func(w int)) {
	if n == 1 {
		fn(0)
		return
	}
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(w)
		}()
	}
	wg.Wait()
}

// search adds to repeated the hashes in hss (0s aside, which are bad
// rows) that occur more than once; their top skip bits are all the same.
// It sorts them into groups by their next bits (8 more bytes a hash),
// then finds the repeated ones group by group, in a table that fits a
// cache. Each searcher in ss does its share of each step on a goroutine
// of its own: it groups a part of hss, then searches a part of the
// groups.
func search(hss [][]uint64, skip uint, ss []searcher, repeated map[uint64]bool) {
	var n int64
	for _, hs := range hss {
		n += int64(len(hs))
	}
	bits := uint(1)
	for int64(1)<<bits < n/256 && bits < 24 {
		bits++
	}
	shift := 64 - bits
	groups := 1 << bits
	// Searcher w groups the hashes from n*w/len(ss) to n*(w+1)/len(ss).
	ins := make([][][]uint64, len(ss))
	for w := range ss {
		lo, hi := n*int64(w)/int64(len(ss)), n*int64(w+1)/int64(len(ss))
		var off int64
		for _, hs := range hss {
			a, b := max(lo-off, 0), min(hi-off, int64(len(hs)))
			if a < b {
				ins[w] = append(ins[w], hs[a:b])
			}
			off += int64(len(hs))
		}
	}
	parallel(len(ss), func(w int) {
		s := &ss[w]
		s.count = slices.Grow(s.count[:0], groups)[:groups]
		clear(s.count)
		for _, hs := range ins[w] {
			for _, h := range hs {
				if h != 0 {
					s.count[(h<<skip)>>shift]++
				}
			}
		}
	})
	// Group b holds grouped[start[b]:start[b+1]], searcher w's hashes of
	// it after those of the searchers before it.
	start := make([]int64, groups+1)
	var total int64
	for b := range groups {
		start[b] = total
		for w := range ss {
			c := ss[w].count[b]
			ss[w].count[b] = total
			total += c
		}
	}
	start[groups] = total
	grouped := slices.Grow(ss[0].grouped[:0], int(total))[:total]
	ss[0].grouped = grouped
	parallel(len(ss), func(w int) {
		next := ss[w].count
		for _, hs := range ins[w] {
			for _, h := range hs {
				if h != 0 {
					b := (h << skip) >> shift
					grouped[next[b]] = h
					next[b]++
				}
			}
		}
	})
	parallel(len(ss), func(w int) {
		s := &ss[w]
		if s.found == nil {
			s.found = map[uint64]bool{}
		}
		for b := groups * w / len(ss); b < groups*(w+1)/len(ss); b++ {
			group := grouped[start[b]:start[b+1]]
			if len(group) < 2 {
				continue
			}
			size := 4
			for size < 2*len(group) {
				size <<= 1
			}
			s.table = slices.Grow(s.table[:0], size)[:size]
			table := s.table
			clear(table)
			mask := uint64(size - 1)
			for _, h := range group {
				j := h & mask
				for table[j] != 0 && table[j] != h {
					j = (j + 1) & mask
				}
				if table[j] == h {
					s.found[h] = true
				}
				table[j] = h
			}
		}
	})
	for w := range ss {
		for h := range ss[w].found {
			repeated[h] = true
		}
		clear(ss[w].found)
	}
}

// insertHash puts h into an open-addressing table (0 marks a free slot,
// its size a power of two) and reports whether it was not there.
func insertHash(table []uint64, h uint64) bool {
	mask := uint64(len(table) - 1)
	j := h & mask
	for table[j] != 0 {
		if table[j] == h {
			return false
		}
		j = (j + 1) & mask
	}
	table[j] = h
	return true
}

// candidatesHeld is Candidates of an index whose hashes are all held in
// memory. It searches them for repeated ones on two goroutines (one for a
// small index), and only when there are any, looks the rows up in order.
func (k *Index) candidatesHeld() []int64 {
	if k.n < 2 {
		return nil
	}
	workers := k.workers
	if k.n < 1<<16 {
		workers = 1
	}
	repeated := map[uint64]bool{}
	search(k.chunks, 0, make([]searcher, workers), repeated)
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
// to be text, are told apart by the exact comparison. A JSON string keys
// as the same text unquoted would: in a column of strings and numbers
// (or booleans), which is text, 100 and "100" (true and "true") are one
// value.
func AppendText(dst []byte, c value.Cell) []byte {
	b := c.B
	if c.Kind == value.CellText || c.Kind == value.CellNumber || c.Kind == value.CellString {
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
	if c.Kind == value.CellText || c.Kind == value.CellBool || c.Kind == value.CellString {
		if v, ok := value.ParseBool(b, false); ok {
			return append(dst, 'b', byte(v))
		}
	}
	return AppendLoose(dst, b)
}

// TextInt returns the integer n that AppendText keys text cell c as
// (AppendText(dst, c) appends what AppendValue of the Int64 n does), and
// false for a cell it keys otherwise.
func TextInt(c value.Cell) (n int64, ok bool) {
	if c.Kind != value.CellText && c.Kind != value.CellNumber && c.Kind != value.CellString {
		return 0, false
	}
	return value.Integer(c.B)
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

// AppendLoose appends the key bytes of text b that the plan pass hashes:
// those of b loosened (Loosen), so that keys a table's collation may
// compare as one (case, trailing spaces, accents: 'a' and 'A', 'c ' and
// 'c', 'é' and 'e') hash alike and are compared exactly, as candidates,
// where supersede tells them apart and notes that the file holds such
// keys (Plan.Loose).
func AppendLoose(dst []byte, b []byte) []byte {
	n := len(dst)
	dst = Loosen(dst, b)
	if len(dst) == n && (len(b) == 0 || b[len(b)-1] != ' ') {
		return AppendBytes(dst, 's', b) // plain: b itself
	}
	// The loosened text is at dst[n:]: put the tag and length before it.
	var h [1 + binary.MaxVarintLen64]byte
	head := binary.AppendUvarint(append(h[:0], 's'), uint64(len(dst)-n))
	dst = append(dst, head...)
	copy(dst[n+len(head):], dst[n:len(dst)-len(head)])
	copy(dst[n:], head)
	return dst
}

// Loosen appends to dst text b without its trailing spaces, in lower
// case, each letter without its accents: what any collation the targets
// have may leave of it (a coarser key than any of them, never a finer
// one, for what is plain text). It appends nothing for text of no
// upper-case letter, no byte beyond ASCII and no trailing space, the
// common key, which is its own loosened text.
func Loosen(dst []byte, b []byte) []byte {
	end := len(b)
	for end > 0 && b[end-1] == ' ' {
		end--
	}
	plain := end == len(b)
	for _, c := range b[:end] {
		if c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			plain = false
			break
		}
	}
	if plain {
		return dst
	}
	for i := 0; i < end; {
		c := b[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:end])
		i += size
		dst = appendBase(dst, r)
	}
	return dst
}

// appendBase appends rune r of Loosen: its letters without their marks
// (its NFKD decomposition: a full-width 'Ｋ' or a ligature 'ﬁ' is one to
// 'k' and 'fi' under an ICU collation of PostgreSQL and MariaDB's
// utf8mb4_unicode_ci), in lower case, and 'ß' as 's' (one to it under
// utf8mb4_general_ci, MariaDB's default; utf8mb4_unicode_ci and ICU make
// it one to 'ss', which this key does not meet). It is a function of its
// own, which the ASCII letters Loosen lowers itself never call.
func appendBase(dst []byte, r rune) []byte {
	var one [utf8.UTFMax]byte
	b := utf8.AppendRune(one[:0], r)
	nfd := norm.NFKD.Properties(b).Decomposition() // a table's bytes: no copy
	if nfd == nil {
		nfd = b
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
	return dst
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
	return AppendLoose(dst, v.B)
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
