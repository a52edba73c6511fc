package main

import (
	"os"
	"syscall"
)

// peakRSS returns the peak resident set size of the finished process in
// KiB, the unit Linux reports it in.
func peakRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss
	}
	return 0
}
