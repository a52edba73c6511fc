package partition

import (
	"fmt"
	"hash/crc32"
	"io"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/value"
)

// DefaultRows is the default number of rows per partition.
const DefaultRows = 100_000

// DefaultBytes is the default bound on a partition's bytes (see
// the facade's ScanOptions.PartitionBytes).
const DefaultBytes = 64 << 20

// BatchBytes bounds the data of a Batch a partition reader returns: a text
// file's batch ends with the row that brings the bytes of its rows to
// BatchBytes (or goes on to the partition's end when the rows left are
// at most a sixteenth of the batch's and the batch stays under a
// sixteenth more than BatchBytes), and a Parquet file is decoded in batches of as many rows as
// its row group's uncompressed bytes per row let fit in BatchBytes. An
// Arrow record batch is decoded whole, as the file holds it.
const BatchBytes = 4 << 20

// Plan is what the plan pass learns about a file: its schema, its row count,
// its bad rows and where each partition starts. For a given file, options and
// partition size it is always the same.
type Plan struct {
	Schema   value.Schema `json:"schema"`
	Rows     int64        `json:"rows"`     // data rows, bad ones included
	Rejected int64        `json:"rejected"` // bad rows
	// Superseded counts the good rows whose key a later good row of the
	// file repeats (Options.Key): only the last occurrence of a key is
	// applied. Each partition lists its own.
	Superseded int64 `json:"superseded,omitempty"`
	// Loose says the file holds keys that differ, and so are not
	// superseded, only as a table's collation may not tell them apart
	// (case, trailing spaces, accents: 'a' and 'A'; keys.Loosen): to such a
	// table they are one key, of which the later row must win.
	Loose      bool                 `json:"loose,omitempty"`
	Partitions []idemtype.Partition `json:"partitions"`
	// Rejects lists the first bad rows, up to ScanOptions.KeepRejects.
	Rejects []idemtype.Reject `json:"-"`
	// As, when not nil, gives for each column of Schema the type a text
	// file's partition readers hand its values as (nil: Schema's own). A
	// value is checked as Schema says, so that every reader decides the
	// same rows are bad, and then taken from its text as As says: an
	// int64, float64 or decimal column as string keeps the file's text, a
	// float64 as decimal the canonical text of the number the file wrote
	// (value.FromText). Parquet and Arrow files ignore it.
	As []value.Type `json:"-"`
}

// Batch is a run of rows as an Arrow record batch, with the ordinal of each
// row. The receiver of a Batch owns it and must call Release.
type Batch struct {
	Record   arrow.RecordBatch
	Ordinals []int64
}

// Release frees the batch's Arrow memory.
func (b Batch) Release() {
	if b.Record != nil {
		b.Record.Release()
	}
}

// Closed reports whether ch is nil or closed.
func Closed(ch <-chan struct{}) bool {
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

// ScanOptions are what a wing's plan pass takes: the facade's ScanOptions,
// with the bytes of a hash under way already opened for it.
type ScanOptions struct {
	// PartitionRows, PartitionBytes, KeepRejects, Spill, Progress and
	// ContentDigest are as in the facade's ScanOptions.
	PartitionRows  int64
	PartitionBytes int64
	KeepRejects    int
	Spill          func(idemtype.Reject) error
	Progress       func(bytes, rows int64)
	ContentDigest  func(string)
	// Raw, if set, is the file's bytes from its first, as a hash under way
	// reads them: a text pass reads them instead of opening the source, and
	// closes Raw.
	Raw io.ReadCloser
	// SecondCore, if set, keeps the pass on one goroutine until it is
	// closed. Nil lets the pass use a second goroutine from the start: text
	// formats validate rows on it, Parquet files decode half the columns on
	// it.
	SecondCore <-chan struct{}
	// TempDir and KeysHeld are as in the facade's ScanOptions.
	TempDir  string
	KeysHeld int
	// Partitioned is as in the facade's ScanOptions.
	Partitioned func(Cut)
	// GrowTo is as in the facade's ScanOptions.
	GrowTo int64
}

// RowBound returns the rows at most of the partition that begins after
// before rows (ScanOptions.GrowTo): PartitionRows, or, when GrowTo is
// larger, as many rows as the partitions before it hold, up to GrowTo.
func (o ScanOptions) RowBound(before int64) int64 {
	if o.GrowTo <= o.PartitionRows {
		return o.PartitionRows
	}
	return min(o.GrowTo, max(o.PartitionRows, before))
}

// Cut is a partition the plan pass has finished before its end (see the
// facade's ScanOptions.Partitioned): its span as the plan will have it,
// with its bad rows (Rejected) but not its superseded ones, which only the
// end of the pass tells, and the file's columns as the rows up to its end
// make them. Bytes is about how much of the file's data it holds: a text
// file's bytes (its Length), a Parquet row group's uncompressed size.
type Cut struct {
	Partition idemtype.Partition
	Schema    value.Schema
	Bytes     int64
}

// Castagnoli is the CRC-32 table of the partition checksums (Partition.CRC)
// both wings compute.
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// SupersededError reports a partition whose superseded rows are not what
// the plan says: the file changed.
func SupersededError(path string, p idemtype.Partition, got int64) error {
	return &input.ParseError{Path: path, Row: p.First, Offset: p.Offset,
		Err: fmt.Errorf("%w: partition %d has %d superseded rows, the plan says %d", input.ErrSourceChanged, p.Index, got, len(p.Superseded))}
}
