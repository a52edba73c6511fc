package input

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
)

// RaiseOwnPanics is set only by tests (the reader's fuzz targets): a
// panic in a decoder of idemport's own that a reader would recover as
// corrupt data (a *ParseError, as it recovers a third-party decoder's) is
// raised again instead, so that the fuzzer sees it as the bug it is.
var RaiseOwnPanics atomic.Bool

// ParseError reports a defect in a source file at a location. Row is the
// 1-based data row ordinal (0 when the defect is not inside a row, such as a
// bad header or a corrupt footer); Offset is the byte offset in the
// decompressed stream where the row or defect starts (-1 when unknown).
type ParseError struct {
	Path   string
	Row    int64
	Offset int64
	Column string
	Err    error
}

func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Row > 0 {
		fmt.Fprintf(&b, ": row %d", e.Row)
	}
	if e.Offset >= 0 {
		fmt.Fprintf(&b, " (byte %d)", e.Offset)
	}
	if e.Column != "" {
		fmt.Fprintf(&b, ", column %q", e.Column)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *ParseError) Unwrap() error { return e.Err }

// Errors a caller may branch on with errors.Is.
var (
	// ErrSourceChanged means the file's bytes differ from the stored plan:
	// it was appended to, truncated or rewritten since it was planned.
	ErrSourceChanged = errors.New("source changed since it was planned")
	// ErrEmpty means the file has no header (CSV/TSV) or no bytes at all.
	ErrEmpty = errors.New("file is empty")
	// ErrHeader means the header is unusable: an empty or duplicate name.
	ErrHeader = errors.New("bad header")
	// ErrFormat means the format is unknown or the bytes are not that format.
	ErrFormat = errors.New("unsupported or unrecognised format")
	// ErrTooLarge means a row is larger than the configured limit.
	ErrTooLarge = errors.New("row exceeds the size limit")
	// ErrType means a column of a Parquet or Arrow file has a type the
	// reader cannot map, or Options.Types asks for a conversion it does not
	// make.
	ErrType = errors.New("unsupported column type")
)

// errRowTooLarge is what a text scanner returns for a row longer than its
// bound; File.Wrap turns it into ErrTooLarge with the bound.
var ErrRowTooLarge = errors.New("row too large")
