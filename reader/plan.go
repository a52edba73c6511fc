package reader

import (
	"context"
	"io"
	"iter"

	"github.com/idemport/idemport/reader/columnar"
	"github.com/idemport/idemport/reader/internal/partition"
	"github.com/idemport/idemport/reader/text"
)

// ScanOptions control the plan pass.
type ScanOptions struct {
	// PartitionRows is the number of rows per partition; 0 means
	// DefaultPartitionRows. A Parquet row group is one partition, or, when
	// it holds at least twice PartitionRows rows, as many partitions of
	// about PartitionRows rows as it holds whole PartitionRows (ranges of
	// its rows, decoded once when read in order), and so is a record
	// batch of an Arrow IPC file; an IPC stream's record batch is always
	// one partition, or part of a run of them.
	PartitionRows int64
	// PartitionBytes bounds a text file's partitions by their bytes (in the
	// decompressed stream) as well: a partition ends with the row that
	// brings it to PartitionBytes bytes, so it holds less than
	// PartitionBytes plus one row. 0 means DefaultPartitionBytes; a
	// negative value means no bound. A Parquet row group or an Arrow
	// record batch is never cut by its bytes: its batches are bounded
	// instead (see File.Partition).
	PartitionBytes int64
	// KeepRejects is how many bad rows to list in Plan.Rejects; the rest are
	// only counted.
	KeepRejects int
	// Spill, if set, is called with every bad row, in file order, as the
	// pass finds it, so that a caller can store them all without the plan
	// holding them (Plan.Rejects keeps only the first KeepRejects). An
	// error it returns stops the pass, and Scan returns it.
	Spill func(Reject) error
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
	// random access, do not read its bytes, but keep to one core until the
	// hash is done all the same. One pass only may read a HashRead.
	Shared *HashRead
	// ContentDigest, if set, is called as Scan returns with the digest
	// (as in Digests.Content) of the file's whole decoded stream, which
	// Scan then reads to its end even when a defect stopped the pass early,
	// or with "" when the stream cannot be decoded to its end (or the pass
	// was cancelled). A caller that hashed only the stored bytes (Shared) gets
	// the decoded data's digest without decompressing the file twice. Text
	// formats only; the others never call it.
	ContentDigest func(string)
	// TempDir is where the pass spills what it would otherwise hold in
	// memory past a bound (the key hashes of a keyed file, KeysHeld); ""
	// means os.TempDir(). What it spills is removed before Scan returns.
	TempDir string
	// KeysHeld is how many key hashes (8 bytes each) the pass of a keyed
	// file holds in memory before it spills them to a file in TempDir; 0
	// means 4Mi (32 MiB). The plan is the same whatever it is.
	KeysHeld int
	// Partitioned, if set, is called for each partition of a text file
	// (CSV, TSV, JSONL, a sheet) that reaches PartitionRows or
	// PartitionBytes (every one but a last one the file's end cuts short),
	// and for each partition of a Parquet file that is a whole row group
	// but its last partition (not the ranges of a large row group's rows),
	// as soon as the pass has checked its rows,
	// before the pass ends, in order, from the pass's goroutine (it must
	// be quick): with the partition as the plan will have it, its bad rows
	// counted (Rejected) but not its superseded rows (a key's later rows
	// settle those at the end), and the file's columns with the types the
	// rows so far infer, which later rows may change. Reading it with
	// Partition under a plan of that schema reads what the final plan
	// reads, when the final plan has that schema and the partition has no
	// superseded rows. Arrow IPC files and streams never call it.
	Partitioned func(Cut)
	// GrowTo, when larger than PartitionRows, makes a text file's
	// partitions grow: each holds at most as many rows as the partitions
	// before it hold together, and at least PartitionRows and at most
	// GrowTo (10, 10, 20, 40, 80, 100, 100, … for 10 and 100), each still
	// bounded by PartitionBytes. The cuts depend on the file and the
	// options only, as they do without it. Parquet and Arrow files ignore
	// it. An importer into SQLite asks for it for keys in random order,
	// whose rows each partition writes in one pass over the table's B-tree
	// (see docs/internals.md).
	GrowTo int64

	// secondCore, if set, keeps the pass on one goroutine until it is
	// closed. Nil lets the pass use a second goroutine from the start: text
	// formats validate rows on it, Parquet files decode half the columns on
	// it.
	secondCore <-chan struct{}
}

// Scan runs the plan pass: one streaming read of the whole file that infers
// the types of columns not fixed by Options.Types, validates every row,
// counts rows and bad rows, and cuts the rows into partitions. With a key
// (Options.Key) it then settles which rows a later row with the same key
// supersedes (Plan.Superseded).
//
// A defect that stops the scan (a row over the size limit, a corrupt
// compressed stream, an I/O error) returns a *ParseError. Bad rows do not
// stop it: they are counted in the plan.
func (f *File) Scan(ctx context.Context, o ScanOptions) (*Plan, error) {
	wo := partition.ScanOptions{PartitionRows: o.PartitionRows, PartitionBytes: o.PartitionBytes, KeepRejects: o.KeepRejects, Spill: o.Spill, Progress: o.Progress,
		ContentDigest: o.ContentDigest, SecondCore: o.secondCore, TempDir: o.TempDir, KeysHeld: o.KeysHeld, GrowTo: o.GrowTo}
	wo.Partitioned = o.Partitioned
	var plan *Plan
	var cands []int64
	var err error
	if f.cols != nil {
		if o.Shared != nil {
			o.Shared.Release() // its bytes are not read here: the hasher keeps no chunks for this pass
			if o.ContentDigest == nil {
				wo.SecondCore = o.Shared.hashed
			}
		}
		plan, cands, err = f.cols.Scan(ctx, wo)
	} else {
		if o.Shared != nil {
			wo.Raw = o.Shared.reader()
			if o.ContentDigest == nil {
				wo.SecondCore = o.Shared.hashed
			}
		}
		plan, cands, err = f.text.Scan(ctx, wo)
	}
	if err != nil {
		return nil, err
	}
	if err := f.supersede(ctx, plan, cands); err != nil {
		return nil, err
	}
	return plan, nil
}

// PartitionReader reads the rows of one partition of a plan as batches.
type PartitionReader struct {
	text *text.PartitionReader
	cols *columnar.PartitionReader
}

// Partition opens a reader over partition p of plan, positioned at its first
// byte: uncompressed files seek there, compressed ones decompress and discard
// the bytes before it. Each Batch holds at most batchRows rows, and at most
// about 4 MiB of data.
//
// A Parquet partition reads only its row group, and an Arrow IPC file
// partition only its record batch (and the file's dictionaries); an Arrow
// IPC stream partition re-reads the stream up to its record batch. Their
// bytes are read and checked against the plan before they are decoded. The
// first reader of the partition that a Parquet or IPC file's Scan read
// last, whose plan has the CRC that Scan computed, reads no bytes: it
// decodes those Scan loaded and checked (see Close).
//
// The reader checks that the partition's bytes still match the plan; when
// they do not, Next returns an error wrapping ErrSourceChanged.
func (f *File) Partition(plan *Plan, p Partition, batchRows int) (*PartitionReader, error) {
	if batchRows <= 0 {
		batchRows = 1024
	}
	if f.cols != nil {
		r, err := f.cols.Partition(plan, p, batchRows)
		if err != nil {
			return nil, err
		}
		return &PartitionReader{cols: r}, nil
	}
	r, err := f.text.Partition(plan, p, batchRows)
	if err != nil {
		return nil, err
	}
	return &PartitionReader{text: r}, nil
}

// Next returns the next batch of good rows. It returns io.EOF after the
// partition's last row, once its bytes have been checked against the plan.
func (r *PartitionReader) Next() (Batch, error) {
	if r.cols != nil {
		return r.cols.Next()
	}
	return r.text.Next()
}

// Rejected returns how many bad rows the reader has skipped so far.
func (r *PartitionReader) Rejected() int64 {
	if r.cols != nil {
		return r.cols.Rejected()
	}
	return r.text.Rejected()
}

// Superseded returns how many superseded rows the reader has skipped so far.
func (r *PartitionReader) Superseded() int64 {
	if r.cols != nil {
		return r.cols.Superseded()
	}
	return r.text.Superseded()
}

// Ramp bounds the reader's first batch to rows rows, and each next one
// to twice the one before, up to its batch rows, so that a writer waiting
// for the partition's first rows gets them sooner. The rows and their
// order are the same. A Parquet or Arrow partition's batches are its
// decoder's and are left as they are. Call it before the first Next.
func (r *PartitionReader) Ramp(rows int) {
	if r.text != nil {
		r.text.Ramp(rows)
	}
}

// Close releases the reader's file and memory. It is safe to call twice.
// A reader of a range of a Parquet row group's rows, or of an Arrow IPC
// stream's record batches, that read its partition to the end leaves its
// decoder with the File, for the reader of the partition after it, until
// File.Close.
func (r *PartitionReader) Close() error {
	if r.cols != nil {
		r.cols.Close()
		return nil
	}
	return r.text.Close()
}

// Batches returns the batches of good rows of the partitions parts of plan,
// in order, each partition read as Partition reads it, in batches of at
// most batchRows rows. The receiver of each batch owns it and must Release
// it. An error opening, reading or closing a partition (one wrapping
// ErrSourceChanged when its bytes no longer match the plan) is yielded
// once, with a zero Batch, and ends the sequence. A loop that stops early
// closes the partition it was reading, and a loop that ends, however it
// ends, leaves no decoder kept for a partition after parts (see Close).
func (f *File) Batches(plan *Plan, parts []Partition, batchRows int) iter.Seq2[Batch, error] {
	return f.batches(plan, parts, batchRows, false)
}

// batches is Batches; span says each of parts may span several partitions
// of the plan, whose checksums it cannot check (see text.PartitionReader).
func (f *File) batches(plan *Plan, parts []Partition, batchRows int, span bool) iter.Seq2[Batch, error] {
	return func(yield func(Batch, error) bool) {
		defer f.Close()
		for _, p := range parts {
			pr, err := f.Partition(plan, p, batchRows)
			if err != nil {
				yield(Batch{}, err)
				return
			}
			if span && pr.text != nil {
				pr.text.Span = true
			}
			for {
				b, err := pr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					pr.Close()
					yield(Batch{}, err)
					return
				}
				if !yield(b, nil) {
					pr.Close()
					return
				}
			}
			if err := pr.Close(); err != nil {
				yield(Batch{}, err)
				return
			}
		}
	}
}

// RawRows re-reads partition p of plan and returns the rows with the given
// ordinals; an error wrapping ErrSourceChanged says p's bytes no longer
// match the plan.
func (f *File) RawRows(plan *Plan, p Partition, ordinals []int64) (map[int64]RawRow, error) {
	if len(ordinals) == 0 {
		return map[int64]RawRow{}, nil
	}
	want := map[int64]bool{}
	for _, o := range ordinals {
		want[o] = true
	}
	if f.cols != nil {
		return f.cols.RawRows(plan, p, want)
	}
	return f.text.RawRows(plan, p, want)
}
