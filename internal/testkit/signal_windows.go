package testkit

import (
	"errors"
	"os"
)

// Continue fails: Windows has no SIGSTOP, so no failpoint stopped p (tests
// that stop a process skip in WaitStopped).
func Continue(*os.Process) error { return errors.ErrUnsupported }
