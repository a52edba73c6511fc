package failpoint

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// canStop is true where the stop action exists.
const canStop = true

// kill sends SIGKILL to the calling thread, which ends the process.
func kill() { signalSelf(unix.SIGKILL) }

// stop sends SIGSTOP to the calling thread, which stops the process.
func stop() error { return signalSelf(unix.SIGSTOP) }

// signalSelf sends sig to the calling thread, which then takes part in the
// stop or exit before it runs another instruction of the program: a signal
// sent to the process could be taken by another thread while this one runs
// on into the next transaction.
func signalSelf(sig unix.Signal) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Tgkill(unix.Getpid(), unix.Gettid(), sig); err != nil {
		return fmt.Errorf("failpoint: send %v to self: %w", sig, err)
	}
	return nil
}
