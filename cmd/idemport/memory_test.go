package main

import (
	"runtime/debug"
	"testing"
)

// TestTuneGC: a run bounds its heap with a soft limit and collects less
// often below it, unless GOMEMLIMIT or GOGC say otherwise.
func TestTuneGC(t *testing.T) {
	// Not parallel: it changes the GC settings of the whole test process.
	limit, percent := debug.SetMemoryLimit(-1), debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	t.Cleanup(func() {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(percent)
	})
	reset := func() {
		debug.SetMemoryLimit(1 << 62)
		debug.SetGCPercent(100)
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
	if l, p := current(); l != 1<<62 || p != 100 {
		t.Errorf("with GOMEMLIMIT and GOGC set: limit %d, GOGC %d; want both left alone (%d, 100)", l, p, int64(1)<<62)
	}
}
