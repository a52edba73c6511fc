package pipeline

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/reader"
)

// Rows in file order land each on a random leaf of a natural key's B-tree
// when the file's keys are in random order: on SQLite, 1M rows of random
// integer keys took 11.3–14.8 s in file order and 7.4–8.5 s when each
// 64k rows were sorted by key. Where the driver says so
// (sink.Database.KeyOrder), a worker's reader therefore hands the writer
// each partition's rows sorted by their key (keyOrder), in batches as many
// and as long as it read: those 1M rows then took 5.5 s of CPU instead of
// 9.7 (docs/internals.md). The sort is stable: rows that repeat a key keep
// their file order, so that the last of them would still be written last
// (the plan drops all but the last already: Partition.Superseded); each
// row keeps its ordinal, so lineage, rejects and errors name its row of
// the file. While a partition's rows come in key order (a file sorted by
// its key), each batch is handed on as read, so that writing overlaps
// reading; from the first batch that breaks the order, the batches are
// held and sorted. Ordinal mode keeps the file's order, which is its key's.

// keyOrderBytes bounds the Arrow memory of the rows a reader holds to sort
// them: a partition's batches are held until they reach it (or the
// partition ends), sorted, and handed on. A reader in key order thus holds
// at most this much and one batch more than one in file order: the
// batches held stay until the last of their sorted copies is handed on,
// and the copies go one at a time into the writer's queue, which bounded
// the batches read ahead before too (a worker's items). A partition of
// short rows (100,000 rows of 50 bytes, about 6 MB of Arrow memory) is
// sorted whole; one of 64 MiB of wide rows in two or three runs, each
// sorted alone. The sort's own memory is 32–40 bytes a row held.
const keyOrderBytes = 32 << 20

// keyOrder sorts the batches of a partition by key before they are
// handed on (see keyOrderBytes); nil hands each batch on as it comes.
type keyOrder struct {
	key   []string       // the key's column names
	cols  []int          // their indexes in the batches, once the first came
	off   bool           // the batches have a column gather cannot copy: file order
	held  []reader.Batch // the batches of the partition not yet handed on
	bytes int            // their Arrow memory
	// limit is the Arrow memory at which the held batches are sorted
	// and handed on (keyOrderBytes).
	limit int
	// broken: a batch came whose rows, after those handed on, are not in
	// key order. Until then each batch is handed on as read (a file
	// sorted by its key is written while it is read), and last holds the
	// last row handed on, a slice of its batch.
	broken bool
	last   arrow.RecordBatch
}

// keyOrder returns the sorter of the batches of a partition read for the
// writer: nil (file order) in ordinal mode, or where the driver does not
// ask for key order (sink.Database.KeyOrder).
func (a *applier) keyOrder() *keyOrder {
	key := a.tables.write.Key
	if !a.e.st.KeyOrder || len(key) == 0 {
		return nil
	}
	return &keyOrder{key: key, limit: keyOrderBytes}
}

// columns finds the key's columns in schema s, and turns k off when it
// cannot order or copy the batches.
func (k *keyOrder) columns(s *arrow.Schema) {
	for _, f := range s.Fields() {
		if !gatherable(f.Type) {
			k.off = true
			return
		}
	}
	for _, name := range k.key {
		idx := s.FieldIndices(name)
		if len(idx) != 1 {
			k.off = true
			return
		}
		k.cols = append(k.cols, idx[0])
	}
}

// add holds b; once the rows held reach the limit, it hands them on
// sorted (flush).
func (k *keyOrder) add(b reader.Batch, send func(reader.Batch) error) error {
	if k == nil {
		return send(b)
	}
	if k.cols == nil && !k.off {
		k.columns(b.Record.Schema())
	}
	if k.off {
		return send(b)
	}
	if !k.broken {
		if k.inOrder(b.Record) {
			// A batch of no rows leaves the last row handed on as it was.
			if n := b.Record.NumRows(); n > 0 {
				k.dropLast()
				k.last = b.Record.NewSlice(n-1, n)
			}
			return send(b)
		}
		k.broken = true
		k.dropLast()
	}
	k.held = append(k.held, b)
	for _, c := range b.Record.Columns() {
		k.bytes += arrowBytes(c.Data())
	}
	if k.bytes < k.limit {
		return nil
	}
	return k.flush(send)
}

// flush hands on the rows held, sorted by key, in batches as many and as
// long as those it held, and releases those. On an error the batches not
// handed on are released.
func (k *keyOrder) flush(send func(reader.Batch) error) error {
	if k == nil {
		return nil
	}
	k.dropLast()
	held := k.held
	k.held, k.bytes = nil, 0
	defer func() {
		for _, b := range held {
			b.Release()
		}
	}()
	if len(held) == 0 {
		return nil
	}
	order := k.order(held)
	if inPlace(order) {
		// Already in key order (a file sorted by its key): hand the
		// batches on as they are, without a copy.
		for i, h := range held {
			held[i] = reader.Batch{}
			if err := send(h); err != nil {
				return err
			}
		}
		return nil
	}
	at := 0
	for _, h := range held {
		n := int(h.Record.NumRows())
		b := gather(held, order[at:at+n])
		at += n
		if err := send(b); err != nil {
			return err
		}
	}
	return nil
}

// release releases the batches held, when the partition's reading fails.
func (k *keyOrder) release() {
	if k == nil {
		return
	}
	k.dropLast()
	for _, b := range k.held {
		b.Release()
	}
	k.held, k.bytes = nil, 0
}

// dropLast releases the last row handed on as read, if held.
func (k *keyOrder) dropLast() {
	if k.last != nil {
		k.last.Release()
		k.last = nil
	}
}

// inOrder reports whether the rows of rec, after the last row handed on
// as read, are in key order (rows of one key may follow each other).
func (k *keyOrder) inOrder(rec arrow.RecordBatch) bool {
	n := int(rec.NumRows())
	if n == 0 {
		return true
	}
	held := []reader.Batch{{Record: rec}}
	if k.last != nil {
		held = append(held, reader.Batch{Record: k.last})
	}
	cmps := make([]func(x, y rowRef) int, len(k.cols))
	for i, c := range k.cols {
		cmps[i] = columnCompare(held, c)
	}
	le := func(x, y rowRef) bool {
		for _, f := range cmps {
			if c := f(x, y); c != 0 {
				return c < 0
			}
		}
		return true
	}
	if k.last != nil && !le(rowRef{1, 0}, rowRef{0, 0}) {
		return false
	}
	if len(k.cols) == 1 {
		if a, ok := rec.Column(k.cols[0]).(*array.Int64); ok && a.NullN() == 0 {
			return slices.IsSorted(a.Int64Values()[:n])
		}
	}
	for r := 1; r < n; r++ {
		if !le(rowRef{0, int32(r - 1)}, rowRef{0, int32(r)}) {
			return false
		}
	}
	return true
}

// rowRef is one row of the batches held: its batch and its row there.
type rowRef struct {
	b, r int32
}

// inPlace reports whether refs are the rows of the batches held in their
// order there.
func inPlace(refs []rowRef) bool {
	var want rowRef
	for _, x := range refs {
		if x != want {
			if x.r != 0 || x.b != want.b+1 {
				return false
			}
			want = x
		}
		want.r++
	}
	return true
}

// order returns the rows of held sorted by key, rows of equal keys in
// their order in held: sorting by (key, place in held) is a stable sort,
// at the speed of an unstable one.
func (k *keyOrder) order(held []reader.Batch) []rowRef {
	n := 0
	for _, h := range held {
		n += int(h.Record.NumRows())
	}
	refs := make([]rowRef, 0, n)
	for bi, h := range held {
		for r := range int(h.Record.NumRows()) {
			refs = append(refs, rowRef{int32(bi), int32(r)})
		}
	}
	place := func(x, y rowRef) int {
		if c := cmp.Compare(x.b, y.b); c != 0 {
			return c
		}
		return cmp.Compare(x.r, y.r)
	}
	if len(k.cols) == 1 {
		// One column (the common key): its values side by side, compared
		// without a call per column.
		switch held[0].Record.Column(k.cols[0]).(type) {
		case *array.Int64:
			if out, ok := radixInts(held, refs, k.cols[0]); ok {
				return out
			}
			return sortBy(held, refs, k.cols[0], func(a *array.Int64, r int) int64 { return a.Value(r) }, cmp.Compare[int64])
		case *array.String:
			return sortBy(held, refs, k.cols[0], func(a *array.String, r int) string { return a.Value(r) }, strings.Compare)
		}
	}
	cmps := make([]func(x, y rowRef) int, len(k.cols))
	for i, c := range k.cols {
		cmps[i] = columnCompare(held, c)
	}
	slices.SortFunc(refs, func(x, y rowRef) int {
		for _, f := range cmps {
			if c := f(x, y); c != 0 {
				return c
			}
		}
		return place(x, y)
	})
	return refs
}

// radixInts sorts refs, the rows of held in their order there, by integer
// column c, when it has no nulls and its values span less than 2^32 (ids,
// dates as numbers): each row becomes its value less the least one, above
// its place in refs, in one word, and the words are sorted by their value
// bits, 8 at a time from the lowest (a radix sort, stable: rows of one key
// keep their places). 1M rows of shuffled ids in partitions of 100,000:
// the sort's CPU time 0.03 s instead of 0.2 s (pdqsort, a call per
// comparison). ok is false, and refs untouched, otherwise.
func radixInts(held []reader.Batch, refs []rowRef, c int) (out []rowRef, ok bool) {
	vals := make([][]int64, len(held))
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i, h := range held {
		a := h.Record.Column(c).(*array.Int64)
		if a.NullN() > 0 {
			return nil, false
		}
		vals[i] = a.Int64Values()
		for _, v := range vals[i] {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if len(refs) == 0 {
		return refs, true
	}
	width := bits.Len64(uint64(hi) - uint64(lo)) // two's complement: right for any lo <= hi
	if width > 32 {
		return nil, false
	}
	words := make([]uint64, len(refs))
	for i, x := range refs {
		words[i] = (uint64(vals[x.b][x.r])-uint64(lo))<<32 | uint64(i)
	}
	tmp := make([]uint64, len(refs))
	for shift := 32; shift < 32+width; shift += 8 {
		var count [257]int
		for _, w := range words {
			count[(w>>shift)&0xff+1]++
		}
		for d := 1; d < len(count); d++ {
			count[d] += count[d-1]
		}
		for _, w := range words {
			d := (w >> shift) & 0xff
			tmp[count[d]] = w
			count[d]++
		}
		words, tmp = tmp, words
	}
	out = make([]rowRef, len(refs))
	for i, w := range words {
		out[i] = refs[uint32(w)]
	}
	return out, true
}

// sortBy sorts refs by the values value reads of column c of held, of
// array type A, nulls first, then by their place in held.
func sortBy[A arrow.Array, V any](held []reader.Batch, refs []rowRef, c int, value func(A, int) V, compare func(V, V) int) []rowRef {
	type keyed struct {
		v    V
		null bool
		at   int32 // the row's place in refs, which are in held's order
	}
	ks := make([]keyed, len(refs))
	for i, x := range refs {
		a := held[x.b].Record.Column(c).(A)
		if a.IsNull(int(x.r)) {
			ks[i] = keyed{null: true, at: int32(i)}
			continue
		}
		ks[i] = keyed{v: value(a, int(x.r)), at: int32(i)}
	}
	slices.SortFunc(ks, func(x, y keyed) int {
		switch {
		case x.null != y.null:
			if x.null {
				return -1
			}
			return 1
		case !x.null:
			if c := compare(x.v, y.v); c != 0 {
				return c
			}
		}
		return cmp.Compare(x.at, y.at)
	})
	out := make([]rowRef, len(refs))
	for i, k := range ks {
		out[i] = refs[k.at]
	}
	return out
}

// columnCompare compares two rows of held by column c, nulls first; a
// column of a type it cannot order compares every row equal.
func columnCompare(held []reader.Batch, c int) func(x, y rowRef) int {
	arr := func(x rowRef) arrow.Array { return held[x.b].Record.Column(c) }
	nulls := func(x, y rowRef) (int, bool) {
		xn, yn := arr(x).IsNull(int(x.r)), arr(y).IsNull(int(y.r))
		switch {
		case xn && yn:
			return 0, true
		case xn:
			return -1, true
		case yn:
			return 1, true
		}
		return 0, false
	}
	typed := func(f func(x, y rowRef) int) func(x, y rowRef) int {
		return func(x, y rowRef) int {
			if c, ok := nulls(x, y); ok {
				return c
			}
			return f(x, y)
		}
	}
	switch held[0].Record.Column(c).(type) {
	case *array.Int64:
		return typed(valueCompare(arr, (*array.Int64).Value, cmp.Compare[int64]))
	case *array.String:
		return typed(valueCompare(arr, (*array.String).Value, strings.Compare))
	case *array.Date32:
		return typed(valueCompare(arr, (*array.Date32).Value, cmp.Compare[arrow.Date32]))
	case *array.Timestamp:
		return typed(valueCompare(arr, (*array.Timestamp).Value, cmp.Compare[arrow.Timestamp]))
	case *array.Float64:
		return typed(valueCompare(arr, (*array.Float64).Value, cmp.Compare[float64]))
	case *array.Boolean:
		return typed(valueCompare(arr, (*array.Boolean).Value, func(x, y bool) int {
			switch {
			case x == y:
				return 0
			case y:
				return -1
			}
			return 1
		}))
	}
	return func(rowRef, rowRef) int { return 0 }
}

// valueCompare compares two rows' values of the column arr returns, an
// array of type A, read by value and compared by compare (not nulls: see
// columnCompare).
func valueCompare[A arrow.Array, V any](arr func(rowRef) arrow.Array, value func(A, int) V, compare func(V, V) int) func(x, y rowRef) int {
	return func(x, y rowRef) int {
		return compare(value(arr(x).(A), int(x.r)), value(arr(y).(A), int(y.r)))
	}
}

// gatherable reports whether gather copies columns of type t.
func gatherable(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT64, arrow.FLOAT64, arrow.STRING, arrow.BOOL, arrow.DATE32, arrow.TIMESTAMP:
		return true
	}
	return false
}

// gather returns a batch of the rows of held at refs, in that order, with
// their ordinals.
func gather(held []reader.Batch, refs []rowRef) reader.Batch {
	schema := held[0].Record.Schema()
	cols := make([]arrow.Array, schema.NumFields())
	for c, f := range schema.Fields() {
		cols[c] = gatherColumn(held, refs, c, f.Type)
	}
	ordinals := make([]int64, len(refs))
	for i, x := range refs {
		ordinals[i] = held[x.b].Ordinals[x.r]
	}
	rec := array.NewRecordBatch(schema, cols, int64(len(refs)))
	for _, a := range cols {
		a.Release()
	}
	return reader.Batch{Record: rec, Ordinals: ordinals}
}

// gatherColumn copies column c of the rows of held at refs, of type t
// (gatherable), into buffers it fills itself, sized once: through Arrow's
// builders, an append per value with its checks, the 1M rows of shuffled
// ids took 0.29 s of CPU to copy, 0.15 s now.
func gatherColumn(held []reader.Batch, refs []rowRef, c int, t arrow.DataType) arrow.Array {
	mem := memory.DefaultAllocator
	src := make([]arrow.Array, len(held))
	anyNull := false
	for i, h := range held {
		src[i] = h.Record.Column(c)
		anyNull = anyNull || src[i].NullN() > 0
	}
	n := len(refs)
	var valid *memory.Buffer
	nulls := 0
	if anyNull {
		valid = newBuffer(mem, int(bitutil.BytesForBits(int64(n))))
		bm := valid.Bytes()
		for i, x := range refs {
			ok := src[x.b].IsValid(int(x.r))
			bitutil.SetBitTo(bm, i, ok)
			if !ok {
				nulls++
			}
		}
	}
	var bufs []*memory.Buffer
	switch t.ID() {
	case arrow.INT64, arrow.FLOAT64, arrow.TIMESTAMP:
		bufs = []*memory.Buffer{valid, gatherWords(mem, src, refs, arrow.Uint64Traits.CastFromBytes)}
	case arrow.DATE32:
		bufs = []*memory.Buffer{valid, gatherWords(mem, src, refs, arrow.Uint32Traits.CastFromBytes)}
	case arrow.BOOL:
		out := newBuffer(mem, int(bitutil.BytesForBits(int64(n))))
		bm := out.Bytes()
		for i, x := range refs {
			bitutil.SetBitTo(bm, i, src[x.b].(*array.Boolean).Value(int(x.r)))
		}
		bufs = []*memory.Buffer{valid, out}
	default: // arrow.STRING
		strs := make([]*array.String, len(src))
		size := 0
		for i, a := range src {
			strs[i] = a.(*array.String)
		}
		for _, x := range refs {
			size += strs[x.b].ValueLen(int(x.r)) // 0 for a null
		}
		offsets := newBuffer(mem, (n+1)*arrow.Int32SizeBytes)
		offs := arrow.Int32Traits.CastFromBytes(offsets.Bytes())
		data := newBuffer(mem, size)
		bytes := data.Bytes()
		at := 0
		for i, x := range refs {
			offs[i] = int32(at)
			at += copy(bytes[at:], strs[x.b].Value(int(x.r)))
		}
		offs[n] = int32(at)
		bufs = []*memory.Buffer{valid, offsets, data}
	}
	d := array.NewData(t, n, bufs, nil, nulls, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	defer d.Release()
	return array.MakeFromData(d)
}

// newBuffer returns a buffer of size bytes from mem.
func newBuffer(mem memory.Allocator, size int) *memory.Buffer {
	b := memory.NewResizableBuffer(mem)
	b.Resize(size)
	return b
}

// gatherWords copies the values, words W (as cast reads them from a
// buffer), of arrays src at refs into a new buffer; a null's slot takes
// whatever its array holds there.
func gatherWords[W any](mem memory.Allocator, src []arrow.Array, refs []rowRef, cast func([]byte) []W) *memory.Buffer {
	vals := make([][]W, len(src))
	for i, a := range src {
		d := a.Data()
		vals[i] = cast(d.Buffers()[1].Bytes())[d.Offset():]
	}
	var w W
	out := newBuffer(mem, len(refs)*int(unsafe.Sizeof(w)))
	words := cast(out.Bytes())
	for i, x := range refs {
		words[i] = vals[x.b][x.r]
	}
	return out
}

// arrowBytes is the memory of the buffers of d and its children.
func arrowBytes(d arrow.ArrayData) int {
	n := 0
	for _, b := range d.Buffers() {
		if b != nil {
			n += b.Len()
		}
	}
	for _, c := range d.Children() {
		n += arrowBytes(c)
	}
	return n
}
