package idemtype

import (
	"context"
	"io"
	"time"
)

// Source is the bytes of one input file, read by random access or as a
// stream. reader reads every byte of an input through a Source; a local
// file is one (reader.OpenFileSource), and so may be a remote object.
//
// A Source describes the file as it was when the Source was opened: Size,
// ModTime and Version do not change afterwards. Reads see the bytes as they
// are when read; whoever reads compares what it read with what it expected
// (a plan's checksums, a digest) to tell that the file changed.
//
// ReadAt and Open may be called concurrently, and each stream Open returns
// is independent of the others.
type Source interface {
	// Name is the path or URL the source was opened with, for messages and
	// for telling the format from the name's extension.
	Name() string
	// Size is the file's size in bytes when the source was opened.
	Size() int64
	// ModTime is the file's modification time when the source was opened,
	// or the zero time when the source has none.
	ModTime() time.Time
	// Version is an opaque token that changes when the file's bytes may
	// have changed (an object's ETag or generation), or "" when the source
	// has none; a local file's identity is its stat, which the caller
	// takes itself.
	Version() string
	// ReadAt reads len(p) bytes at off, as io.ReaderAt does: fewer only
	// with an error, io.EOF at the end of the file.
	ReadAt(p []byte, off int64) (int, error)
	// Open returns a stream of the file's bytes from off to its end (as it
	// is when read). The caller closes it; ctx bounds the stream's reads
	// where the source can be cancelled.
	Open(ctx context.Context, off int64) (io.ReadCloser, error)
	// Close releases what the source holds. Streams opened from it may
	// not be read afterwards.
	Close() error
}
