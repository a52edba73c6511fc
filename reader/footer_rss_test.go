//go:build linux

package reader

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// childEnv names the file TestOpenColumnarChild opens, in a process of its
// own, for BenchmarkHostileColumnarRSS.
const childEnv = "IDEMPORT_TEST_OPEN_COLUMNAR"

// TestOpenColumnarChild opens and plans the file named by childEnv, when
// it is set: the process BenchmarkHostileColumnarRSS measures.
func TestOpenColumnarChild(t *testing.T) {
	path := os.Getenv(childEnv)
	if path == "" {
		t.Skip("run by BenchmarkHostileColumnarRSS")
	}
	f, err := OpenPath(path, Options{})
	if err == nil {
		_, err = f.Scan(t.Context(), ScanOptions{})
	}
	t.Log(err)
	// The high-water mark of this process's memory since it was executed:
	// its rusage would also count the parent's, which it was forked from.
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if kib, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fmt.Printf("peak-rss-kib %s\n", strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kib), "kB")))
		}
	}
}

// BenchmarkHostileColumnarRSS opens each hostile columnar file of
// footer_test.go in a process of its own and reports the process's peak
// resident set size (peak-RSS-MiB, its VmHWM), which must stay under
// 300 MiB. The
// baseline is the same process opening a small valid Parquet file.
//
//	go test ./reader -run='^$' -bench=HostileColumnarRSS -benchtime=1x
func BenchmarkHostileColumnarRSS(b *testing.B) {
	files := hostileColumnarFiles(b, b.TempDir(), true)
	base := writeParquet(b, "base.parquet", commonSpecs(), 100, 10, true)
	files = append([]hostileColumnar{{name: "baseline: a small valid Parquet file", path: base}}, files...)
	for _, h := range files {
		b.Run(h.name, func(b *testing.B) {
			var peak int64
			for range b.N {
				cmd := exec.Command(os.Args[0], "-test.run=^TestOpenColumnarChild$", "-test.v")
				cmd.Env = append(os.Environ(), childEnv+"="+h.path)
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				var kib int64
				if i := bytes.Index(out, []byte("peak-rss-kib ")); i < 0 {
					b.Fatalf("no peak RSS in\n%s", out)
				} else if _, err := fmt.Sscan(string(out[i+len("peak-rss-kib "):]), &kib); err != nil {
					b.Fatal(err)
				}
				peak = max(peak, kib)
			}
			b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
			if peak > 300<<10 {
				b.Errorf("peak RSS %d MiB, want under 300", peak>>10)
			}
		})
	}
}
