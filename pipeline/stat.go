package pipeline

import (
	"io/fs"
	"path/filepath"

	"github.com/idemport/idemport/ledger"
)

// fileStat describes a file for the quick check. The file's identity and
// change time come from what the platform offers (fileID): where it gives
// none, they are zero and the check rests on the rest.
func fileStat(host, path string, st fs.FileInfo) ledger.FileStat {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	fs := ledger.FileStat{Host: host, Path: abs, Size: st.Size(), MtimeNs: st.ModTime().UnixNano()}
	fs.Inode, fs.Device, fs.CtimeNs = fileID(path, st)
	return fs
}
