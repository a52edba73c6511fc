package proc

import (
	"errors"

	"golang.org/x/sys/windows"
)

// CanTellStopped is true where Inspect reports stopped processes. Windows
// has no SIGSTOP and reports no stopped state.
const CanTellStopped = false

// inspect opens the process: a pid no process has fails with
// ERROR_INVALID_PARAMETER; an open process object may have exited (its pid
// is not reused while a handle to it is open). GetProcessTimes gives its
// creation time.
func inspect(pid int) Info {
	if uint64(pid) > 1<<32-1 {
		return Info{State: Absent}
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.SYNCHRONIZE, false, uint32(pid))
	if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		return Info{State: Absent}
	}
	if err != nil {
		return Info{} // access denied: it exists, but says no more
	}
	defer windows.CloseHandle(h)
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return Info{}
	}
	in := Info{State: Running, Start: uint64(created.HighDateTime)<<32 | uint64(created.LowDateTime)}
	if ev, err := windows.WaitForSingleObject(h, 0); err == nil && ev == windows.WAIT_OBJECT_0 {
		in.State = Exited
	}
	return in
}
