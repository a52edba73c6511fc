package failpoint

import (
	"errors"

	"golang.org/x/sys/windows"
)

// canStop is false: Windows has no SIGSTOP.
const canStop = false

// kill ends the process at once, as SIGKILL does: TerminateProcess runs no
// deferred function, no exit handler and no DLL detach code.
func kill() { windows.TerminateProcess(windows.CurrentProcess(), KilledExitCode) }

// stop is refused by Parse on Windows; should it be reached, it fails.
func stop() error { return errors.New("failpoint: stop is not supported on windows") }
