//go:build unix

package testkit

import (
	"os"

	"golang.org/x/sys/unix"
)

// Continue sends SIGCONT to p, which a failpoint stopped.
func Continue(p *os.Process) error { return p.Signal(unix.SIGCONT) }
