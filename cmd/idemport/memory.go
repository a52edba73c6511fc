package main

import (
	"runtime"
	"runtime/debug"
	runtimemetrics "runtime/metrics"

	"github.com/idemport/idemport/internal/gcstart"
)

// The garbage collector's settings for a run, unless the environment sets
// its own (GOGC, GOMEMLIMIT). With Go's defaults the heap grows to twice
// what is live before it is collected: a plan pass holding the key hashes
// of ten million rows (80 MB, and as much again while repeats are found)
// peaked at 420 MiB of RSS, and peaks at 225 MiB with these settings. A
// soft limit keeps the heap near gcMemoryLimit instead, and because the
// limit bounds the heap, collections may be rarer below it (gcPercent): an
// import of a million rows spends less time collecting.
//
// The limit follows what a run holds (memoryLimit): a file that needs
// nearly all of gcMemoryLimit live, such as a Parquet file of one large row
// group (whose column chunks are held in memory while the group is
// decoded: 107 MB for a million orders rows stored plain) or an Arrow IPC
// file of one record batch (108 MB), would keep the heap at the limit and
// collect all the time, a third of its CPU time; the limit is raised to
// the heap left live by the last collection and a quarter more
// (gcHeadroom), up to gcMemoryLimitMax, and comes down again with it, so
// that a CSV file imported after such a file keeps its small heap. The
// headroom is a quarter, not Go's whole live heap: what such a file holds
// live is mostly bytes without pointers, cheap to mark, while every byte
// the heap grows by is fresh memory to fault in. With twice the live heap
// the import of the Arrow JS file collected twice and wrote every output
// batch into fresh memory (21k page faults); with a quarter it collects
// seven times, for milliseconds, and faults 9k times. Past
// gcMemoryLimitMax the limit stays there and the heap grows past it (the
// limit is soft), collecting more often, rather than failing.
const (
	gcMemoryLimit    = 128 << 20 // bytes
	gcMemoryLimitMax = 1 << 30   // bytes
	gcPercent        = 400
	gcHeadroom       = 4 // the limit is live + live/gcHeadroom
)

// memoryLimit returns the soft limit for a heap of which live bytes
// survived the last collection: gcMemoryLimit, or live and a
// gcHeadroom'th of it more when that is more, at most gcMemoryLimitMax.
func memoryLimit(live uint64) int64 {
	if live >= gcMemoryLimitMax-gcMemoryLimitMax/(gcHeadroom+1) {
		return gcMemoryLimitMax
	}
	return max(gcMemoryLimit, int64(live)+int64(live)/gcHeadroom)
}

// tuneGC applies the settings above where getenv leaves them unset. The
// collector is off when it is called (package gcstart turned it off while
// the packages initialised): it is turned on again, with GOGC's setting
// when GOGC is set.
func tuneGC(getenv func(string) string) {
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(gcMemoryLimit)
		followHeap()
	}
	percent := gcPercent
	if getenv("GOGC") != "" {
		percent = gcstart.Percent() // GOGC's, as the runtime read it
	}
	debug.SetGCPercent(percent)
}

// gcCycle is an object that the next collection finds unreachable; its
// finalizer runs after it, once per collection. Its pointer keeps it out
// of the tiny allocator, whose objects share a block and may never be
// finalized.
type gcCycle struct{ _ *gcCycle }

// followHeap sets the soft limit to memoryLimit of the live heap after
// every collection, until the limit is found set by someone else (who
// then owns it: a test restoring its own).
func followHeap() {
	sample := []runtimemetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	set := debug.SetMemoryLimit(-1)
	var arm func()
	arm = func() {
		runtime.SetFinalizer(&gcCycle{}, func(*gcCycle) {
			if debug.SetMemoryLimit(-1) != set {
				return
			}
			runtimemetrics.Read(sample)
			if sample[0].Value.Kind() == runtimemetrics.KindUint64 {
				set = memoryLimit(sample[0].Value.Uint64())
				debug.SetMemoryLimit(set)
			}
			arm()
		})
	}
	arm()
}
