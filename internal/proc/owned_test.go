package proc_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/idemport/idemport/internal/proc"
)

// TestSweepOwned: SweepOwned removes the files of its kind whose process
// has ended, and nothing else: not this process's, not a live process's,
// not another kind's (a longer prefix, another suffix) of the dead process,
// not a name of another form.
func TestSweepOwned(t *testing.T) {
	if !supported() {
		t.Skipf("%s: proc cannot tell processes apart", runtime.GOOS)
	}
	dir := t.TempDir()
	live, dead := child(t), child(t)
	name := func(prefix string, pid int, suffix string) string {
		start := proc.Start(pid)
		if start == 0 {
			t.Fatalf("no start for process %d", pid)
		}
		return fmt.Sprintf("%s-%d-%d-123%s", prefix, pid, start, suffix)
	}
	gone := name("idemport-keys", dead.Process.Pid, "")
	kept := []string{
		name("idemport-keys", dead.Process.Pid, ".spool"),
		name("idemport-keys-part", dead.Process.Pid, ""),
		name("idemport-keys", live.Process.Pid, ""),
		"idemport-keys-x-y-z",
		"stdin-1-2-3.spool",
	}
	for _, n := range append([]string{gone}, kept...) {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mine, err := proc.CreateOwned(dir, "idemport-keys", "")
	if err != nil {
		t.Fatal(err)
	}
	mine.Close()
	kept = append(kept, filepath.Base(mine.Name()))
	dead.Process.Kill()
	dead.Wait()
	await(t, dead.Process.Pid, proc.Absent)

	proc.SweepOwned(dir, "idemport-keys", "")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(got)
	slices.Sort(kept)
	if !slices.Equal(got, kept) {
		t.Errorf("left %v, want %v", got, kept)
	}
}
