package gcstart

import "runtime/debug"

// percent is the collector's setting when this package was initialised:
// GOGC's, or Go's default of 100.
var percent = debug.SetGCPercent(-1)

// Percent returns the garbage collector's setting as the runtime had it
// before this package turned the collector off (GOGC's, or Go's default):
// the command sets it again, or its own, first thing in main.
func Percent() int { return percent }
