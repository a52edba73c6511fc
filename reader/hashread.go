package reader

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"sync"

	"github.com/idemport/idemport/idemtype"
)

// HashRead is the one-pass hash and plan: it reads a file's source once to
// hash its stored bytes, and lets one plan pass (ScanOptions.Shared) read
// the same bytes. The hasher never waits for the plan pass: each chunk it
// reads is handed to the plan pass if the plan pass has room for it, and
// dropped otherwise; the plan pass reads what it missed itself (by ReadAt,
// from the page cache for a local file) once it catches up. So a rerun that
// turns out to be a duplicate costs one hash of the file, and a first
// import does not pay for hashing and planning one after the other.
//
// A source whose every read is a request to a server (a remote object,
// see [RequestSource]) is read losslessly instead: the hasher waits for the
// plan pass rather than drop a chunk, since a dropped chunk would be
// downloaded again, until the plan pass is gone (its reader closed, or
// [HashRead.Release]).
type HashRead struct {
	chunks   chan chunk
	free     chan []byte // buffers the plan pass is done with, for the hasher to reuse
	digest   chan digestResult
	hashed   chan struct{} // closed when the hasher is done
	src      idemtype.Source
	lossless bool
	gone     chan struct{} // closed by Release
	goneOnce sync.Once
}

// RequestSource is a Source each read of which is a request to a server,
// as a remote object's are: the one-pass hash hands it to the plan pass
// losslessly. RequestSource's method only marks it.
type RequestSource interface {
	idemtype.Source
	ReadsAreRequests()
}

// Release says no plan pass reads the hash's bytes any more (or none
// will): the hasher hands over no more chunks, and a lossless one stops
// waiting for the plan pass. It may be called more than once.
func (s *HashRead) Release() { s.goneOnce.Do(func() { close(s.gone) }) }

type chunk struct {
	off int64
	b   []byte
}

type digestResult struct {
	digest string
	err    error
}

const (
	sharedChunk = 1 << 20 // a RequestSource's chunk, and the largest of any other source
	sharedAhead = 8       // chunks the plan pass may lag behind before the hasher stops handing them over
)

// localChunk returns the chunk of a source of n bytes that is not a
// RequestSource: a fortieth of it, from 64 KiB to sharedChunk. The hasher
// makes a new buffer for each chunk it hands over until the plan pass
// gives one back, and the plan pass lags: in 1 MiB chunks a 10 MB file
// was hashed into 10 MB of memory the process had not touched before, a
// quarter of a 100,000-row import's page faults. A chunk the plan pass
// misses costs it a read from the page cache instead, which in 256 KiB
// chunks cost the import of a 107 MB file more than the faults they saved
// (client CPU 1.04x, 10 pairs): a large file keeps 1 MiB chunks.
func localChunk(n int64) int { return int(min(sharedChunk, max(64<<10, n/40))) }

// StartHashRead starts hashing src in a goroutine; progress, if set, is
// called with the bytes hashed so far. Cancelling ctx stops the hash.
func StartHashRead(ctx context.Context, src idemtype.Source, progress func(int64)) (*HashRead, error) {
	f, err := src.Open(ctx, 0)
	if err != nil {
		return nil, err
	}
	path := src.Name()
	_, lossless := src.(RequestSource)
	s := &HashRead{chunks: make(chan chunk, sharedAhead), free: make(chan []byte, sharedAhead+2),
		digest: make(chan digestResult, 1), hashed: make(chan struct{}), src: src, lossless: lossless, gone: make(chan struct{})}
	go func() {
		defer close(s.hashed)
		defer f.Close()
		defer close(s.chunks)
		h := sha256.New()
		var off int64
		size := sharedChunk
		if !s.lossless {
			size = localChunk(src.Size())
		}
		buf := make([]byte, size)
		for {
			if err := ctx.Err(); err != nil {
				s.digest <- digestResult{err: err}
				return
			}
			n, err := io.ReadFull(f, buf)
			if n > 0 {
				h.Write(buf[:n])
				handed := false
				if s.lossless {
					select {
					case s.chunks <- chunk{off: off, b: buf[:n]}:
						handed = true
					case <-s.gone: // no plan pass reads it
					case <-ctx.Done():
					}
				} else {
					select {
					case <-s.gone: // no plan pass reads it
					default:
						select {
						case s.chunks <- chunk{off: off, b: buf[:n]}:
							handed = true
						default: // the plan pass is behind: it reads this range itself
						}
					}
				}
				if handed {
					// The plan pass owns the buffer it took; take one it
					// gave back, or a new one.
					select {
					case buf = <-s.free:
					default:
						buf = make([]byte, size)
					}
				}
				off += int64(n)
				if progress != nil {
					progress(off)
				}
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				s.digest <- digestResult{digest: HashText(h)}
				return
			}
			if err != nil {
				s.digest <- digestResult{err: fmt.Errorf("hash %s: %w", path, err)}
				return
			}
		}
	}()
	return s, nil
}

// Digest waits for the digest of the stored bytes ("sha256:" and hex).
func (s *HashRead) Digest() (string, error) {
	r := <-s.digest
	s.digest <- r // later callers get it too
	return r.digest, r.err
}

// Hashed returns a channel closed when the hasher is done.
func (s *HashRead) Hashed() <-chan struct{} { return s.hashed }

// reader returns the file's bytes, from its first, for the plan pass: the
// chunks the hasher handed over, and the ranges it did not, read from the
// source. Only one reader may be taken. The caller must Close it.
func (s *HashRead) reader() *followReader {
	return &followReader{f: s.src, chunks: s.chunks, free: s.free, done: s.Release}
}

// followReader yields a file's bytes in order from chunks read by another
// goroutine, filling the gaps between them from its own handle.
type followReader struct {
	f       io.ReaderAt
	chunks  <-chan chunk
	free    chan<- []byte
	done    func() // tells the hasher the plan pass is gone
	held    []byte // the buffer cur is in, given back when yielded
	off     int64  // next byte to yield
	cur     []byte // rest of the chunk being yielded
	pending *chunk // a chunk ahead of off, kept while the gap before it is read
	closed  bool   // the hasher is done: read the rest from the file
}

func (r *followReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		next := r.pending
		r.pending = nil
		if next == nil && !r.closed {
			c, ok := <-r.chunks
			if !ok {
				r.closed = true
			} else {
				next = &c
			}
		}
		if next == nil { // no chunk will come for this range
			n, err := r.f.ReadAt(p, r.off)
			r.off += int64(n)
			if err == io.EOF && n > 0 {
				err = nil
			}
			return n, err
		}
		end := next.off + int64(len(next.b))
		switch {
		case end <= r.off: // already yielded from the file
		case next.off > r.off: // a gap before it
			r.pending = next
			n, err := r.f.ReadAt(p[:min(int64(len(p)), next.off-r.off)], r.off)
			r.off += int64(n)
			if err == io.EOF && n > 0 {
				err = nil
			}
			return n, err
		default:
			r.cur = next.b[r.off-next.off:]
			r.held = next.b
		}
		if len(r.cur) == 0 {
			r.release(next)
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	r.off += int64(n)
	if len(r.cur) == 0 && r.held != nil {
		r.give(r.held)
		r.held = nil
	}
	return n, nil
}

// release gives back a chunk's buffer that will not be yielded from.
func (r *followReader) release(c *chunk) {
	if c != nil && r.pending != c {
		r.give(c.b)
	}
}

func (r *followReader) give(b []byte) {
	select {
	case r.free <- b[:cap(b)]:
	default:
	}
}

// Close lets the hasher run on unhindered.
func (r *followReader) Close() error {
	r.done()
	go func() { // drain, so the hasher never blocks on a full channel
		for range r.chunks {
		}
	}()
	return nil
}
