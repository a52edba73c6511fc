package text

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/idemport/idemport/reader/internal/charset"
	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/value"
)

// File is a CSV, TSV or JSONL file: the shared file and the text wing's
// methods on it.
type File struct {
	*input.File
	// dataLike says the header's names all look like values (numbers or
	// dates): the file may have no header.
	dataLike bool
	sh       sheetOnce // an Excel workbook's sheet, decoded
}

// Open returns the text wing's view of f, reading the header of a CSV or
// TSV file and checking its names. A header that cannot be read returns a
// *input.ParseError; options that do not fit it (Options.Select, Rename,
// Names) an error wrapping input.ErrOption.
func Open(f *input.File) (*File, error) {
	t := &File{File: f}
	if f.Format == input.XLSX {
		if f.Opts.Encoding != "" && f.Opts.Encoding != charset.UTF8 {
			return nil, fmt.Errorf("%w: --encoding is for CSV, TSV and JSONL files: a workbook says its own", input.ErrOption)
		}
		s, err := t.sheet()
		if err != nil {
			return nil, err
		}
		sc := newSheetScanner(s, 0, 0)
		sc.skipLines(f.Opts.SkipLines)
		if err := t.readHeader(sc); err != nil {
			return nil, err
		}
		return t, nil
	}
	if f.Format == input.JSONL {
		// A JSONL file is not read at Open: its encoding is sniffed only
		// when one is given (a UTF-16 one's byte order mark decides its
		// byte order), so that a resumed remote file costs no request.
		if f.Opts.Encoding != "" && f.Opts.Encoding != charset.UTF8 {
			if err := f.SniffCharset(context.Background()); err != nil {
				return nil, err
			}
		}
		if f.Opts.NoHeader || len(f.Opts.Names) > 0 {
			return nil, fmt.Errorf("%w: --no-header and --columns are for CSV and TSV files: a JSONL file names its columns in every line (rename them with --rename)", input.ErrOption)
		}
		if len(f.Opts.Null) > 0 {
			return nil, fmt.Errorf("%w: --null is for CSV and TSV files: JSON says null itself", input.ErrOption)
		}
		return t, nil
	}
	if err := t.readCSVHeader(); err != nil {
		return nil, err
	}
	return t, nil
}

// HeaderLooksLikeData reports whether every name of the header of a CSV
// or TSV file read with one is a number or a date: most likely the file
// has no header, and its first row is data.
func (f *File) HeaderLooksLikeData() bool { return f.dataLike }

func (f *File) quoting() bool { return f.Format == input.CSV || f.Opts.Quotes }

// readCSVHeader reads the CSV/TSV header row, or for a file without one
// its first row's field count, and decides the columns.
func (f *File) readCSVHeader() error {
	s, err := f.OpenHeader(context.Background())
	if err != nil {
		return err
	}
	defer s.Close()
	sc := newCSVScanner(s, f.Opts.Delimiter, f.quoting(), f.Opts.MaxRowBytes, 0)
	// A header is short: read it in small pieces, not a whole buffer of
	// the file (a resumed import reads little else).
	sc.buf = sc.buf[:min(len(sc.buf), headerBuffer)]
	if err := sc.skipBOM(); err != nil {
		return f.Wrap(err, 0, 0, "")
	}
	if err := sc.skipLines(f.Opts.SkipLines); err != nil {
		return f.Wrap(err, 0, 0, "")
	}
	return f.readHeader(sc)
}

// lineCounter is a scanner that counts the lines it consumed.
type lineCounter interface {
	rowScanner
	consumedLines() int64
}

func (s *csvScanner) consumedLines() int64   { return s.lines }
func (s *sheetScanner) consumedLines() int64 { return int64(s.pos) }

// readHeader reads the header row sc is at, or for a file without one its
// first row's field count, and decides the columns.
func (f *File) readHeader(sc lineCounter) error {
	start := sc.offset()
	cells, prob, err := sc.next()
	var file []string
	switch {
	case err == io.EOF && f.Opts.NoHeader && len(f.Opts.Names) > 0:
		file, f.Data, f.DataLine = f.Opts.Names, start, sc.consumedLines() // no rows: an empty table of these columns
	case err == io.EOF:
		e := input.ErrEmpty
		if f.Opts.SkipLines > 0 {
			e = fmt.Errorf("%w after the %d lines --skip-lines skips", input.ErrEmpty, f.Opts.SkipLines)
		}
		return &input.ParseError{Path: f.Path, Offset: 0, Err: e}
	case err != nil:
		return f.Wrap(err, 0, 0, "")
	case f.Opts.NoHeader:
		f.Data, f.DataLine = sc.rowStart(), sc.consumedLines()-int64(bytes.Count(sc.raw(), []byte{'\n'}))
		if file = f.Opts.Names; file == nil {
			if prob != nil {
				return &input.ParseError{Path: f.Path, Offset: start, Err: fmt.Errorf("%w: the first row, which says how many columns the file has, is malformed (%s): name the columns with --columns", input.ErrHeader, prob.msg)}
			}
			file = input.DefaultNames(len(cells))
		}
	case prob != nil:
		return &input.ParseError{Path: f.Path, Offset: start, Err: fmt.Errorf("%w: %s", input.ErrHeader, prob.msg)}
	default:
		seen := map[string]int{}
		for i, c := range cells {
			name := strings.TrimSpace(string(c.B))
			if name == "" {
				return &input.ParseError{Path: f.Path, Offset: start, Err: fmt.Errorf("%w: column %d has an empty name", input.ErrHeader, i+1)}
			}
			if code, msg := value.CheckText(c.B); code != "" {
				return &input.ParseError{Path: f.Path, Offset: start, Err: fmt.Errorf("%w: column %d: %s", input.ErrHeader, i+1, msg)}
			}
			if bytes.ContainsAny(c.B, "\r\n") {
				// Most likely lines that end in CR alone (old Mac files), which
				// make the whole file one header row; a quoted name spanning
				// lines is no usable column name either.
				return &input.ParseError{Path: f.Path, Offset: start, Err: fmt.Errorf("%w: column %d's name holds a line break (lines ending in CR alone are not supported: convert them to LF or CRLF)", input.ErrHeader, i+1)}
			}
			if j, dup := seen[name]; dup && len(f.Opts.Names) == 0 {
				return &input.ParseError{Path: f.Path, Offset: start, Err: fmt.Errorf("%w: columns %d and %d are both named %q (name them with --columns, or rename one in the file)", input.ErrHeader, j+1, i+1, name)}
			}
			seen[name] = i
			file = append(file, name)
		}
		f.dataLike = looksLikeData(cells)
		if f.Opts.Names != nil {
			if len(f.Opts.Names) != len(file) {
				return fmt.Errorf("%w: --columns gives %d names, the header of %s has %d columns (%s)", input.ErrOption, len(f.Opts.Names), f.Path, len(file), strings.Join(file, ", "))
			}
			file = f.Opts.Names
		}
		f.Data, f.DataLine = sc.offset(), sc.consumedLines()
	}
	if f.Opts.Names != nil {
		if err := checkNames(f.Opts.Names); err != nil {
			return err
		}
	}
	proj, names, err := f.Opts.Project(file)
	if err != nil {
		return err
	}
	f.Fields, f.Proj, f.Header = len(file), proj, names
	return nil
}

// checkNames checks the names --columns gives.
func checkNames(names []string) error {
	seen := map[string]int{}
	for i, n := range names {
		if strings.TrimSpace(n) != n || n == "" {
			return fmt.Errorf("%w: --columns: name %d is %q", input.ErrOption, i+1, n)
		}
		if code, msg := value.CheckText([]byte(n)); code != "" {
			return fmt.Errorf("%w: --columns: name %d: %s", input.ErrOption, i+1, msg)
		}
		if j, dup := seen[n]; dup {
			return fmt.Errorf("%w: --columns names columns %d and %d %q", input.ErrOption, j+1, i+1, n)
		}
		seen[n] = i
	}
	return nil
}

// looksLikeData reports whether every cell is a number or a date, as no
// header's names are.
func looksLikeData(cells []value.Cell) bool {
	if len(cells) == 0 {
		return false
	}
	for _, c := range cells {
		b := bytes.TrimSpace(c.B)
		if _, ok := value.ParseTimestamp(b, true); ok {
			continue
		}
		if _, ok := value.ParseDecimal(b); ok {
			continue
		}
		return false
	}
	return true
}

// scanner returns a row scanner over s, which starts at offset. columns
// are the names of the columns known so far (JSONL), as read.
func (f *File) scanner(s io.Reader, offset int64, columns []string, grow bool) rowScanner {
	if f.Format == input.JSONL {
		return newJSONLScanner(s, f.Opts.MaxRowBytes, offset, columns, grow, &f.Opts)
	}
	var sc rowScanner
	if f.Format == input.XLSX {
		sh, _ := f.sheet() // decoded at Open
		sc = newSheetScanner(sh, offset, f.Fields)
	} else {
		c := newCSVScanner(s, f.Opts.Delimiter, f.quoting(), f.Opts.MaxRowBytes, offset)
		for _, m := range f.Opts.Null {
			c.nulls = append(c.nulls, []byte(m))
		}
		sc = c
	}
	if f.Proj == nil {
		return sc
	}
	return &projScanner{rowScanner: sc, proj: f.Proj, fields: f.Fields}
}

// projScanner reads the columns of a CSV or TSV row that Options.Select
// names, in its order. A row with another number of fields than the file
// has columns is bad whatever it holds in the columns read.
type projScanner struct {
	rowScanner
	proj   []int
	fields int
	out    []value.Cell
	prob   problem
}

func (p *projScanner) next() ([]value.Cell, *problem, error) {
	cells, prob, err := p.rowScanner.next()
	if err != nil {
		return nil, nil, err
	}
	if len(cells) != p.fields {
		p.prob = problem{code: value.CodeFieldCount, msg: fmt.Sprintf("expected %d fields, got %d", p.fields, len(cells)), column: -1}
		if prob != nil {
			p.prob = *prob
			p.prob.column = -1
		}
		return nil, &p.prob, nil
	}
	p.out = p.out[:0]
	for _, i := range p.proj {
		p.out = append(p.out, cells[i])
	}
	if prob != nil {
		p.prob = *prob
		p.prob.column = -1
		for j, i := range p.proj {
			if i == prob.column {
				p.prob.column = j
			}
		}
		return p.out, &p.prob, nil
	}
	return p.out, nil, nil
}

// setLines tells a CSV or TSV scanner how many line ends come before
// where it starts, so that its messages name lines of the file.
func setLines(sc rowScanner, n int64) {
	switch s := sc.(type) {
	case *csvScanner:
		s.lines = n
	case *projScanner:
		setLines(s.rowScanner, n)
	}
}
