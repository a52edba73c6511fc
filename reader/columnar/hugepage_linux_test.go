//go:build linux

package columnar

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/idemport/idemport/reader/internal/input"
)

// TestAdviseHuge: the whole huge pages of a large buffer are advised into
// transparent huge pages (their mapping's VmFlags in /proc/self/smaps carry
// "hg"), and so are those of the bytes a row group's load reads.
func TestAdviseHuge(t *testing.T) {
	buf := make([]byte, 6<<20)
	adviseHuge(buf)
	checkHuge(t, "a 6 MiB buffer", buf)

	data := make([]byte, 12<<20)
	f := &File{File: &input.File{In: &memSource{data: data}, Path: "mem.parquet"}}
	ld := &loaded{size: int64(len(data))}
	if _, err := ld.load(f, "row group 0", []span64{{off: 1 << 20, len: 1 << 20}, {off: 3 << 20, len: 8 << 20}}, 0); err != nil {
		t.Fatal(err)
	}
	checkHuge(t, "a loaded 8 MiB column chunk", ld.ranges[1].data)
}

// checkHuge fails t unless the first whole huge page of buf is advised
// into transparent huge pages.
func checkHuge(t *testing.T, what string, buf []byte) {
	t.Helper()
	p := uintptr(unsafe.Pointer(&buf[0]))
	inner := (p + hugePage - 1) &^ (hugePage - 1)
	flags, err := vmFlags(inner)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("the mapping of %s's first whole huge page has VmFlags %q, without hg", what, flags)
	}
}

// vmFlags returns the VmFlags of the mapping of this process that holds
// address a.
func vmFlags(a uintptr) (string, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") {
			in = a >= lo && a < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmFlags:")), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("no mapping holds %#x", a)
}
