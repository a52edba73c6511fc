package pipeline

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/reader"
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

// checkSource fails with an error wrapping reader.ErrSourceChanged when the
// file is no longer as it was identified: another size, modification or
// change time, or another inode (appended, truncated or replaced). It is
// called after the plan pass and before each partition commits; each
// partition's bytes are also checked against the plan as they are read.
func (r *run) checkSource() error {
	if r.obj != nil {
		return r.checkRemote()
	}
	if r.stream != nil {
		return nil // a private copy, which nothing else writes
	}
	st, err := os.Stat(r.req.Path)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", reader.ErrSourceChanged, r.req.Path, err)
	}
	now := fileStat(r.stat.Host, r.req.Path, st)
	if now != r.stat {
		return fmt.Errorf("%w: %s is no longer as it was when this run began (size %d, now %d; modified %s, now %s)",
			reader.ErrSourceChanged, r.req.Path, r.stat.Size, now.Size,
			time.Unix(0, r.stat.MtimeNs).UTC().Format(time.RFC3339Nano), time.Unix(0, now.MtimeNs).UTC().Format(time.RFC3339Nano))
	}
	return nil
}
