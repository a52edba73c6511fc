package reader

import (
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/internal/charset"
	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/partition"
	"github.com/idemport/idemport/reader/internal/reject"
	"github.com/idemport/idemport/reader/internal/value"
)

// The types, limits and codes the two wings share live in one internal
// package; these are their public names.

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

// Compression names a stream compression wrapped around a format.
type Compression = input.Compression

// The supported compressions.
const (
	None = input.None
	Gzip = input.Gzip
	Zstd = input.Zstd
)

// DefaultMaxRowBytes is the default bound on one row's size in bytes. It is
// what bounds the reader's memory on hostile input.
const DefaultMaxRowBytes = input.DefaultMaxRowBytes

// DefaultPartitionRows is the default number of rows per partition.
const DefaultPartitionRows = partition.DefaultRows

// DefaultPartitionBytes is the default bound on a partition's bytes (see
// ScanOptions.PartitionBytes).
const DefaultPartitionBytes = partition.DefaultBytes

// BatchBytes bounds the data of a Batch a PartitionReader returns: a text
// file's batch ends with the row that brings the bytes of its rows to
// BatchBytes, and a Parquet file is decoded in batches of as many rows as
// its row group's uncompressed bytes per row let fit in BatchBytes. An
// Arrow record batch is decoded whole, as the file holds it.
const BatchBytes = partition.BatchBytes

// Options say how to read a file. The zero value reads by extension with
// default settings.
type Options = input.Options

// Limit is what a target column can hold beyond its type (see Options.Limits).
type Limit = value.Limit

// Type is the logical type of a column (see idemtype.Type).
type Type = idemtype.Type

// The column types, as idemtype names them.
const (
	Unknown   = idemtype.Unknown
	Bool      = idemtype.Bool
	Int64     = idemtype.Int64
	Float64   = idemtype.Float64
	Timestamp = idemtype.Timestamp
	String    = idemtype.String
	JSON      = idemtype.JSON
	Decimal   = idemtype.Decimal
	Date      = idemtype.Date
	// LocalTimestamp is a date and time without a zone (timestamp).
	LocalTimestamp = idemtype.LocalTimestamp
)

// A decimal holds at most MaxDecimalDigits digits before the point and
// MaxDecimalScale after it, as numeric does; a number beyond that is text.
const (
	MaxDecimalDigits = value.MaxDecimalDigits
	MaxDecimalScale  = value.MaxDecimalScale
)

// Column is one column of a file's schema.
type Column = value.Column

// Schema is the ordered list of a file's columns.
type Schema = value.Schema

// Plan is what the plan pass learns about a file: its schema, its row count,
// its bad rows and where each partition starts.
type Plan = partition.Plan

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

// ParseError reports a defect in a source file at a location (see
// core.ParseError): Path, Row, Offset, Column and the error.
type ParseError = input.ParseError

// Errors a caller may branch on with errors.Is.
var (
	// ErrSourceChanged means the file's bytes differ from the stored plan:
	// it was appended to, truncated or rewritten since it was planned.
	ErrSourceChanged = input.ErrSourceChanged
	// ErrEmpty means the file has no header (CSV/TSV) or no bytes at all.
	ErrEmpty = input.ErrEmpty
	// ErrHeader means the header is unusable: an empty or duplicate name.
	ErrHeader = input.ErrHeader
	// ErrFormat means the format is unknown or the bytes are not that format.
	ErrFormat = input.ErrFormat
	// ErrOption means a reading option does not fit the file (--select or
	// --rename names a column it does not have, --columns gives another
	// number of names than it has columns): the command is wrong.
	ErrOption = input.ErrOption
	// ErrTooLarge means a row is larger than the configured limit.
	ErrTooLarge = input.ErrTooLarge
	// ErrType means a column of a Parquet or Arrow file has a type the
	// reader cannot map, or Options.Types asks for a conversion it does not
	// make.
	ErrType = input.ErrType
)

// The reason codes of bad rows, in Reject.Code (see core for what each
// means). They are stable: rejects store them.
const (
	CodeType       = value.CodeType
	CodeFieldCount = value.CodeFieldCount
	CodeQuote      = value.CodeQuote
	CodeUTF8       = value.CodeUTF8
	CodeNUL        = value.CodeNUL
	CodeJSON       = value.CodeJSON
	CodeNull       = value.CodeNull
	CodeInexact    = value.CodeInexact
	CodeLength     = value.CodeLength
	CodeNumeric    = value.CodeNumeric
	CodeJSONB      = value.CodeJSONB
	CodeRange      = value.CodeRange
	CodePrecision  = value.CodePrecision
)

// InexactHint is the advice that goes with a CodeInexact reason for a value
// of column name, whose type is t: the type that would keep the value (for
// an existing table, its column must be of that type too).
func InexactHint(name string, t Type) string { return value.InexactHint(name, t) }

// RejectFields decodes the fields a reject kept (Reject.Fields) of a file
// of format f, read with schema (see core.RejectFields): one Field per
// column, and the fields the row had beyond the schema's columns.
func RejectFields(fields string, f Format, schema Schema) (cols, extra []Field, err error) {
	return reject.DecodeFields(fields, f, schema)
}

// EncodingName returns the canonical name, in the WHATWG Encoding
// Standard, of the encoding a user names by any of its labels (latin1 is
// windows-1252), for Options.Encoding; an unknown name is an error.
func EncodingName(label string) (string, error) { return charset.EncodingName(label) }

// CheckJSON returns a reason code and message when b is not a JSON
// document a json column can hold, or empty strings when it is.
func CheckJSON(b []byte) (string, string) { return reject.CheckJSON(b) }
