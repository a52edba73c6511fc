// Package proc tells whether a process recorded earlier on this host is
// still the same running process, so that a rerun after a crash on the same
// host need not wait for the dead process's leases to expire.
package proc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Start returns an identity of process pid's start: its start time in clock
// ticks since boot on Linux. It returns 0 where that cannot be read.
func Start(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	// Fields after the command name, which is in parentheses and may hold
	// spaces; starttime is field 22 of the whole line.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0
	}
	n, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// zombie reports whether process pid has exited but not been reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// Gone reports whether the process recorded as pid with start identity
// start (from Start; 0 if unknown) has certainly ended. It errs on the side
// of "not gone": when it cannot tell, the caller waits for the lease.
func Gone(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return true
	}
	if zombie(pid) {
		return true // exited; its parent has not reaped it yet
	}
	if start != 0 {
		if now := Start(pid); now != 0 && now != start {
			return true // the pid was reused by another process
		}
	}
	return false
}
