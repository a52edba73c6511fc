//go:build unix

package failpoint_test

import (
	"os"

	"golang.org/x/sys/unix"
)

// cont sends SIGCONT to p.
func cont(p *os.Process) error { return p.Signal(unix.SIGCONT) }
