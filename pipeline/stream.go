package pipeline

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader"
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
func (r *run) name() string {
	if r.in.streaming {
		return r.req.Name
	}
	return r.req.Path
}

// spoolStream copies the stream into a private file while hashing it, and
// makes that file the run's source, known by the stream's name.
func (r *run) spoolStream(ctx context.Context) error {
	in := r.req.Stdin
	if r.req.Path != "-" {
		f, err := os.Open(r.req.Path)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	} else if in == nil {
		in = eof{}
	}
	dir := r.req.SpoolDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "idemport-"+strconv.Itoa(os.Getuid()))
	}
	s, err := remote.SpoolStream(ctx, in, dir, func(n int64) { r.progress(Progress{Phase: "hash", Bytes: n}) })
	if err != nil {
		return err
	}
	r.in.stream = s
	src, err := reader.OpenFileSource(s.Path)
	if err != nil {
		return err
	}
	r.in.src = named{Source: src, name: r.req.Name}
	return nil
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
