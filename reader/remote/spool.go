package remote

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idemport/idemport/idemtype"
)

// Spool is a remote object read from a local copy: for a compressed
// stream, every partition decompresses from the first byte, which from the
// object itself would be a download per partition; for any object, the
// copy filled while it is hashed ([Spool.Copying]) spares the partitions a
// second download. The copy is filled on first read (or, for a spool made
// ReadThrough, only by a Copying stream), with ranged GETs guarded by the
// object's ETag, and resumed from where it stopped by a later Spool of the
// same object version (by this process or another; one fills it at a
// time). It implements the same methods as Object.
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

	mu      sync.Mutex
	root    *os.Root                // the directory, opened and checked
	f       *os.File                // the copy
	sums    *os.File                // its ranges' digests
	unuse   func()                  // releases the copy's use lock, held while f is open
	full    bool                    // the copy is complete and checked
	through bool                    // until then, reads are the object's ranged GETs (ReadThrough)
	copying bool                    // a stream from Copying's Open is filling the copy
	have    int64                   // bytes of the copy, from its first, that stream wrote
	moved   chan struct{}           // closed when have, copying or full change
	gaveUp  error                   // why a read-through copy was given up, if it was
	looked  bool                    // a read-through spool looked for a copy an earlier attempt left
	reused  []*reusedRange          // the ranges of the copy an earlier attempt left, checked on first use (reuseLocked)
	busy    func()                  // called when reuseLocked, or mend, finds the copy's fill lock held (tests meet it there)
	hit     func(name string) error // the failpoints told of the points it passes (Failpoints)
}

// reusedRange is a range of the copy an earlier attempt left, as its sums
// file recorded it: its bytes are checked against the digest recorded the
// first time a read needs them (check), and read from the copy only if
// they match, or once they are mended (Spool.mend).
type reusedRange struct {
	first, end int64
	rec        int64 // the offset of its record in the sums file
	sum        [sha256.Size]byte
	once       sync.Once
	ok         bool // the copy's bytes matched sum when checked, or were mended
}

// check reports whether the copy f holds r's bytes as recorded, hashing
// them on the first call only; concurrent calls wait for that one. A
// range that does not match (or cannot be read) is mended, its bytes
// fetched from the object into the copy, and counts as matching once it
// is.
func (r *reusedRange) check(s *Spool, f *os.File) bool {
	r.once.Do(func() {
		r.ok = r.holds(f) || s.mend(r, f)
	})
	return r.ok
}

// holds reports whether the copy f holds r's bytes as recorded.
func (r *reusedRange) holds(f *os.File) bool {
	h := sha256.New()
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, r.first, r.end-r.first), make([]byte, 64<<10)); err != nil {
		return false
	}
	return string(h.Sum(nil)) == string(r.sum[:])
}

// mend fetches the object's bytes of r, a range of the reused copy f that
// does not hold them as recorded, and writes them back into the copy,
// where later reads, of this attempt or of another sharing the spool
// directory, then find them rather than fetching them again; it reports
// whether the copy holds them now. It works under the copy's fill lock,
// taken on a file of its own (so that a copying stream of the same spool
// is kept out too) and waited for up to reuseWait (not at all when the
// copy already ends short of r's end: a copying stream cut it, and holds
// the lock for as long as it fills), and only while the sums
// file still records r as it did and the copy reaches r's end (a copying
// stream checks the copy, and may cut it, under that lock); it fetches
// nothing when another spool mended r meanwhile. Where the object's bytes
// do not match the recorded digest (the sums file was changed), their
// own is recorded in its place once they are written. Every digest it
// leaves recorded is that of the bytes the object served for r, so a kill
// midway leaves no range whose bytes match their digest and are not the
// object's: one half written back matches neither, and is mended again.
// Readers of the copy meanwhile check each range before they read it, and
// read the object where it does not match.
func (s *Spool) mend(r *reusedRange, f *os.File) bool {
	s.mu.Lock()
	root, recorded, hit, busy := s.root, s.sums, s.hit, s.busy
	s.mu.Unlock()
	if root == nil || recorded == nil {
		return false // closed
	}
	if st, err := f.Stat(); err != nil || st.Size() < r.end {
		// Cut short by a copying stream that checked the copy: it holds
		// the lock for as long as it fills, and the range is the object's.
		return false
	}
	sums, err := root.OpenFile(s.name+".sums", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer sums.Close()
	done, cancel := context.WithCancel(context.Background())
	cancel() // first a try, to tell a held lock
	unlock, err := lockFile(done, sums)
	if err != nil && errors.Is(err, context.Canceled) {
		if busy != nil {
			busy()
		}
		ctx, cancel := context.WithTimeout(s.ctx(context.Background()), reuseWait)
		defer cancel()
		unlock, err = lockFile(ctx, sums)
	}
	if err != nil {
		return false
	}
	defer unlock()
	rec := make([]byte, sumsRecord)
	if _, err := sums.ReadAt(rec, r.rec); err != nil || !sameFile(sums, recorded) || !named(root, s.name, f) ||
		int64(binary.LittleEndian.Uint64(rec)) != r.first || int64(binary.LittleEndian.Uint64(rec[8:])) != r.end ||
		string(rec[16:]) != string(r.sum[:]) {
		return false
	}
	if st, err := f.Stat(); err != nil || st.Size() < r.end {
		return false
	}
	if r.holds(f) {
		return true
	}
	b := make([]byte, r.end-r.first)
	if n, err := s.obj.ReadAt(b, r.first); n < len(b) || (err != nil && err != io.EOF) {
		return false
	}
	for off := 0; off < len(b); off += firstWindow {
		if _, err := f.WriteAt(b[off:min(len(b), off+firstWindow)], r.first+int64(off)); err != nil {
			return false
		}
		if hit != nil && hit("inside-mend") != nil {
			return false
		}
	}
	if sum := sha256.Sum256(b); sum != r.sum {
		copy(rec[16:], sum[:])
		if _, err := sums.WriteAt(rec, r.rec); err != nil {
			return false
		}
		r.sum = sum
	}
	return true
}

// sameFile reports whether a and b are open files of the same file.
func sameFile(a, b *os.File) bool {
	sa, err := a.Stat()
	if err != nil {
		return false
	}
	sb, err := b.Stat()
	return err == nil && os.SameFile(sa, sb)
}

// ErrSpoolDir means the spool directory is not private to the user
// running: another user owns it, or others may write it.
var ErrSpoolDir = errors.New("the spool directory is not private")

// NewSpool returns a spool of obj in dir, named after the object's
// identity: its URL (credentials masked, or whole when its masked URL
// does not name it alone: see Object.NamedByPath) and the version its
// HEAD proved, so that a later spool of that version resumes or reuses
// the copy. An object whose HEAD proved no version (no version id, no
// strong ETag) gets a name of its own, partly random: a later spool, of
// this process or another, cannot tell whether the object it opens still
// has the bytes of the copy (a server that sends no validators, or only a
// modification time to the second, serves new bytes of the same size
// under the same ones), so it never reads that copy; it removes, as
// Remove does, those of the object's copies that no spool has open. It
// creates dir (0700) when missing and checks that it is private, a
// failure that wraps ErrSpoolDir; nothing of this object's is read or
// written in it until the first read. It removes other objects' copies in
// dir that nothing has written or opened for SpoolKeep (see sweepSpool).
func NewSpool(obj *Object, dir string) (*Spool, error) {
	var name string
	proves := obj.info.Proves()
	if proves {
		id := obj.rawKey // the masked URL may name another object too
		if obj.byPath {
			id = obj.url // a presigned URL's copy survives a new signature
		}
		sum := sha256.Sum256([]byte(id + "\x00" + obj.info.ETag + "\x00" + obj.info.Version + "\x00" + strconv.FormatInt(obj.info.Size, 10)))
		name = hex.EncodeToString(sum[:12])
	} else {
		var once [6]byte
		rand.Read(once[:])
		name = unprovenPrefix(obj) + hex.EncodeToString(once[:])
	}
	s := &Spool{obj: obj, dir: dir, name: "idemport-" + name + ".spool", moved: make(chan struct{})}
	root, err := openPrivateDir(dir)
	if err != nil {
		return nil, err
	}
	s.root = root
	var earlier func(name string)
	if !proves {
		earlier = s.removeEarlier
	}
	sweepSpool(root, s.name, time.Now(), earlier, nil)
	return s, nil
}

// unprovenPrefix is the start of the name of every copy of an object
// whose HEAD proved no version (hex, after "idemport-"): a digest of its
// whole URL, which the rest of the name, random, follows.
func unprovenPrefix(obj *Object) string {
	sum := sha256.Sum256([]byte("unproven\x00" + obj.rawKey))
	return hex.EncodeToString(sum[:6])
}

// removeEarlier removes, as Remove does, the copy name when another spool
// of s's object, which proved no version, made it: no spool reads it
// again, so one that no spool has open (left by an attempt that was killed
// or failed) is removed now rather than swept after SpoolKeep. NewSpool's
// sweep calls it with the name of each copy it finds.
func (s *Spool) removeEarlier(name string) {
	if strings.HasPrefix(name, "idemport-"+unprovenPrefix(s.obj)) {
		earlier := &Spool{obj: s.obj, dir: s.dir, name: name, moved: make(chan struct{})}
		earlier.Remove() // one another spool has open stays: its own Remove removes it
	}
}

// SpoolKeep is how long a copy in the spool directory that nothing has
// written or opened is kept for a later attempt of its import: a spool
// that opens a copy marks it modified then (openLocked), so that a copy
// an import reads, one an earlier attempt left long ago included, is not
// swept under it. A copy outlives its process only when its operation did
// not settle (the attempt failed, was killed or interrupted) or another
// spool had it open then (see Remove); if no attempt ever settles it, or
// one on another host or a command like abandon does, nothing else would
// remove it.
const SpoolKeep = 7 * 24 * time.Hour

// spoolCopy returns the name of the copy that name is, or whose sums file
// it is, when it has the form of the names NewSpool gives
// ("idemport-" 24 hex digits ".spool", with ".sums" for a sums file).
func spoolCopy(name string) (string, bool) {
	name = strings.TrimSuffix(name, ".sums")
	hexed, ok := strings.CutPrefix(name, "idemport-")
	hexed, ok2 := strings.CutSuffix(hexed, ".spool")
	if !ok || !ok2 || len(hexed) != 24 || strings.Trim(hexed, "0123456789abcdef") != "" {
		return "", false
	}
	return name, true
}

// sweepSpool removes from root the copies, other than keep, whose copy and
// sums file are both older than SpoolKeep at now, with their sums files.
// It decides under the copy's fill lock, which a spool that opens the copy
// holds while it marks it used (openLocked): a copy another process is
// filling or has opened since it was found old stays, as do entries that
// are not regular files, names of another form, and whatever cannot be
// removed: it reports nothing, since a copy it leaves costs only room.
// earlier, when not nil, is called first with the name of each copy other
// than keep, in the same pass (NewSpool removes there the copies of an
// object that proved no version: see Spool.removeEarlier); the sweep then
// finds a copy it removed gone. meet, when not nil, is called with each
// copy found old before its lock is taken (tests meet the sweep there).
func sweepSpool(root *os.Root, keep string, now time.Time, earlier, meet func(name string)) {
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return
	}
	seen := map[string]bool{keep: true}
	for _, e := range entries {
		name, ok := spoolCopy(e.Name())
		if !ok || seen[name] {
			continue
		}
		seen[name] = true
		if earlier != nil {
			earlier(name)
		}
		if !spoolStale(root, name, now) {
			continue
		}
		if meet != nil {
			meet(name)
		}
		sums, err := root.OpenFile(name+".sums", os.O_RDWR, 0)
		if err == nil {
			done, cancel := context.WithCancel(context.Background())
			cancel() // one try: a filler holds the lock for as long as it fills
			unlock, err := lockFile(done, sums)
			if err != nil {
				sums.Close()
				continue
			}
			// Again under the lock: a spool may have opened the copy since.
			stale := spoolStale(root, name, now)
			var serr error
			if stale {
				root.Remove(name)
				serr = root.Remove(name + ".sums") // under the lock: a spool that opened it finds it gone
			}
			unlock()
			sums.Close()
			if stale && serr != nil { // Windows refuses to remove an open file
				root.Remove(name + ".sums")
			}
			continue
		}
		if errors.Is(err, fs.ErrNotExist) {
			root.Remove(name)
		}
	}
}

// spoolStale reports whether the copy name and its sums file, where they
// exist, are regular files not written since SpoolKeep before now.
func spoolStale(root *os.Root, name string, now time.Time) bool {
	found := false
	for _, n := range []string{name, name + ".sums"} {
		st, err := root.Lstat(n)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil || !st.Mode().IsRegular() || now.Sub(st.ModTime()) < SpoolKeep {
			return false
		}
		found = true
	}
	return found
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

// ReadThrough makes the spool's reads, until its copy is complete, the
// object's own ranged GETs rather than a download of the whole copy: for
// an uncompressed object, whose partitions are byte ranges, so that an
// attempt that resumes fetches only the partitions it applies. Only a
// stream of [Spool.Copying] fills such a spool, and when the copy cannot
// be written (a full disk) that stream gives it up and reads on from the
// object ([Spool.GaveUp] says why). Call it before the first read.
func (s *Spool) ReadThrough() {
	s.mu.Lock()
	s.through = true
	s.mu.Unlock()
}

// Failpoints makes the spool tell hit each time it passes a point where
// tests kill it: inside-mend, after each 64 KiB of a range of a reused copy
// it writes back (see reusedRange.check). An error from hit stops the
// write as a kill there would, the rest of the range unwritten.
func (s *Spool) Failpoints(hit func(name string) error) {
	s.mu.Lock()
	s.hit = hit
	s.mu.Unlock()
}

// GaveUp returns why a read-through spool stopped filling its copy (see
// ReadThrough), or nil.
func (s *Spool) GaveUp() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gaveUp
}

// ctx returns ctx, or the object's context when ctx is never done (as
// context.Background), as ReadAt's callers pass.
func (s *Spool) ctx(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		if s.obj.ctx != nil {
			return s.obj.ctx
		}
		return context.Background()
	}
	return ctx
}

// notifyLocked wakes the readers waiting for the copying stream.
func (s *Spool) notifyLocked() {
	close(s.moved)
	s.moved = make(chan struct{})
}

// waitLocked waits, with s.mu held on entry and on return, until the
// copying stream moves on or ends.
func (s *Spool) waitLocked(ctx context.Context) error {
	ch := s.moved
	s.mu.Unlock()
	defer s.mu.Lock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fill completes the local copy, downloading what it lacks.
func (s *Spool) fill(ctx context.Context) error {
	ctx = s.ctx(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.copying {
		if err := s.waitLocked(ctx); err != nil {
			return err
		}
	}
	if s.full {
		return nil
	}
	if err := s.fillLocked(ctx); err != nil {
		return fmt.Errorf("spool %s: %w", s.obj.url, err)
	}
	s.full = true
	return nil
}

// Fill completes the local copy now, fetching only what it lacks (a copy
// an earlier attempt left counts as far as its sums check), so that every
// later read is the copy's, a read-through spool's too. It is for a reader
// about to read the whole object without a stream of [Spool.Copying]: a
// plan pass on an object whose hash the quick check gave. On an error the
// spool reads as before it was called.
func (s *Spool) Fill(ctx context.Context) error {
	return s.fill(ctx)
}

// openLocked opens the directory, the copy and its sums file, when they
// are not open, and takes the copy's fill lock (on its sums file), which
// it returns the release of: one process fills a copy at a time, as
// another may be truncating what it cannot verify.
//
// While the copy is open the spool holds its use lock (shared), so that
// another spool's Remove leaves it. When it opens them, it marks both
// files modified now, as SpoolKeep counts from their last use, and checks
// that their names still name the files opened, both under the fill
// lock, under which the sweep decides: a copy swept (or removed) before
// then is opened anew, and a sweep after it finds the copy used.
func (s *Spool) openLocked(ctx context.Context) (func(), error) {
	return s.open(ctx, false)
}

// open is openLocked; with unheld set, a fill lock it finds held (ctx
// done) it does without, returning a release that releases nothing, and
// calls s.busy when that is set: reuseLocked reads the sums file so while
// another spool fills the copy, or holds the lock for a moment.
func (s *Spool) open(ctx context.Context, unheld bool) (func(), error) {
	if s.root == nil {
		root, err := openPrivateDir(s.dir)
		if err != nil {
			return nil, err
		}
		s.root = root
	}
	lock := func(sums *os.File) (func(), error) {
		unlock, err := lockFile(ctx, sums)
		if err != nil && unheld && errors.Is(err, context.Canceled) {
			if s.busy != nil {
				s.busy()
			}
			return func() {}, nil
		}
		return unlock, err
	}
	if s.f != nil {
		return lock(s.sums)
	}
	for range 3 {
		f, err := openPrivate(s.root, s.name)
		if err != nil {
			return nil, err
		}
		sums, err := openPrivate(s.root, s.name+".sums")
		if err != nil {
			f.Close()
			return nil, err
		}
		unuse, err := lockUse(ctx, f, true)
		if err != nil {
			f.Close()
			sums.Close()
			return nil, err
		}
		unlock, err := lock(sums)
		if err != nil {
			unuse()
			f.Close()
			sums.Close()
			return nil, err
		}
		now := time.Now()
		s.root.Chtimes(s.name, now, now)
		s.root.Chtimes(s.name+".sums", now, now)
		if named(s.root, s.name, f) && named(s.root, s.name+".sums", sums) {
			s.f, s.sums, s.unuse = f, sums, unuse
			return unlock, nil
		}
		unlock()
		unuse()
		f.Close()
		sums.Close()
	}
	return nil, fmt.Errorf("%s: removed while being opened", s.name)
}

// named reports whether name in root is still the file f.
func named(root *os.Root, name string, f *os.File) bool {
	lst, err := root.Lstat(name)
	if err != nil {
		return false
	}
	st, err := f.Stat()
	return err == nil && os.SameFile(lst, st)
}

func (s *Spool) fillLocked(ctx context.Context) error {
	unlock, err := s.openLocked(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	s.reused = nil // verify checks the whole copy, and may cut it
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
	records, length, err := s.readSums()
	if err != nil {
		return 0, err
	}
	var have, kept int64 // bytes of the copy verified; bytes of the sums file that verified them
	if records != nil {
		kept = int64(sumsHeader)
		h := sha256.New()
		buf := make([]byte, 64<<10)
		for rec := records; len(rec) >= sumsRecord; rec = rec[sumsRecord:] {
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
		if _, err := s.sums.WriteAt(s.sumsHead(), 0); err != nil {
			return 0, err
		}
	} else if kept < length {
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

// sumsHead returns the header of the sums file of the spool's copy: the
// magic and the object's size.
func (s *Spool) sumsHead() []byte {
	header := make([]byte, sumsHeader)
	copy(header, sumsMagic)
	binary.LittleEndian.PutUint64(header[len(sumsMagic):], uint64(s.obj.Size()))
	return header
}

// readSums returns the records of the copy's sums file, the bytes after its
// header, when the header is that of a copy of this object (non-nil, if
// empty, then), else nil; and the length of the whole file.
func (s *Spool) readSums() (records []byte, length int64, err error) {
	sums, err := io.ReadAll(io.NewSectionReader(s.sums, 0, 64<<20))
	if err != nil {
		return nil, 0, err
	}
	if len(sums) < sumsHeader || string(sums[:sumsHeader]) != string(s.sumsHead()) {
		return nil, int64(len(sums)), nil
	}
	return sums[sumsHeader:], int64(len(sums)), nil
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

// ReadAt reads from the local copy, filling it first; a read-through
// spool reads the object while its copy is incomplete. While a stream of
// Copying fills the copy, a read of bytes it has not reached yet waits for
// them.
func (s *Spool) ReadAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	for !s.full {
		end := min(off+int64(len(p)), s.obj.Size())
		if s.f != nil && end <= s.have {
			break
		}
		if s.copying {
			if err := s.waitLocked(s.ctx(context.Background())); err != nil {
				s.mu.Unlock()
				return 0, err
			}
			continue
		}
		if s.through && s.reuseLocked() {
			continue
		}
		if s.reused != nil {
			f, reused := s.f, s.reused
			s.mu.Unlock()
			return s.readReused(f, reused, p, off)
		}
		through := s.through
		s.mu.Unlock()
		if through {
			return s.obj.ReadAt(p, off)
		}
		if err := s.fill(context.Background()); err != nil {
			return 0, err
		}
		s.mu.Lock()
	}
	f := s.f
	s.mu.Unlock()
	return f.ReadAt(p, off)
}

// Open returns the object's bytes from off, from the local copy as ReadAt
// does.
func (s *Spool) Open(ctx context.Context, off int64) (io.ReadCloser, error) {
	return s.openRange(ctx, off, s.obj.Size())
}

// OpenRange returns the object's bytes [off, end), from the local copy as
// ReadAt does: a read-through spool whose copy is incomplete fetches that
// range alone.
func (s *Spool) OpenRange(ctx context.Context, off, end int64) io.ReadCloser {
	rc, err := s.openRange(ctx, off, end)
	if err != nil {
		return errReader{err}
	}
	return rc
}

func (s *Spool) openRange(ctx context.Context, off, end int64) (io.ReadCloser, error) {
	if off < 0 || off > end || end > s.obj.Size() {
		return nil, fmt.Errorf("%s: range %d-%d outside the object's %d bytes", s.obj.url, off, end, s.obj.Size())
	}
	s.mu.Lock()
	if s.through {
		s.reuseLocked()
	}
	full, f, through, reused := s.full, s.f, s.through, s.reused
	follow := s.copying || (s.f != nil && off < s.have)
	s.mu.Unlock()
	switch {
	case full:
		return io.NopCloser(io.NewSectionReader(f, off, end-off)), nil
	case follow:
		return &follower{s: s, ctx: s.ctx(ctx), off: off, end: end}, nil
	case reused != nil:
		return &reusedReader{s: s, f: f, reused: reused, ctx: ctx, off: off, end: end}, nil
	case through:
		return s.obj.OpenRange(ctx, off, end), nil
	}
	if err := s.fill(ctx); err != nil {
		return nil, err
	}
	return io.NopCloser(io.NewSectionReader(s.f, off, end-off)), nil
}

// reuseLocked opens, once, for a read-through spool whose copy is not
// open, the copy an earlier attempt of the same object version left, and
// makes the ranges its sums file records (as far as the copy holds them)
// what the spool's reads read from the copy, each as long as its bytes
// match the digest recorded when it was written, checked when a read first
// needs them (reusedRange.check), outside the spool's mutex; the bytes of a
// range that does not match, and those beyond the ranges, are the object's
// ranges: an attempt that resumes then fetches nothing for the partitions
// a complete copy holds, and reads, hashes, only the ranges of the
// partitions it applies. It reports whether it opened one. Only
// a copy of an object whose HEAD proved its version is looked for (another
// object's copy is its attempt's alone, under a name of its own), and only
// when one exists: none is created for reads that do not fill it.
//
// It waits for no lock, as it is called with s.mu held: it tries the
// copy's use lock once (only a Remove holds it against it, which is
// removing the copy: the spool reads the object), and the fill lock once,
// and when another spool holds that (one filling the copy, for as long as
// it fills, or one reading the sums file, a mend, a sweep, for a moment)
// reads the sums file without it. What it reads so is no less safe: every
// range is checked against its recorded digest before its bytes are read
// from the copy, and a record that a filler cuts or is writing meanwhile
// matches no bytes, or the copy ends short of it, and the object is read
// there; a mend works under the lock and finds the record changed. A
// sweep that holds the lock, having found the copy old, may remove it
// after the spool marked it used: the spool reads on from the copy it
// holds open, as any spool whose copy is removed under it does. (On
// Windows the fill lock locks the first byte of the sums file, which then
// cannot be read: the spool reads the object, as where there is no copy.)
func (s *Spool) reuseLocked() bool {
	if s.looked || s.f != nil || s.copying || s.full || s.gaveUp != nil || !s.obj.info.Proves() {
		return false
	}
	s.looked = true
	if s.root == nil {
		return false // closed
	}
	if _, err := s.root.Lstat(s.name); err != nil {
		return false
	}
	done, cancel := context.WithCancel(context.Background())
	cancel() // one try for each lock
	unlock, err := s.open(done, true)
	if err != nil {
		return false
	}
	reused, err := s.recorded()
	unlock()
	if err == nil && len(reused) > 0 {
		s.reused = reused
	}
	s.notifyLocked()
	return true
}

// reuseWait is how long mend waits for the fill lock of the copy it
// writes back into: other spools of the object hold it for a moment (to
// read the sums file, to mend a range, to decide whether to remove the
// copy), or, filling the copy, for longer, and mend then gives up.
const reuseWait = 5 * time.Second

// recorded returns the ranges of the copy that its sums file records, in
// order and without a gap from the copy's first byte, as far as the copy
// holds them, unchecked: reuseLocked's reads check each on first use. It
// changes neither file (the copy is not cut at a range that does not
// match, whose neighbours are read from it all the same).
func (s *Spool) recorded() ([]*reusedRange, error) {
	size := s.obj.Size()
	st, err := s.f.Stat()
	if err != nil {
		return nil, err
	}
	records, _, err := s.readSums()
	if err != nil {
		return nil, err
	}
	var out []*reusedRange
	var have int64
	for rec := records; len(rec) >= sumsRecord; rec = rec[sumsRecord:] {
		first := int64(binary.LittleEndian.Uint64(rec))
		end := int64(binary.LittleEndian.Uint64(rec[8:]))
		if first != have || end <= first || end > size || end > st.Size() {
			break
		}
		r := &reusedRange{first: first, end: end, rec: int64(sumsHeader + len(records) - len(rec))}
		copy(r.sum[:], rec[16:sumsRecord])
		out = append(out, r)
		have = end
	}
	return out, nil
}

// reusedAt returns the range of reused that holds the byte at off, or nil
// when it is past their end.
func reusedAt(reused []*reusedRange, off int64) *reusedRange {
	i, _ := slices.BinarySearchFunc(reused, off, func(r *reusedRange, off int64) int {
		switch {
		case r.end <= off:
			return -1
		case r.first > off:
			return 1
		}
		return 0
	})
	if i < len(reused) && reused[i].first <= off && off < reused[i].end {
		return reused[i]
	}
	return nil
}

// reusedPiece tells a read of the bytes [off, end) of a spool that reads
// the copy an earlier attempt left (reuseLocked) where the bytes from off
// come from, and up to where: from the copy f when off lies in a range of
// reused whose bytes match its digest (checked, and mended, on first use:
// see reusedRange.check), to that range's end; else from the object, to
// the end of that range, or to end past the ranges. Either way no further
// than end.
func (s *Spool) reusedPiece(f *os.File, reused []*reusedRange, off, end int64) (pieceEnd int64, inCopy bool) {
	r := reusedAt(reused, off)
	if r == nil {
		return end, false
	}
	return min(r.end, end), r.check(s, f)
}

// readReused is ReadAt of a spool that reads the copy an earlier attempt
// left (reuseLocked): the bytes of each range that matches its digest come
// from the copy f, the others from the object.
func (s *Spool) readReused(f *os.File, reused []*reusedRange, p []byte, off int64) (int, error) {
	size := s.obj.Size()
	if off >= size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), size-off)
	var n int64
	for n < want {
		at := off + n
		end, inCopy := s.reusedPiece(f, reused, at, off+want)
		piece := p[n : end-off]
		var m int
		var err error
		if inCopy {
			m, err = f.ReadAt(piece, at)
			if err == io.EOF && m < len(piece) {
				// A copying stream, of this spool or another, checked the
				// copy and cut it at a bad range before this one: the rest
				// of the piece is the object's.
				var k int
				k, err = s.obj.ReadAt(piece[m:], at+int64(m))
				m += k
			}
		} else {
			m, err = s.obj.ReadAt(piece, at)
		}
		n += int64(m)
		if err != nil && !(err == io.EOF && m == len(piece)) {
			return int(n), err
		}
	}
	if int(n) < len(p) {
		return int(n), io.EOF
	}
	return int(n), nil
}

// reusedReader is OpenRange of a spool that reads the copy an earlier
// attempt left (reuseLocked), a range at a time: the bytes of each range
// that matches its digest come from the copy f, checked when the reader
// reaches it, the others from the object, as are those past the ranges.
type reusedReader struct {
	s        *Spool
	f        *os.File
	reused   []*reusedRange
	ctx      context.Context
	off, end int64
	cur      io.ReadCloser // the piece being read, which ends at curEnd
	curEnd   int64
	inCopy   bool // cur reads the copy
}

func (r *reusedReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if r.off >= r.end {
			return 0, io.EOF
		}
		if r.cur == nil {
			r.curEnd, r.inCopy = r.s.reusedPiece(r.f, r.reused, r.off, r.end)
			if r.inCopy {
				r.cur = io.NopCloser(io.NewSectionReader(r.f, r.off, r.curEnd-r.off))
			} else {
				r.cur = r.s.obj.OpenRange(r.ctx, r.off, r.curEnd)
			}
		}
		n, err := r.cur.Read(p[:min(int64(len(p)), r.curEnd-r.off)])
		r.off += int64(n)
		if err == io.EOF && r.off < r.curEnd {
			if !r.inCopy {
				return n, io.ErrUnexpectedEOF
			}
			// A copying stream, of this spool or another, checked the copy
			// and cut it at a bad range before this one: the rest of the
			// piece is the object's.
			r.cur.Close()
			r.cur, r.inCopy, err = r.s.obj.OpenRange(r.ctx, r.off, r.curEnd), false, nil
		} else if err == io.EOF {
			r.cur.Close()
			r.cur, err = nil, nil
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
}

func (r *reusedReader) Close() error {
	if r.cur != nil {
		return r.cur.Close()
	}
	return nil
}

// errReader is a stream that fails with err.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
func (r errReader) Close() error             { return nil }

// follower reads a range from the copy as the copying stream writes it,
// waiting for bytes it has not reached; when that stream ends short of
// them, it reads on as the spool reads otherwise.
type follower struct {
	s        *Spool
	ctx      context.Context
	off, end int64
	rest     io.ReadCloser // the rest of the range, once the copy cannot give it
}

func (r *follower) Read(p []byte) (int, error) {
	s := r.s
	for {
		if r.rest != nil {
			n, err := r.rest.Read(p)
			r.off += int64(n)
			return n, err
		}
		if r.off >= r.end {
			return 0, io.EOF
		}
		s.mu.Lock()
		lim := s.have
		if s.full {
			lim = s.obj.Size()
		}
		if s.f != nil && r.off < lim {
			f := s.f
			s.mu.Unlock()
			n, err := f.ReadAt(p[:min(int64(len(p)), min(lim, r.end)-r.off)], r.off)
			r.off += int64(n)
			if err == io.EOF {
				if err = nil; n == 0 {
					err = io.ErrUnexpectedEOF
				}
			}
			return n, err
		}
		if s.copying {
			err := s.waitLocked(r.ctx)
			s.mu.Unlock()
			if err != nil {
				return 0, err
			}
			continue
		}
		s.mu.Unlock()
		rest, err := s.openRange(r.ctx, r.off, r.end)
		if err != nil {
			return 0, err
		}
		r.rest = rest
	}
}

func (r *follower) Close() error {
	if r.rest != nil {
		return r.rest.Close()
	}
	return nil
}

// Copying returns the spool as a source whose stream from the first byte
// (Open at offset 0) is the object's bytes, copied into the spool as they
// are read, so that one read of an object both hashes it and fills the
// copy the partitions are then read from: what a copy left earlier holds
// (checked against its sums) is read from it, the rest is fetched once.
// Its other reads are the spool's, and a read of bytes the stream has not
// reached waits for them. Only one such stream fills a spool at a time;
// another Open at 0 meanwhile reads as the spool does.
func (s *Spool) Copying() idemtype.Source { return copyingSource{s} }

type copyingSource struct{ *Spool }

func (c copyingSource) Open(ctx context.Context, off int64) (io.ReadCloser, error) {
	if off != 0 {
		return c.Spool.Open(ctx, off)
	}
	return c.copyStream(ctx)
}

func (s *Spool) copyStream(ctx context.Context) (io.ReadCloser, error) {
	ctx = s.ctx(ctx)
	s.mu.Lock()
	if s.full || s.copying || s.gaveUp != nil {
		s.mu.Unlock()
		return s.Open(ctx, 0)
	}
	c, err := s.startCopyLocked(ctx)
	s.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("spool %s: %w", s.obj.url, err)
	}
	if c == nil { // the copy was complete
		return s.Open(ctx, 0)
	}
	return c, nil
}

// startCopyLocked takes the copy for one copying stream: it returns nil
// when the copy, checked, turns out complete.
func (s *Spool) startCopyLocked(ctx context.Context) (*copier, error) {
	unlock, err := s.openLocked(ctx)
	if err != nil {
		return nil, err
	}
	s.reused = nil // verify checks the whole copy, and may cut it
	have, err := s.verify()
	if err != nil {
		unlock()
		return nil, err
	}
	if have == s.obj.Size() {
		unlock()
		s.full, s.have = true, have
		return nil, nil
	}
	end, err := s.sums.Seek(0, io.SeekEnd)
	if err != nil {
		unlock()
		return nil, err
	}
	s.copying, s.have = true, have
	s.notifyLocked()
	return &copier{s: s, ctx: ctx, unlock: unlock, verified: have, recorded: have, sumsEnd: end, h: sha256.New()}, nil
}

// copier is the copying stream: it reads the bytes the copy held from the
// copy, then fetches the rest, writing each byte into the copy before it
// yields it and recording the digest of each range once it is written, in
// ranges of 64 KiB doubling to 16 MiB (as download does).
type copier struct {
	s        *Spool
	ctx      context.Context
	unlock   func() // the file lock; nil once released
	off      int64  // next byte to yield
	verified int64  // bytes the copy held, checked, when the stream began
	recorded int64  // end of the last range whose digest is recorded
	rangeEnd int64
	chunk    int64
	sumsEnd  int64
	h        hash.Hash
	rc       io.ReadCloser // the object, from verified
	writing  bool          // the copy is still being written
	err      error
}

func (c *copier) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	s, size := c.s, c.s.obj.Size()
	if c.off >= size {
		return 0, io.EOF
	}
	if c.off < c.verified {
		n, err := s.f.ReadAt(p[:min(int64(len(p)), c.verified-c.off)], c.off)
		c.off += int64(n)
		if err == io.EOF {
			if err = nil; n == 0 {
				err = io.ErrUnexpectedEOF
			}
		}
		c.err = err
		return n, err
	}
	if c.rc == nil {
		c.rc = s.obj.OpenRange(c.ctx, c.off, size)
		c.chunk = firstWindow
		c.rangeEnd = min(size, c.off+c.chunk)
		c.writing = true
	}
	if rest := c.rangeEnd - c.off; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := c.rc.Read(p)
	if n > 0 && c.writing {
		if werr := c.write(p[:n]); werr != nil {
			if !s.through {
				c.err = fmt.Errorf("spool %s: %w", s.obj.url, werr)
				c.end()
				return 0, c.err
			}
			c.giveUp(werr)
		}
	}
	c.off += int64(n)
	if c.off >= c.rangeEnd && c.off < size {
		c.chunk = min(2*c.chunk, maxWindow)
		c.rangeEnd = min(size, c.off+c.chunk)
	}
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

// write writes b, the bytes at c.off, into the copy, and records the
// range's digest when b ends it; when b is the object's last bytes the
// copy is complete.
func (c *copier) write(b []byte) error {
	s := c.s
	if _, err := s.f.WriteAt(b, c.off); err != nil {
		return err
	}
	c.h.Write(b)
	end := c.off + int64(len(b))
	if end == c.rangeEnd {
		rec := make([]byte, sumsRecord)
		binary.LittleEndian.PutUint64(rec, uint64(c.recorded))
		binary.LittleEndian.PutUint64(rec[8:], uint64(end))
		c.h.Sum(rec[:16])
		if _, err := s.sums.WriteAt(rec, c.sumsEnd); err != nil {
			return err
		}
		c.sumsEnd += sumsRecord
		c.recorded = end
		c.h.Reset()
	}
	complete := end == s.obj.Size()
	if complete {
		if err := s.f.Sync(); err != nil {
			return err
		}
		if err := s.sums.Sync(); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.have = end
	if complete {
		s.full, s.copying = true, false
		c.release()
	}
	s.notifyLocked()
	s.mu.Unlock()
	return nil
}

// giveUp stops writing a read-through copy that could not be written: the
// stream reads on from the object, and the spool's other reads go to the
// object for bytes the copy did not get.
func (c *copier) giveUp(err error) {
	c.writing = false
	s := c.s
	s.mu.Lock()
	s.gaveUp = err
	s.mu.Unlock()
	c.end()
}

// end lets the copy go: the bytes written but not recorded do not count.
func (c *copier) end() {
	s := c.s
	s.mu.Lock()
	if s.copying {
		s.copying = false
		s.have = c.recorded
		s.notifyLocked()
	}
	c.release()
	s.mu.Unlock()
}

func (c *copier) release() {
	if c.unlock != nil {
		c.unlock()
		c.unlock = nil
	}
}

func (c *copier) Close() error {
	c.writing = false
	c.end()
	if c.rc != nil {
		c.rc.Close()
	}
	if c.err == nil {
		c.err = errors.New("read after close")
	}
	return nil
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
	if s.unuse != nil {
		s.unuse()
	}
	if s.f != nil {
		errs = append(errs, s.f.Close())
	}
	if s.sums != nil {
		errs = append(errs, s.sums.Close())
	}
	if s.root != nil {
		errs = append(errs, s.root.Close())
	}
	s.f, s.sums, s.unuse, s.root, s.full, s.have, s.reused = nil, nil, nil, nil, false, 0, nil
	return errors.Join(errs...)
}

// Remove closes the spool and deletes its copy, with its sums file, unless
// another spool, of this process or another, has that copy open (another
// live import of the object, whose own Remove deletes it in turn) or the
// copy under the spool's name is not the one this spool had open (one made
// anew after this one's was swept): those stay, and Remove returns nil. A
// spool that never opened its copy removes, on the same terms, the one an
// earlier attempt left.
func (s *Spool) Remove() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root == nil {
		root, err := openPrivateDir(s.dir)
		if err != nil {
			return err
		}
		s.root = root
	}
	if s.f == nil { // the copy an earlier attempt left, if any
		f, err := s.root.OpenFile(s.name, os.O_RDWR, 0)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
			return errors.Join(err, s.closeLocked())
		}
		s.f = f
		if sums, err := s.root.OpenFile(s.name+".sums", os.O_RDWR, 0); err == nil {
			s.sums = sums
		}
	}
	if s.unuse != nil { // to take it exclusive: Windows converts no lock
		s.unuse()
		s.unuse = nil
	}
	done, cancel := context.WithCancel(context.Background())
	cancel() // one try: every other spool that has the copy open holds it shared
	unlock, err := lockUse(done, s.f, false)
	if err != nil {
		if errors.Is(err, context.Canceled) { // another spool has it open
			err = nil
		}
		return errors.Join(err, s.closeLocked())
	}
	var retry []string
	if named(s.root, s.name, s.f) {
		names := []string{s.name}
		if s.sums != nil && named(s.root, s.name+".sums", s.sums) {
			names = append(names, s.name+".sums")
		}
		for _, name := range names {
			if err := s.root.Remove(name); err != nil {
				retry = append(retry, name) // Windows refuses to remove an open file
			}
		}
	}
	unlock()
	root := s.root
	s.root = nil // kept open for the removal
	errs := []error{s.closeLocked()}
	for _, name := range retry {
		if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, root.Close())
	return errors.Join(errs...)
}
