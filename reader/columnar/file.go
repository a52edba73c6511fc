package columnar

import (
	"context"
	"fmt"
	"io"
	"slices"

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

// Partition opens a reader over partition p of plan, a unit: a Parquet
// partition reads only its row group, and an Arrow IPC file partition only
// its record batch (and the file's dictionaries); an Arrow IPC stream
// partition re-reads the stream up to its record batch. Their bytes are
// read and checked against the plan before they are decoded; each Batch
// holds at most batchRows rows.
func (f *File) Partition(plan *partition.Plan, p idemtype.Partition, batchRows int) (*PartitionReader, error) {
	if !slices.Equal(plan.Schema, f.schema) {
		return nil, &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: the file's columns (%s) differ from the plan's (%s)",
			input.ErrSourceChanged, value.SchemaText(f.schema), value.SchemaText(plan.Schema))}
	}
	return &PartitionReader{f: f, p: p, size: batchRows, cv: f.converter(plan.Schema)}, nil
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
// table (Options.SkipLines) that it starts with.
func (f *File) open(p idemtype.Partition, batchRows int) (unit, error) {
	u, err := f.units.open(p, batchRows)
	if err != nil || p.Length <= 1 {
		return u, err
	}
	return &skipping{unit: u, skip: p.Length - 1}, nil
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

func (p *projected) scan(ctx context.Context, secondCore <-chan struct{}, fn func(p idemtype.Partition, u unit) error) error {
	return p.unitFile.scan(ctx, secondCore, func(part idemtype.Partition, u unit) error {
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
