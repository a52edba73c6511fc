package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestBinaryIsRemovedAfterTheTests runs one end-to-end test of
// cmd/idemport in a go test process of its own, with a temporary directory
// of its own: once that process ends, the binary it built must be gone.
func TestBinaryIsRemovedAfterTheTests(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP in -short: runs go test on cmd/idemport")
	}
	tmp, err := os.MkdirTemp("", "testkit-tmp-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", "test", "-count=1", "-run", "^TestEveryUsageErrorExits2$/^imprt", "./cmd/idemport")
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), "no tests to run") {
		t.Fatalf("go test: %v\n%s", err, out)
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "idemport-bin-") {
			t.Fatalf("the test binary's directory %s was left behind", e.Name())
		}
	}
}
