package text

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"slices"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/partition"
	"github.com/idemport/idemport/reader/internal/reject"
	"github.com/idemport/idemport/reader/internal/value"
)

// missingKey returns a required column that a JSONL scanner has not seen
// in any row yet, or "".
func missingKey(required []string, sc rowScanner) string {
	js, ok := sc.(*jsonlScanner)
	if !ok {
		return ""
	}
	for _, n := range required {
		if !slices.Contains(js.names, n) {
			return n
		}
	}
	return ""
}

// Scan runs the plan pass of a text file: one streaming read of the whole
// file that infers the types of columns not fixed by Options.Types,
// validates every row, counts rows and bad rows, and cuts the rows into
// partitions. With a key (Options.Key) it also returns, in ordinal order,
// the candidate superseded rows: the good rows whose key hash repeats.
//
// A defect that stops the scan (a row over the size limit, a corrupt
// compressed stream, an I/O error) returns a *ParseError. Bad rows do not
// stop it: they are counted in the plan.
func (f *File) Scan(ctx context.Context, o partition.ScanOptions) (*partition.Plan, []int64, error) {
	o = f.scanOptions(o)
	s, err := f.scanStream(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	if o.ContentDigest != nil {
		h := &input.HashingReader{Ctx: ctx, R: s.Reader, H: sha256.New()}
		s.Reader = h
		defer func() {
			// The rest of the stream, after a defect that stopped the pass.
			if _, err := io.Copy(io.Discard, h); err != nil {
				o.ContentDigest("")
				return
			}
			o.ContentDigest(input.HashText(h.H))
		}()
	}
	if s.Reader, err = f.Decode(s.Reader); err != nil {
		return nil, nil, f.Wrap(err, 0, 0, "")
	}
	sc, names, err := f.startScan(s)
	if err != nil {
		return nil, nil, err
	}
	v := newValidator(f, o)
	defer v.keys.Close() // on every path: what the index spilled is removed
	plan, err := f.stages(ctx, sc, names, o, v)
	if v.err != nil {
		return nil, nil, v.err // it cancelled the pass
	}
	if err != nil {
		return nil, nil, err
	}
	f.settle(plan, v, names)
	if v.keys != nil {
		cands, err := v.keys.Candidates()
		if err != nil {
			return nil, nil, err
		}
		return plan, cands, nil
	}
	return plan, nil, nil
}

// scanOptions fills in the defaults of o, and makes its progress count
// only what the pass reads.
func (f *File) scanOptions(o partition.ScanOptions) partition.ScanOptions {
	if o.PartitionRows <= 0 {
		o.PartitionRows = partition.DefaultRows
	}
	if o.PartitionBytes == 0 {
		o.PartitionBytes = partition.DefaultBytes
	}
	if report := o.Progress; report != nil {
		start := f.Stats.Bytes.Load() // what Open read before does not count
		o.Progress = func(_, rows int64) { report(f.Stats.Bytes.Load()-start, rows) }
	}
	return o
}

// scanStream opens the file's decompressed stream, from o.Raw when given.
func (f *File) scanStream(ctx context.Context, o partition.ScanOptions) (*input.Stream, error) {
	var s *input.Stream
	var err error
	if o.Raw != nil {
		raw := o.Raw
		if s, err = f.Decompress(raw); err != nil {
			raw.Close()
		} else {
			s.Closers = append([]io.Closer{raw}, s.Closers...)
		}
	} else {
		s, err = f.Open(ctx, 0)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// stages runs the pass in two stages on two cores: this goroutine's
// tokenizer finds the rows, cuts partitions and checksums them; the
// validator v checks and infers the rows it hands over, a chunk at a time.
func (f *File) stages(ctx context.Context, sc rowScanner, names *[]string, o partition.ScanOptions, v *validator) (*partition.Plan, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chunks, free := make(chan *rowChunk, 2), make(chan *rowChunk, 4)
	for range cap(free) {
		free <- &rowChunk{}
	}
	v.stop = cancel
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
	return plan, err
}

// settle gives plan what the validator v found: the rejects, and the
// columns' types.
func (f *File) settle(plan *partition.Plan, v *validator, names *[]string) {
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
		if t == value.Unknown {
			t = v.infer[i].Result(slices.Contains(f.Opts.Exact, name))
		}
		plan.Schema = append(plan.Schema, value.Column{Name: name, Type: t})
	}
}

// startScan opens a scanner positioned at the first data row. names points
// at the scanner's growing column list.
func (f *File) startScan(s io.Reader) (rowScanner, *[]string, error) {
	if f.Format == input.JSONL {
		// Columns --select names come first, in its order, as in the
		// other formats; a key it names that no line has is a column of
		// nulls.
		var first []string
		for _, k := range f.Opts.Select {
			if n, ok := f.Opts.Rename[k]; ok {
				k = n
			}
			first = append(first, k)
		}
		sc := newJSONLScanner(s, f.Opts.MaxRowBytes, 0, first, true, &f.Opts)
		if err := sc.skipBOM(); err != nil {
			return nil, nil, f.Wrap(err, 0, 0, "")
		}
		if err := sc.skipLines(f.Opts.SkipLines); err != nil {
			return nil, nil, f.Wrap(err, 0, 0, "")
		}
		sc.resetCRC()
		return sc, &sc.names, nil
	}
	if f.Format == input.XLSX {
		names := f.Header
		return f.scanner(s, f.Data, nil, false), &names, nil
	}
	if _, err := io.CopyN(io.Discard, s, f.Data); err != nil {
		return nil, nil, f.Wrap(fmt.Errorf("re-read header: %w", err), 0, 0, "")
	}
	names := f.Header
	sc := f.scanner(s, f.Data, nil, false)
	setLines(sc, f.DataLine)
	return sc, &names, nil
}

// PartitionReader reads the rows of one partition of a plan as batches.
type PartitionReader struct {
	f        *File
	s        *input.Stream
	sc       rowScanner
	p        idemtype.Partition
	schema   value.Schema
	as       []value.Type // the types values are handed as (Plan.As), or nil
	types    []value.Type // the schema's types, column by column
	required []bool
	limits   []*value.Limit
	// checked says a column has a limit, or --all-json may check a cell:
	// else no value is looked at again after its conversion.
	checked  bool
	bb       *batchBuilder
	vals     []value.Value
	read     int64 // rows read, bad ones included
	bytes    int64 // bytes of the rows in bb
	rejected int64
	skipped  int // superseded rows skipped
	size     int
	ramp     int // the next batch's bound on its rows while below size (Ramp); 0: size
	done     bool
	// Span says p spans several partitions of the plan: it has no CRC to
	// check. Set it before the first Next.
	Span bool
}

// Partition opens a reader over partition p of plan, positioned at its first
// byte: uncompressed files seek there, compressed ones decompress and discard
// the bytes before it. Each Batch holds at most batchRows rows, and at most
// about partition.BatchBytes of data.
//
// The reader checks that the partition's bytes still match the plan; when
// they do not, Next returns an error wrapping ErrSourceChanged.
func (f *File) Partition(plan *partition.Plan, p idemtype.Partition, batchRows int) (*PartitionReader, error) {
	s, err := f.OpenText(context.Background(), p.Offset, p.Length)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(plan.Schema))
	for i, c := range plan.Schema {
		names[i] = c.Name
	}
	built := plan.Schema
	if plan.As != nil {
		built = slices.Clone(plan.Schema)
		for i := range built {
			built[i].Type = plan.As[i]
		}
	}
	r := &PartitionReader{
		f: f, s: s, p: p, schema: plan.Schema, as: plan.As, size: batchRows,
		sc:   f.scanner(s, p.Offset, names, false),
		bb:   newBatchBuilder(f.Opts.Allocator, built, firstBatchRows(p, batchRows)),
		vals: make([]value.Value, len(plan.Schema)),
	}
	for _, c := range plan.Schema {
		r.types = append(r.types, c.Type)
		r.required = append(r.required, slices.Contains(f.Opts.NotNull, c.Name))
	}
	r.limits = value.LimitsOf(f.Opts.Limits, names)
	r.checked = f.Opts.AllJSON || slices.ContainsFunc(r.limits, func(l *value.Limit) bool { return l != nil })
	return r, nil
}

// firstBatchRows estimates the rows of p's first batch of at most
// batchRows rows: fewer when p's rows are so wide that the batch ends at
// partition.BatchBytes first (not when p is so little over it that the
// batch may take the rest, endsPartition).
func firstBatchRows(p idemtype.Partition, batchRows int) int {
	n := min(int64(batchRows), p.Rows)
	if p.Length > 0 && p.Length >= partition.BatchBytes+partition.BatchBytes/16 {
		n = min(n, partition.BatchBytes*p.Rows/p.Length+1)
	}
	return int(max(n, 0))
}

// Next returns the next batch of good rows. It returns io.EOF after the
// partition's last row, once its bytes have been checked against the plan.
func (r *PartitionReader) Next() (partition.Batch, error) {
	if r.done {
		return partition.Batch{}, io.EOF
	}
	size := r.size
	if r.ramp > 0 && r.ramp < size {
		size = r.ramp
		r.ramp *= 2
	}
	for r.read < r.p.Rows && r.bb.len() < size && (r.bytes < partition.BatchBytes || r.endsPartition()) {
		start := r.sc.offset()
		cells, prob, err := r.sc.next()
		ordinal := r.p.First + r.read
		if err == io.EOF {
			return partition.Batch{}, &input.ParseError{Path: r.f.Path, Row: ordinal, Offset: start,
				Err: fmt.Errorf("%w: the file ends before partition %d's row %d", input.ErrSourceChanged, r.p.Index, ordinal)}
		}
		if err != nil {
			return partition.Batch{}, r.f.Wrap(err, ordinal, start, "")
		}
		r.read++
		if prob != nil || (r.f.Format != input.JSONL && len(cells) != len(r.schema)) {
			r.rejected++
			continue
		}
		ok := true
		// The same whole-row check as the plan pass, so that both make
		// the same decisions.
		clean := r.sc.verbatim() && (r.sc.ascii() || value.TextClean(r.sc.raw()))
		types, vals := r.types, r.vals
		for i := range vals {
			c := value.Cell{Kind: value.CellNull}
			if i < len(cells) {
				c = cells[i]
			}
			// Converted into vals[i] itself (value.ConvertTextTo).
			v := &vals[i]
			code, _ := value.ConvertTextTo(v, c, types[i], clean)
			if code == "" && r.checked && (r.limits[i] != nil || (r.f.Opts.AllJSON && (types[i] == value.JSON || c.Kind == value.CellJSON))) {
				code, _ = value.CheckLimits(&r.f.Opts.Rules, r.limits[i], r.f.Opts.AllJSON, c, *v, types[i])
			}
			if code == "" {
				code, _ = value.CheckDate(&r.f.Opts.Rules, *v, types[i])
			}
			if code != "" || (v.Null && r.required[i]) {
				ok = false
				break
			}
			if r.as != nil {
				*v = value.FromText(c, *v, types[i], r.as[i])
			}
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
		r.bytes += r.sc.offset() - start
	}
	if r.read == r.p.Rows && !r.done {
		r.done = true
		if err := r.verify(); err != nil {
			return partition.Batch{}, err
		}
	}
	if r.bb.len() == 0 {
		return partition.Batch{}, io.EOF
	}
	r.bytes = 0
	return r.bb.flush(), nil
}

// endsPartition says a batch that holds partition.BatchBytes of rows goes
// on to the end of the partition: the rows left are at most a sixteenth
// of the batch's, and the batch stays under a sixteenth more than
// partition.BatchBytes. A partition a little over partition.BatchBytes
// (100,000 rows of 42 bytes) was read as a whole batch and a rest of
// about 1,000 rows, each a COPY, a savepoint and round trips of its own
// on PostgreSQL.
func (r *PartitionReader) endsPartition() bool {
	return r.bytes < partition.BatchBytes+partition.BatchBytes/16 && r.p.Rows-r.read <= int64(r.bb.len())/16
}

// Ramp bounds the reader's first batch to rows rows, and each next one
// to twice the one before, up to the batch rows it was opened with. A
// writer that waits for the first batch of a partition (nothing read
// ahead) then starts writing after a few milliseconds of decoding rather
// than after a whole batch's, and the batches after it are decoded while
// the ones before are written. The rows and their order are the same.
// Call it before the first Next.
func (r *PartitionReader) Ramp(rows int) {
	r.ramp = max(rows, 1)
}

func (r *PartitionReader) verify() error {
	end := r.sc.offset()
	switch {
	case end-r.p.Offset != r.p.Length:
		return &input.ParseError{Path: r.f.Path, Row: r.p.First + r.p.Rows - 1, Offset: end,
			Err: fmt.Errorf("%w: partition %d ends at byte %d, the plan says %d", input.ErrSourceChanged, r.p.Index, end, r.p.Offset+r.p.Length)}
	case !r.Span && r.sc.crcNow() != r.p.CRC:
		return &input.ParseError{Path: r.f.Path, Row: r.p.First, Offset: r.p.Offset,
			Err: fmt.Errorf("%w: partition %d's bytes differ from the plan", input.ErrSourceChanged, r.p.Index)}
	case r.rejected != r.p.Rejected:
		return &input.ParseError{Path: r.f.Path, Row: r.p.First, Offset: r.p.Offset,
			Err: fmt.Errorf("%w: partition %d has %d bad rows, the plan says %d", input.ErrSourceChanged, r.p.Index, r.rejected, r.p.Rejected)}
	case r.skipped != len(r.p.Superseded):
		return partition.SupersededError(r.f.Path, r.p, int64(r.skipped))
	}
	return nil
}

// Rejected returns how many bad rows the reader has skipped so far.
func (r *PartitionReader) Rejected() int64 {
	return r.rejected
}

// Superseded returns how many superseded rows the reader has skipped so far.
func (r *PartitionReader) Superseded() int64 {
	return int64(r.skipped)
}

// Close releases the reader's file and memory. It is safe to call twice.
func (r *PartitionReader) Close() error {
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

// RawRows re-reads partition p of plan and returns the rows whose ordinals
// want holds. It reads the whole partition and fails with an error
// wrapping ErrSourceChanged when its bytes no longer match the plan, as
// Partition's reader does.
func (f *File) RawRows(plan *partition.Plan, p idemtype.Partition, want map[int64]bool) (out map[int64]reject.RawRow, err error) {
	out = map[int64]reject.RawRow{}
	s, err := f.OpenText(context.Background(), p.Offset, p.Length)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	names := make([]string, len(plan.Schema))
	for i, c := range plan.Schema {
		names[i] = c.Name
	}
	sc := f.scanner(s, p.Offset, names, false)
	// Every row, to the partition's end: its bytes are checked against
	// the plan as the apply's are, since a source that cannot tell a
	// version from another (a remote object that proves none) may have
	// been replaced by bytes of the same size since the apply read them.
	for i := int64(0); i < p.Rows; i++ {
		cells, prob, err := sc.next()
		if err == io.EOF {
			return nil, &input.ParseError{Path: f.Path, Row: p.First + i, Offset: sc.offset(),
				Err: fmt.Errorf("%w: the file ends before partition %d's row %d", input.ErrSourceChanged, p.Index, p.First+i)}
		}
		if err != nil {
			return nil, f.Wrap(err, p.First+i, sc.offset(), "")
		}
		if o := p.First + i; want[o] {
			r := reject.RawRow{Offset: sc.rowStart()}
			if raw := sc.raw(); len(raw) <= reject.MaxRow {
				r.Text = string(raw)
				if prob != nil {
					r.Fields = reject.RawFields(raw)
				} else {
					r.Fields = string(reject.AppendFields(nil, cells))
				}
			}
			out[o] = r
		}
	}
	if end := sc.offset(); end-p.Offset != p.Length || sc.crcNow() != p.CRC {
		return nil, &input.ParseError{Path: f.Path, Row: p.First, Offset: p.Offset,
			Err: fmt.Errorf("%w: partition %d's bytes differ from the plan (read again for the rows the database refused)", input.ErrSourceChanged, p.Index)}
	}
	return out, nil
}
