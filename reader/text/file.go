package text

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/idemport/idemport/reader/internal/core"
)

// File is a CSV, TSV or JSONL file: the shared file and the text wing's
// methods on it.
type File struct {
	*core.File
}

// Open returns the text wing's view of f, reading the header of a CSV or
// TSV file and checking its names. A header that cannot be read returns a
// *core.ParseError.
func Open(f *core.File) (*File, error) {
	t := &File{File: f}
	if f.Format == core.JSONL {
		return t, nil
	}
	if err := t.readHeader(); err != nil {
		return nil, err
	}
	return t, nil
}

func (f *File) quoting() bool { return f.Format == core.CSV || f.Opts.Quotes }

// readHeader reads the CSV/TSV header row and checks its names.
func (f *File) readHeader() error {
	s, err := f.Open(context.Background(), 0)
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
	cells, prob, err := sc.next()
	if err == io.EOF {
		return &core.ParseError{Path: f.Path, Offset: 0, Err: core.ErrEmpty}
	}
	if err != nil {
		return f.Wrap(err, 0, 0, "")
	}
	if prob != nil {
		return &core.ParseError{Path: f.Path, Offset: 0, Err: fmt.Errorf("%w: %s", core.ErrHeader, prob.msg)}
	}
	seen := map[string]int{}
	for i, c := range cells {
		name := strings.TrimSpace(string(c.B))
		if name == "" {
			return &core.ParseError{Path: f.Path, Offset: 0, Err: fmt.Errorf("%w: column %d has an empty name", core.ErrHeader, i+1)}
		}
		if code, msg := core.CheckText(c.B); code != "" {
			return &core.ParseError{Path: f.Path, Offset: 0, Err: fmt.Errorf("%w: column %d: %s", core.ErrHeader, i+1, msg)}
		}
		if bytes.ContainsAny(c.B, "\r\n") {
			// Most likely lines that end in CR alone (old Mac files), which
			// make the whole file one header row; a quoted name spanning
			// lines is no usable column name either.
			return &core.ParseError{Path: f.Path, Offset: 0, Err: fmt.Errorf("%w: column %d's name holds a line break (lines ending in CR alone are not supported: convert them to LF or CRLF)", core.ErrHeader, i+1)}
		}
		if j, dup := seen[name]; dup {
			return &core.ParseError{Path: f.Path, Offset: 0, Err: fmt.Errorf("%w: columns %d and %d are both named %q", core.ErrHeader, j+1, i+1, name)}
		}
		seen[name] = i
		f.Header = append(f.Header, name)
	}
	f.Data = sc.offset()
	return nil
}

// scanner returns a row scanner over s, which starts at offset.
func (f *File) scanner(s io.Reader, offset int64, columns []string, grow bool) rowScanner {
	if f.Format == core.JSONL {
		return newJSONLScanner(s, f.Opts.MaxRowBytes, offset, columns, grow)
	}
	return newCSVScanner(s, f.Opts.Delimiter, f.quoting(), f.Opts.MaxRowBytes, offset)
}
