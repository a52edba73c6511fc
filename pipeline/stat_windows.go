package pipeline

import (
	"io/fs"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// fileBasicInfo is FILE_BASIC_INFO, which GetFileInformationByHandleEx
// fills for class FileBasicInfo. Times are 100-nanosecond intervals since
// 1601.
type fileBasicInfo struct {
	CreationTime, LastAccessTime, LastWriteTime, ChangeTime int64
	FileAttributes                                          uint32
	_                                                       uint32
}

// epoch1601 is the Unix epoch in 100-nanosecond intervals since 1601.
const epoch1601 = 116444736000000000

// fileID returns the file's index, the serial number of its volume and its
// change time (nanoseconds since the Unix epoch; NTFS keeps it, FAT does
// not), read from a handle to the file: Windows's stat gives none of them.
// Whatever cannot be read is zero.
func fileID(path string, _ fs.FileInfo) (index, volume uint64, ctimeNs int64) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, 0
	}
	defer f.Close()
	h := windows.Handle(f.Fd())
	var bh windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &bh); err == nil {
		index = uint64(bh.FileIndexHigh)<<32 | uint64(bh.FileIndexLow)
		volume = uint64(bh.VolumeSerialNumber)
	}
	var bi fileBasicInfo
	if err := windows.GetFileInformationByHandleEx(h, windows.FileBasicInfo, (*byte)(unsafe.Pointer(&bi)), uint32(unsafe.Sizeof(bi))); err == nil && bi.ChangeTime != 0 {
		ctimeNs = (bi.ChangeTime - epoch1601) * 100
	}
	return index, volume, ctimeNs
}
