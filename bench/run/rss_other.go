//go:build !linux && !darwin

package main

import "os"

// peakRSS is not measured on this platform: it reports 0.
func peakRSS(*os.ProcessState) int64 { return 0 }
