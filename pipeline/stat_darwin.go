package pipeline

import (
	"io/fs"
	"syscall"
)

// fileID returns the file's inode, device and change time (nanoseconds
// since the Unix epoch) from the stat that gave st.
func fileID(_ string, st fs.FileInfo) (inode, device uint64, ctimeNs int64) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0
	}
	return sys.Ino, uint64(uint32(sys.Dev)), sys.Ctimespec.Sec*1e9 + sys.Ctimespec.Nsec
}
