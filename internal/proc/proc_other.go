//go:build !linux && !darwin && !windows

package proc

// CanTellStopped is true where Inspect reports stopped processes.
const CanTellStopped = false

// inspect knows no way to ask on this platform.
func inspect(int) Info { return Info{} }
