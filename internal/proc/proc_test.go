package proc_test

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/proc"
)

// childEnv makes the test binary, run again as a child, sleep until killed
// instead of running tests: a real process that the tests kill, stop and
// leave unreaped.
const childEnv = "IDEMPORT_PROC_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child starts a sleeping child process; it is killed and reaped at
// cleanup unless the test reaped it.
func child(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

// await polls until process pid is in state want; a process's state
// changes asynchronously after a signal.
func await(t *testing.T, pid int, want proc.State) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for proc.Inspect(pid).State != want {
		if time.Now().After(deadline) {
			t.Fatalf("process %d is %v, not %v", pid, proc.Inspect(pid).State, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// supported reports whether this platform can tell processes apart.
func supported() bool {
	switch runtime.GOOS {
	case "linux", "darwin", "windows":
		return true
	}
	return false
}

// TestLiveness checks, with real child processes, what Inspect says about
// a process and whether Gone takes the process recorded as (pid, start)
// for ended: it must for a dead, an exited but unreaped or a replaced
// process, and must not for a live or stopped one.
func TestLiveness(t *testing.T) {
	if !supported() {
		t.Skipf("%s: proc cannot tell processes apart", runtime.GOOS)
	}
	tests := []struct {
		name string
		// process returns the pid to look at and the start recorded for it.
		process func(t *testing.T) (pid int, start uint64)
		state   proc.State
		gone    bool
	}{
		{"live", func(t *testing.T) (int, uint64) {
			pid := child(t).Process.Pid
			return pid, proc.Start(pid)
		}, proc.Running, false},
		{"live, start not recorded", func(t *testing.T) (int, uint64) {
			return child(t).Process.Pid, 0
		}, proc.Running, false},
		{"this process", func(t *testing.T) (int, uint64) {
			return os.Getpid(), proc.Start(os.Getpid())
		}, proc.Running, false},
		{"dead and reaped", func(t *testing.T) (int, uint64) {
			cmd := child(t)
			pid, start := cmd.Process.Pid, proc.Start(cmd.Process.Pid)
			cmd.Process.Kill()
			cmd.Wait()
			return pid, start
		}, proc.Absent, true},
		{"exited, not reaped (zombie)", func(t *testing.T) (int, uint64) {
			cmd := child(t)
			pid, start := cmd.Process.Pid, proc.Start(cmd.Process.Pid)
			cmd.Process.Kill()
			await(t, pid, proc.Exited)
			return pid, start
		}, proc.Exited, true},
		{"stopped", func(t *testing.T) (int, uint64) {
			if !proc.CanTellStopped {
				t.Skipf("%s has no stopped processes", runtime.GOOS)
			}
			cmd := child(t)
			if err := stop(cmd.Process); err != nil {
				t.Fatal(err)
			}
			await(t, cmd.Process.Pid, proc.Stopped)
			return cmd.Process.Pid, proc.Start(cmd.Process.Pid)
		}, proc.Stopped, false},
		{"reused pid: the live process started at another time", func(t *testing.T) (int, uint64) {
			pid := child(t).Process.Pid
			return pid, proc.Start(pid) + 1
		}, proc.Running, true},
		{"pid 0", func(t *testing.T) (int, uint64) { return 0, 0 }, proc.Unknown, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pid, start := tt.process(t)
			in := proc.Inspect(pid)
			if in.State != tt.state {
				t.Errorf("Inspect(%d).State = %v, want %v", pid, in.State, tt.state)
			}
			if got := proc.Gone(pid, start); got != tt.gone {
				t.Errorf("Gone(%d, %d) = %v, want %v", pid, start, got, tt.gone)
			}
			if got, want := proc.IsStopped(pid), tt.state == proc.Stopped; got != want {
				t.Errorf("IsStopped(%d) = %v, want %v", pid, got, want)
			}
		})
	}
}

// TestStartTellsProcessesApart checks that two processes, one started after
// the other has ended, have different starts even if the second got the
// first one's pid: the start is what makes a reused pid visible.
func TestStartTellsProcessesApart(t *testing.T) {
	if !supported() {
		t.Skipf("%s: proc cannot tell processes apart", runtime.GOOS)
	}
	first := child(t)
	s1 := proc.Start(first.Process.Pid)
	first.Process.Kill()
	first.Wait()
	// Start times have a coarse unit on Linux (clock ticks, usually 10ms).
	time.Sleep(50 * time.Millisecond)
	second := child(t)
	s2 := proc.Start(second.Process.Pid)
	if s1 == 0 || s2 == 0 || s2 <= s1 {
		t.Fatalf("starts %d then %d: want both known and increasing", s1, s2)
	}
	if !proc.Gone(second.Process.Pid, s1) {
		t.Errorf("Gone(%d, %d) = false for a process that started at %d", second.Process.Pid, s1, s2)
	}
}
