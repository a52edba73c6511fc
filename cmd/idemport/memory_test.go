package main

import (
	"runtime/debug"
	"testing"

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
