package failpoint_test

import (
	"errors"
	"os"
)

// cont fails: Windows has no SIGSTOP, so nothing stopped p.
func cont(*os.Process) error { return errors.ErrUnsupported }
