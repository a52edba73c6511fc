package pipeline

import (
	"io/fs"
	"path/filepath"
	"syscall"

	"github.com/idemport/idemport/ledger"
)

// fileStat describes a file for the quick check. Where the platform gives
// no inode or change time, they are zero and the check rests on the rest.
func fileStat(host, path string, st fs.FileInfo) ledger.FileStat {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	fs := ledger.FileStat{Host: host, Path: abs, Size: st.Size(), MtimeNs: st.ModTime().UnixNano()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		fs.Inode, fs.Device = sys.Ino, uint64(sys.Dev)
		fs.CtimeNs = sys.Ctim.Sec*1e9 + sys.Ctim.Nsec
	}
	return fs
}
