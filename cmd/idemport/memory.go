package main

import (
	"runtime/debug"

	"github.com/idemport/idemport/internal/gcstart"
)

// The garbage collector's settings for a run, unless the environment sets
// its own (GOGC, GOMEMLIMIT). With Go's defaults the heap grows to twice
// what is live before it is collected: a plan pass holding the key hashes
// of ten million rows (80 MB, and as much again while repeats are found)
// peaked at 420 MiB of RSS, and peaks at 225 MiB with these settings. A
// soft limit keeps the heap near gcMemoryLimit instead, and because the
// limit bounds the heap, collections may be rarer below it (gcPercent): an
// import of a million rows spends less time collecting. The limit is
// soft: a run whose live data is larger (the key hashes of a keyed file of
// more than about 8 million rows, while repeats are found) grows past it
// and collects more often, rather than failing; those hashes hold no
// pointers, so each collection stays cheap.
const (
	gcMemoryLimit = 128 << 20 // bytes
	gcPercent     = 400
)

// tuneGC applies the settings above where getenv leaves them unset. The
// collector is off when it is called (package gcstart turned it off while
// the packages initialised): it is turned on again, with GOGC's setting
// when GOGC is set.
func tuneGC(getenv func(string) string) {
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(gcMemoryLimit)
	}
	percent := gcPercent
	if getenv("GOGC") != "" {
		percent = gcstart.Percent() // GOGC's, as the runtime read it
	}
	debug.SetGCPercent(percent)
}
