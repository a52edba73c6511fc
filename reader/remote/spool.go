package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Spool is a remote object read from a local copy: for a compressed
// stream, every partition decompresses from the first byte, which from the
// object itself would be a download per partition. The copy is filled on
// first read, with ranged GETs guarded by the object's ETag, and resumed
// from where it stopped by a later Spool of the same object version (by
// this process or another: writers append the same bytes of one immutable
// version, so they cannot disagree). It implements the same methods as
// Object.
type Spool struct {
	obj  *Object
	path string

	mu   sync.Mutex
	f    *os.File
	full bool
}

// NewSpool returns a spool of obj in dir, named after the object's URL,
// version and size. Nothing is read or created until the first read.
func NewSpool(obj *Object, dir string) *Spool {
	sum := sha256.Sum256([]byte(obj.url + "\x00" + obj.info.ETag + "\x00" + obj.info.Version + "\x00" + strconv.FormatInt(obj.info.Size, 10)))
	return &Spool{obj: obj, path: filepath.Join(dir, "idemport-"+hex.EncodeToString(sum[:12])+".spool")}
}

// Path returns the local copy's path.
func (s *Spool) Path() string { return s.path }

// Name returns the object's name.
func (s *Spool) Name() string { return s.obj.Name() }

// Size returns the object's size.
func (s *Spool) Size() int64 { return s.obj.Size() }

// ModTime returns the object's Last-Modified time.
func (s *Spool) ModTime() time.Time { return s.obj.ModTime() }

// Version returns the object's version id or ETag.
func (s *Spool) Version() string { return s.obj.Version() }

// fill completes the local copy, downloading what it lacks.
func (s *Spool) fill(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.full {
		return nil
	}
	if s.f == nil {
		if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
			return fmt.Errorf("spool %s: %w", s.obj.url, err)
		}
		f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("spool %s: %w", s.obj.url, err)
		}
		s.f = f
	}
	st, err := s.f.Stat()
	if err != nil {
		return fmt.Errorf("spool %s: %w", s.obj.url, err)
	}
	have, size := st.Size(), s.obj.Size()
	if have > size { // not this version's copy
		if err := s.f.Truncate(0); err != nil {
			return fmt.Errorf("spool %s: %w", s.obj.url, err)
		}
		have = 0
	}
	if have < size {
		if ctx.Done() == nil {
			ctx = s.obj.ctx
		}
		rc := s.obj.OpenRange(ctx, have, size)
		defer rc.Close()
		w := io.NewOffsetWriter(s.f, have)
		if _, err := io.Copy(w, rc); err != nil {
			return fmt.Errorf("spool %s at byte %d: %w", s.obj.url, have, err)
		}
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("spool %s: %w", s.obj.url, err)
		}
	}
	s.full = true
	return nil
}

// ReadAt reads from the local copy, filling it first.
func (s *Spool) ReadAt(p []byte, off int64) (int, error) {
	if err := s.fill(context.Background()); err != nil {
		return 0, err
	}
	return s.f.ReadAt(p, off)
}

// Open returns the local copy's bytes from off, filling it first.
func (s *Spool) Open(ctx context.Context, off int64) (io.ReadCloser, error) {
	if err := s.fill(ctx); err != nil {
		return nil, err
	}
	return io.NopCloser(io.NewSectionReader(s.f, off, s.obj.Size()-off)), nil
}

// Close closes the local copy, which stays for a later run to resume or
// reuse; Remove deletes it.
func (s *Spool) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f, s.full = nil, false
	return err
}

// Remove closes and deletes the local copy.
func (s *Spool) Remove() error {
	s.Close()
	if err := os.Remove(s.path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
