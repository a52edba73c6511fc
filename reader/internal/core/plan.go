package core

import (
	"hash/crc32"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
)

// DefaultPartitionRows is the default number of rows per partition.
const DefaultPartitionRows = 100_000

// DefaultPartitionBytes is the default bound on a partition's bytes (see
// the facade's ScanOptions.PartitionBytes).
const DefaultPartitionBytes = 64 << 20

// BatchBytes bounds the data of a Batch a partition reader returns: a text
// file's batch ends with the row that brings the bytes of its rows to
// BatchBytes, and a Parquet file is decoded in batches of as many rows as
// its row group's uncompressed bytes per row let fit in BatchBytes. An
// Arrow record batch is decoded whole, as the file holds it.
const BatchBytes = 4 << 20

// MaxRejectValue bounds the raw value kept with a reject, and MaxRejectRow
// the raw row: longer rows are not kept (the reject keeps its identity).
const (
	MaxRejectValue = 1024
	MaxRejectRow   = 64 << 10
)

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

// SchemaText lists columns as name:type for messages.
func SchemaText(s Schema) string {
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

// ScanOptions are what a wing's plan pass takes: the facade's ScanOptions,
// with the bytes of a hash under way already opened for it.
type ScanOptions struct {
	// PartitionRows, PartitionBytes, KeepRejects, Spill, Progress and
	// ContentDigest are as in the facade's ScanOptions.
	PartitionRows  int64
	PartitionBytes int64
	KeepRejects    int
	Spill          func(Reject) error
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
}

// Castagnoli is the CRC-32 table of the partition checksums (Partition.CRC)
// both wings compute.
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)
