package reader

import (
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/internal/charset"
	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/partition"
	"github.com/idemport/idemport/reader/internal/reject"
	"github.com/idemport/idemport/reader/internal/value"
)

// What the two wings share lives in internal packages (see the package
// doc); these are the public names of what callers use of it, and of the
// types the facade's own declarations hold. A column's type is an
// idemtype.Type, named by idemtype (idemtype.Int64 …).

// Format names a source file format.
type Format = input.Format

// The supported formats.
const (
	CSV     = input.CSV
	TSV     = input.TSV
	JSONL   = input.JSONL
	Parquet = input.Parquet
	Arrow   = input.Arrow  // Arrow IPC file format (Feather version 2)
	Arrows  = input.Arrows // Arrow IPC stream format
	XLSX    = input.XLSX   // an Excel workbook: one sheet of it
)

// Compression names a stream compression wrapped around a format: None,
// "gzip" or "zstd".
type Compression = input.Compression

// None is no compression.
const None = input.None

// DefaultPartitionRows is the default number of rows per partition.
const DefaultPartitionRows = partition.DefaultRows

// DefaultPartitionBytes is the default bound on a partition's bytes (see
// ScanOptions.PartitionBytes).
const DefaultPartitionBytes = partition.DefaultBytes

// Options say how to read a file. The zero value reads by extension with
// default settings.
type Options = input.Options

// Limit is what a target column can hold beyond its type (see Options.Limits).
type Limit = value.Limit

// Schema is the ordered list of a file's columns: each a name and an
// idemtype.Type.
type Schema = value.Schema

// Plan is what the plan pass learns about a file: its schema, its row count,
// its bad rows and where each partition starts.
type Plan = partition.Plan

// Cut is a partition the plan pass finished before its end, with the
// columns the rows so far infer (ScanOptions.Partitioned).
type Cut = partition.Cut

// Partition is a contiguous run of rows of a plan (see idemtype.Partition).
type Partition = idemtype.Partition

// Reject is one bad row found by the plan pass (see idemtype.Reject).
type Reject = idemtype.Reject

// Batch is a run of rows as an Arrow record batch, with the ordinal of each
// row. The receiver of a Batch owns it and must call Release.
type Batch = partition.Batch

// RawRow is a row as the file holds it, for a reject found after the plan
// pass (a row the database refused).
type RawRow = reject.RawRow

// Field is one field of a quarantined row as text, or null.
type Field = reject.Field

// ParseError reports a defect in a source file at a location: Path, Row,
// Offset, Column and the error, which wraps ErrSourceChanged, ErrOption
// or another condition of the file (an empty file, a bad header, an
// unknown format, a row over Options.MaxRowBytes, a column type the
// reader cannot map).
type ParseError = input.ParseError

// Errors a caller may branch on with errors.Is.
var (
	// ErrSourceChanged means the file's bytes differ from the stored plan:
	// it was appended to, truncated or rewritten since it was planned.
	ErrSourceChanged = input.ErrSourceChanged
	// ErrOption means a reading option does not fit the file (--select or
	// --rename names a column it does not have, --columns gives another
	// number of names than it has columns): the command is wrong.
	ErrOption = input.ErrOption
)

// Reason codes of bad rows, in Reject.Code. They are stable: rejects
// store them.
const (
	CodeFieldCount = value.CodeFieldCount // the row has more or fewer fields than the header
	CodeUTF8       = value.CodeUTF8       // text is not valid UTF-8
	CodeJSON       = value.CodeJSON       // a JSONL line is not a JSON object, or a json column's value not a JSON document
	CodeInexact    = value.CodeInexact    // the column's type would store another value than the file's (02134 in an int64 column)
)

// RejectFields decodes the fields a reject kept (Reject.Fields) of a file
// of format f, read with schema: one Field per column, holding the text a
// reader of that format would read the value from again (for JSON
// columns, the JSON document the import stores), and the fields the row
// had beyond the schema's columns.
func RejectFields(fields string, f Format, schema Schema) (cols, extra []Field, err error) {
	return reject.DecodeFields(fields, f, schema)
}

// EncodingName returns the canonical name, in the WHATWG Encoding
// Standard, of the encoding a user names by any of its labels (latin1 is
// windows-1252), for Options.Encoding; an unknown name is an error.
func EncodingName(label string) (string, error) { return charset.EncodingName(label) }

// CheckJSON returns a reason code and message when b is not a JSON
// document a json column can hold, or empty strings when it is.
func CheckJSON(b []byte) (string, string) { return value.CheckJSON(b) }
