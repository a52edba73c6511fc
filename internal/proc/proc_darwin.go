package proc

import (
	"errors"

	"golang.org/x/sys/unix"
)

// CanTellStopped is true where Inspect reports stopped processes.
const CanTellStopped = true

// Process states of struct extern_proc's p_stat (<sys/proc.h>).
const (
	sSTOP = 4
	sZOMB = 5
)

// inspect asks kill(pid, 0) whether the pid exists and sysctl
// kern.proc.pid for its state and start time.
func inspect(pid int) Info {
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return Info{State: Absent}
	}
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return Info{}
	}
	in := Info{State: Running}
	switch k.Proc.P_stat {
	case sZOMB:
		in.State = Exited
	case sSTOP:
		in.State = Stopped
	}
	t := k.Proc.P_starttime
	in.Start = uint64(t.Sec)*1e6 + uint64(t.Usec)
	return in
}
