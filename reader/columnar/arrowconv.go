package columnar

import (
	"math"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/valyala/fastjson"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/internal/partition"
	"github.com/idemport/idemport/reader/internal/reject"
	"github.com/idemport/idemport/reader/internal/value"
)

// converter turns the record batches of a Parquet or Arrow file into
// batches of the reader's own types, and finds the bad rows. The plan pass
// and the partition reader use the same converter, so they agree on which
// rows are bad.
type converter struct {
	cols   []arrowColumn
	schema *arrow.Schema // the reader's Arrow schema
	mem    memory.Allocator

	// Scratch reused from batch to batch.
	bad   []bool
	nbad  int
	probs []rowProblem // bad rows in row order, with their first problem
	slabs []slab       // rendered values of columns that render
	// deferred[k] says check left column k's slab for build to fill:
	// its values cannot fail to render and no limit needs their text.
	deferred []bool
	// clean[k] is the last dictionary of column k found clean whole
	// (textClean), so that the batches and slices of batches sharing it
	// (an IPC file's record batches) do not check it again. Only its
	// identity is used: the Data is held, not retained, so no other
	// dictionary can take its address while it is here.
	clean []arrow.ArrayData
	r     renderer
	// skip, in a plan pass, marks the columns it does not decode (see
	// planner.skips): their arrays are of the null type, not their own.
	skip []bool

	// What the target's columns hold (nil where nothing is checked), what
	// its database's types hold, and whether all json goes to its JSON
	// type; limited says some column has a limit.
	limits  []*value.Limit
	rules   idemtype.ValueRules
	allJSON bool
	limited bool
}

// rowProblem is the first defect found in a row of a batch.
type rowProblem struct {
	row       int
	col       int
	code, msg string
}

// slab holds a column's values rendered as text: value i is
// buf[offs[i]:offs[i+1]], or null when null[i].
type slab struct {
	buf  []byte
	offs []int
	null []bool
}

func newConverter(cols []arrowColumn, s value.Schema, mem memory.Allocator) *converter {
	return &converter{cols: cols, schema: s.Arrow(), mem: mem, slabs: make([]slab, len(cols)), deferred: make([]bool, len(cols)), clean: make([]arrow.ArrayData, len(cols))}
}

// view resolves the dictionary and extension wrapping of a column.
type view struct {
	a    arrow.Array       // as in the batch
	vals arrow.Array       // the array holding the values
	dict *array.Dictionary // non-nil when a is dictionary encoded
}

func newView(a arrow.Array) view {
	v := view{a: a, vals: a}
	if e, ok := v.vals.(array.ExtensionArray); ok {
		v.vals = e.Storage()
	}
	if d, ok := v.vals.(*array.Dictionary); ok {
		v.dict, v.vals = d, d.Dictionary()
		if e, ok := v.vals.(array.ExtensionArray); ok {
			v.vals = e.Storage()
		}
	}
	return v
}

// at returns where row i's value is in v.vals, or false when it is null.
func (v *view) at(i int) (int, bool) {
	if v.a.IsNull(i) {
		return 0, false
	}
	if v.dict == nil {
		return i, true
	}
	j := v.dict.GetValueIndex(i)
	return j, !v.vals.IsNull(j)
}

// plain reports whether v's values can be read at the row index directly
// and none is null, so loops can skip at.
func (v *view) plain() bool { return v.dict == nil && v.a.NullN() == 0 }

// check finds the bad rows of rec: a null in a NotNull column, then, column
// by column, a value the column's type cannot hold. It fills c.bad and
// c.probs and returns the number of bad rows.
func (c *converter) check(rec arrow.RecordBatch) int {
	n := int(rec.NumRows())
	c.bad = falses(c.bad, n)
	c.probs = c.probs[:0]
	c.nbad = 0
	mark := func(i, col int, code, msg string) {
		if !c.bad[i] {
			c.bad[i] = true
			c.nbad++
			c.probs = append(c.probs, rowProblem{row: i, col: col, code: code, msg: msg})
		}
	}
	for k, col := range c.cols {
		if !col.required {
			continue
		}
		v := newView(rec.Column(k))
		if col.mode != modeNull && v.plain() {
			continue
		}
		for i := 0; i < n; i++ {
			if _, ok := v.at(i); !ok {
				mark(i, k, value.CodeNull, "a key column must have a value")
			}
		}
	}
	for k, col := range c.cols {
		if c.skip != nil && c.skip[k] && rec.Column(k).DataType().ID() == arrow.NULL {
			// Left undecoded: checked by its page decoder. A column the
			// decoders read after all (a row group whose chunk of it
			// pqarrow decodes: see pageColumns) is checked here.
			continue
		}
		v := newView(rec.Column(k))
		switch col.mode {
		case modeUint64:
			vals := v.vals.(*array.Uint64).Values()
			for i := 0; i < n; i++ {
				if j, ok := v.at(i); ok && !c.bad[i] && vals[j] > math.MaxInt64 {
					mark(i, k, value.CodeRange, "value is larger than the int64 maximum")
				}
			}
		case modeTimestamp:
			ts := v.vals.(*array.Timestamp)
			unit := ts.DataType().(*arrow.TimestampType).Unit
			if unit == arrow.Microsecond && v.plain() {
				// The common case: only the range can be wrong.
				for i, t := range ts.Values() {
					if (int64(t) < minMicros || int64(t) > maxMicros) && !c.bad[i] {
						mark(i, k, value.CodeRange, "timestamp is outside the years 0000-9999")
					}
				}
				continue
			}
			vals := ts.Values()
			if v.plain() {
				for i, t := range vals[:n] {
					if _, code, msg := toMicros(int64(t), unit); code != "" && !c.bad[i] {
						mark(i, k, code, msg)
					}
				}
				continue
			}
			for i := 0; i < n; i++ {
				if j, ok := v.at(i); ok && !c.bad[i] {
					if _, code, msg := toMicros(int64(vals[j]), unit); code != "" {
						mark(i, k, code, msg)
					}
				}
			}
		case modeString, modeJSONText:
			// Every value is clean (of a dictionary: every entry, so every
			// row's): no row to mark. A dictionary longer than the batch
			// (a file's dictionary can hold more values than a batch has
			// rows) is looked at whole once, and its verdict kept for the
			// batches and slices that share it.
			if col.mode == modeString && c.cleanText(k, v, n) {
				continue
			}
			for i := 0; i < n; i++ {
				j, ok := v.at(i)
				if !ok || c.bad[i] {
					continue
				}
				b := bytesOf(v.vals, j)
				if code, msg := value.CheckText(b); code != "" {
					mark(i, k, code, msg)
				} else if col.mode == modeJSONText {
					if err := fastjson.ValidateBytes(b); err != nil {
						mark(i, k, value.CodeJSON, "invalid JSON: "+err.Error())
					}
				}
			}
		case modeQuote, modeText, modeJSON:
			// A decimal always renders, as ASCII digits: unless a limit
			// needs its text, the plan pass need not render it at all.
			c.deferred[k] = col.mode == modeText && (c.limits == nil || c.limits[k] == nil) && isDecimal(v.vals.DataType())
			if !c.deferred[k] {
				c.render(k, col.mode, v, n, mark)
			}
		}
	}
	if value.ChecksDates(&c.rules, value.Date) {
		c.checkDates(rec, mark)
	}
	if c.limited || c.allJSON {
		c.checkLimits(rec, mark)
	}
	if c.nbad > 0 {
		sort.Slice(c.probs, func(a, b int) bool { return c.probs[a].row < c.probs[b].row })
	}
	return c.nbad
}

// textClean reports whether every value of a, a string or binary array
// with 32-bit offsets, is valid UTF-8 without NUL bytes, null slots
// included, by checking the bytes of all its values at once: values in
// order are clean exactly when their concatenation is and no value starts
// inside a character (at a continuation byte, 10xxxxxx). It reports false
// for other arrays, and whenever it cannot tell, so that the caller checks
// value by value.
func textClean(a arrow.Array) bool {
	var offs []int32
	var data []byte
	switch a := a.(type) {
	case *array.String:
		offs, data = a.ValueOffsets(), a.ValueBytes()
	case *array.Binary:
		offs, data = a.ValueOffsets(), a.ValueBytes()
	default:
		return false
	}
	n := a.Len()
	if n == 0 || len(offs) < n+1 {
		return n == 0
	}
	// ValueBytes starts at the first value's offset.
	base := offs[0]
	if int(offs[n]-base) != len(data) {
		return false
	}
	prev := base
	for _, o := range offs[1:n] {
		if o < prev || int(o-base) > len(data) {
			return false // not in order: the values are looked at one by one
		}
		prev = o
		if i := int(o - base); i < len(data) && data[i]&0xC0 == 0x80 {
			return false
		}
	}
	return value.TextClean(data)
}

// cleanText reports whether every value of column k's view v, a batch of
// n rows, is clean text (textClean), looking at a dictionary longer than
// the batch only when it is not the one last found clean.
func (c *converter) cleanText(k int, v view, n int) bool {
	if v.dict == nil || v.vals.Len() <= n {
		return textClean(v.vals)
	}
	d := v.vals.Data()
	if c.clean[k] == d {
		return true
	}
	if !textClean(v.vals) {
		return false
	}
	c.clean[k] = d
	return true
}

// isDecimal reports whether dt is a decimal type.
func isDecimal(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256:
		return true
	}
	return false
}

// render renders column k's values into its slab, marking the rows whose
// value cannot be rendered faithfully.
func (c *converter) render(k int, mode arrowMode, v view, n int, mark func(i, col int, code, msg string)) {
	s := &c.slabs[k]
	s.buf = s.buf[:0]
	s.offs = append(s.offs[:0], 0)
	s.null = falses(s.null, n)
	if mode == modeText && v.dict == nil && c.renderDecimals(s, v.vals, n) {
		return
	}
	for i := 0; i < n; i++ {
		j, ok := v.at(i)
		if !ok || c.bad[i] {
			s.null[i] = !ok
			s.offs = append(s.offs, len(s.buf))
			continue
		}
		start := len(s.buf)
		c.r = renderer{}
		switch mode {
		case modeQuote:
			raw := bytesOf(v.vals, j)
			if code, msg := value.CheckText(raw); code != "" {
				c.r.fail(code, msg)
			}
			s.buf = c.r.quote(s.buf, raw)
		case modeText:
			s.buf = c.r.text(s.buf, v.a, i)
			if c.r.code == "" {
				if code, msg := value.CheckText(s.buf[start:]); code != "" {
					c.r.fail(code, msg)
				}
			}
		default:
			s.buf = c.r.json(s.buf, v.a, i)
		}
		if c.r.code != "" {
			s.buf = s.buf[:start]
			mark(i, k, c.r.code, c.r.msg)
		}
		s.offs = append(s.offs, len(s.buf))
	}
}

// renderDecimals renders a, n values of a decimal array of up to 128
// bits, into s as text would, without a look at each value's type, and
// reports whether it did: a decimal's text needs no check.
func (c *converter) renderDecimals(s *slab, a arrow.Array, n int) bool {
	switch a := a.(type) {
	case *array.Decimal32:
		renderScaled(s, a, a.Values()[:n], a.DataType().(arrow.DecimalType).GetScale(), c.bad)
	case *array.Decimal64:
		renderScaled(s, a, a.Values()[:n], a.DataType().(arrow.DecimalType).GetScale(), c.bad)
	case *array.Decimal128:
		vals, scale := a.Values()[:n], a.DataType().(arrow.DecimalType).GetScale()
		nulls := a.NullN() > 0
		for i, v := range vals {
			if nulls && a.IsNull(i) {
				s.null[i] = true
			} else if !c.bad[i] {
				s.buf = appendDecimal128(s.buf, v, scale)
			}
			s.offs = append(s.offs, len(s.buf))
		}
	default:
		return false
	}
	return true
}

// renderScaled renders vals, the values of a, as appendScaled writes them.
func renderScaled[T ~int32 | ~int64](s *slab, a arrow.Array, vals []T, scale int32, bad []bool) {
	nulls := a.NullN() > 0
	for i, v := range vals {
		if nulls && a.IsNull(i) {
			s.null[i] = true
		} else if !bad[i] {
			s.buf = appendScaled(s.buf, int64(v), scale)
		}
		s.offs = append(s.offs, len(s.buf))
	}
}

// valueText returns the text of row i of column k for a reject report, at
// most reject.MaxValue bytes of it.
func (c *converter) valueText(rec arrow.RecordBatch, k, i int) string {
	a := rec.Column(k)
	if a.IsNull(i) {
		return ""
	}
	var r renderer
	b := r.text(nil, a, i)
	if len(b) > reject.MaxValue {
		b = b[:reject.MaxValue]
	}
	return string(b)
}

// build returns the good rows of rec, as check left them, as a Batch whose
// first row has ordinal first. It returns a Batch with a nil Record when
// every row is bad.
func (c *converter) build(rec arrow.RecordBatch, first int64) partition.Batch {
	n := int(rec.NumRows())
	good := n - c.nbad
	if good == 0 {
		return partition.Batch{}
	}
	cols := make([]arrow.Array, len(c.cols))
	for k := range c.cols {
		cols[k] = c.column(k, newView(rec.Column(k)), n, good)
	}
	out := array.NewRecordBatch(c.schema, cols, int64(good))
	for _, a := range cols {
		a.Release()
	}
	ords := make([]int64, 0, good)
	for i := 0; i < n; i++ {
		if !c.bad[i] {
			ords = append(ords, first+int64(i))
		}
	}
	return partition.Batch{Record: out, Ordinals: ords}
}

// retype shares a's buffers in an array of type dt, which must have the same
// layout.
func retype(a arrow.Array, dt arrow.DataType) arrow.Array {
	d := a.Data()
	nd := array.NewData(dt, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset())
	defer nd.Release()
	return array.MakeFromData(nd)
}

// column builds the output array of column k from the good rows.
func (c *converter) column(k int, v view, n, good int) arrow.Array {
	col := c.cols[k]
	dt := c.schema.Field(k).Type
	whole := c.nbad == 0 && v.dict == nil
	switch col.mode {
	case modeNull:
		b := array.NewStringBuilder(c.mem)
		defer b.Release()
		b.AppendNulls(good)
		return b.NewArray()
	case modeBool:
		return c.boolColumn(v, dt, n, good, whole)
	case modeInt, modeUint64:
		return c.intColumn(v, dt, good, whole)
	case modeFloat:
		return c.floatColumn(v, dt, n, good, whole)
	case modeTimestamp:
		return c.timestampColumn(v, dt, n, good, whole)
	case modeString, modeJSONText:
		return c.stringColumn(v, dt, n, good, whole)
	}
	// Rendered columns: the slab check filled, or leaves to fill here.
	return c.renderedColumn(k, col.mode, v, dt, n, good)
}

// boolColumn builds the good rows of a boolean column.
func (c *converter) boolColumn(v view, dt arrow.DataType, n, good int, whole bool) arrow.Array {
	if whole && v.vals.DataType().ID() == arrow.BOOL {
		return retype(v.vals, dt)
	}
	b := array.NewBooleanBuilder(c.mem)
	defer b.Release()
	b.Reserve(good)
	for i := 0; i < n; i++ {
		if c.bad[i] {
			continue
		}
		j, ok := v.at(i)
		switch {
		case !ok:
			b.AppendNull()
		case v.vals.DataType().ID() == arrow.BOOL:
			b.UnsafeAppend(v.vals.(*array.Boolean).Value(j))
		default:
			b.UnsafeAppend(bytesOf(v.vals, j)[0] != 0)
		}
	}
	return b.NewArray()
}

// intColumn builds the good rows of an integer column.
func (c *converter) intColumn(v view, dt arrow.DataType, good int, whole bool) arrow.Array {
	id := v.vals.DataType().ID()
	if whole && (id == arrow.INT64 || id == arrow.UINT64) {
		return retype(v.vals, dt) // uint64 values were checked to fit
	}
	if c.nbad == 0 && v.plain() {
		if out := c.widened(v.vals, dt, good); out != nil {
			return out
		}
	}
	b := array.NewInt64Builder(c.mem)
	defer b.Release()
	b.Reserve(good)
	switch a := v.vals.(type) {
	case *array.Int8:
		appendInts(b, a.Values(), &v, c.bad)
	case *array.Int16:
		appendInts(b, a.Values(), &v, c.bad)
	case *array.Int32:
		appendInts(b, a.Values(), &v, c.bad)
	case *array.Int64:
		appendInts(b, a.Values(), &v, c.bad)
	case *array.Uint8:
		appendInts(b, a.Values(), &v, c.bad)
	case *array.Uint16:
		appendInts(b, a.Values(), &v, c.bad)
	case *array.Uint32:
		appendInts(b, a.Values(), &v, c.bad)
	case *array.Uint64:
		appendInts(b, a.Values(), &v, c.bad)
	}
	return b.NewArray()
}

// widened returns the n values of a, integers of fewer than 64 bits none
// of which is null, as an array of type dt (int64), written into its
// buffer directly rather than appended one by one; nil for other arrays.
func (c *converter) widened(a arrow.Array, dt arrow.DataType, n int) arrow.Array {
	buf := memory.NewResizableBuffer(c.mem)
	defer buf.Release()
	buf.Resize(n * arrow.Int64SizeBytes)
	out := arrow.Int64Traits.CastFromBytes(buf.Bytes())
	switch a := a.(type) {
	case *array.Int8:
		widen(out, a.Values())
	case *array.Int16:
		widen(out, a.Values())
	case *array.Int32:
		widen(out, a.Values())
	case *array.Uint8:
		widen(out, a.Values())
	case *array.Uint16:
		widen(out, a.Values())
	case *array.Uint32:
		widen(out, a.Values())
	default:
		return nil
	}
	d := array.NewData(dt, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

// floatColumn builds the good rows of a float column.
func (c *converter) floatColumn(v view, dt arrow.DataType, n, good int, whole bool) arrow.Array {
	if whole && v.vals.DataType().ID() == arrow.FLOAT64 {
		return retype(v.vals, dt)
	}
	b := array.NewFloat64Builder(c.mem)
	defer b.Release()
	b.Reserve(good)
	for i := 0; i < n; i++ {
		if c.bad[i] {
			continue
		}
		j, ok := v.at(i)
		if !ok {
			b.AppendNull()
			continue
		}
		switch a := v.vals.(type) {
		case *array.Float16:
			b.UnsafeAppend(float64(a.Value(j).Float32()))
		case *array.Float32:
			b.UnsafeAppend(float64(a.Value(j)))
		case *array.Float64:
			b.UnsafeAppend(a.Value(j))
		}
	}
	return b.NewArray()
}

// timestampColumn builds the good rows of a timestamp column, in microseconds.
func (c *converter) timestampColumn(v view, dt arrow.DataType, n, good int, whole bool) arrow.Array {
	ts := v.vals.(*array.Timestamp)
	unit := ts.DataType().(*arrow.TimestampType).Unit
	if whole && unit == arrow.Microsecond {
		return retype(v.vals, dt)
	}
	vals := ts.Values()
	if c.nbad == 0 && v.plain() {
		// Every value converts (check found no row bad): into the
		// array's buffer directly.
		buf := memory.NewResizableBuffer(c.mem)
		buf.Resize(n * arrow.TimestampSizeBytes)
		out := arrow.TimestampTraits.CastFromBytes(buf.Bytes())
		for i, t := range vals[:n] {
			us, _, _ := toMicros(int64(t), unit)
			out[i] = arrow.Timestamp(us)
		}
		d := array.NewData(dt, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
		defer d.Release()
		buf.Release()
		return array.MakeFromData(d)
	}
	b := array.NewTimestampBuilder(c.mem, dt.(*arrow.TimestampType))
	defer b.Release()
	b.Reserve(good)
	for i := 0; i < n; i++ {
		if c.bad[i] {
			continue
		}
		j, ok := v.at(i)
		if !ok {
			b.AppendNull()
			continue
		}
		us, _, _ := toMicros(int64(vals[j]), unit)
		b.UnsafeAppend(arrow.Timestamp(us))
	}
	return b.NewArray()
}

// stringColumn builds the good rows of a string column.
func (c *converter) stringColumn(v view, dt arrow.DataType, n, good int, whole bool) arrow.Array {
	if whole && v.vals.DataType().ID() == arrow.STRING {
		return retype(v.vals, dt)
	}
	switch a := v.vals.(type) {
	case *array.String:
		if v.dict != nil {
			if out := c.gatherDict(v, a, dt, n, good); out != nil {
				return out
			}
			return c.gather(v, a.Value, dt, n, good)
		}
	case *array.StringView:
		return c.gather(v, a.Value, dt, n, good)
	}
	b := array.NewStringBuilder(c.mem)
	defer b.Release()
	b.Reserve(good)
	for i := 0; i < n; i++ {
		if c.bad[i] {
			continue
		}
		if j, ok := v.at(i); ok {
			b.BinaryBuilder.Append(bytesOf(v.vals, j))
		} else {
			b.AppendNull()
		}
	}
	return b.NewArray()
}

// renderedColumn builds the good rows of a rendered column k, from the
// slab check filled, or fills it here.
func (c *converter) renderedColumn(k int, mode arrowMode, v view, dt arrow.DataType, n, good int) arrow.Array {
	if c.deferred[k] {
		c.render(k, mode, v, n, func(int, int, string, string) {
			panic("a decimal did not render") // recovered as a data error
		})
	}
	s := &c.slabs[k]
	if len(s.buf) > math.MaxInt32 {
		// More than 32-bit offsets hold: left to the builder, which says so.
		b := array.NewStringBuilder(c.mem)
		defer b.Release()
		for i := 0; i < n; i++ {
			if c.bad[i] {
				continue
			}
			if s.null[i] {
				b.AppendNull()
			} else {
				b.BinaryBuilder.Append(s.buf[s.offs[i]:s.offs[i+1]])
			}
		}
		return b.NewArray()
	}
	// The slab's bytes and offsets become the array's buffers: copied
	// whole when every row is good, else value by value.
	nulls := 0
	for i := 0; i < n; i++ {
		if s.null[i] && !c.bad[i] {
			nulls++
		}
	}
	sb := newStringBuffers(c.mem, good, len(s.buf), nulls) // bad rows rendered nothing
	out, dst, bits := sb.offsets, sb.data, sb.valid
	if c.nbad == 0 {
		copy(dst, s.buf)
		for i, o := range s.offs[:n+1] {
			out[i] = int32(o)
		}
		if bits != nil {
			for i, null := range s.null[:n] {
				if !null {
					bitutil.SetBit(bits, i)
				}
			}
		}
	} else {
		at, o := 0, 0
		for i := 0; i < n; i++ {
			if c.bad[i] {
				continue
			}
			out[at] = int32(o)
			if !s.null[i] {
				o += copy(dst[o:], s.buf[s.offs[i]:s.offs[i+1]])
				if bits != nil {
					bitutil.SetBit(bits, at)
				}
			}
			at++
		}
		out[at] = int32(o)
	}
	return sb.array(dt, good, nulls)
}

// gather returns the good rows of v as a string array of type dt, value
// giving the text at an index of v.vals (a dictionary's strings, or a
// string view array): the values' bytes are summed, then copied into
// buffers of that size, with no builder in between.
func (c *converter) gather(v view, value func(int) string, dt arrow.DataType, n, good int) arrow.Array {
	total, nulls := 0, 0
	for i := 0; i < n; i++ {
		if c.bad[i] {
			continue
		}
		if j, ok := v.at(i); ok {
			total += len(value(j))
		} else {
			nulls++
		}
	}
	if total > math.MaxInt32 {
		// More than 32-bit offsets hold: left to the builder, which says so.
		b := array.NewStringBuilder(c.mem)
		defer b.Release()
		for i := 0; i < n; i++ {
			if j, ok := v.at(i); !c.bad[i] && ok {
				b.Append(value(j))
			} else if !c.bad[i] {
				b.AppendNull()
			}
		}
		return b.NewArray()
	}
	sb := newStringBuffers(c.mem, good, total, nulls)
	offs, data, bits := sb.offsets, sb.data, sb.valid
	at, o := 0, 0
	for i := 0; i < n; i++ {
		if c.bad[i] {
			continue
		}
		offs[at] = int32(o)
		if j, ok := v.at(i); ok {
			o += copy(data[o:], value(j))
			if bits != nil {
				bitutil.SetBit(bits, at)
			}
		}
		at++
	}
	offs[at] = int32(o)
	return sb.array(dt, good, nulls)
}

// gatherDict returns the good rows of v, a dictionary of strings, as gather
// does, reading the indexes as the integers they are and each value's
// bytes by the dictionary's offsets, with no call per row; nil when the
// indexes are not of an integer type or the values come to more than
// 32-bit offsets hold (gather handles those).
func (c *converter) gatherDict(v view, dict *array.String, dt arrow.DataType, n, good int) arrow.Array {
	switch ix := v.dict.Indices().(type) {
	case *array.Int8:
		return gatherIndexes(c, v, ix.Int8Values(), dict, dt, n, good)
	case *array.Int16:
		return gatherIndexes(c, v, ix.Int16Values(), dict, dt, n, good)
	case *array.Int32:
		return gatherIndexes(c, v, ix.Int32Values(), dict, dt, n, good)
	case *array.Int64:
		return gatherIndexes(c, v, ix.Int64Values(), dict, dt, n, good)
	case *array.Uint8:
		return gatherIndexes(c, v, ix.Uint8Values(), dict, dt, n, good)
	case *array.Uint16:
		return gatherIndexes(c, v, ix.Uint16Values(), dict, dt, n, good)
	case *array.Uint32:
		return gatherIndexes(c, v, ix.Uint32Values(), dict, dt, n, good)
	case *array.Uint64:
		return gatherIndexes(c, v, ix.Uint64Values(), dict, dt, n, good)
	}
	return nil
}

// gatherIndexes is gatherDict over indexes idx, one per row. A row is null
// when its index is null or indexes a null value. An index outside the
// dictionary panics, as the dictionary's Value would (recovered as a data
// error).
func gatherIndexes[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](c *converter, v view, idx []T, dict *array.String, dt arrow.DataType, n, good int) arrow.Array {
	idx = idx[:n]
	offs := dict.ValueOffsets() // absolute offsets into the values buffer
	var data []byte
	if b := dict.Data().Buffers()[2]; b != nil {
		data = b.Bytes()
	}
	rowNulls, dictNulls := v.a.NullN() > 0, dict.NullN() > 0
	total, nulls := 0, 0
	for i, j := range idx {
		switch {
		case c.bad[i]:
		case (rowNulls && v.a.IsNull(i)) || (dictNulls && dict.IsNull(int(j))):
			nulls++
		default:
			total += int(offs[j+1] - offs[j])
		}
	}
	if total > math.MaxInt32 {
		return nil
	}
	sb := newStringBuffers(c.mem, good, total, nulls)
	out, dst, bits := sb.offsets, sb.data, sb.valid
	at, o := 0, 0
	for i, j := range idx {
		if c.bad[i] {
			continue
		}
		out[at] = int32(o)
		if !(rowNulls && v.a.IsNull(i)) && !(dictNulls && dict.IsNull(int(j))) {
			o = putValue(dst, o, data, int(offs[j]), int(offs[j+1]-offs[j]))
			if bits != nil {
				bitutil.SetBit(bits, at)
			}
		}
		at++
	}
	out[at] = int32(o)
	return sb.array(dt, good, nulls)
}

// putValue copies the n bytes of data from start into dst at pos, and
// returns the position after them. A value of at most 16 bytes, where dst
// and data hold 16 from there, is moved as one 16-byte word rather than by
// a call to memmove: the bytes it writes past the value are the next
// values' place, written in turn (the caller fills dst in order, up to its
// end), and those it reads past it are data's own. On the short values of
// dictionary columns (a million rows of SKUs and states) the calls were
// most of the gathering's time.
func putValue(dst []byte, pos int, data []byte, start, n int) int {
	if n >= 0 && n <= 16 && pos >= 0 && pos+16 <= len(dst) && start >= 0 && start+16 <= len(data) {
		*(*[16]byte)(dst[pos:]) = *(*[16]byte)(data[start:])
		return pos + n
	}
	return pos + copy(dst[pos:], data[start:start+n])
}

// widen writes vals, as many as out holds, into out as int64 values.
func widen[T int8 | int16 | int32 | uint8 | uint16 | uint32](out []int64, vals []T) {
	for i, x := range vals[:len(out)] {
		out[i] = int64(x)
	}
}

// appendInts appends the good rows of an integer column to b.
func appendInts[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](b *array.Int64Builder, vals []T, v *view, bad []bool) {
	if v.plain() {
		for i, x := range vals {
			if !bad[i] {
				b.UnsafeAppend(int64(x))
			}
		}
		return
	}
	for i := range bad {
		if bad[i] {
			continue
		}
		if j, ok := v.at(i); ok {
			b.UnsafeAppend(int64(vals[j]))
		} else {
			b.AppendNull()
		}
	}
}

// falses returns b resized to n, all false, reusing its memory.
func falses(b []bool, n int) []bool {
	if cap(b) < n {
		return make([]bool, n)
	}
	b = b[:n]
	clear(b)
	return b
}

// converter returns the converter of this Parquet or Arrow file's record
// batches into schema, checking values against the target's limits.
func (f *File) converter(schema value.Schema) *converter {
	cv := newConverter(f.cols, schema, f.Opts.Allocator)
	names := make([]string, len(f.cols))
	for i, c := range f.cols {
		names[i] = c.name
	}
	cv.limits, cv.rules, cv.allJSON = value.LimitsOf(f.Opts.Limits, names), f.Opts.Rules, f.Opts.AllJSON
	for _, l := range cv.limits {
		cv.limited = cv.limited || l != nil
	}
	return cv
}

// checkDates marks the rows of rec, not bad yet, whose date (of a date32
// or date64 column, read as its text) or timestamp (of a timestamp column
// read as one) is a day the target's database refuses though the
// calendar has it (value.CheckDate), as the text formats' plan checks the
// values of a date or timestamp column. Call it in check, when the rules
// refuse some date (value.ChecksDates).
func (c *converter) checkDates(rec arrow.RecordBatch, mark func(i, col int, code, msg string)) {
	n := int(rec.NumRows())
	for k, col := range c.cols {
		if col.mode != modeTimestamp && col.mode != modeText {
			continue
		}
		v := newView(rec.Column(k))
		var day func(j int) (value.Value, value.Type, bool)
		switch a := v.vals.(type) {
		case *array.Date32:
			day = func(j int) (value.Value, value.Type, bool) {
				return value.Value{I: int64(a.Value(j))}, value.Date, true
			}
		case *array.Date64:
			day = func(j int) (value.Value, value.Type, bool) {
				return value.Value{I: floorDiv(int64(a.Value(j)), 86_400_000)}, value.Date, true
			}
		case *array.Timestamp:
			if col.mode != modeTimestamp {
				continue // read as its text (--column NAME:string)
			}
			unit := a.DataType().(*arrow.TimestampType).Unit
			day = func(j int) (value.Value, value.Type, bool) {
				us, code, _ := toMicros(int64(a.Value(j)), unit)
				return value.Value{I: us}, value.Timestamp, code == ""
			}
		default:
			continue
		}
		for i := 0; i < n; i++ {
			j, ok := v.at(i)
			if !ok || c.bad[i] {
				continue
			}
			if x, t, ok := day(j); ok {
				if code, msg := value.CheckDate(&c.rules, x, t); code != "" {
					mark(i, k, code, msg)
				}
			}
		}
	}
}

// checkLimits marks the rows of rec, not bad yet, whose value of a column
// does not fit its limit: a null in a NOT NULL column, an integer out of
// range, text too long, JSON the database's JSON type refuses. (Floats into numeric columns
// are not checked.) Call it at the end of check, after render.
func (c *converter) checkLimits(rec arrow.RecordBatch, mark func(i, col int, code, msg string)) {
	n := int(rec.NumRows())
	for k, col := range c.cols {
		l := c.limits[k]
		json := (c.allJSON || (l != nil && l.JSON)) && col.typ == value.JSON
		if l == nil && !json {
			continue
		}
		v := newView(rec.Column(k))
		for i := 0; i < n; i++ {
			if c.bad[i] {
				continue
			}
			j, ok := v.at(i)
			var cl value.Cell
			var x value.Value
			switch {
			case !ok:
				cl, x = value.Cell{Kind: value.CellNull}, value.Value{Null: true}
			case col.mode == modeInt || col.mode == modeUint64:
				x.I, ok = intAt(v.vals, j)
				cl.Kind = value.CellNumber
			case col.mode == modeString || col.mode == modeJSONText:
				x.B = bytesOf(v.vals, j)
				cl = value.Cell{B: x.B, Kind: value.CellText}
			case col.mode == modeQuote || col.mode == modeText || col.mode == modeJSON:
				s := &c.slabs[k]
				x.B = s.buf[s.offs[i]:s.offs[i+1]]
				cl = value.Cell{B: x.B, Kind: value.CellText}
			default:
				cl.Kind = value.CellBool // only NOT NULL applies
			}
			if !ok && cl.Kind != value.CellNull {
				continue
			}
			t := col.typ
			if cl.Kind == value.CellBool {
				t = value.Unknown
			}
			if code, msg := value.CheckLimits(&c.rules, l, json, cl, x, t); code != "" {
				mark(i, k, code, msg)
			}
		}
	}
}

// intAt returns the integer at j of an integer array.
func intAt(a arrow.Array, j int) (int64, bool) {
	switch a := a.(type) {
	case *array.Int8:
		return int64(a.Value(j)), true
	case *array.Int16:
		return int64(a.Value(j)), true
	case *array.Int32:
		return int64(a.Value(j)), true
	case *array.Int64:
		return a.Value(j), true
	case *array.Uint8:
		return int64(a.Value(j)), true
	case *array.Uint16:
		return int64(a.Value(j)), true
	case *array.Uint32:
		return int64(a.Value(j)), true
	case *array.Uint64:
		return int64(a.Value(j)), true // values above int64 are bad rows already
	}
	return 0, false
}

// arrowFields returns the payload of row i of rec: each value as the text
// the import would store (nested values as their JSON).
func (c *converter) arrowFields(rec arrow.RecordBatch, schema value.Schema, i int) string {
	dst := []byte{'['}
	for k := range c.cols {
		if k > 0 {
			dst = append(dst, ',')
		}
		a := rec.Column(k)
		v := newView(a)
		if _, ok := v.at(i); !ok {
			dst = append(dst, "null"...)
			continue
		}
		var r renderer
		var b []byte
		kind := byte(reject.FieldString)
		if schema[k].Type == value.JSON {
			if c.cols[k].mode == modeJSON || c.cols[k].mode == modeQuote {
				b = r.json(nil, a, i)
			} else {
				b = r.text(nil, a, i)
			}
			if r.code == "" && fastjson.ValidateBytes(b) == nil {
				kind = reject.FieldJSON
			} else {
				r = renderer{}
				b = r.text(nil, a, i)
			}
		} else {
			b = r.text(nil, a, i)
		}
		dst = reject.AppendField(dst, kind, b)
	}
	return string(append(dst, ']'))
}

// stringBuffers are the buffers of a string array of good rows being
// filled: offsets (good+1), data, and, when some rows are null, the
// validity bitmap (cleared; nil otherwise).
type stringBuffers struct {
	offBuf, dataBuf, validBuf *memory.Buffer
	offsets                   []int32
	data                      []byte
	valid                     []byte
}

// newStringBuffers allocates the buffers of a string array of good rows,
// nulls of them null, whose values come to total bytes.
func newStringBuffers(mem memory.Allocator, good, total, nulls int) *stringBuffers {
	sb := &stringBuffers{offBuf: memory.NewResizableBuffer(mem), dataBuf: memory.NewResizableBuffer(mem)}
	sb.offBuf.Resize((good + 1) * arrow.Int32SizeBytes)
	sb.dataBuf.Resize(total)
	if nulls > 0 {
		sb.validBuf = memory.NewResizableBuffer(mem)
		sb.validBuf.Resize(int(bitutil.BytesForBits(int64(good))))
		sb.valid = sb.validBuf.Bytes()
		clear(sb.valid)
	}
	sb.offsets, sb.data = arrow.Int32Traits.CastFromBytes(sb.offBuf.Bytes()), sb.dataBuf.Bytes()
	return sb
}

// array makes the filled buffers a string array of type dt, of good rows
// with nulls null, which then holds the only references to them.
func (sb *stringBuffers) array(dt arrow.DataType, good, nulls int) arrow.Array {
	bufs := []*memory.Buffer{sb.validBuf, sb.offBuf, sb.dataBuf}
	d := array.NewData(dt, good, bufs, nil, nulls, 0)
	defer d.Release()
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	return array.MakeFromData(d)
}
