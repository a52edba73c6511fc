package remote

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"time"
)

// Spool is a remote object read from a local copy: for a compressed
// stream, every partition decompresses from the first byte, which from the
// object itself would be a download per partition. The copy is filled on
// first read, with ranged GETs guarded by the object's ETag, and resumed
// from where it stopped by a later Spool of the same object version (by
// this process or another; one fills it at a time). It implements the same
// methods as Object.
//
// A local copy is only as trustworthy as the place it is kept, so the
// spool directory must be private: it is created 0700, and one that
// another user owns or that others may write is refused (ErrSpoolDir).
// Its files are created exclusively (O_EXCL) with mode 0600, never opened
// through a symbolic link or a second hard link, and a copy left by an
// earlier run is trusted only as far as its bytes match the SHA-256 of each
// range recorded, in a sums file beside it, when the range was written:
// what does not match is fetched again.
type Spool struct {
	obj  *Object
	dir  string
	name string // of the copy; the sums file is name+".sums"

	mu   sync.Mutex
	root *os.Root // the directory, opened and checked
	f    *os.File // the copy
	sums *os.File // its ranges' digests
	full bool
}

// ErrSpoolDir means the spool directory is not private to the user
// running: another user owns it, or others may write it.
var ErrSpoolDir = errors.New("the spool directory is not private")

// NewSpool returns a spool of obj in dir, named after the object's
// identity: its URL (credentials masked) and the version its HEAD proved,
// or, when it proved none or its masked URL does not name it alone (see
// Object.NamedByPath), its whole URL, size and modification time. It
// creates dir (0700) when missing and checks that it is private, a
// failure that wraps ErrSpoolDir; nothing is read or written in it until
// the first read.
func NewSpool(obj *Object, dir string) (*Spool, error) {
	var id string
	if obj.info.Proves() && obj.byPath { // a presigned URL's copy survives a new signature
		id = obj.url + "\x00" + obj.info.ETag + "\x00" + obj.info.Version + "\x00" + strconv.FormatInt(obj.info.Size, 10)
	} else { // the masked URL may name another object too
		id = obj.rawKey + "\x00" + strconv.FormatInt(obj.info.Size, 10) + "\x00" + strconv.FormatInt(obj.info.ModTime.UnixNano(), 10)
	}
	sum := sha256.Sum256([]byte(id))
	s := &Spool{obj: obj, dir: dir, name: "idemport-" + hex.EncodeToString(sum[:12]) + ".spool"}
	root, err := openPrivateDir(dir)
	if err != nil {
		return nil, err
	}
	s.root = root
	return s, nil
}

// openPrivateDir creates dir (0700) when missing, opens it, and checks the
// directory opened: every later step works relative to it, so the check
// holds whatever happens to the path.
func openPrivateDir(dir string) (*os.Root, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("spool directory: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("spool directory: %w", err)
	}
	st, err := root.Stat(".")
	if err == nil {
		err = private(st)
	}
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("spool directory %s: %w", dir, err)
	}
	return root, nil
}

// Path returns the local copy's path.
func (s *Spool) Path() string { return s.dir + string(os.PathSeparator) + s.name }

// Name returns the object's name.
func (s *Spool) Name() string { return s.obj.Name() }

// Size returns the object's size.
func (s *Spool) Size() int64 { return s.obj.Size() }

// ModTime returns the object's Last-Modified time.
func (s *Spool) ModTime() time.Time { return s.obj.ModTime() }

// Version returns the object's version id or ETag.
func (s *Spool) Version() string { return s.obj.Version() }

// The sums file: a header, then one record per range written, in the
// order written: its first and end offsets (little-endian uint64) and the
// SHA-256 of its bytes.
const (
	sumsMagic  = "idemport spool sums v1\n"
	sumsHeader = len(sumsMagic) + 8 // the magic and the object's size
	sumsRecord = 8 + 8 + sha256.Size
)

// fill completes the local copy, downloading what it lacks.
func (s *Spool) fill(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.full {
		return nil
	}
	if err := s.fillLocked(ctx); err != nil {
		return fmt.Errorf("spool %s: %w", s.obj.url, err)
	}
	s.full = true
	return nil
}

func (s *Spool) fillLocked(ctx context.Context) error {
	if ctx.Done() == nil {
		ctx = s.obj.ctx
	}
	if s.root == nil {
		root, err := openPrivateDir(s.dir)
		if err != nil {
			return err
		}
		s.root = root
	}
	if s.f == nil {
		f, err := openPrivate(s.root, s.name)
		if err != nil {
			return err
		}
		sums, err := openPrivate(s.root, s.name+".sums")
		if err != nil {
			f.Close()
			return err
		}
		s.f, s.sums = f, sums
	}
	// One process fills a copy at a time: another may be truncating what
	// it cannot verify.
	unlock, err := lockFile(ctx, s.sums)
	if err != nil {
		return err
	}
	defer unlock()
	have, err := s.verify()
	if err != nil {
		return err
	}
	size := s.obj.Size()
	if have < size {
		if err := s.download(ctx, have, size); err != nil {
			return err
		}
		if err := s.f.Sync(); err != nil {
			return err
		}
		if err := s.sums.Sync(); err != nil {
			return err
		}
	}
	return nil
}

// verify returns how much of the copy, from its first byte, matches the
// digests recorded when it was written, and cuts the copy and its sums
// file to that: what is left after it was written by a process that died
// before recording it, or was changed since.
func (s *Spool) verify() (int64, error) {
	size := s.obj.Size()
	st, err := s.f.Stat()
	if err != nil {
		return 0, err
	}
	sums, err := io.ReadAll(io.NewSectionReader(s.sums, 0, 64<<20))
	if err != nil {
		return 0, err
	}
	var have, kept int64 // bytes of the copy verified; bytes of the sums file that verified them
	header := make([]byte, sumsHeader)
	copy(header, sumsMagic)
	binary.LittleEndian.PutUint64(header[len(sumsMagic):], uint64(size))
	if len(sums) >= sumsHeader && string(sums[:sumsHeader]) == string(header) {
		kept = int64(sumsHeader)
		h := sha256.New()
		buf := make([]byte, 64<<10)
		for rec := sums[sumsHeader:]; len(rec) >= sumsRecord; rec = rec[sumsRecord:] {
			first := int64(binary.LittleEndian.Uint64(rec))
			end := int64(binary.LittleEndian.Uint64(rec[8:]))
			if first < 0 || first > have || end <= first || end > size || end > st.Size() {
				break
			}
			h.Reset()
			if _, err := io.CopyBuffer(h, io.NewSectionReader(s.f, first, end-first), buf); err != nil {
				return 0, err
			}
			if string(h.Sum(nil)) != string(rec[16:sumsRecord]) {
				break
			}
			have, kept = max(have, end), kept+sumsRecord
		}
	}
	if kept == 0 { // no sums file, or another object's: nothing is trusted
		if err := s.sums.Truncate(0); err != nil {
			return 0, err
		}
		if _, err := s.sums.WriteAt(header, 0); err != nil {
			return 0, err
		}
	} else if kept < int64(len(sums)) {
		if err := s.sums.Truncate(kept); err != nil {
			return 0, err
		}
	}
	if st.Size() != have {
		if err := s.f.Truncate(have); err != nil {
			return 0, err
		}
	}
	return have, nil
}

// download fetches the bytes [have, size) into the copy, recording the
// digest of each range once it is written: ranges of 64 KiB doubling to
// 16 MiB, as the requests' windows, so that an interrupted copy loses at
// most the range it was writing.
func (s *Spool) download(ctx context.Context, have, size int64) error {
	rc := s.obj.OpenRange(ctx, have, size)
	defer rc.Close()
	end, err := s.sums.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	h := sha256.New()
	buf := make([]byte, 64<<10)
	rec := make([]byte, sumsRecord)
	for chunk := int64(firstWindow); have < size; chunk = min(2*chunk, maxWindow) {
		n := min(chunk, size-have)
		h.Reset()
		w := io.MultiWriter(io.NewOffsetWriter(s.f, have), h)
		if _, err := io.CopyBuffer(w, io.LimitReader(rc, n), buf); err != nil {
			return fmt.Errorf("at byte %d: %w", have, err)
		}
		binary.LittleEndian.PutUint64(rec, uint64(have))
		binary.LittleEndian.PutUint64(rec[8:], uint64(have+n))
		h.Sum(rec[:16])
		if _, err := s.sums.WriteAt(rec, end); err != nil {
			return err
		}
		end += sumsRecord
		have += n
	}
	return nil
}

// openPrivate opens the regular file name in root for reading and
// writing, creating it (exclusively, 0600) when missing. An entry that is
// not a regular file of this user's that only they can read, with no other
// hard link (a symbolic link, a link to a file elsewhere, a file another
// user made), is removed and replaced by a new empty file, never followed.
func openPrivate(root *os.Root, name string) (*os.File, error) {
	for range 3 {
		f, err := root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		lst, err := root.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile: create it again
		}
		if err != nil {
			return nil, err
		}
		if lst.Mode().IsRegular() {
			f, err := root.OpenFile(name, os.O_RDWR, 0)
			if err == nil {
				st, err := f.Stat()
				// The file opened is the one looked at, not a link swapped in.
				if err == nil && os.SameFile(lst, st) && ownFile(st) == nil {
					return f, nil
				}
				f.Close()
			} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
				return nil, err
			}
		}
		if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("remove %s, which is not a private file: %w", name, err)
		}
	}
	return nil, fmt.Errorf("%s: replaced while being opened", name)
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
	return s.closeLocked()
}

func (s *Spool) closeLocked() error {
	var errs []error
	if s.f != nil {
		errs = append(errs, s.f.Close(), s.sums.Close())
	}
	if s.root != nil {
		errs = append(errs, s.root.Close())
	}
	s.f, s.sums, s.root, s.full = nil, nil, nil, false
	return errors.Join(errs...)
}

// Remove closes and deletes the local copy.
func (s *Spool) Remove() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	root := s.root
	s.root = nil // kept open for the removal
	s.closeLocked()
	if root == nil {
		var err error
		if root, err = openPrivateDir(s.dir); err != nil {
			return err
		}
	}
	defer root.Close()
	var errs []error
	for _, name := range []string{s.name, s.name + ".sums"} {
		if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
