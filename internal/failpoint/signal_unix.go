//go:build unix && !linux

package failpoint

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// canStop is true where the stop action exists.
const canStop = true

// kill sends SIGKILL to the process.
func kill() { signalSelf(unix.SIGKILL) }

// stop sends SIGSTOP to the process.
func stop() error { return signalSelf(unix.SIGSTOP) }

// signalSelf sends sig to the process; there is no portable way to aim it
// at the calling thread. SIGKILL and SIGSTOP act on the whole process, and
// a signal a process sends itself takes effect before kill returns to it
// (POSIX; on macOS the stop suspends every thread of the task).
func signalSelf(sig unix.Signal) error {
	if err := unix.Kill(unix.Getpid(), sig); err != nil {
		return fmt.Errorf("failpoint: send %v to self: %w", sig, err)
	}
	return nil
}
