//go:build unix

package remote

import (
	"os"
	"syscall"
)

// privateModes says a directory's mode bits tell who may enter it.
const privateModes = true

// ownedByMe reports whether this process's user owns the file.
func ownedByMe(st os.FileInfo) bool {
	s, ok := st.Sys().(*syscall.Stat_t)
	return !ok || int(s.Uid) == os.Getuid()
}
