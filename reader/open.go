package reader

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/columnar"
	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/text"
)

// Detect returns the format and compression a path's extension implies.
func Detect(path string) (Format, Compression, error) {
	name := strings.ToLower(filepath.Base(path))
	comp := None
	switch {
	case strings.HasSuffix(name, ".gz"):
		comp, name = input.Gzip, strings.TrimSuffix(name, ".gz")
	case strings.HasSuffix(name, ".zst"):
		comp, name = input.Zstd, strings.TrimSuffix(name, ".zst")
	}
	switch filepath.Ext(name) {
	case ".csv":
		return CSV, comp, nil
	case ".tsv", ".tab":
		return TSV, comp, nil
	case ".jsonl", ".ndjson":
		return JSONL, comp, nil
	case ".parquet":
		return Parquet, comp, nil
	case ".arrow", ".feather", ".ipc":
		return Arrow, comp, nil
	case ".arrows":
		return Arrows, comp, nil
	case ".xlsx":
		return XLSX, comp, nil
	}
	return "", comp, fmt.Errorf("%w: cannot tell the format of %s from its name; use --format", input.ErrFormat, filepath.Base(path))
}

// ParseFormat checks a format name given by a user.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case CSV, TSV, JSONL, Parquet, Arrow, Arrows, XLSX:
		return f, nil
	case "ndjson":
		return JSONL, nil
	case "feather", "ipc":
		return Arrow, nil
	}
	return "", fmt.Errorf("%w: %q (want csv, tsv, jsonl, parquet, arrow, arrows or xlsx)", input.ErrFormat, s)
}

// File is a source file opened for reading. Scan must not run concurrently
// with other calls; Partition and Stats may be called concurrently, and each
// Partition reader is independent.
type File struct {
	f    *input.File
	text *text.File     // CSV, TSV and JSONL files
	cols *columnar.File // Parquet and Arrow files
}

// OpenPath opens the local file at path, as Open does (the format and
// compression its name implies are checked before the file is opened).
func OpenPath(path string, opts Options) (*File, error) {
	if opts.Format == "" {
		if _, _, err := Detect(path); err != nil {
			return nil, err
		}
	}
	src, err := OpenFileSource(path)
	if err != nil {
		return nil, err
	}
	return Open(src, opts)
}

// Open reads what it needs to know of src before a plan: its format and,
// for CSV and TSV, its header; for Parquet and Arrow files, their footer
// or schema, from which the columns and their types follow. The format
// and compression are those src's name implies, unless opts.Format says.
// A file whose header or schema cannot be read, or whose column types
// cannot be mapped, returns a *ParseError.
//
// Every byte of the file is read through src, which the caller keeps open
// as long as it uses the File and closes afterwards.
//
// Parquet and Arrow IPC files need random access: wrapped in gzip or zstd
// they are refused, with a *ParseError saying to decompress them first. An
// Arrow IPC stream (.arrows) may be compressed.
func Open(src idemtype.Source, opts Options) (*File, error) {
	path := src.Name()
	format, comp, err := Detect(path)
	if opts.Format != "" {
		format, err = opts.Format, nil
	}
	if err != nil {
		return nil, err
	}
	if opts.MaxRowBytes <= 0 {
		opts.MaxRowBytes = input.DefaultMaxRowBytes
	}
	if opts.Allocator == nil {
		opts.Allocator = memory.DefaultAllocator
	}
	if opts.Delimiter == 0 {
		opts.Delimiter = ','
		if format == TSV {
			opts.Delimiter = '\t'
		}
	}
	f := &File{f: &input.File{In: src, Path: path, Format: format, Comp: comp, Opts: opts}}
	switch format {
	case CSV, TSV, JSONL, XLSX:
		f.text, err = text.Open(f.f)
	case Parquet, Arrow, Arrows:
		f.cols, err = columnar.Open(f.f)
	default:
		err = fmt.Errorf("%w: %q", input.ErrFormat, format)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Close releases what the File keeps between partition readers: the
// decoders that readers of ranges of a Parquet row group's rows, or of an
// Arrow IPC stream's record batches, left for the partition after theirs,
// so that partitions read in order decode the group, or read the stream,
// once; and the bytes a Parquet or Arrow IPC file's plan pass loaded for
// its last partition, left for that partition's reader. A caller that
// reads partitions with Partition calls it when it has read the last it
// will read. It does not close the source (see Open). It is safe to call
// twice, and concurrently with partition readers; the File stays usable, a
// partition read afterwards decoding its unit from its start, from the
// file's bytes.
func (f *File) Close() {
	if f.cols != nil {
		f.cols.Close()
	}
}

// Format returns the file's format.
func (f *File) Format() Format { return f.f.Format }

// Compression returns the file's compression.
func (f *File) Compression() Compression { return f.f.Comp }

// Path returns the name of the file's source: the path it was opened with.
func (f *File) Path() string { return f.f.Path }

// Source returns the source the file reads.
func (f *File) Source() idemtype.Source { return f.f.In }

// HeaderLooksLikeData reports whether every name of a CSV or TSV file's
// header is a number or a date, as no header's names are: most likely the
// file has no header and its first line is data (see Options.NoHeader).
func (f *File) HeaderLooksLikeData() bool { return f.text != nil && f.text.HeaderLooksLikeData() }

// Header returns the column names of a CSV, TSV, Parquet or Arrow file, or
// nil for JSONL, whose columns are only known after a scan.
func (f *File) Header() []string { return f.f.Header }

// Schema returns the columns of a Parquet or Arrow file with the types it
// is read with: the file's own, or those Options.Types fixed. It returns
// nil for CSV, TSV and JSONL, whose types only a scan decides.
func (f *File) Schema() Schema {
	if f.cols == nil {
		return nil
	}
	return f.cols.Schema()
}
