package proc_test

import (
	"errors"
	"os"
)

// stop fails: Windows has no SIGSTOP.
func stop(*os.Process) error { return errors.ErrUnsupported }
