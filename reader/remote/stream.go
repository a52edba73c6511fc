package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/idemport/idemport/internal/proc"
)

// Stream is a stream (standard input, a pipe, a FIFO) copied into a
// private file while it was hashed: the file is read as any other, and
// its digest is the stream's.
type Stream struct {
	Path   string // the copy, which the caller removes when done (Remove)
	Size   int64
	Digest string // "sha256:" and the hex SHA-256 of the bytes
}

// Remove deletes the copy.
func (s *Stream) Remove() error {
	if err := os.Remove(s.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// SpoolStream copies r to its end into a new file in dir while hashing
// it; progress, if set, is called with the bytes copied so far.
//
// dir is created 0700 if missing, and must be a directory of this user's
// that no one else may enter (not a link): the copy holds what was piped
// in. The copy is created exclusively, readable by its owner only. Copies
// that processes which have since died left behind are removed first.
// Cancelling ctx stops the copy and removes it.
func SpoolStream(ctx context.Context, r io.Reader, dir string, progress func(int64)) (*Stream, error) {
	if err := PrivateDir(dir); err != nil {
		return nil, err
	}
	proc.SweepOwned(dir, "stdin", ".spool")
	f, err := proc.CreateOwned(dir, "stdin", ".spool")
	if err != nil {
		return nil, fmt.Errorf("spool the stream: %w", err)
	}
	s := &Stream{Path: f.Name()}
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for err == nil {
		if err = ctx.Err(); err != nil {
			break
		}
		var n int
		n, err = r.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			if _, werr := f.Write(buf[:n]); werr != nil {
				err = werr
			}
			s.Size += int64(n)
			if progress != nil {
				progress(s.Size)
			}
		}
	}
	if err == io.EOF {
		err = nil
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.Remove()
		return nil, fmt.Errorf("spool the stream: %w", err)
	}
	s.Digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return s, nil
}

// PrivateDir makes sure dir exists, creating it 0700 when missing, and is
// a directory (not a link) of this user's that no one else may enter, as
// a spool directory must be; its errors name dir and --spool-dir.
func PrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("spool directory: %w: give --spool-dir a directory of your own", err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("spool directory: %w", err)
	}
	switch {
	case !st.IsDir():
		return fmt.Errorf("spool directory %s is not a directory (a link is not taken): give --spool-dir a directory of your own", dir)
	case !ownedByMe(st):
		return fmt.Errorf("spool directory %s belongs to another user: give --spool-dir a directory of your own", dir)
	case privateModes && st.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("spool directory %s may be read by others (mode %s): make it 0700 (chmod 700 %s) or give another --spool-dir", dir, st.Mode().Perm(), dir)
	}
	return nil
}
