// Package proc tells whether a process recorded earlier on this host is
// still the same running process, so that a rerun after a crash on the same
// host need not wait for the dead process's leases to expire.
//
// A process is identified by its pid and its start (Start), so that a pid
// the system has since given to another process is not mistaken for the
// one recorded. What the package reads differs by platform: /proc on Linux,
// sysctl kern.proc.pid on macOS, OpenProcess and GetProcessTimes on Windows.
// Elsewhere it can tell nothing, and Gone always answers false.
package proc

// State is what this host says about the process that has a pid now.
type State int

// The states Inspect reports.
const (
	// Unknown: the platform or the process's permissions do not say.
	Unknown State = iota
	// Running: the process exists and is not stopped.
	Running
	// Stopped: the process exists but is stopped (SIGSTOP, or a debugger).
	// Only Linux and macOS report it; see CanTellStopped.
	Stopped
	// Exited: the process has ended, but its entry remains until it is
	// reaped (a zombie), or while someone holds a handle to it (Windows).
	Exited
	// Absent: no process has this pid.
	Absent
)

func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Stopped:
		return "stopped"
	case Exited:
		return "exited"
	case Absent:
		return "absent"
	}
	return "unknown"
}

// Info is what Inspect found: the state of the process with a pid and,
// when it exists, its start (0 if that cannot be read).
type Info struct {
	State State
	// Start identifies when the process started, in the platform's own
	// unit: clock ticks since boot on Linux, microseconds since the Unix
	// epoch on macOS, 100-nanosecond intervals since 1601 on Windows.
	// Values are comparable only on one host.
	Start uint64
}

// Inspect reports the state and start of the process that has pid now.
// A pid of 0 or less is Unknown.
func Inspect(pid int) Info {
	if pid <= 0 {
		return Info{}
	}
	return inspect(pid)
}

// Start returns the start identity of process pid (see Info.Start), or 0
// where it cannot be read.
func Start(pid int) uint64 { return Inspect(pid).Start }

// Gone reports whether the process recorded as pid with start identity
// start (from Start; 0 if unknown) has certainly ended: no process has the
// pid, the one that has it has exited, or it started at another time (the
// pid was reused). It errs on the side of "not gone": when it cannot tell,
// the caller waits for the lease.
func Gone(pid int, start uint64) bool {
	in := Inspect(pid)
	switch in.State {
	case Absent, Exited:
		return true
	case Unknown:
		return false
	}
	return start != 0 && in.Start != 0 && in.Start != start
}

// IsStopped reports whether process pid exists and is stopped. It is
// always false where CanTellStopped is false.
func IsStopped(pid int) bool { return Inspect(pid).State == Stopped }
