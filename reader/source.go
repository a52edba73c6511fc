package reader

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/idemport/idemport/idemtype"
)

// fileSource is a local file as an idemtype.Source. Each read opens the
// path afresh, as a reader of the path would: a file replaced since the
// source was opened is read as it now is, and the plan's checksums tell
// that it changed. So a File holds no open handle between reads, and a
// fileSource needs no closing.
type fileSource struct {
	path    string
	size    int64
	modTime time.Time
}

var _ idemtype.Source = (*fileSource)(nil)

// OpenFileSource returns the local file at path as a Source. It fails as
// os.Open does when the file cannot be opened.
func OpenFileSource(path string) (idemtype.Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return &fileSource{path: path, size: st.Size(), modTime: st.ModTime()}, nil
}

func (s *fileSource) Name() string       { return s.path }
func (s *fileSource) Size() int64        { return s.size }
func (s *fileSource) ModTime() time.Time { return s.modTime }
func (s *fileSource) Version() string    { return "" }
func (s *fileSource) Close() error       { return nil }

func (s *fileSource) ReadAt(p []byte, off int64) (int, error) {
	f, err := os.Open(s.path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.ReadAt(p, off)
}

func (s *fileSource) Open(_ context.Context, off int64) (io.ReadCloser, error) {
	f, err := os.Open(s.path)
	if err != nil {
		return nil, err
	}
	if off != 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}
