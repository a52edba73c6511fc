package text

// The plan pass of the text formats runs in two stages on two cores: the
// tokenizer reads the rows, cuts the partitions and checksums their bytes;
// the validator checks each row, keeps the bad ones and infers the column
// types. Rows go from one to the other in chunks, as copies, so that the
// scanner's buffer can move on.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"unsafe"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/internal/charset"
	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/keys"
	"github.com/idemport/idemport/reader/internal/partition"
	"github.com/idemport/idemport/reader/internal/reject"
	"github.com/idemport/idemport/reader/internal/value"
)

// rowChunk is a run of rows the tokenizer hands the validator, with copies
// of their bytes, so the scanner can move on.
type rowChunk struct {
	rows  []tokenRow
	cells []value.Cell // the rows' cells, back to back
	arena []byte       // the rows' bytes and unescaped cells
	names []string
}

// tokenRow is one row as the tokenizer found it. Its slices index the
// chunk's cells and arena.
type tokenRow struct {
	ordinal      int64
	part         int   // the index of the row's partition
	off          int64 // where the row starts
	cells        [2]int
	raw          [2]int
	prob         *problem
	missing      string // JSONL: a key column no row so far has had
	fields, cols int    // the row's fields, and the file's columns after it
	verbatim     bool   // the scanner's verbatim for the row
	ascii        bool   // the scanner found the row ASCII without NUL (asciiScanner)
	// end, on the last row of a partition the tokenizer cut before the
	// end of the file, is that partition (ScanOptions.Partitioned).
	end *idemtype.Partition
}

// A chunk is handed over when it holds chunkRows rows or chunkBytes bytes.
const (
	chunkRows  = 512
	chunkBytes = 1 << 20
)

func (c *rowChunk) reset() {
	c.rows, c.cells, c.arena = c.rows[:0], c.cells[:0], c.arena[:0]
	if cap(c.arena) > 4*chunkBytes {
		c.arena = nil // it held a huge row: do not keep that much
	}
}

// add copies the row sc returned last into c.
func (c *rowChunk) add(r tokenRow, sc rowScanner, cells []value.Cell) {
	raw := sc.raw()
	base := len(c.arena)
	c.arena = append(c.arena, raw...)
	r.raw = [2]int{base, len(c.arena)}
	first := len(c.cells)
	r.cells = [2]int{first, first + len(cells)}
	c.cells = slices.Grow(c.cells, len(cells))[:r.cells[1]]
	out := c.cells[first:]
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	for k, x := range cells {
		p := uintptr(unsafe.Pointer(unsafe.SliceData(x.B)))
		b := x.B
		if len(x.B) > 0 && p >= lo && p+uintptr(len(x.B)) <= lo+uintptr(len(raw)) {
			// Most cells are slices of the row: point into its copy.
			at := base + int(p-lo)
			b = c.arena[at : at+len(x.B) : at+len(x.B)]
		} else if len(x.B) > 0 {
			at := len(c.arena)
			c.arena = append(c.arena, x.B...)
			b = c.arena[at:len(c.arena):len(c.arena)]
		}
		out[k] = value.Cell{B: b, Kind: x.Kind}
	}
	c.rows = append(c.rows, r)
}

// tokenize reads every row of sc, cuts the partitions, and sends the rows to
// the validator in chunks taken from free. Until o.SecondCore is closed it
// validates each chunk itself with v instead. It returns the plan without
// its schema and rejects.
func (f *File) tokenize(ctx context.Context, sc rowScanner, names *[]string, o partition.ScanOptions, v *validator, free <-chan *rowChunk, chunks chan<- *rowChunk) (*partition.Plan, error) {
	var (
		plan    = &partition.Plan{}
		part    *idemtype.Partition
		bound   int64
		rowEnd  int64
		ordinal int64
		c       *rowChunk
		sent    int // names the validator has
		wide    = partition.Closed(o.SecondCore)
	)
	send := func() error {
		if len(*names) > sent {
			c.names = slices.Clone(*names)
			sent = len(*names)
		}
		if wide = wide || partition.Closed(o.SecondCore); !wide {
			// Validate here; the validator goroutine gets the chunks after
			// this one, if any, so rows stay in order.
			v.chunk(c)
			c.reset()
			c.names = nil
			return nil
		}
		select {
		case chunks <- c:
			c = nil
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for {
		if ordinal%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if o.Progress != nil && ordinal%65536 == 0 {
				o.Progress(sc.offset(), ordinal)
			}
		}
		start := sc.offset()
		cells, prob, err := sc.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, f.Wrap(err, ordinal+1, start, "")
		}
		ordinal++
		if part == nil {
			part = &idemtype.Partition{Index: len(plan.Partitions), First: ordinal, Offset: start}
			bound = o.RowBound(ordinal - 1)
		}
		part.Rows++
		if c == nil {
			select {
			case c = <-free:
				c.reset()
				c.names = nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		r := tokenRow{ordinal: ordinal, part: part.Index, off: sc.rowStart(), fields: len(cells), cols: len(*names), verbatim: sc.verbatim(), ascii: sc.ascii()}
		if prob != nil {
			p := *prob
			r.prob = &p
		}
		if f.Format == input.JSONL && prob == nil {
			r.missing = missingKey(f.Opts.NotNull, sc)
		}
		c.add(r, sc, cells)
		rowEnd = sc.offset()
		if part.Rows == bound || (o.PartitionBytes > 0 && rowEnd-part.Offset >= o.PartitionBytes) {
			part.Length, part.CRC = rowEnd-part.Offset, sc.crcNow()
			plan.Partitions = append(plan.Partitions, *part)
			if o.Partitioned != nil {
				end := *part
				c.rows[len(c.rows)-1].end = &end
			}
			part = nil
			sc.resetCRC()
		}
		if len(c.rows) == chunkRows || len(c.arena) >= chunkBytes {
			if err := send(); err != nil {
				return nil, err
			}
		}
	}
	if part != nil {
		// The scanner may have consumed blank lines after the last row.
		part.Length, part.CRC = rowEnd-part.Offset, sc.crcTo(rowEnd)
		plan.Partitions = append(plan.Partitions, *part)
	}
	if c != nil {
		if err := send(); err != nil {
			return nil, err
		}
	}
	plan.Rows = ordinal
	if o.Progress != nil {
		o.Progress(sc.offset(), ordinal)
	}
	return plan, nil
}

// validator checks the rows of a plan pass and infers the types of the
// columns whose type is not fixed, counting and keeping bad rows.
type validator struct {
	f            *File
	o            partition.ScanOptions
	names        []string
	fixed        []value.Type // Unknown where inferred
	infer        []value.Inference
	required     []bool
	requiredCols []int          // the columns required holds, in order
	limits       []*value.Limit // nil where the target column has none
	rejected     int64
	partRejected []int64
	rejects      []idemtype.Reject
	err          error       // the first error of o.Spill
	stop         func()      // cancels the pass, on err
	keys         *keys.Index // with a key: the good rows' key hashes
	keyCols      []int       // positions of the key columns, once all are known
	// checked says some column has a fixed type or a limit: a clean row
	// whose columns have neither needs no check per cell.
	checked bool
}

func newValidator(f *File, o partition.ScanOptions) *validator {
	v := &validator{f: f, o: o}
	if len(f.Opts.Key) > 0 {
		v.keys = keys.NewIndex(o.TempDir, o.KeysHeld)
	}
	return v
}

// grow extends the per-column state to the first n names.
func (v *validator) grow(n int) {
	for len(v.fixed) < n {
		name := v.names[len(v.fixed)]
		v.fixed = append(v.fixed, v.f.Opts.Types[name])
		v.infer = append(v.infer, value.Inference{Dates: v.f.Opts.InferDates, Rules: &v.f.Opts.Rules})
		v.required = append(v.required, slices.Contains(v.f.Opts.NotNull, name))
		if v.required[len(v.required)-1] {
			v.requiredCols = append(v.requiredCols, len(v.required)-1)
		}
		var lim *value.Limit
		if l, ok := v.f.Opts.Limits[name]; ok {
			lim = &l
		}
		v.limits = append(v.limits, lim)
		v.checked = v.checked || v.fixed[len(v.fixed)-1] != value.Unknown || lim != nil
	}
}

func (v *validator) chunk(c *rowChunk) {
	if c.names != nil {
		v.names = c.names
	}
	for k := range c.rows {
		r := &c.rows[k]
		v.row(r, c.cells[r.cells[0]:r.cells[1]], c.arena[r.raw[0]:r.raw[1]])
		if r.end != nil && v.err == nil {
			v.cut(*r.end)
		}
	}
}

// cut reports partition p, whose last row the validator has just checked,
// to ScanOptions.Partitioned, with its bad rows and the columns' types as
// the rows so far make them.
func (v *validator) cut(p idemtype.Partition) {
	if p.Index < len(v.partRejected) {
		p.Rejected = v.partRejected[p.Index]
	}
	v.grow(len(v.names))
	schema := make(value.Schema, len(v.names))
	for i, name := range v.names {
		t := v.fixed[i]
		if t == value.Unknown {
			t = v.infer[i].Result(slices.Contains(v.f.Opts.Exact, name))
		}
		schema[i] = value.Column{Name: name, Type: t}
	}
	v.o.Partitioned(partition.Cut{Partition: p, Schema: schema, Bytes: p.Length})
}

// row checks one row; on its first problem it records a reject and stops.
func (v *validator) row(r *tokenRow, cells []value.Cell, raw []byte) {
	v.grow(r.cols)
	if !v.check(r, cells, raw) {
		return
	}
	fixed, infer := v.fixed[:len(cells)], v.infer[:len(cells)]
	for i := range cells {
		if fixed[i] == value.Unknown {
			infer[i].Observe(cells[i])
		}
	}
	if v.keys != nil {
		v.key(r.ordinal, cells)
	}
}

// check checks row r, whose cells and bytes are cells and raw; on its first
// problem it records a reject and returns false.
func (v *validator) check(r *tokenRow, cells []value.Cell, raw []byte) bool {
	fixed, required := v.fixed, v.required
	switch {
	case r.prob != nil:
		var c value.Cell
		if r.prob.column >= 0 && r.prob.column < len(cells) {
			c = cells[r.prob.column]
		}
		v.reject(r, cells, raw, r.prob.column, "", c, r.prob.code, r.prob.msg)
		return false
	case v.f.Format != input.JSONL && r.fields != r.cols:
		v.reject(r, cells, raw, -1, "", value.Cell{}, value.CodeFieldCount, fmt.Sprintf("expected %d fields, got %d", r.cols, r.fields))
		return false
	case r.missing != "":
		// A key column first seen in a later row: this row has no value for it.
		v.reject(r, cells, raw, -1, r.missing, value.Cell{}, value.CodeNull, "a key column must have a value")
		return false
	}
	for _, i := range v.requiredCols {
		if i >= len(cells) || cells[i].Kind == value.CellNull {
			v.reject(r, cells, raw, i, "", value.Cell{}, value.CodeNull, "a key column must have a value")
			return false
		}
	}
	// A row that is valid UTF-8 without NUL bytes as a whole needs no
	// check per field, unless its cells hold more than its bytes show
	// (a JSONL \u0000 escape: see rowScanner.verbatim).
	clean := r.verbatim && (r.ascii || value.TextClean(raw))
	if clean && !v.checked && !(v.f.Opts.AllJSON && v.f.Format == input.JSONL) {
		// Every cell is text to infer from, with no limit to fit
		// (only JSONL has JSON cells for AllJSON to check).
		return true
	}
	for i, c := range cells {
		if fixed[i] != value.Unknown {
			var x value.Value
			code, msg := value.ConvertTextTo(&x, c, fixed[i], clean)
			if code == "" && x.Null && required[i] {
				// A quoted empty field is null for a non-text type.
				c, code, msg = value.Cell{}, value.CodeNull, "a key column must have a value"
			}
			if code == "" && (v.limits[i] != nil || (v.f.Opts.AllJSON && (fixed[i] == value.JSON || c.Kind == value.CellJSON))) {
				code, msg = value.CheckLimits(&v.f.Opts.Rules, v.limits[i], v.f.Opts.AllJSON, c, x, fixed[i])
			}
			if code == "" {
				code, msg = value.CheckDate(&v.f.Opts.Rules, x, fixed[i])
			}
			if code == value.CodeInexact {
				msg += "; " + value.InexactHint(v.names[i], fixed[i])
			}
			if code != "" {
				v.reject(r, cells, raw, i, "", c, code, msg)
				return false
			}
			continue
		}
		if c.Kind != value.CellNull && !clean {
			if code, msg := value.CheckText(c.B); code != "" {
				v.reject(r, cells, raw, i, "", c, code, msg)
				return false
			}
		}
		if v.limits[i] != nil || (v.f.Opts.AllJSON && c.Kind == value.CellJSON) {
			if code, msg := value.CheckLimits(&v.f.Opts.Rules, v.limits[i], v.f.Opts.AllJSON, c, value.Value{Null: c.Kind == value.CellNull}, value.Unknown); code != "" {
				v.reject(r, cells, raw, i, "", c, code, msg)
				return false
			}
		}
	}
	return true
}

// reject counts the bad row r, whose cells and bytes are cells and raw, and
// keeps its detail; col is the index of the offending column or -1, name
// its name when it has no index yet, c its cell.
func (v *validator) reject(r *tokenRow, cells []value.Cell, raw []byte, col int, name string, c value.Cell, code, msg string) {
	v.rejected++
	for len(v.partRejected) <= r.part {
		v.partRejected = append(v.partRejected, 0)
	}
	v.partRejected[r.part]++
	keep := len(v.rejects) < v.o.KeepRejects
	if !keep && (v.o.Spill == nil || v.err != nil) {
		return
	}
	if code == value.CodeUTF8 && v.f.Charset() != charset.UTF8 {
		msg = "text holds bytes that are not " + v.f.Charset()
	}
	rj := idemtype.Reject{Ordinal: r.ordinal, Offset: r.off, Code: code, Message: msg}
	if len(raw) <= reject.MaxRow {
		rj.Row = string(raw)
		if r.prob != nil {
			rj.Fields = reject.RawFields(raw)
		} else {
			rj.Fields = string(reject.AppendFields(nil, cells))
		}
	}
	rj.Column = name
	if col >= 0 && col < r.cols {
		rj.Column = v.names[col]
		b := c.B
		if len(b) > reject.MaxValue {
			b = b[:reject.MaxValue]
		}
		rj.Value = string(b)
	}
	if v.o.Spill != nil {
		if v.err = v.o.Spill(rj); v.err != nil {
			v.stop()
		}
	}
	if keep {
		v.rejects = append(v.rejects, rj)
	}
}

// key records the key of a good row. A column whose type is fixed gives
// its value's key, one still inferred its text's (keys.AppendText); a key
// of one integer column goes to the index as that integer (AddInt).
func (v *validator) key(ordinal int64, cells []value.Cell) {
	if v.keyCols == nil {
		if v.keyCols = keys.Columns(v.names, v.f.Opts.Key); v.keyCols == nil {
			return // not reached: a good row has every key column
		}
	}
	if len(v.keyCols) == 1 && v.keyCols[0] < len(cells) {
		// An integer key of one column is recorded as its number, which
		// the index need not hash while the keys count up.
		c := cells[v.keyCols[0]]
		switch v.fixed[v.keyCols[0]] {
		case value.Int64:
			var x value.Value
			value.ConvertTextTo(&x, c, value.Int64, true)
			v.keys.AddInt(ordinal, x.I)
			return
		case value.Unknown:
			if n, ok := keys.TextInt(c); ok {
				v.keys.AddInt(ordinal, n)
				return
			}
		}
	}
	buf := v.keys.Buf[:0]
	for _, i := range v.keyCols {
		var c value.Cell
		if i < len(cells) {
			c = cells[i]
		}
		if t := v.fixed[i]; t != value.Unknown {
			var x value.Value
			value.ConvertTextTo(&x, c, t, true)
			if (t == value.Timestamp || t == value.LocalTimestamp) && i < len(v.limits) && v.limits[i] != nil {
				x.I = v.limits[i].Time(x.I) // the key the column stores
			}
			buf = keys.AppendValue(buf, x, t)
		} else {
			buf = keys.AppendText(buf, c)
		}
	}
	v.keys.Buf = buf
	v.keys.Add(ordinal, buf)
}
