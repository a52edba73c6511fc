package pgtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/proc"
)

// TestSkipToldOncePerRun: the skip message reaches the terminal once for
// all the test binaries of one go test run, again for the next run, and
// the marker of a run that ended is removed.
func TestSkipToldOncePerRun(t *testing.T) {
	dir := t.TempDir()
	tty := filepath.Join(dir, "tty")
	if err := os.WriteFile(tty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ended := filepath.Join(dir, "idemport-pgtest-skipped-999999999-1")
	if err := os.WriteFile(ended, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		b, err := os.ReadFile(tty)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "the PostgreSQL tests were skipped: "+Env+" is not set")
	}
	run := os.Getpid()
	for range 3 { // three packages' binaries of one run
		tell(dir, run, tty)
	}
	if n := count(); n != 1 {
		t.Fatalf("told %d times in one run, want 1", n)
	}
	tell(dir, os.Getppid(), tty) // the next run
	if n := count(); n != 2 {
		t.Fatalf("told %d times in two runs, want 2", n)
	}
	if _, err := os.Stat(ended); proc.Inspect(run).State != proc.Unknown && !os.IsNotExist(err) {
		t.Fatalf("the marker of a run that ended is still there: %v", err)
	}
}

// TestREADMEGivesTheSkipCommand: the README's first run shows the skip
// message with the command that runs the PostgreSQL tests too, as tell
// prints it (RunAll, its -timeout included).
func TestREADMEGivesTheSkipCommand(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\n  "+RunAll+"\n") {
		t.Fatalf("README.md does not show the command the skip message gives:\n  %s", RunAll)
	}
}
