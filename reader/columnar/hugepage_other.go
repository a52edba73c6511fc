//go:build !linux

package columnar

// adviseHuge does nothing here: only Linux takes the advice (see
// hugepage_linux.go).
func adviseHuge([]byte) {}
