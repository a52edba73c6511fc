package pipeline

import (
	"io"
	"os"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/remote"
)

// IsStream reports whether path names a stream rather than a file: "-"
// (standard input), or a local path that is neither a regular file nor a
// directory (a pipe, a FIFO, /dev/stdin on a pipe). A stream is read once
// (Request.Name).
func IsStream(path string) bool {
	if path == "-" {
		return true
	}
	if remote.IsURL(path) {
		return false
	}
	st, err := os.Stat(path)
	return err == nil && !st.Mode().IsRegular() && !st.IsDir()
}

// name is what the run's input is known by: its path or URL, or a
// stream's name.
func (h *holding) name() string {
	return inputName(h.in, &h.req)
}

// inputName is what input in of req is known by: its path or URL, or a
// stream's name.
func inputName(in *input, req *Request) string {
	if in.streaming {
		return req.Name
	}
	return req.Path
}

// named is a source known by another name than its path's.
type named struct {
	idemtype.Source
	name string
}

func (n named) Name() string { return n.name }

// eof is an empty stream.
type eof struct{}

func (eof) Read([]byte) (int, error) { return 0, io.EOF }
