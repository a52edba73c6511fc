//go:build !linux && !darwin && !windows

package pipeline

import "io/fs"

// fileID knows no file identity on this platform.
func fileID(string, fs.FileInfo) (inode, device uint64, ctimeNs int64) { return 0, 0, 0 }
