package reader

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/idemport/idemport/idemtype"
)

// DefaultPartitionRows is the default number of rows per partition.
const DefaultPartitionRows = 100_000

// maxRejectValue bounds the raw value kept with a reject, and maxRejectRow
// the raw row: longer rows are not kept (the reject keeps its identity).
const (
	maxRejectValue = 1024
	maxRejectRow   = 64 << 10
)

// missingKey returns a required column that a JSONL scanner has not seen
// in any row yet, or "".
func missingKey(required []string, sc rowScanner) string {
	js, ok := sc.(*jsonlScanner)
	if !ok {
		return ""
	}
	for _, n := range required {
		if _, seen := js.index[n]; !seen {
			return n
		}
	}
	return ""
}

// Plan is what the plan pass learns about a file: its schema, its row count,
// its bad rows and where each partition starts. For a given file, options and
// partition size it is always the same.
type Plan struct {
	Schema   Schema `json:"schema"`
	Rows     int64  `json:"rows"`     // data rows, bad ones included
	Rejected int64  `json:"rejected"` // bad rows
	// Superseded counts the good rows whose key a later good row of the
	// file repeats (Options.Key): only the last occurrence of a key is
	// applied. Each partition lists its own.
	Superseded int64       `json:"superseded,omitempty"`
	Partitions []Partition `json:"partitions"`
	// Rejects lists the first bad rows, up to ScanOptions.KeepRejects.
	Rejects []Reject `json:"-"`
}

// Partition is a contiguous run of rows of a plan (see idemtype.Partition).
type Partition = idemtype.Partition

// Reject is one bad row found by the plan pass (see idemtype.Reject).
type Reject = idemtype.Reject

// ScanOptions control the plan pass.
type ScanOptions struct {
	// PartitionRows is the number of rows per partition; 0 means
	// DefaultPartitionRows. Parquet and Arrow files are not cut by rows:
	// each row group or record batch is one partition, since it is the
	// unit their decoders can read alone.
	PartitionRows int64
	// KeepRejects is how many bad rows to list in Plan.Rejects; the rest are
	// only counted.
	KeepRejects int
	// Progress, if set, is called now and then with the bytes of the file
	// as stored that the pass has consumed (compressed bytes for a
	// compressed file, so that they run up to the file's size) and the rows
	// scanned so far. Its last call, when the pass reads the file to its
	// end, reports every byte read.
	Progress func(bytes, rows int64)
	// Shared, if set, is a hash of this file's source under way
	// (StartHashRead): the pass of a text format (CSV, TSV, JSONL,
	// compressed or not) reads the bytes the hash reads instead of reading
	// the source again, and keeps to one core until the hash is done,
	// leaving the other to the hash, unless ContentDigest is set (its
	// caller waits for the pass anyway). Parquet and Arrow files, read by
	// random access, do not use it. One pass only may read a HashRead.
	Shared *HashRead
	// ContentDigest, if set, is called as Scan returns with the digest
	// (as in Digests.Content) of the file's whole decoded stream, which
	// Scan then reads to its end even when a defect stopped the pass early,
	// or with "" when the stream cannot be decoded to its end (or the pass
	// was cancelled). A caller that hashed only the stored bytes (Shared) gets
	// the decoded data's digest without decompressing the file twice. Text
	// formats only; the others never call it.
	ContentDigest func(string)

	// secondCore, if set, keeps the pass on one goroutine until it is
	// closed. Nil lets the pass use a second goroutine from the start: text
	// formats validate rows on it, Parquet files decode half the columns on
	// it.
	secondCore <-chan struct{}
}

// Scan runs the plan pass: one streaming read of the whole file that infers
// the types of columns not fixed by Options.Types, validates every row,
// counts rows and bad rows, and cuts the rows into partitions.
//
// A defect that stops the scan (a row over the size limit, a corrupt
// compressed stream, an I/O error) returns a *ParseError. Bad rows do not
// stop it: they are counted in the plan.
func (f *File) Scan(ctx context.Context, o ScanOptions) (*Plan, error) {
	if f.units != nil {
		return f.scanArrow(ctx, o)
	}
	if o.PartitionRows <= 0 {
		o.PartitionRows = DefaultPartitionRows
	}
	if report := o.Progress; report != nil {
		start := f.stats.bytes.Load() // what Open read before does not count
		o.Progress = func(_, rows int64) { report(f.stats.bytes.Load()-start, rows) }
	}
	var s *stream
	var err error
	if o.Shared != nil {
		raw := o.Shared.reader()
		if o.ContentDigest == nil {
			o.secondCore = o.Shared.hashed
		}
		if s, err = f.decompress(raw); err != nil {
			raw.Close()
		} else {
			s.closers = append([]io.Closer{raw}, s.closers...)
		}
	} else {
		s, err = f.open(ctx, 0)
	}
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if o.ContentDigest != nil {
		h := &hashingReader{ctx: ctx, r: s.Reader, h: sha256.New()}
		s.Reader = h
		defer func() {
			// The rest of the stream, after a defect that stopped the pass.
			if _, err := io.Copy(io.Discard, h); err != nil {
				o.ContentDigest("")
				return
			}
			o.ContentDigest(HashText(h.h))
		}()
	}
	sc, names, err := f.startScan(s)
	if err != nil {
		return nil, err
	}

	// Two stages on two cores: this goroutine's tokenizer finds the rows,
	// cuts partitions and checksums them; the validator checks and infers
	// the rows it hands over, a chunk at a time.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chunks, free := make(chan *rowChunk, 2), make(chan *rowChunk, 4)
	for range cap(free) {
		free <- &rowChunk{}
	}
	v := newValidator(f, o)
	validated := make(chan struct{})
	go func() {
		defer close(validated)
		for c := range chunks {
			v.chunk(c)
			free <- c
		}
	}()
	plan, err := f.tokenize(ctx, sc, names, o, v, free, chunks)
	close(chunks)
	<-validated
	if err != nil {
		return nil, err
	}
	plan.Rejected, plan.Rejects = v.rejected, v.rejects
	for i := range plan.Partitions {
		if i < len(v.partRejected) {
			plan.Partitions[i].Rejected = v.partRejected[i]
		}
	}
	v.names = *names
	v.grow(len(v.names))
	for i, name := range v.names {
		t := v.fixed[i]
		if t == Unknown {
			t = v.infer[i].result(slices.Contains(f.opts.Exact, name))
		}
		plan.Schema = append(plan.Schema, Column{Name: name, Type: t})
	}
	if v.keys != nil {
		if err := f.supersede(ctx, plan, v.keys.candidates()); err != nil {
			return nil, err
		}
	}
	return plan, nil
}

// closed reports whether ch is nil or closed.
func closed(ch <-chan struct{}) bool {
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// startScan opens a scanner positioned at the first data row. names points
// at the scanner's growing column list.
func (f *File) startScan(s io.Reader) (rowScanner, *[]string, error) {
	if f.format == JSONL {
		sc := newJSONLScanner(s, f.opts.MaxRowBytes, 0, nil, true)
		if err := sc.skipBOM(); err != nil {
			return nil, nil, f.wrap(err, 0, 0, "")
		}
		sc.resetCRC()
		return sc, &sc.names, nil
	}
	if _, err := io.CopyN(io.Discard, s, f.data); err != nil {
		return nil, nil, f.wrap(fmt.Errorf("re-read header: %w", err), 0, 0, "")
	}
	names := f.header
	return f.scanner(s, f.data, nil, false), &names, nil
}

// PartitionReader reads the rows of one partition of a plan as batches.
type PartitionReader struct {
	f        *File
	s        *stream
	sc       rowScanner
	p        Partition
	schema   Schema
	required []bool
	limits   []*Limit
	bb       *batchBuilder
	vals     []value
	read     int64 // rows read, bad ones included
	rejected int64
	skipped  int // superseded rows skipped
	size     int
	done     bool
	span     bool            // p spans several partitions of the plan: no CRC to check
	ar       *arrowPartition // Parquet and Arrow files
}

// Partition opens a reader over partition p of plan, positioned at its first
// byte: uncompressed files seek there, compressed ones decompress and discard
// the bytes before it. Each Batch holds at most batchRows rows.
//
// A Parquet partition reads only its row group, and an Arrow IPC file
// partition only its record batch (and the file's dictionaries); an Arrow
// IPC stream partition re-reads the stream up to its record batch. Their
// bytes are read and checked against the plan before they are decoded.
//
// The reader checks that the partition's bytes still match the plan; when
// they do not, Next returns an error wrapping ErrSourceChanged.
func (f *File) Partition(plan *Plan, p Partition, batchRows int) (*PartitionReader, error) {
	if batchRows <= 0 {
		batchRows = 1024
	}
	if f.units != nil {
		if !slices.Equal(plan.Schema, f.schema) {
			return nil, &ParseError{Path: f.path, Offset: -1, Err: fmt.Errorf("%w: the file's columns (%s) differ from the plan's (%s)",
				ErrSourceChanged, schemaText(f.schema), schemaText(plan.Schema))}
		}
		return &PartitionReader{f: f, p: p, ar: &arrowPartition{f: f, p: p, size: batchRows,
			cv: f.converter(plan.Schema)}}, nil
	}
	s, err := f.openSpan(context.Background(), p.Offset, p.Length)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(plan.Schema))
	for i, c := range plan.Schema {
		names[i] = c.Name
	}
	r := &PartitionReader{
		f: f, s: s, p: p, schema: plan.Schema, size: batchRows,
		sc:   f.scanner(s, p.Offset, names, false),
		bb:   newBatchBuilder(f.opts.Allocator, plan.Schema),
		vals: make([]value, len(plan.Schema)),
	}
	for _, c := range plan.Schema {
		r.required = append(r.required, slices.Contains(f.opts.NotNull, c.Name))
	}
	r.limits = limitsOf(f.opts.Limits, names)
	return r, nil
}

// Next returns the next batch of good rows. It returns io.EOF after the
// partition's last row, once its bytes have been checked against the plan.
func (r *PartitionReader) Next() (Batch, error) {
	if r.ar != nil {
		return r.ar.next()
	}
	if r.done {
		return Batch{}, io.EOF
	}
	for r.read < r.p.Rows && r.bb.len() < r.size {
		start := r.sc.offset()
		cells, prob, err := r.sc.next()
		ordinal := r.p.First + r.read
		if err == io.EOF {
			return Batch{}, &ParseError{Path: r.f.path, Row: ordinal, Offset: start,
				Err: fmt.Errorf("%w: the file ends before partition %d's row %d", ErrSourceChanged, r.p.Index, ordinal)}
		}
		if err != nil {
			return Batch{}, r.f.wrap(err, ordinal, start, "")
		}
		r.read++
		if prob != nil || (r.f.format != JSONL && len(cells) != len(r.schema)) {
			r.rejected++
			continue
		}
		ok := true
		// The same whole-row check as the plan pass, so that both make
		// the same decisions.
		clean := r.sc.verbatim() && textClean(r.sc.raw())
		for i := range r.vals {
			c := cell{kind: cellNull}
			if i < len(cells) {
				c = cells[i]
			}
			v, code, _ := convertText(c, r.schema[i].Type, clean)
			if code == "" && (r.limits[i] != nil || (r.f.opts.JSONB && (r.schema[i].Type == JSON || c.kind == cellJSON))) {
				code, _ = checkLimits(r.limits[i], r.f.opts.JSONB, c, v, r.schema[i].Type)
			}
			if code != "" || (v.null && r.required[i]) {
				ok = false
				break
			}
			r.vals[i] = v
		}
		if !ok {
			r.rejected++
			continue
		}
		if r.skipped < len(r.p.Superseded) && r.p.Superseded[r.skipped] == ordinal {
			r.skipped++
			continue
		}
		r.bb.add(ordinal, r.vals)
	}
	if r.read == r.p.Rows && !r.done {
		r.done = true
		if err := r.verify(); err != nil {
			return Batch{}, err
		}
	}
	if r.bb.len() == 0 {
		return Batch{}, io.EOF
	}
	return r.bb.flush(), nil
}

func (r *PartitionReader) verify() error {
	end := r.sc.offset()
	switch {
	case end-r.p.Offset != r.p.Length:
		return &ParseError{Path: r.f.path, Row: r.p.First + r.p.Rows - 1, Offset: end,
			Err: fmt.Errorf("%w: partition %d ends at byte %d, the plan says %d", ErrSourceChanged, r.p.Index, end, r.p.Offset+r.p.Length)}
	case !r.span && r.sc.crcNow() != r.p.CRC:
		return &ParseError{Path: r.f.path, Row: r.p.First, Offset: r.p.Offset,
			Err: fmt.Errorf("%w: partition %d's bytes differ from the plan", ErrSourceChanged, r.p.Index)}
	case r.rejected != r.p.Rejected:
		return &ParseError{Path: r.f.path, Row: r.p.First, Offset: r.p.Offset,
			Err: fmt.Errorf("%w: partition %d has %d bad rows, the plan says %d", ErrSourceChanged, r.p.Index, r.rejected, r.p.Rejected)}
	case r.skipped != len(r.p.Superseded):
		return supersededError(r.f, r.p, int64(r.skipped))
	}
	return nil
}

// Rejected returns how many bad rows the reader has skipped so far.
func (r *PartitionReader) Rejected() int64 {
	if r.ar != nil {
		return r.ar.rejected
	}
	return r.rejected
}

// Superseded returns how many superseded rows the reader has skipped so far.
func (r *PartitionReader) Superseded() int64 {
	if r.ar != nil {
		return int64(r.ar.skipped)
	}
	return int64(r.skipped)
}

// Close releases the reader's file and memory. It is safe to call twice.
func (r *PartitionReader) Close() error {
	if r.ar != nil {
		r.ar.close()
		return nil
	}
	if r.bb != nil {
		r.bb.release()
		r.bb = nil
	}
	if r.s == nil {
		return nil
	}
	err := r.s.Close()
	r.s = nil
	return err
}

// schemaText lists columns as name:type for messages.
func schemaText(s Schema) string {
	parts := make([]string, len(s))
	for i, c := range s {
		parts[i] = c.Name + ":" + c.Type.String()
	}
	return strings.Join(parts, ", ")
}

// RawRow is a row as the file holds it, for a reject found after the plan
// pass (a row the database refused).
type RawRow struct {
	Offset int64  // where the row starts; -1 in Parquet and Arrow files
	Text   string // the row's text (text formats); empty when over 64 KiB
	Fields string // every field of the row, as Reject.Fields; empty when over 64 KiB
}

// RawRows re-reads partition p of plan and returns the rows with the given
// ordinals.
func (f *File) RawRows(plan *Plan, p Partition, ordinals []int64) (out map[int64]RawRow, err error) {
	out = map[int64]RawRow{}
	if len(ordinals) == 0 {
		return out, nil
	}
	want := map[int64]bool{}
	for _, o := range ordinals {
		want[o] = true
	}
	if f.units != nil {
		return f.rawArrowRows(plan, p, want)
	}
	s, err := f.openSpan(context.Background(), p.Offset, p.Length)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	names := make([]string, len(plan.Schema))
	for i, c := range plan.Schema {
		names[i] = c.Name
	}
	sc := f.scanner(s, p.Offset, names, false)
	for i := int64(0); i < p.Rows && len(out) < len(want); i++ {
		cells, prob, err := sc.next()
		if err != nil {
			return nil, f.wrap(err, p.First+i, sc.offset(), "")
		}
		if o := p.First + i; want[o] {
			r := RawRow{Offset: sc.rowStart()}
			if raw := sc.raw(); len(raw) <= maxRejectRow {
				r.Text = string(raw)
				if prob != nil {
					r.Fields = rawFields(raw)
				} else {
					r.Fields = string(appendFields(nil, cells))
				}
			}
			out[o] = r
		}
	}
	return out, nil
}

// rawArrowRows is RawRows for a Parquet or Arrow file: the rows' fields.
func (f *File) rawArrowRows(plan *Plan, p Partition, want map[int64]bool) (out map[int64]RawRow, err error) {
	where := f.where(f.units.unitName(), p)
	defer func() {
		if v := recover(); v != nil {
			out, err = nil, f.recovered(v, where)
		}
	}()
	u, err := f.units.open(p, planBatchRows)
	if err != nil {
		return nil, err
	}
	defer u.close()
	cv := f.converter(plan.Schema)
	out = map[int64]RawRow{}
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
				r := RawRow{Offset: -1}
				if fields := cv.arrowFields(rec, plan.Schema, i); len(fields) <= maxRejectRow {
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
