package columnar

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/keys"
	"github.com/idemport/idemport/reader/internal/partition"
	"github.com/idemport/idemport/reader/internal/reject"
	"github.com/idemport/idemport/reader/internal/value"
)

// Parquet and Arrow IPC files are read through their own decoders
// (parquet/pqarrow, arrow/ipc), and their record batches are converted to
// the reader's types by a converter. Their partitions are their units, one
// per Parquet row group or Arrow record batch: Partition.Offset is the
// unit's index and Length is 1. A Parquet row group, or an IPC file's
// record batch, of at least twice ScanOptions.PartitionRows rows is cut
// into ranges of its rows instead, so that a file written as one large row
// group or record batch (Arrow JS writes a table so) still commits,
// resumes and overlaps decoding with writing partition by partition; and
// an IPC file's or stream's smaller record batches are gathered into
// partitions of about PartitionRows rows (see File.keep, and ipcStream).

// unitFile is a Parquet or Arrow IPC file seen as a sequence of units.
type unitFile interface {
	// unitName names a unit in messages: "row group" or "record batch".
	unitName() string
	// scan reads every unit in order for the plan pass. It calls fn with a
	// partition whose Rows, Offset, Length and CRC describe the unit (an
	// IPC stream's: a run of record batches, see ipcStream), and its
	// record batches; it closes the unit after fn returns. A file that can
	// decode a unit on two goroutines does so once o.SecondCore is closed
	// (nil: at once). o.PartitionRows and o.PartitionBytes are set.
	scan(ctx context.Context, o partition.ScanOptions, fn func(p idemtype.Partition, u unit) error) error
	// open returns the record batches of the unit of partition p, each at
	// most batchRows long where the decoder can split, after checking the
	// unit's row count and bytes against p. A difference is a *ParseError
	// wrapping ErrSourceChanged.
	open(p idemtype.Partition, batchRows int) (unit, error)
}

// unit yields the record batches of one row group or record batch.
type unit interface {
	// next returns the next record batch, which the caller must release,
	// or io.EOF after the last.
	next() (arrow.RecordBatch, error)
	close()
}

// planBatchRows is how many rows the plan pass decodes at a time.
const planBatchRows = 64 * 1024

// decodeRows is how many rows a partition reader decodes at a time at
// least (a Parquet row group's decoders; an Arrow record batch is decoded
// whole), however few rows its batches hold: it hands out slices of the
// batch decoded. Decoded 8,192 rows at a time, as the SQLite writer takes
// them, the partitions of a million orders rows from the Rust parquet
// crate (one row group; and with 8 MiB dictionaries) took 7% more of the
// reader's CPU time, a percent of an import's. Wide rows are still
// decoded in batches of about partition.BatchBytes (parquetFile.batchRows).
const decodeRows = 64 * 1024

// recovered turns a panic of a third-party decoder into a *ParseError naming
// the file and where it was: hostile bytes can make Parquet and Arrow
// decoders panic, and a corrupt file must be a data error, not a crash.
func (f *File) recovered(v any, where string) error {
	if p, ok := v.(ownPanic); ok {
		panic(p) // see input.RaiseOwnPanics
	}
	if where != "" {
		where += ": "
	}
	return &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: %scorrupt data (decoder failed: %v)", input.ErrFormat, where, v)}
}

// unitError gives an error met while decoding a unit its place.
func (f *File) unitError(err error, where string) error {
	var pe *input.ParseError
	if errors.As(err, &pe) {
		return err
	}
	return &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: %s: %w", input.ErrFormat, where, err)}
}

func (f *File) where(u string, p idemtype.Partition) string {
	if p.Rows > 0 {
		return fmt.Sprintf("%s %d (rows %d-%d)", u, p.Offset, p.First, p.First+p.Rows-1)
	}
	return fmt.Sprintf("%s %d", u, p.Offset)
}

// Scan is the plan pass of a Parquet or Arrow file: it decodes every
// unit, checks every value, and makes one partition per non-empty unit,
// or several per large Parquet row group, or one per run of an IPC
// stream's record batches (see File.keep).
// With a key (Options.Key) it also returns, in ordinal order, the
// candidate superseded rows: the good rows whose key hash repeats.
//
// A Parquet file's partitions are reported to o.Partitioned as the pass
// finishes them, from its first while they are whole row groups, never
// its last partition, and each once: a pass that starts
// again (errRescan) reports only those past the ones reported, which it
// plans as the first pass did (a pass that leaves columns undecoded stops
// at the first bad row, and the columns it left hold none). The ranges of
// a large row group's rows are not: a reader of one decodes the group
// beside the pass, whose decoders hold the whole group, and on 1M rows
// from the Rust parquet crate in one row group an overlap that wrote them
// cost 12-21k page faults more (a third more) and no less time. Tried
// again once partition readers took the pass's dictionaries (6 December
// 2026): the overlap wrote three ranges beside the pass, at 1.17-1.38x
// the import's CPU time, page faults 19-25k against 21-23k (with 8 MiB
// dictionaries 46-49k against 26-27k), and the wall time longer in all
// 6 pairs (load average 16). Tried a third time (7 December 2026), with
// the reader CPU of each range measured: the overlap reads through a File
// of its own, whose reader of the first range loads and checksums the
// whole group and reads its dictionaries again (77-151 ms against 30 for
// that range read from the pass's bytes; with 8 MiB dictionaries 92-202
// against 26), and the apply's first range after the overlap's, read
// from the plan's File, decodes the rows before it to drop them (70-84
// ms against 16-26). The import took 1.18x the CPU time (1.29x with 8 MiB
// dictionaries) and a longer wall in 5 (6) of 6 pairs, load average
// 18-20. Ranges pay only once both are gone: the overlap's reader taking
// the pass's bytes and dictionaries, and the apply's first reader taking
// up the overlap's decoder (or leaving the rows before its range undecoded).
func (f *File) Scan(ctx context.Context, o partition.ScanOptions) (*partition.Plan, []int64, error) {
	reported := 0
	plan, cands, err := f.scan(ctx, o, true, &reported)
	if errors.Is(err, errRescan) {
		plan, cands, err = f.scan(ctx, o, false, &reported)
	}
	return plan, cands, err
}

// errRescan says that a plan pass that left columns undecoded (see
// planSkips) met a bad row, whose reject holds all of its values: the
// pass starts again, decoding every column.
var errRescan = errors.New("a bad row: plan again with every column")

// scan is one plan pass; skipping says it may leave undecoded the columns
// planSkips finds nothing to check in; reported counts the partitions
// reported to o.Partitioned.
func (f *File) scan(ctx context.Context, o partition.ScanOptions, skipping bool, reported *int) (plan *partition.Plan, cands []int64, err error) {
	plan = &partition.Plan{Schema: append(value.Schema(nil), f.schema...)}
	s := &planner{f: f, ctx: ctx, plan: plan, cv: f.converter(f.schema), reported: reported}
	if pq := f.parquet(); pq != nil && o.Partitioned != nil {
		for k := range pq.groups {
			s.rows += pq.md.RowGroup(k).NumRows()
		}
		s.rows -= int64(f.Opts.SkipLines)
	}
	if len(f.Opts.Key) > 0 {
		s.index = keys.NewIndex(o.TempDir, o.KeysHeld)
		defer s.index.Close() // on every path: what the index spilled is removed
		names := make([]string, len(f.cols))
		for i, c := range f.cols {
			names[i] = c.name
		}
		s.keyCols = keys.Columns(names, f.Opts.Key)
	}
	if pq := f.parquet(); pq != nil && skipping {
		if s.cv.skip = s.skips(); s.cv.skip != nil {
			pq.skip = f.skipsAt(s.cv.skip)
			defer func() { pq.skip = nil }()
		}
	}
	s.start = f.Stats.Bytes.Load()
	s.before = int64(f.Opts.SkipLines) // rows before the table, still to leave out
	defer func() {
		if v := recover(); v != nil {
			plan, cands, err = nil, nil, f.recovered(v, s.where)
		}
	}()
	if o.PartitionRows <= 0 {
		o.PartitionRows = partition.DefaultRows
	}
	if o.PartitionBytes <= 0 {
		o.PartitionBytes = partition.DefaultBytes
	}
	s.o, s.partRows = o, o.PartitionRows
	err = f.units.scan(ctx, o, s.unit)
	if err != nil {
		return nil, nil, err
	}
	plan.Rows = s.ordinal
	if s.index != nil {
		cands, err := s.index.Candidates()
		if err != nil {
			return nil, nil, err
		}
		return plan, cands, nil
	}
	return plan, nil, nil
}

// skips returns, by column, whether the plan pass can leave the column
// undecoded, or nil when it must decode them all. The plan needs a
// column's values only to check them: a column of integers (but uint64),
// floats, booleans or decimals has no value the converter refuses, and a
// column of text only values that are not UTF-8 or hold a NUL, which its
// page decoder checks where they lie (a dictionary's once), unless
// the target limits it, it must not be null, or it is part of the key.
// Only a column the reader's page decoder reads is left undecoded (see
// parquetFile.unitOf): its pages are still run through as they will be
// decoded, so that a chunk a partition reader would refuse refuses the
// file before any row is written. A bad row found in such a pass makes it
// start again (errRescan).
func (s *planner) skips() []bool {
	cv := s.cv
	if cv.allJSON {
		return nil
	}
	skip := make([]bool, len(s.f.cols))
	some := false
	for k, col := range s.f.cols {
		switch {
		case col.required, cv.limits != nil && cv.limits[k] != nil, slices.Contains(s.keyCols, k):
		case col.mode == modeInt, col.mode == modeFloat, col.mode == modeBool,
			col.mode == modeText && isDecimal(col.src),
			col.mode == modeString: // its page decoder checks the text (pageChunk.skip)
			skip[k], some = true, true
		}
	}
	if !some {
		return nil
	}
	return skip
}

// skipsAt returns skip, by column, as by place in the record batches of
// the decoders: a place is skipped when every column read from it is.
func (f *File) skipsAt(skip []bool) []bool {
	at := func(k int) int {
		if f.proj != nil {
			return f.proj[k]
		}
		return k
	}
	n := 0
	for k := range skip {
		n = max(n, at(k)+1)
	}
	out := make([]bool, n)
	for k, sk := range skip {
		if sk {
			out[at(k)] = true
		}
	}
	for k, sk := range skip {
		if !sk {
			out[at(k)] = false
		}
	}
	return out
}

// planner is the state of one File.Scan.
type planner struct {
	f        *File
	ctx      context.Context
	o        partition.ScanOptions
	plan     *partition.Plan
	cv       *converter
	index    *keys.Index
	keyCols  []int
	rr       renderer
	start    int64  // the bytes read when the scan began
	ordinal  int64  // the rows planned so far
	before   int64  // rows before the table, still to leave out
	where    string // the unit being decoded, for a decoder's panic
	partRows int64
	// rows are the rows of the table a Parquet file's footer declares
	// (0: none reported), so that its last partition is known as such;
	// reported counts the partitions reported (see File.Scan), the first
	// ones of the plan.
	rows     int64
	reported *int
}

// unit plans the partitions of one unit, u, whose partition is p.
func (s *planner) unit(p idemtype.Partition, u unit) error {
	f := s.f
	if s.before >= p.Rows {
		s.before -= p.Rows // the whole unit is before the table
		return nil
	}
	if s.before > 0 {
		// Recorded in Length, so that a partition reader leaves them
		// out too (see idemtype.Partition).
		p.Rows, p.Length = p.Rows-s.before, 1+s.before
		u = &skipping{unit: u, skip: s.before}
		s.before = 0
	}
	pieces := int64(1)
	if rf := f.ranged(); rf != nil && p.Rows >= 2*s.partRows {
		// A unit of its own (an IPC file's partition may be a run of
		// record batches): cut into ranges of its rows.
		rows, err := rf.unitRows(p.Offset)
		if err != nil {
			return f.unitError(err, fmt.Sprintf("%s %d", f.units.unitName(), p.Offset))
		}
		if rows == p.Rows+skipped(p) {
			pieces = p.Rows / s.partRows
		}
	}
	if pieces == 1 {
		return s.part(p, u)
	}
	return s.cut(p, u, pieces)
}

// cut plans a row group of at least twice PartitionRows rows as pieces of
// about equal rows, each a partition of its own.
func (s *planner) cut(p idemtype.Partition, u unit, pieces int64) error {
	f := s.f
	rr := &rowRange{unit: u}
	defer rr.release()
	rows, start := p.Rows, int64(0)
	for j := range pieces {
		n := rows / pieces
		if j < rows%pieces {
			n++
		}
		q := p
		q.Rows, q.Length, rr.left = n, p.Length+start, n
		if err := s.part(q, rr); err != nil {
			return err
		}
		start += n
	}
	group := fmt.Sprintf("%s %d", f.units.unitName(), p.Offset)
	rec, err := rr.rest, error(nil)
	if rr.rest == nil {
		rec, err = rr.unit.next()
	}
	rr.rest = nil
	switch {
	case err == io.EOF:
		return nil
	case err != nil:
		return f.unitError(err, group)
	}
	rec.Release()
	return &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: %s holds more rows than its metadata says", input.ErrFormat, group)}
}

// part plans one partition, whose rows u yields.
func (s *planner) part(p idemtype.Partition, u unit) error {
	f, plan, o, cv := s.f, s.plan, s.o, s.cv
	p.Index, p.First = len(plan.Partitions), s.ordinal+1
	s.where = f.where(f.units.unitName(), p)
	var read int64
	for {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		rec, err := u.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return f.unitError(err, s.where)
		}
		n := rec.NumRows()
		if read+n > p.Rows {
			rec.Release()
			return &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: %s holds more rows than its metadata says", input.ErrFormat, s.where)}
		}
		bad := cv.check(rec)
		if bad > 0 && cv.skip != nil {
			rec.Release()
			return errRescan
		}
		if err := s.rejects(rec, p.First, read); err != nil {
			rec.Release()
			return err
		}
		p.Rejected += int64(bad)
		if s.index != nil {
			s.addKeys(rec, p.First, read, n)
		}
		read += n
		rec.Release()
	}
	if read != p.Rows {
		return &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: %s holds %d rows, its metadata says %d", input.ErrFormat, s.where, read, p.Rows)}
	}
	if p.Rows > 0 {
		s.ordinal += p.Rows
		plan.Partitions = append(plan.Partitions, p)
		if s.ordinal < s.rows && p.Index == *s.reported {
			if size, whole := f.parquet().whole(p); whole {
				*s.reported = p.Index + 1
				o.Partitioned(partition.Cut{Partition: p, Schema: slices.Clone(plan.Schema), Bytes: size})
			}
		}
	}
	if o.Progress != nil {
		o.Progress(f.Stats.Bytes.Load()-s.start, s.ordinal)
	}
	return nil
}

// rejects records the problems the converter found in rec, whose rows
// follow read rows of the partition that begins at ordinal first.
func (s *planner) rejects(rec arrow.RecordBatch, first, read int64) error {
	f, plan, o, cv := s.f, s.plan, s.o, s.cv
	for _, pr := range cv.probs {
		plan.Rejected++
		keep := len(plan.Rejects) < o.KeepRejects
		if !keep && o.Spill == nil {
			continue
		}
		r := idemtype.Reject{Ordinal: first + read + int64(pr.row), Offset: -1, Column: f.cols[pr.col].name,
			Code: pr.code, Message: pr.msg}
		if pr.code != value.CodeNull {
			r.Value = cv.valueText(rec, pr.col, pr.row)
		}
		if fields := cv.arrowFields(rec, f.schema, pr.row); len(fields) <= reject.MaxRow {
			r.Fields = fields
		}
		if o.Spill != nil {
			if err := o.Spill(r); err != nil {
				return err
			}
		}
		if keep {
			plan.Rejects = append(plan.Rejects, r)
		}
	}
	return nil
}

// addKeys adds the keys of rec's good rows to the index; rec's rows follow
// read rows of the partition that begins at ordinal first. A timestamp is
// keyed as its key column stores it (value.Limit.Time), as the supersede
// keys it: two keys a timestamp(0) column stores as one are one key.
func (s *planner) addKeys(rec arrow.RecordBatch, first, read, n int64) {
	index, keyCols, rr, cv := s.index, s.keyCols, &s.rr, s.cv
	for i := range int(n) {
		if cv.bad[i] {
			continue
		}
		buf := index.Buf[:0]
		for _, k := range keyCols {
			if s.f.cols[k].mode == modeTimestamp {
				if us, ok := timestampAt(rec.Column(k), i); ok {
					var l *value.Limit
					if cv.limits != nil {
						l = cv.limits[k]
					}
					buf = binary.BigEndian.AppendUint64(append(buf, 't'), uint64(l.Time(us)))
					continue
				}
			}
			buf = rr.appendArrowKey(buf, rec.Column(k), i)
		}
		index.Buf = buf
		index.Add(first+read+int64(i), buf)
	}
}

// timestampAt returns row i of a timestamp column, in any unit, as
// microseconds since 1970-01-01, or false when it is null or no timestamp
// (check marks the row bad).
func timestampAt(a arrow.Array, i int) (int64, bool) {
	v := newView(a)
	j, ok := v.at(i)
	if !ok {
		return 0, false
	}
	ts, ok := v.vals.(*array.Timestamp)
	if !ok {
		return 0, false
	}
	us, code, _ := toMicros(int64(ts.Value(j)), ts.DataType().(*arrow.TimestampType).Unit)
	return us, code == ""
}

// PartitionReader reads one partition, a unit, of a Parquet or Arrow file.
type PartitionReader struct {
	f        *File
	p        idemtype.Partition
	size     int
	cv       *converter
	u        unit
	cur      arrow.RecordBatch // the decoded batch being cut into batches of size
	pos      int64             // rows of cur already returned
	read     int64
	rejected int64
	skipped  int   // superseded rows skipped
	err      error // sticky: a failed reader stays failed
	done     bool
	last     bool // p is the plan's last partition: no reader takes up its decoder
}

// Next returns the next batch of good rows, or io.EOF after the unit's
// last row once its counts have been checked against the plan.
func (r *PartitionReader) Next() (b partition.Batch, err error) {
	if r.err != nil {
		return partition.Batch{}, r.err
	}
	if r.done {
		return partition.Batch{}, io.EOF
	}
	where := r.f.where(r.f.units.unitName(), r.p)
	defer func() {
		if v := recover(); v != nil {
			b, err = partition.Batch{}, r.f.recovered(v, where)
		}
		if err != nil && err != io.EOF {
			r.err = err
		}
	}()
	if r.u == nil {
		if r.u, err = r.f.open(r.p, max(r.size, decodeRows)); err != nil {
			return partition.Batch{}, err
		}
	}
	for {
		if r.cur == nil {
			rec, err := r.u.next()
			if err == io.EOF {
				return partition.Batch{}, r.finish(where)
			}
			if err != nil {
				return partition.Batch{}, r.f.unitError(err, where)
			}
			r.cur, r.pos = rec, 0
		}
		rows := r.cur.NumRows()
		n := min(int64(r.size), rows-r.pos)
		if r.read+n > r.p.Rows {
			return partition.Batch{}, &input.ParseError{Path: r.f.Path, Offset: -1,
				Err: fmt.Errorf("%w: %s holds more rows than the plan says", input.ErrSourceChanged, where)}
		}
		part := r.cur
		if n != rows {
			part = r.cur.NewSlice(r.pos, r.pos+n)
		}
		bad := r.cv.check(part)
		r.skip(r.p.First + r.read)
		out := r.cv.build(part, r.p.First+r.read)
		if part != r.cur {
			part.Release()
		}
		r.read += n
		r.rejected += int64(bad)
		r.pos += n
		if r.pos == rows {
			r.cur.Release()
			r.cur = nil
		}
		if r.read == r.p.Rows {
			if err := r.finish(where); err != nil {
				out.Release()
				return partition.Batch{}, err
			}
		}
		if out.Record != nil {
			return out, nil
		}
		if r.done {
			return partition.Batch{}, io.EOF
		}
	}
}

// skip marks the superseded rows of the batch check just saw, whose first
// row has ordinal first, for build to leave out.
func (r *PartitionReader) skip(first int64) {
	c := r.cv
	for r.skipped < len(r.p.Superseded) {
		i := r.p.Superseded[r.skipped] - first
		if i >= int64(len(c.bad)) {
			return
		}
		if i >= 0 && !c.bad[i] {
			c.bad[i] = true
			c.nbad++
		}
		r.skipped++
	}
}

// finish checks the counts of a partition read to its end.
func (r *PartitionReader) finish(where string) error {
	r.done = true
	switch {
	case r.read != r.p.Rows:
		return &input.ParseError{Path: r.f.Path, Offset: -1,
			Err: fmt.Errorf("%w: %s ends after %d rows, the plan says %d", input.ErrSourceChanged, where, r.read, r.p.Rows)}
	case r.rejected != r.p.Rejected:
		return &input.ParseError{Path: r.f.Path, Offset: -1,
			Err: fmt.Errorf("%w: %s has %d bad rows, the plan says %d", input.ErrSourceChanged, where, r.rejected, r.p.Rejected)}
	case r.skipped != len(r.p.Superseded):
		return partition.SupersededError(r.f.Path, r.p, int64(r.skipped))
	}
	return nil
}

// Rejected returns how many bad rows the reader has skipped so far.
func (r *PartitionReader) Rejected() int64 { return r.rejected }

// Superseded returns how many superseded rows the reader has skipped so far.
func (r *PartitionReader) Superseded() int64 { return int64(r.skipped) }

// Close releases the reader's decoder and memory. It is safe to call
// twice. A reader that read its partition (a range of a row group's rows,
// or of an IPC stream's record batches) to the end leaves its decoder for
// the next partition's (File.keep).
func (r *PartitionReader) Close() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.u != nil {
		if !r.done || r.err != nil || r.last || !r.f.keep(r.p, r.u) {
			r.u.close()
		}
		r.u = nil
	}
}
