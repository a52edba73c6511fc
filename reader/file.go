package reader

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/idemport/idemport/idemtype"
)

// Format names a source file format.
type Format string

// The supported formats.
const (
	CSV     Format = "csv"
	TSV     Format = "tsv"
	JSONL   Format = "jsonl"
	Parquet Format = "parquet"
	Arrow   Format = "arrow"  // Arrow IPC file format (Feather version 2)
	Arrows  Format = "arrows" // Arrow IPC stream format
)

// typed reports whether the format carries its own column types.
func (f Format) typed() bool { return f == Parquet || f == Arrow || f == Arrows }

// Compression names a stream compression wrapped around a format.
type Compression string

// The supported compressions.
const (
	None Compression = ""
	Gzip Compression = "gzip"
	Zstd Compression = "zstd"
)

// DefaultMaxRowBytes is the default bound on one row's size in bytes. It is
// what bounds the reader's memory on hostile input.
const DefaultMaxRowBytes = 64 << 20

// Options say how to read a file. The zero value reads by extension with
// default settings.
type Options struct {
	// Format overrides detection by extension.
	Format Format
	// Delimiter separates CSV fields; 0 means ',' for CSV and '\t' for TSV.
	Delimiter byte
	// Quotes turns quote processing on for TSV (always on for CSV).
	Quotes bool
	// Types fixes the type of the named columns instead of inferring it;
	// values that do not parse are bad rows. A Parquet or Arrow column,
	// whose type the file gives, may be fixed to that type, to string (the
	// text of its values) or to json (their JSON); any other type is an
	// error wrapping ErrType.
	Types map[string]Type
	// NotNull names columns that must have a value in every row (natural
	// key columns); a row with a null there is bad.
	NotNull []string
	// Limits are what the target's columns hold, by column name: a value
	// outside its column's Limit is a bad row.
	Limits map[string]Limit
	// JSONB says JSON goes to PostgreSQL's jsonb: a nested JSON value, or
	// a json column's value, that jsonb refuses is a bad row.
	JSONB bool
	// Exact names columns whose inferred type must hold every value
	// exactly in a comparison too: never float64 (a natural key column of
	// 9007199254740992 and 9007199254740993 is decimal, not two equal
	// floats).
	Exact []string
	// Key names the natural key columns, in order. With a key the plan pass
	// finds, for each key that occurs more than once, the rows that lose to
	// another row of the file with that key (Plan.Superseded), and
	// partition readers skip them: the last occurrence wins, or with
	// Version, the occurrence with the newest version (NULL is older than
	// any), the last among equals.
	Key []string
	// Version names the version column, or is empty.
	Version string
	// MaxRowBytes bounds a row's size in text formats; 0 means
	// DefaultMaxRowBytes.
	MaxRowBytes int
	// Allocator allocates the Arrow memory of the batches the reader
	// returns and of the Arrow decoders; nil means memory.DefaultAllocator.
	// (Parquet's page buffers come from memory.DefaultAllocator.)
	Allocator memory.Allocator
}

// Detect returns the format and compression a path's extension implies.
func Detect(path string) (Format, Compression, error) {
	name := strings.ToLower(filepath.Base(path))
	comp := None
	switch {
	case strings.HasSuffix(name, ".gz"):
		comp, name = Gzip, strings.TrimSuffix(name, ".gz")
	case strings.HasSuffix(name, ".zst"):
		comp, name = Zstd, strings.TrimSuffix(name, ".zst")
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
	}
	return "", comp, fmt.Errorf("%w: cannot tell the format of %s from its name; use --format", ErrFormat, filepath.Base(path))
}

// ParseFormat checks a format name given by a user.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case CSV, TSV, JSONL, Parquet, Arrow, Arrows:
		return f, nil
	case "ndjson":
		return JSONL, nil
	case "feather", "ipc":
		return Arrow, nil
	}
	return "", fmt.Errorf("%w: %q (want csv, tsv, jsonl, parquet, arrow or arrows)", ErrFormat, s)
}

// File is a source file opened for reading. Scan must not run concurrently
// with other calls; Partition and Stats may be called concurrently, and each
// Partition reader is independent.
type File struct {
	in     idemtype.Source
	path   string // in.Name(), for messages
	format Format
	comp   Compression
	opts   Options
	header []string // column names, in file order
	data   int64    // offset where data rows start, after the header
	stats  fileStats

	// Parquet and Arrow files: the schema, decided at Open.
	cols   []arrowColumn
	schema Schema
	units  unitFile // nil for text formats
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
		opts.MaxRowBytes = DefaultMaxRowBytes
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
	f := &File{in: src, path: path, format: format, comp: comp, opts: opts}
	switch format {
	case CSV, TSV:
		err = f.readHeader()
	case JSONL:
	case Parquet, Arrow:
		if comp != None {
			return nil, &ParseError{Path: path, Offset: -1, Err: fmt.Errorf("%w: a %s file needs random access and cannot be read through %s; decompress it first",
				ErrFormat, format, comp)}
		}
		if format == Parquet {
			err = f.openParquet()
		} else {
			err = f.openIPCFile()
		}
	case Arrows:
		err = f.openIPCStream()
	default:
		err = fmt.Errorf("%w: %q", ErrFormat, format)
	}
	if err != nil {
		return nil, err
	}
	if format.typed() {
		for _, c := range f.schema {
			f.header = append(f.header, c.Name)
		}
	}
	return f, nil
}

// Format returns the file's format.
func (f *File) Format() Format { return f.format }

// Compression returns the file's compression.
func (f *File) Compression() Compression { return f.comp }

// Path returns the name of the file's source: the path it was opened with.
func (f *File) Path() string { return f.path }

// Source returns the source the file reads.
func (f *File) Source() idemtype.Source { return f.in }

// Header returns the column names of a CSV, TSV, Parquet or Arrow file, or
// nil for JSONL, whose columns are only known after a scan.
func (f *File) Header() []string { return f.header }

func (f *File) quoting() bool { return f.format == CSV || f.opts.Quotes }

// stream is an open decompressed view of the file.
type stream struct {
	io.Reader
	closers []io.Closer
}

func (s *stream) Close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i].Close())
	}
	return errors.Join(errs...)
}

type closerFunc func() error

func (c closerFunc) Close() error { return c() }

// spanSource is a Source that can stream a byte range alone: a remote
// object asked for a partition's bytes then fetches no byte past them.
type spanSource interface {
	OpenRange(ctx context.Context, off, end int64) io.ReadCloser
}

// openSpan is open for the bytes [offset, offset+length) of a partition:
// from a source that can stream a range alone, an uncompressed file's
// stream ends there.
func (f *File) openSpan(ctx context.Context, offset, length int64) (*stream, error) {
	ss, ok := f.in.(spanSource)
	if !ok || f.comp != None || length <= 0 {
		return f.open(ctx, offset)
	}
	raw := ss.OpenRange(ctx, offset, offset+length)
	s, err := f.decompress(raw)
	if err != nil {
		raw.Close()
		return nil, err
	}
	s.closers = append([]io.Closer{raw}, s.closers...)
	return s, nil
}

// open returns the decompressed stream positioned at offset. Uncompressed
// files start there; compressed ones decompress and discard up to offset.
// ctx bounds the source's reads where the source can be cancelled.
func (f *File) open(ctx context.Context, offset int64) (*stream, error) {
	start := offset
	if f.comp != None {
		start = 0
	}
	raw, err := f.in.Open(ctx, start)
	if err != nil {
		return nil, err
	}
	s, err := f.decompress(raw)
	if err != nil {
		raw.Close()
		return nil, err
	}
	s.closers = append([]io.Closer{raw}, s.closers...)
	if offset > 0 && f.comp != None {
		if _, err := io.CopyN(io.Discard, s.Reader, offset); err != nil {
			s.Close()
			if err == io.EOF {
				return nil, &ParseError{Path: f.path, Offset: offset, Err: ErrSourceChanged}
			}
			return nil, err
		}
	}
	return s, nil
}

// decompress returns the decompressed view of raw, counting the bytes read
// from raw into the file's stats.
func (f *File) decompress(raw io.Reader) (*stream, error) {
	s := &stream{}
	counted := countingReader{r: raw, n: &f.stats.bytes}
	switch f.comp {
	case None:
		s.Reader = counted
		return s, nil
	case Gzip:
		zr, err := gzip.NewReader(bufio.NewReaderSize(counted, 1<<20))
		if err != nil {
			s.Close()
			return nil, f.corrupt(err)
		}
		s.closers = append(s.closers, zr)
		s.Reader = zr
	case Zstd:
		zr, err := zstd.NewReader(bufio.NewReaderSize(counted, 1<<20), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<30))
		if err != nil {
			s.Close()
			return nil, f.corrupt(err)
		}
		s.closers = append(s.closers, closerFunc(func() error { zr.Close(); return nil }))
		s.Reader = zr
	}
	s.Reader = &decompressed{r: s.Reader, f: f}
	return s, nil
}

// decompressed turns decompressor failures into ParseErrors naming the file.
type decompressed struct {
	r   io.Reader
	f   *File
	off int64
}

func (d *decompressed) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	d.off += int64(n)
	if err != nil && err != io.EOF {
		return n, &ParseError{Path: d.f.path, Offset: d.off, Err: fmt.Errorf("corrupt %s stream: %w", d.f.comp, err)}
	}
	return n, err
}

func (f *File) corrupt(err error) error {
	return &ParseError{Path: f.path, Offset: 0, Err: fmt.Errorf("corrupt %s stream: %w", f.comp, err)}
}

// readHeader reads the CSV/TSV header row and checks its names.
func (f *File) readHeader() error {
	s, err := f.open(context.Background(), 0)
	if err != nil {
		return err
	}
	defer s.Close()
	sc := newCSVScanner(s, f.opts.Delimiter, f.quoting(), f.opts.MaxRowBytes, 0)
	// A header is short: read it in small pieces, not a whole buffer of
	// the file (a resumed import reads little else).
	sc.buf = sc.buf[:min(len(sc.buf), headerBuffer)]
	if err := sc.skipBOM(); err != nil {
		return f.wrap(err, 0, 0, "")
	}
	cells, prob, err := sc.next()
	if err == io.EOF {
		return &ParseError{Path: f.path, Offset: 0, Err: ErrEmpty}
	}
	if err != nil {
		return f.wrap(err, 0, 0, "")
	}
	if prob != nil {
		return &ParseError{Path: f.path, Offset: 0, Err: fmt.Errorf("%w: %s", ErrHeader, prob.msg)}
	}
	seen := map[string]int{}
	for i, c := range cells {
		name := strings.TrimSpace(string(c.b))
		if name == "" {
			return &ParseError{Path: f.path, Offset: 0, Err: fmt.Errorf("%w: column %d has an empty name", ErrHeader, i+1)}
		}
		if code, msg := checkText(c.b); code != "" {
			return &ParseError{Path: f.path, Offset: 0, Err: fmt.Errorf("%w: column %d: %s", ErrHeader, i+1, msg)}
		}
		if bytes.ContainsAny(c.b, "\r\n") {
			// Most likely lines that end in CR alone (old Mac files), which
			// make the whole file one header row; a quoted name spanning
			// lines is no usable column name either.
			return &ParseError{Path: f.path, Offset: 0, Err: fmt.Errorf("%w: column %d's name holds a line break (lines ending in CR alone are not supported: convert them to LF or CRLF)", ErrHeader, i+1)}
		}
		if j, dup := seen[name]; dup {
			return &ParseError{Path: f.path, Offset: 0, Err: fmt.Errorf("%w: columns %d and %d are both named %q", ErrHeader, j+1, i+1, name)}
		}
		seen[name] = i
		f.header = append(f.header, name)
	}
	f.data = sc.offset()
	return nil
}

// wrap gives an error from a scan its location, unless it already has one.
func (f *File) wrap(err error, row, offset int64, column string) error {
	var pe *ParseError
	if errors.As(err, &pe) {
		if pe.Row == 0 && row > 0 {
			pe.Row = row
		}
		return pe
	}
	if errors.Is(err, errRowTooLarge) {
		err = fmt.Errorf("%w of %d bytes", ErrTooLarge, f.opts.MaxRowBytes)
	}
	return &ParseError{Path: f.path, Row: row, Offset: offset, Column: column, Err: err}
}

// scanner returns a row scanner over s, which starts at offset.
func (f *File) scanner(s io.Reader, offset int64, columns []string, grow bool) rowScanner {
	if f.format == JSONL {
		return newJSONLScanner(s, f.opts.MaxRowBytes, offset, columns, grow)
	}
	return newCSVScanner(s, f.opts.Delimiter, f.quoting(), f.opts.MaxRowBytes, offset)
}
