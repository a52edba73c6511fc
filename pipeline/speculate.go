package pipeline

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemport/idemport/reader"
)

// speculation is a plan pass started while the file is being hashed, on
// the bytes the hash reads, before the claim says whether a plan is
// needed: for a new file it is, and planning then costs no second read and
// no wait for the hash. When the claim finds a duplicate (or anything but
// a plan to make) the speculation is cancelled, and the run cost one hash.
type speculation struct {
	cancel   context.CancelFunc
	began    time.Time
	done     chan struct{}
	in       planInput // what the pass was told
	file     *reader.File
	plan     *reader.Plan
	spill    *rejectSpill // the pass's bad rows, until result hands them on
	err      error
	progress atomic.Pointer[func(b, rows int64)] // reported once someone waits for the result

	digest  string // the decoded data's digest, when asked for
	scanned bool   // the pass ran, so digest is its answer
	found   bool   // the target table existed as the pass began (planInputs); under mu

	// described is closed once the pass has asked the database about the
	// target table (planInputs), whatever the answer.
	described chan struct{}

	// The partitions the pass finished before its end, as it finished
	// them (reader.ScanOptions.Partitioned), for an overlap to write;
	// cut is signalled after each.
	mu   sync.Mutex
	cuts []reader.Cut
	cut  chan struct{}
}

// maxCuts is how many finished partitions a speculation keeps for an
// overlap: more than an overlap writes within its time (overlapTime).
const maxCuts = 1024

// speculate starts the plan pass on the bytes of sr, or on the file's own
// when sr is nil (an overlap's pass, started by the plan stage of a file
// its hash did not read: see startOverlap). With content set (a
// compressed file) the pass also hashes the data it decodes, which makes
// it the source of the content digest (and the pass then runs on both
// cores from the start, since the claim waits for it anyway).
func (pl *planner) speculate(ctx context.Context, sr *reader.HashRead, content bool) *speculation {
	ctx, cancel := context.WithCancel(ctx)
	sp := &speculation{cancel: cancel, began: time.Now(), done: make(chan struct{}), cut: make(chan struct{}, 1), described: make(chan struct{})}
	go func() {
		defer close(sp.done)
		if sr != nil {
			defer sr.Release() // a lossless hash waits for no plan pass once this one is over
		}
		in, existing, err := pl.planInputs(ctx)
		sp.mu.Lock()
		sp.found = existing != nil
		sp.mu.Unlock()
		close(sp.described)
		if err != nil {
			sp.err = err
			return
		}
		sp.in = in
		var digest func(string)
		if content {
			digest = func(d string) { sp.digest, sp.scanned = d, true }
		}
		sp.file, sp.plan, sp.spill, sp.err = pl.scan(ctx, in, sr, digest, func(b, rows int64) {
			if p := sp.progress.Load(); p != nil {
				(*p)(b, rows)
			}
		}, sp.add)
	}()
	return sp
}

// result waits for the speculative plan pass and returns it, when it ran
// with the types the plan needs now (the target table may have been created
// or changed since it started). It returns a nil file and error when there
// is nothing to use: no speculation, or one with other types. The caller
// owns the spill returned and must close it.
func (sp *speculation) result(in planInput, progress func(b, rows int64)) (*reader.File, *reader.Plan, *rejectSpill, error) {
	if sp == nil {
		return nil, nil, nil, nil
	}
	if progress != nil {
		sp.progress.Store(&progress)
	}
	<-sp.done
	spill := sp.spill
	sp.spill = nil
	if !sp.in.equal(in) {
		spill.close()
		return nil, nil, nil, nil
	}
	return sp.file, sp.plan, spill, sp.err
}

// content waits for the speculative plan pass and returns the digest of
// the data it decoded ("" when the stream could not be decoded to its end),
// with ok false when the pass did not run; err is set when it was cancelled.
func (sp *speculation) content() (digest string, ok bool, err error) {
	if sp == nil {
		return "", false, nil
	}
	<-sp.done
	if sp.scanned && sp.digest == "" {
		var pe *reader.ParseError
		if sp.err != nil && !errors.As(sp.err, &pe) {
			return "", false, sp.err // cancelled, or the file could not be read
		}
	}
	return sp.digest, sp.scanned, nil
}

// add keeps c, a partition the pass finished, for an overlap.
func (sp *speculation) add(c reader.Cut) {
	sp.mu.Lock()
	if len(sp.cuts) < maxCuts {
		sp.cuts = append(sp.cuts, c)
	}
	sp.mu.Unlock()
	select {
	case sp.cut <- struct{}{}:
	default:
	}
}

// waitDescribed waits until the pass has described the target table
// (planInputs), or ctx ends. The identify stage waits so before its next
// statement: while the description holds the pool's one connection, that
// statement would have another connection dialed (on PostgreSQL a server
// process started, its session set up and its caches filled again),
// which takes longer than the description left to run.
func (sp *speculation) waitDescribed(ctx context.Context) {
	if sp == nil {
		return
	}
	select {
	case <-sp.described:
	case <-ctx.Done():
	}
}

// tableFound reports whether the target table existed as the pass began.
func (sp *speculation) tableFound() bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.found
}

// cutAt returns the i-th partition the pass finished, ok false while it
// has not (yet) finished that many.
func (sp *speculation) cutAt(i int) (c reader.Cut, ok bool) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if i < len(sp.cuts) {
		return sp.cuts[i], true
	}
	return reader.Cut{}, false
}

// endsBy reports whether the pass, at the pace it has kept since it
// began, would have read the whole file, of size bytes, by t: the bytes
// its finished partitions end at took the time since it began; one that
// read them all says yes. Before its first partition it knows no pace,
// and says no.
func (sp *speculation) endsBy(t time.Time, size int64) bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if len(sp.cuts) == 0 {
		return false
	}
	last := sp.cuts[len(sp.cuts)-1].Partition
	read := last.Offset + last.Length
	if read >= size {
		return true
	}
	if read <= 0 {
		return false
	}
	now := time.Now()
	left := time.Duration(float64(now.Sub(sp.began)) * float64(size-read) / float64(read))
	return !now.Add(left).After(t)
}

// stop cancels the speculation, if any, and waits for it to end.
func (sp *speculation) stop() {
	if sp != nil {
		sp.cancel()
		<-sp.done
		sp.spill.close()
		sp.spill = nil
	}
}
