package main

import (
	"os"
	"syscall"
)

// peakRSS returns the peak resident set size of the finished process in
// KiB; macOS reports it in bytes.
func peakRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss / 1024
	}
	return 0
}
