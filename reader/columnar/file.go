package columnar

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/internal/charset"
	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/partition"
	"github.com/idemport/idemport/reader/internal/reject"
	"github.com/idemport/idemport/reader/internal/value"
)

// File is a Parquet or Arrow IPC file: the shared file, with the schema
// decided at Open and the units its partitions are.
type File struct {
	*input.File
	cols   []arrowColumn
	schema value.Schema
	units  unitFile
	proj   []int // the positions of the fields read, when Options.Select leaves some out

	keptMu sync.Mutex
	kept   []keptUnit // decoders left at the start of a partition (see keep)
	// started holds the partitions (Offset and Length) whose readers have
	// started decoding: a decoder left at the start of one of them would
	// wait for a reader that never comes.
	started map[[2]int64]bool
	// left holds the bytes of the plan pass's last partition, for its
	// partition reader (see planned); dicts the dictionaries of a Parquet
	// file's row groups before it (see leftDicts).
	left  planned
	dicts leftDicts
}

// Open reads the footer or schema of f, a Parquet or Arrow file, from
// which the columns and their types follow, and sets f.Header to their
// names. A file whose schema cannot be read, or whose column types cannot
// be mapped, returns a *input.ParseError. Parquet files and Arrow IPC files
// need random access: wrapped in gzip or zstd they are refused; an Arrow
// IPC stream may be compressed.
func Open(f *input.File) (*File, error) {
	c := &File{File: f}
	if f.Opts.NoHeader || len(f.Opts.Names) > 0 || len(f.Opts.Null) > 0 || (f.Opts.Encoding != "" && f.Opts.Encoding != charset.UTF8) {
		return nil, fmt.Errorf("%w: --no-header, --columns, --null and --encoding are for CSV and TSV files: a %s file names its columns and types its values (rename them with --rename)", input.ErrOption, f.Format)
	}
	var err error
	switch f.Format {
	case input.Parquet, input.Arrow:
		if f.Comp != input.None {
			return nil, &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: a %s file needs random access and cannot be read through %s; decompress it first",
				input.ErrFormat, f.Format, f.Comp)}
		}
		if f.Format == input.Parquet {
			err = c.openParquet()
		} else {
			err = c.openIPCFile()
		}
	case input.Arrows:
		err = c.openIPCStream()
	}
	if err != nil {
		return nil, err
	}
	if c.proj != nil {
		if pq, ok := c.units.(*parquetFile); ok {
			c.proj = pq.project(c.proj) // decode only the fields selected
		}
		c.units = &projected{unitFile: c.units, proj: c.proj}
	}
	for _, col := range c.schema {
		f.Header = append(f.Header, col.Name)
	}
	return c, nil
}

// Schema returns the file's columns and the types it is read with (a
// copy).
func (f *File) Schema() value.Schema { return slices.Clone(f.schema) }

// Partition opens a reader over partition p of plan: a Parquet partition
// reads only its row group, and an Arrow IPC file partition only its
// record batch (and the file's dictionaries); an Arrow IPC stream
// partition, its record batches, takes up the stream where the reader of
// the partition before it left it, or else re-reads the stream up to its
// first record batch. A file's bytes are read and checked against the
// plan before they are decoded (or are the bytes Scan left, see planned),
// a stream's as they are read (its reader fails before it reports the
// partition's end); each Batch holds at most batchRows rows.
func (f *File) Partition(plan *partition.Plan, p idemtype.Partition, batchRows int) (*PartitionReader, error) {
	if !slices.Equal(plan.Schema, f.schema) {
		return nil, &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: the file's columns (%s) differ from the plan's (%s)",
			input.ErrSourceChanged, value.SchemaText(f.schema), value.SchemaText(plan.Schema))}
	}
	return &PartitionReader{f: f, p: p, size: batchRows, cv: f.converter(plan.Schema), last: p.Index >= len(plan.Partitions)-1}, nil
}

// RawRows re-reads partition p of plan and returns the fields of the rows
// whose ordinals want holds.
func (f *File) RawRows(plan *partition.Plan, p idemtype.Partition, want map[int64]bool) (out map[int64]reject.RawRow, err error) {
	where := f.where(f.units.unitName(), p)
	defer func() {
		if v := recover(); v != nil {
			out, err = nil, f.recovered(v, where)
		}
	}()
	u, err := f.open(p, planBatchRows)
	if err != nil {
		return nil, err
	}
	defer u.close()
	cv := f.converter(plan.Schema)
	out = map[int64]reject.RawRow{}
	for read := int64(0); len(out) < len(want); {
		rec, err := u.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, f.unitError(err, where)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			if o := p.First + read + int64(i); want[o] {
				r := reject.RawRow{Offset: -1}
				if fields := cv.arrowFields(rec, plan.Schema, i); len(fields) <= reject.MaxRow {
					r.Fields = fields
				}
				out[o] = r
			}
		}
		read += rec.NumRows()
		rec.Release()
	}
	return out, nil
}

// open opens the unit of partition p, leaving out the rows before the
// table (Options.SkipLines) that it starts with, or, for a partition that
// is a range of a row group's rows, the rows before the range. A unit the
// reader of the partition before p left where p starts (see keep) is taken
// up instead; a Parquet row range is otherwise decoded from its group's
// first row and an IPC stream read from its start.
func (f *File) open(p idemtype.Partition, batchRows int) (unit, error) {
	f.start(p)
	if u := f.resume(p); u != nil {
		return u, nil
	}
	u, err := f.units.open(p, batchRows)
	if err != nil {
		return nil, err
	}
	if p.Length > 1 {
		u = &skipping{unit: u, skip: p.Length - 1}
	}
	if f.ranged() != nil {
		u = &rowRange{unit: u, left: p.Rows}
	}
	return u, nil
}

// Partitions that are more than a unit, or less, are read from one decoder
// when they are read in order: the reader of one partition leaves its
// decoder, at the first row of the next, for the reader of that partition
// to take (keep, resume). A Parquet row group, or an IPC file's record
// batch, of at least twice ScanOptions.PartitionRows rows is cut into
// partitions of about PartitionRows rows; such a partition's Offset is its
// row group (record batch), and Length is 1 plus the rows of the group
// before it (as for rows before the table, see idemtype.Partition); its
// CRC is the whole group's (the dictionaries' and the batch's). An IPC
// stream's partitions are runs of its record batches (see ipcStream). A
// partition read out of order, or first after a resume, decodes the rows
// before it to drop them.

// keptUnit is a decoder left by a partition reader at the start of the
// partition named by key: a Parquet row range (rr) or an IPC stream (st,
// whose next partition's CRC its reader does not know: key.CRC is 0).
type keptUnit struct {
	key idemtype.Partition // Offset, Length and CRC of the next partition
	u   unit               // as the partition reader read it
	rr  *rowRange
	st  *streamUnit
}

// maxKept bounds the decoders kept at once (workers reading a row group's
// partitions out of order leave some that no reader takes).
const maxKept = 2

// keep leaves u, the unit of partition p read to its end, for the reader
// of the partition after p, when there may be one: a Parquet row range
// whose group has rows after it, or an IPC stream. Otherwise, and when the
// oldest kept decoder has to make room, it closes. It reports whether u is
// kept or closed; false leaves u to the caller.
func (f *File) keep(p idemtype.Partition, u unit) bool {
	k := keptUnit{u: u}
	switch inner := unwrap(u).(type) {
	case *rowRange:
		if inner.left != 0 {
			return false
		}
		rf := f.ranged()
		if p.Offset < 0 || p.Offset >= rf.units() {
			u.close()
			return true
		}
		if rows, err := rf.unitRows(p.Offset); err != nil || rows <= skipped(p)+p.Rows {
			u.close()
			return true
		}
		k.key, k.rr = idemtype.Partition{Offset: p.Offset, Length: p.Length + p.Rows, CRC: p.CRC}, inner
	case *streamUnit:
		if inner.left != 0 {
			return false
		}
		k.key, k.st = inner.following(), inner
	default:
		return false
	}
	f.keptMu.Lock()
	defer f.keptMu.Unlock()
	if f.started[[2]int64{k.key.Offset, k.key.Length}] {
		u.close() // read already, or being read, by a reader of its own
		return true
	}
	f.kept = append(f.kept, k)
	if len(f.kept) > maxKept {
		f.kept[0].u.close()
		f.kept = slices.Delete(f.kept, 0, 1)
	}
	return true
}

// unwrap returns the decoder under u's projection and skipping.
func unwrap(u unit) unit {
	for {
		switch w := u.(type) {
		case *projUnit:
			u = w.unit
		case *skipping:
			u = w.unit
		default:
			return u
		}
	}
}

// start notes that a reader of p starts decoding it.
func (f *File) start(p idemtype.Partition) {
	f.keptMu.Lock()
	defer f.keptMu.Unlock()
	if f.started == nil {
		f.started = map[[2]int64]bool{}
	}
	f.started[[2]int64{p.Offset, p.Length}] = true
}

// resume returns the decoder a partition reader left at the start of p,
// limited to p's rows, or nil.
func (f *File) resume(p idemtype.Partition) unit {
	f.keptMu.Lock()
	defer f.keptMu.Unlock()
	for i, k := range f.kept {
		if k.key.Offset != p.Offset || k.key.Length != p.Length || (k.rr != nil && k.key.CRC != p.CRC) {
			continue
		}
		f.kept = slices.Delete(f.kept, i, i+1)
		if k.rr != nil {
			k.rr.left = p.Rows
		} else {
			k.st.start(p)
		}
		return k.u
	}
	return nil
}

// Close releases the decoders f keeps for partitions not read yet (see
// keep), and the bytes and dictionaries the plan pass left (see planned,
// leftDicts). It is safe to call twice, and concurrently with partition
// readers, and f stays usable: a partition read afterwards decodes its
// unit from its start.
func (f *File) Close() {
	f.left.drop()
	f.dicts.drop()
	f.keptMu.Lock()
	defer f.keptMu.Unlock()
	for _, k := range f.kept {
		k.u.close()
	}
	f.kept = nil
}

// parquet returns f's Parquet file, or nil.
func (f *File) parquet() *parquetFile {
	pq, _ := f.inner().(*parquetFile)
	return pq
}

// inner returns f's units under their projection.
func (f *File) inner() unitFile {
	u := f.units
	if p, ok := u.(*projected); ok {
		u = p.unitFile
	}
	return u
}

// ranged is a file whose partitions may be ranges of a unit's rows: a
// Parquet file's row groups, an IPC file's record batches (not an IPC
// stream's, whose partitions are runs of them).
type ranged interface {
	// unitRows returns the rows of unit k, which exists.
	unitRows(k int64) (int64, error)
	// units returns how many units the file has.
	units() int64
}

// ranged returns f's units if their partitions may be ranges, or nil.
func (f *File) ranged() ranged {
	r, _ := f.inner().(ranged)
	return r
}

// rowRange is the next left rows of a unit; rest holds the rows of the
// last record batch past them.
type rowRange struct {
	unit
	rest arrow.RecordBatch
	left int64
}

func (u *rowRange) next() (arrow.RecordBatch, error) {
	if u.left <= 0 {
		return nil, io.EOF
	}
	rec := u.rest
	u.rest = nil
	if rec == nil {
		var err error
		if rec, err = u.unit.next(); err != nil {
			return nil, err
		}
	}
	n := rec.NumRows()
	if n <= u.left {
		u.left -= n
		return rec, nil
	}
	head := rec.NewSlice(0, u.left)
	u.rest = rec.NewSlice(u.left, n)
	rec.Release()
	u.left = 0
	return head, nil
}

// release frees the rows held past the range, leaving the unit open.
func (u *rowRange) release() {
	if u.rest != nil {
		u.rest.Release()
		u.rest = nil
	}
}

func (u *rowRange) close() {
	u.release()
	u.unit.close()
}

// skipped returns how many rows the unit of partition p has before its
// first row of the table, as the plan recorded them: Length is 1 and that
// many (see idemtype.Partition).
func skipped(p idemtype.Partition) int64 { return max(p.Length-1, 0) }

// skipping is a unit less its first skip rows.
type skipping struct {
	unit
	skip int64
}

func (u *skipping) next() (arrow.RecordBatch, error) {
	for {
		rec, err := u.unit.next()
		if err != nil || u.skip == 0 {
			return rec, err
		}
		n := rec.NumRows()
		if u.skip >= n {
			u.skip -= n
			rec.Release()
			continue
		}
		part := rec.NewSlice(u.skip, n)
		rec.Release()
		u.skip = 0
		return part, nil
	}
}

// projected is a unitFile whose record batches hold only the fields at
// proj, in its order (Options.Select).
type projected struct {
	unitFile
	proj []int
}

func (p *projected) scan(ctx context.Context, o partition.ScanOptions, fn func(p idemtype.Partition, u unit) error) error {
	return p.unitFile.scan(ctx, o, func(part idemtype.Partition, u unit) error {
		return fn(part, &projUnit{unit: u, proj: p.proj})
	})
}

func (p *projected) open(part idemtype.Partition, batchRows int) (unit, error) {
	u, err := p.unitFile.open(part, batchRows)
	if err != nil {
		return nil, err
	}
	return &projUnit{unit: u, proj: p.proj}, nil
}

type projUnit struct {
	unit
	proj []int
}

func (u *projUnit) next() (arrow.RecordBatch, error) {
	rec, err := u.unit.next()
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	fields := make([]arrow.Field, len(u.proj))
	cols := make([]arrow.Array, len(u.proj))
	for j, i := range u.proj {
		fields[j], cols[j] = rec.Schema().Field(i), rec.Column(i)
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows()), nil
}
