package pipeline

import (
	"bufio"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/idemport/idemport/internal/proc"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/reader/remote"
)

// spillDir returns where the plan pass spills what (the key hashes of a
// keyed file, reader.ScanOptions.TempDir; the bad rows past the first
// spillHeld, rejectSpill) when it may not hold them in memory, which
// spills says: SpoolDir, created 0700 when missing, or "" (os.TempDir())
// when the pass spills nothing of the kind or there is no SpoolDir. A
// SpoolDir that cannot be used fails the run, as it fails a stream's copy,
// rather than falling back to a temporary directory that may be held in
// memory: identify asks first (checkSpillDirs), so that it fails before an
// operation is claimed.
func (q *Request) spillDir(what string, spills bool) (string, error) {
	if !spills || q.SpoolDir == "" {
		return "", nil
	}
	if err := remote.PrivateDir(q.SpoolDir); err != nil {
		return "", &UsageError{Err: fmt.Errorf("spill %s: %w", what, err)}
	}
	return q.SpoolDir, nil
}

// keySpillDir is spillDir for the key hashes of a keyed file.
func (q *Request) keySpillDir() (string, error) {
	return q.spillDir("key hashes", len(q.Mapping.Key) > 0)
}

// rejectSpillDir is spillDir for bad rows, which a pass moves to a file
// only when its limit lets more of them in than it holds in memory.
func (q *Request) rejectSpillDir() (string, error) {
	return q.spillDir("bad rows", q.MaxRejects.Percent > 0 || q.MaxRejects.Count >= spillHeld)
}

// checkSpillDirs fails with spillDir's usage error when the plan pass of q
// may spill into a SpoolDir that cannot be used.
func (q *Request) checkSpillDirs() error {
	if _, err := q.keySpillDir(); err != nil {
		return err
	}
	_, err := q.rejectSpillDir()
	return err
}

// spillHeld is how many bad rows a spill holds in memory before it moves
// them to a temporary file, and how many it hands on at a time.
const spillHeld = 1024

// rejectSpill receives every bad row of a plan pass (reader.ScanOptions.Spill)
// so that the plan can be admitted with all of them quarantined while the
// pass holds none: the first spillHeld stay in memory, the rest go with them
// to a temporary file in dir, removed by close. With a limit on their
// count, the rows past the first over it are dropped: the file is refused
// then, and a refusal lists only the first few (Plan.Rejects).
type rejectSpill struct {
	limit RejectLimit
	dir   string // where the temporary file goes: Request.rejectSpillDir's
	n     int64  // rows received
	held  []reader.Reject
	f     *os.File
	w     *bufio.Writer
	enc   *gob.Encoder
}

func newRejectSpill(limit RejectLimit, dir string) *rejectSpill {
	return &rejectSpill{limit: limit, dir: dir}
}

// add takes one bad row, in file order.
func (s *rejectSpill) add(r reader.Reject) error {
	s.n++
	if s.limit.Percent <= 0 && s.n > s.limit.Count+1 {
		return nil // the file is over its limit: nothing more to store
	}
	if s.f == nil && len(s.held) < spillHeld {
		s.held = append(s.held, r)
		return nil
	}
	if s.f == nil {
		proc.SweepOwned(s.dir, "idemport-rejects", "") // what killed passes left
		f, err := proc.CreateOwned(s.dir, "idemport-rejects", "")
		if err != nil {
			return fmt.Errorf("spill bad rows: %w", err)
		}
		s.f, s.w = f, bufio.NewWriterSize(f, 1<<20)
		s.enc = gob.NewEncoder(s.w)
		for _, h := range s.held {
			if err := s.enc.Encode(&h); err != nil {
				return fmt.Errorf("spill bad rows: %w", err)
			}
		}
		s.held = nil
	}
	if err := s.enc.Encode(&r); err != nil {
		return fmt.Errorf("spill bad rows to %s: %w", s.f.Name(), err)
	}
	return nil
}

// each calls fn with the rows received, in order, at most spillHeld at a
// time; the slice is reused.
func (s *rejectSpill) each(fn func([]reader.Reject) error) error {
	if s == nil {
		return nil
	}
	if s.f == nil {
		for rs := s.held; len(rs) > 0; rs = rs[min(len(rs), spillHeld):] {
			if err := fn(rs[:min(len(rs), spillHeld)]); err != nil {
				return err
			}
		}
		return nil
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("spill bad rows to %s: %w", s.f.Name(), err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	defer s.f.Seek(0, io.SeekEnd)
	dec := gob.NewDecoder(bufio.NewReaderSize(s.f, 1<<20))
	batch := make([]reader.Reject, 0, spillHeld)
	for {
		var r reader.Reject
		err := dec.Decode(&r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read spilled bad rows from %s: %w", s.f.Name(), err)
		}
		if batch = append(batch, r); len(batch) == spillHeld {
			if err := fn(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		return fn(batch)
	}
	return nil
}

// close removes the spill's file, if any.
func (s *rejectSpill) close() {
	if s == nil || s.f == nil {
		return
	}
	s.f.Close()
	os.Remove(s.f.Name())
	s.f = nil
}
