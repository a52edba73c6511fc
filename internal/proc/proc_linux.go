package proc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// CanTellStopped is true where Inspect reports stopped processes.
const CanTellStopped = true

// inspect asks kill(pid, 0) whether the pid exists (so an unreadable /proc
// never makes a live process look absent) and /proc/PID/stat for its state
// and start time.
func inspect(pid int) Info {
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return Info{State: Absent}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Info{}
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces and parentheses: the state is field 3 of the whole line,
	// the start time in clock ticks since boot field 22.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Info{}
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return Info{}
	}
	in := Info{State: Running}
	switch f[0] {
	case "Z", "X":
		in.State = Exited
	case "T", "t":
		in.State = Stopped
	}
	in.Start, _ = strconv.ParseUint(f[19], 10, 64)
	return in
}
