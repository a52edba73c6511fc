//go:build unix

package proc_test

import (
	"os"

	"golang.org/x/sys/unix"
)

// stop sends SIGSTOP to p.
func stop(p *os.Process) error { return p.Signal(unix.SIGSTOP) }
