package input

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/internal/charset"
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
	XLSX    Format = "xlsx"   // an Excel workbook: one sheet of it
)

// Typed reports whether the format carries its own column types.
func (f Format) Typed() bool { return f == Parquet || f == Arrow || f == Arrows }

// Compression names a stream compression wrapped around a format.
type Compression string

// The supported compressions.
const (
	None Compression = ""
	Gzip Compression = "gzip"
	Zstd Compression = "zstd"
)

// File is what both wings know of an opened file: its source, format,
// options and, for CSV and TSV, its header. The facade's File holds one and
// hands it to the wing that reads the format; its counters are updated by
// concurrent partition readers.
type File struct {
	In     idemtype.Source
	Path   string // In.Name(), for messages
	Format Format
	Comp   Compression
	Opts   Options
	Header []string // column names, in order, as read (after Options.Select and Rename)
	Data   int64    // offset where data rows start, after the header
	// DataLine is how many line ends come before Data: the first data
	// row of a CSV or TSV file is on line DataLine+1.
	DataLine int64
	// Fields is how many fields a row of a CSV or TSV file has, and Proj,
	// when not nil, the positions among them of the columns read
	// (Options.Select), in Header's order.
	Fields int
	Proj   []int
	// cs is how a text file's bytes become UTF-8 (SniffCharset), or nil
	// when they are read as they are.
	cs    *charset.Charset
	Stats Counters
}

// Counters count the bytes a File has read from its source and the Parquet
// row groups and Arrow record batches it has decoded; they are updated by
// concurrent partition readers.
type Counters struct {
	Bytes  atomic.Int64
	Groups atomic.Int64
}

// countingReader counts the bytes read through it into a File's stats.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// Stream is an open decompressed view of the file.
type Stream struct {
	io.Reader
	Closers []io.Closer
}

// Close closes the stream and what it reads from.
func (s *Stream) Close() error {
	var errs []error
	for i := len(s.Closers) - 1; i >= 0; i-- {
		errs = append(errs, s.Closers[i].Close())
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

// OpenSpan is Open for the bytes [offset, offset+length) of a partition:
// from a source that can stream a range alone, an uncompressed file's
// stream ends there.
func (f *File) OpenSpan(ctx context.Context, offset, length int64) (*Stream, error) {
	ss, ok := f.In.(spanSource)
	if !ok || f.Comp != None || length <= 0 {
		return f.Open(ctx, offset)
	}
	raw := ss.OpenRange(ctx, offset, offset+length)
	s, err := f.Decompress(raw)
	if err != nil {
		raw.Close()
		return nil, err
	}
	s.Closers = append([]io.Closer{raw}, s.Closers...)
	return s, nil
}

// Open returns the decompressed stream positioned at offset. Uncompressed
// files start there; compressed ones decompress and discard up to offset.
// ctx bounds the source's reads where the source can be cancelled.
func (f *File) Open(ctx context.Context, offset int64) (*Stream, error) {
	start := offset
	if f.Comp != None {
		start = 0
	}
	raw, err := f.In.Open(ctx, start)
	if err != nil {
		return nil, err
	}
	s, err := f.Decompress(raw)
	if err != nil {
		raw.Close()
		return nil, err
	}
	s.Closers = append([]io.Closer{raw}, s.Closers...)
	if offset > 0 && f.Comp != None {
		if _, err := io.CopyN(io.Discard, s.Reader, offset); err != nil {
			s.Close()
			if err == io.EOF {
				return nil, &ParseError{Path: f.Path, Offset: offset, Err: ErrSourceChanged}
			}
			return nil, err
		}
	}
	return s, nil
}

// SniffCharset decides how the text file's bytes become UTF-8 from its
// first bytes and Options.Encoding (see charset.Sniff).
func (f *File) SniffCharset(ctx context.Context) error {
	// Three bytes the header's read reads again: not counted in f.Stats.
	g := &File{In: f.In, Path: f.Path, Comp: f.Comp}
	s, err := g.Open(ctx, 0)
	if err != nil {
		return err
	}
	defer s.Close()
	head := make([]byte, 3)
	n, err := io.ReadFull(s, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return f.Wrap(err, 0, 0, "")
	}
	f.cs, err = charset.Sniff(head[:n], f.Opts.Encoding)
	return err
}

// OpenHeader is OpenText for the first bytes of a text file, with which
// it decides how the file's bytes become UTF-8, as SniffCharset does,
// from the same read: no request more for a remote file.
func (f *File) OpenHeader(ctx context.Context) (*Stream, error) {
	s, err := f.Open(ctx, 0)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(s.Reader, 4096)
	head, err := br.Peek(3)
	if err != nil && err != io.EOF {
		s.Close()
		return nil, f.Wrap(err, 0, 0, "")
	}
	if f.cs, err = charset.Sniff(head, f.Opts.Encoding); err != nil {
		s.Close()
		return nil, err
	}
	s.Reader = br
	if f.cs != nil {
		if s.Reader, err = f.cs.Reader(br); err != nil {
			s.Close()
			return nil, f.Wrap(err, 0, 0, "")
		}
	}
	return s, nil
}

// Charset names the encoding the text file is read in: "utf-8", or the
// one its byte order mark or Options.Encoding says.
func (f *File) Charset() string {
	if f.cs == nil {
		return charset.UTF8
	}
	return f.cs.Name
}

// Decode returns the UTF-8 text of r, the file's decompressed stream from
// its first byte.
func (f *File) Decode(r io.Reader) (io.Reader, error) {
	if f.cs == nil {
		return r, nil
	}
	return f.cs.Reader(r)
}

// OpenText is OpenSpan for the UTF-8 text of a text file: the text from
// offset, of which the caller reads length bytes. A file in another
// encoding is decoded from its first byte up to offset.
func (f *File) OpenText(ctx context.Context, offset, length int64) (*Stream, error) {
	if f.Format == XLSX {
		return &Stream{Reader: eofReader{}}, nil // its rows are read from the workbook, not a stream
	}
	if f.cs == nil {
		return f.OpenSpan(ctx, offset, length)
	}
	s, err := f.Open(ctx, 0)
	if err != nil {
		return nil, err
	}
	r, err := f.cs.Reader(s.Reader)
	if err == nil && offset > 0 {
		_, err = io.CopyN(io.Discard, r, offset)
	}
	if err != nil {
		s.Close()
		if err == io.EOF {
			return nil, &ParseError{Path: f.Path, Offset: offset, Err: ErrSourceChanged}
		}
		return nil, err
	}
	s.Reader = r
	return s, nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// Decompress returns the decompressed view of raw, counting the bytes read
// from raw into the file's stats.
func (f *File) Decompress(raw io.Reader) (*Stream, error) {
	s := &Stream{}
	counted := countingReader{r: raw, n: &f.Stats.Bytes}
	switch f.Comp {
	case None:
		s.Reader = counted
		return s, nil
	case Gzip:
		zr, err := gzip.NewReader(bufio.NewReaderSize(counted, 1<<20))
		if err != nil {
			s.Close()
			return nil, f.corrupt(err)
		}
		s.Closers = append(s.Closers, zr)
		s.Reader = zr
	case Zstd:
		zr, err := zstd.NewReader(bufio.NewReaderSize(counted, 1<<20), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<30))
		if err != nil {
			s.Close()
			return nil, f.corrupt(err)
		}
		s.Closers = append(s.Closers, closerFunc(func() error { zr.Close(); return nil }))
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
		return n, &ParseError{Path: d.f.Path, Offset: d.off, Err: fmt.Errorf("corrupt %s stream: %w", d.f.Comp, err)}
	}
	return n, err
}

func (f *File) corrupt(err error) error {
	return &ParseError{Path: f.Path, Offset: 0, Err: fmt.Errorf("corrupt %s stream: %w", f.Comp, err)}
}

// Wrap gives an error from a scan its location, unless it already has one.
func (f *File) Wrap(err error, row, offset int64, column string) error {
	var pe *ParseError
	if errors.As(err, &pe) {
		if pe.Row == 0 && row > 0 {
			pe.Row = row
		}
		return pe
	}
	if errors.Is(err, ErrRowTooLarge) {
		err = fmt.Errorf("%w of %d bytes", ErrTooLarge, f.Opts.MaxRowBytes)
	}
	return &ParseError{Path: f.Path, Row: row, Offset: offset, Column: column, Err: err}
}
