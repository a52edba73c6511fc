package testkit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/proc"
)

// runner is a package's tests, as Main runs them.
type runner func() int

func (r runner) Run() int { return r() }

// privateTemp points the temporary directory of this process at a fresh
// directory of the test and returns it.
func privateTemp(t *testing.T) string {
	tmp := t.TempDir()
	for _, v := range []string{"TMPDIR", "TMP", "TEMP"} { // TMP and TEMP on Windows
		t.Setenv(v, tmp)
	}
	return tmp
}

// leftIn returns the names of the entries of dir.
func leftIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// fatalTB records the message of a Fatal and ends its goroutine, as
// testing.T does; its other methods are those of the test that made it.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatal(args ...any) { f.msg = fmt.Sprint(args...); runtime.Goexit() }

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatalOf runs f with a fatalTB in a goroutine of its own and returns what
// it failed with ("" if it did not).
func fatalOf(t *testing.T, f func(testing.TB)) string {
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(tb)
	}()
	<-done
	return tb.msg
}

// TestMainRemovesTheBinary: the tests Main runs build the binary once, in
// a directory of its own in the temporary directory, and once they are done
// Main has removed that directory and returns their exit code.
func TestMainRemovesTheBinary(t *testing.T) {
	tmp := privateTemp(t)
	builds := 0
	k := &kit{build: func(path string) error {
		builds++
		return os.WriteFile(path, []byte("a binary"), 0o755)
	}}
	code := k.main(runner(func() int {
		first := k.binary(t)
		if second := k.binary(t); second != first {
			t.Errorf("Binary returned %s, then %s", first, second)
		}
		if _, err := os.Stat(first); err != nil {
			t.Errorf("the binary is not there while the tests run: %v", err)
		}
		if filepath.Dir(filepath.Dir(first)) != tmp {
			t.Errorf("the binary %s is not in a directory of its own in the temporary directory %s", first, tmp)
		}
		return 3
	}))
	if code != 3 {
		t.Errorf("Main returned %d, want the tests' 3", code)
	}
	if builds != 1 {
		t.Errorf("built %d times, want once", builds)
	}
	if left := leftIn(t, tmp); len(left) != 0 {
		t.Fatalf("left behind in the temporary directory after Main: %q", left)
	}
}

// TestMainRemovesAFailedBuild: a build that fails halfway fails each test
// that asks for the binary, and Main still removes what it left.
func TestMainRemovesAFailedBuild(t *testing.T) {
	tmp := privateTemp(t)
	k := &kit{build: func(path string) error {
		if err := os.WriteFile(path, []byte("half a binary"), 0o755); err != nil {
			return err
		}
		return errors.New("go build: the compiler died")
	}}
	code := k.main(runner(func() int {
		for range 2 {
			if msg := fatalOf(t, func(tb testing.TB) { k.binary(tb) }); !strings.Contains(msg, "the compiler died") {
				t.Errorf("Binary with a failed build: failed with %q, want the build's error", msg)
			}
		}
		return 1
	}))
	if code != 1 {
		t.Errorf("Main returned %d, want the tests' 1", code)
	}
	if left := leftIn(t, tmp); len(left) != 0 {
		t.Fatalf("left behind in the temporary directory after a failed build: %q", left)
	}
}

// TestBinaryNeedsMain: without Main, which alone removes it, Binary
// builds nothing and fails the test, saying what to do.
func TestBinaryNeedsMain(t *testing.T) {
	tmp := privateTemp(t)
	builds := 0
	k := &kit{build: func(string) error { builds++; return nil }}
	if msg := fatalOf(t, func(tb testing.TB) { k.binary(tb) }); !strings.Contains(msg, "TestMain must call testkit.Main") {
		t.Errorf("Binary without Main: failed with %q", msg)
	}
	if builds != 0 {
		t.Errorf("built %d times without Main", builds)
	}
	if left := leftIn(t, tmp); len(left) != 0 {
		t.Fatalf("left behind in the temporary directory: %q", left)
	}
}

// TestWaitStoppedSaysAProcessEnded: a process that exits without stopping
// (it never reached its failpoint) fails WaitStopped at once, saying so,
// rather than after stopWait as a process that "did not stop".
func TestWaitStoppedSaysAProcessEnded(t *testing.T) {
	if !proc.CanTellStopped {
		t.Skipf("%s has no SIGSTOP", runtime.GOOS)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	for proc.Inspect(cmd.Process.Pid).State == proc.Running {
		time.Sleep(10 * time.Millisecond)
	}
	msg := fatalOf(t, func(tb testing.TB) { WaitStopped(tb, cmd.Process.Pid) })
	if want := fmt.Sprintf("process %d ended before it stopped", cmd.Process.Pid); msg != want {
		t.Fatalf("WaitStopped failed with %q, want %q", msg, want)
	}
}

// TestQuoteTable: a table name is quoted as the target's driver reads it:
// schema.table on PostgreSQL and MariaDB, a quoted part holding a dot
// kept whole, and one name on SQLite, whose names are not qualified.
func TestQuoteTable(t *testing.T) {
	for _, c := range []struct{ target, name, want string }{
		{Postgres, "items", `"items"`},
		{Postgres, "sales.items", `"sales"."items"`},
		{Postgres, `"a.b".items`, `"a.b"."items"`},
		{Postgres, `sales."snap.items"`, `"sales"."snap.items"`},
		{MariaDB, "`a.b`.items", `"a.b"."items"`},
		{SQLite, "a.b", `"a.b"`},
	} {
		tg := &Target{Name: c.target}
		if got := tg.QuoteTable(t, c.name); got != c.want {
			t.Errorf("%s: QuoteTable(%s) = %s, want %s", c.target, c.name, got, c.want)
		}
	}
}
