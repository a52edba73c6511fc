package failpoint_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/failpoint"
	"github.com/idemport/idemport/internal/proc"
)

// specEnv makes the test binary, run again as a child, pass point
// after-plan three times under the specification it holds, printing a line
// after each pass, instead of running tests.
const specEnv = "IDEMPORT_FAILPOINT_TEST_SPEC"

func TestMain(m *testing.M) {
	if spec, ok := os.LookupEnv(specEnv); ok {
		s, err := failpoint.Parse(spec)
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		for i := 1; i <= 3; i++ {
			if err := s.Hit("after-plan"); err != nil {
				fmt.Println(err)
				os.Exit(3)
			}
			fmt.Printf("passed %d\n", i)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child starts the child with spec; its output goes to a file, which the
// test may read while the child is stopped.
func child(t *testing.T, spec string) (*exec.Cmd, func() string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), specEnv+"="+spec)
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd.Stdout = f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, func() string {
		b, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
}

// killed reports whether the child was ended by the kill action.
func killed(ps *os.ProcessState) bool {
	if runtime.GOOS == "windows" {
		return ps.ExitCode() == failpoint.KilledExitCode
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// TestKillAndError runs a real process through armed failpoints: kill ends
// it at once at the N-th pass (SIGKILL, or TerminateProcess on Windows),
// error makes Hit fail there, and an unarmed pass changes nothing.
func TestKillAndError(t *testing.T) {
	tests := []struct {
		spec, out string
		kill      bool
		code      int
	}{
		{"after-plan", "", true, 0},
		{"after-plan:2", "passed 1\n", true, 0},
		{"after-plan:2:kill", "passed 1\n", true, 0},
		{"after-plan:3:error", "passed 1\npassed 2\ninjected failure at after-plan\n", false, 3},
		{"after-claim", "passed 1\npassed 2\npassed 3\n", false, 0},
		{"after-plan:4", "passed 1\npassed 2\npassed 3\n", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			cmd, out := child(t, tt.spec)
			cmd.Wait()
			if got := killed(cmd.ProcessState); got != tt.kill {
				t.Errorf("killed = %v (%v), want %v", got, cmd.ProcessState, tt.kill)
			}
			if !tt.kill && cmd.ProcessState.ExitCode() != tt.code {
				t.Errorf("exit code %d, want %d", cmd.ProcessState.ExitCode(), tt.code)
			}
			if out() != tt.out {
				t.Errorf("output %q, want %q", out(), tt.out)
			}
		})
	}
}

// TestStop runs a real process into a stop failpoint: it stops at the N-th
// pass, before running on, and goes on where it stopped once continued.
// Where the platform has no SIGSTOP, Parse refuses the stop action.
func TestStop(t *testing.T) {
	if !proc.CanTellStopped {
		_, err := failpoint.Parse("after-plan:stop")
		if err == nil || !strings.Contains(err.Error(), "stop is not supported on "+runtime.GOOS) {
			t.Fatalf("Parse(after-plan:stop) = %v, want stop refused on %s", err, runtime.GOOS)
		}
		return
	}
	cmd, out := child(t, "after-plan:2:stop")
	deadline := time.Now().Add(30 * time.Second)
	for !proc.IsStopped(cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not stop", cmd.Process.Pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Stopped at the second pass: it printed the first line, not the second.
	if got := out(); got != "passed 1\n" {
		t.Fatalf("output while stopped %q, want %q", got, "passed 1\n")
	}
	if err := cont(cmd.Process); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGCONT: %v", err)
	}
	if got, want := out(), "passed 1\npassed 2\npassed 3\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

func TestParseRefusesUnknownPointsAndArguments(t *testing.T) {
	for _, spec := range []string{"after-nothing", "after-plan:0", "after-plan:halt", "after-plan,bogus:1"} {
		if _, err := failpoint.Parse(spec); err == nil {
			t.Errorf("Parse(%q) succeeded", spec)
		}
	}
	if s, err := failpoint.Parse("  "); s != nil || err != nil {
		t.Errorf(`Parse("  ") = %v, %v; want nil, nil (off)`, s, err)
	}
	if err := (*failpoint.Set)(nil).Hit("after-plan"); err != nil {
		t.Errorf("nil Set: Hit = %v", err)
	}
}
