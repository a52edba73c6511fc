//go:build linux

package columnar

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of an x86-64 or arm64 transparent huge page.
const hugePage = 2 << 20

// adviseHuge asks the kernel to back the whole huge pages inside buf, a
// buffer not yet written, with transparent huge pages (madvise
// MADV_HUGEPAGE), so that filling it faults once per 2 MiB instead of
// once per 4 KiB. On this kind of virtual machine a page fault costs more
// than the bytes it maps: reading a 108 MB record batch into fresh memory
// took 26,600 faults and 0.29 s of system time, and 530 faults and
// 0.04-0.17 s with the advice. It is advice only: where transparent huge
// pages are off, or the memory was touched before, nothing changes, and an
// error is ignored. The Go heap holds buf as ever; memory the runtime
// reuses there for other objects simply stays in huge pages.
func adviseHuge(buf []byte) {
	if len(buf) < 2*hugePage {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	start := (p + hugePage - 1) &^ (hugePage - 1)
	end := (p + uintptr(len(buf))) &^ (hugePage - 1)
	if end <= start {
		return
	}
	_ = syscall.Madvise(buf[start-p:end-p], syscall.MADV_HUGEPAGE)
}
