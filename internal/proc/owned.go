package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CreateOwned creates a new file in dir (os.TempDir() when dir is empty),
// as os.CreateTemp does, named prefix-PID-START-RANDOM followed by suffix:
// this process's pid and start (Start), so that SweepOwned can tell later
// that the process which made it is gone. A process killed before it
// removes such a file (a spill, a copy of a stream) leaves it behind; the
// next process to make one of the same kind in the same directory removes
// it.
func CreateOwned(dir, prefix, suffix string) (*os.File, error) {
	pid := os.Getpid()
	return os.CreateTemp(dir, fmt.Sprintf("%s-%d-%d-*%s", prefix, pid, Start(pid), suffix))
}

// SweepOwned removes the files in dir (os.TempDir() when empty) that
// CreateOwned made with prefix and suffix for processes that are Gone. It
// reports nothing: a file it cannot remove stays, as do files of running
// processes, of processes it cannot tell about, and names of another form.
func SweepOwned(dir, prefix, suffix string) {
	if dir == "" {
		dir = os.TempDir()
	}
	names, _ := filepath.Glob(filepath.Join(dir, glob(prefix)+"-*-*-*"+glob(suffix)))
	for _, name := range names {
		rest := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(name), prefix+"-"), suffix)
		parts := strings.SplitN(rest, "-", 3)
		if len(parts) != 3 || !digits(parts[2]) { // os.CreateTemp's random part is a number
			continue
		}
		pid, err1 := strconv.Atoi(parts[0])
		start, err2 := strconv.ParseUint(parts[1], 10, 64)
		if err1 == nil && err2 == nil && pid > 0 && pid != os.Getpid() && Gone(pid, start) {
			os.Remove(name)
		}
	}
}

func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// glob escapes the characters filepath.Match gives a meaning to.
func glob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
