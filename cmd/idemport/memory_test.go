package main

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/gcstart"
)

// TestTuneGC: a run bounds its heap with a soft limit and collects less
// often below it, unless GOMEMLIMIT or GOGC say otherwise; either way the
// collector, off while the packages initialised, is on again.
func TestTuneGC(t *testing.T) {
	// Not parallel: it changes the GC settings of the whole test process.
	limit, percent := debug.SetMemoryLimit(-1), debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	t.Cleanup(func() {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(percent)
	})
	reset := func() { // as main finds them: the collector off (see gcstart)
		debug.SetMemoryLimit(1 << 62)
		debug.SetGCPercent(-1)
	}
	current := func() (int64, int) {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return debug.SetMemoryLimit(-1), p
	}

	reset()
	tuneGC(func(string) string { return "" })
	if l, p := current(); l != gcMemoryLimit || p != gcPercent {
		t.Errorf("without GOMEMLIMIT and GOGC: limit %d, GOGC %d; want %d and %d", l, p, gcMemoryLimit, gcPercent)
	}

	reset()
	tuneGC(func(k string) string { return map[string]string{"GOMEMLIMIT": "1GiB", "GOGC": "50"}[k] })
	if l, p := current(); l != 1<<62 || p != gcstart.Percent() || p == -1 {
		t.Errorf("with GOMEMLIMIT and GOGC set: limit %d, GOGC %d; want the limit left alone (%d) and GOGC's setting as the runtime read it (%d)", l, p, int64(1)<<62, gcstart.Percent())
	}
}

// TestMemoryLimit: the soft limit is gcMemoryLimit until the live heap and
// a quarter more pass it, then the live heap and a quarter more (not twice
// it: the heap grows into fresh memory), up to gcMemoryLimitMax.
func TestMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int64
	}{
		{0, gcMemoryLimit},
		{30 << 20, gcMemoryLimit},
		{64<<20 + 1, gcMemoryLimit},
		{100 << 20, gcMemoryLimit},
		{103 << 20, 103<<20 + 103<<18},
		{107 << 20, 107<<20 + 107<<18},
		{200 << 20, 250 << 20},
		{858993459, 1<<30 - 1},
		{858993460, gcMemoryLimitMax},
		{5 << 30, gcMemoryLimitMax},
		{1 << 63, gcMemoryLimitMax},
	} {
		if got := memoryLimit(tc.live); got != tc.want {
			t.Errorf("memoryLimit(%d) = %d, want %d", tc.live, got, tc.want)
		}
	}
}

// TestTuneGCFollowsTheHeap: after tuneGC, a collection that leaves 160 MiB
// live raises the soft limit to at least that and a quarter more, and less
// than twice it, and once they are gone the limit comes back to
// gcMemoryLimit; a limit set by someone else stops the following.
func TestTuneGCFollowsTheHeap(t *testing.T) {
	// Not parallel: it changes the GC settings of the whole test process.
	limit, percent := debug.SetMemoryLimit(-1), debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	t.Cleanup(func() {
		debug.SetMemoryLimit(limit) // which also stops the following
		debug.SetGCPercent(percent)
		runtime.GC()
	})
	// wait collects until cond holds of the limit, for up to 10 seconds.
	wait := func(what string, cond func(int64) bool) {
		t.Helper()
		for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(10 * time.Millisecond) {
			runtime.GC()
			if cond(debug.SetMemoryLimit(-1)) {
				return
			}
		}
		t.Fatalf("%s: the limit is %d", what, debug.SetMemoryLimit(-1))
	}
	tuneGC(func(string) string { return "" })
	held := make([]byte, 160<<20)
	wait("160 MiB live", func(l int64) bool { return l >= 200<<20 && l < 320<<20 })
	runtime.KeepAlive(held)
	held = nil
	wait("160 MiB let go", func(l int64) bool { return l == gcMemoryLimit })

	debug.SetMemoryLimit(gcMemoryLimit + 1) // someone else's
	held = make([]byte, 80<<20)
	runtime.GC()
	runtime.GC()
	time.Sleep(50 * time.Millisecond) // the finalizer's goroutine
	if l := debug.SetMemoryLimit(-1); l != gcMemoryLimit+1 {
		t.Fatalf("a limit set by someone else became %d", l)
	}
	runtime.KeepAlive(held)
}
