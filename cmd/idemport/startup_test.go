package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// initAllocLimit is the most a package of the module may allocate while
// it is initialised. Every run of the command pays for the initialisation
// of every package linked into it, a rerun that the quick check settles
// in a few milliseconds too: a table a package needs only when it writes
// is built when it first writes, or written as a constant.
const initAllocLimit = 4 << 10

// TestPackagesAllocateLittleAtStart runs the command with the runtime's
// initialisation trace (GODEBUG=inittrace=1) and checks that no package
// of the module allocates more than initAllocLimit bytes before main.
func TestPackagesAllocateLittleAtStart(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(testkit.Binary(t), "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("idemport version: %v\n%s", err, stderr.String())
	}
	// A line reads "init PKG @T ms, C ms clock, B bytes, A allocs"; a
	// package with nothing to initialise has none, the runtime always one.
	seen := 0
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 11 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		seen++
		if f[1] != modulePath && !strings.HasPrefix(f[1], modulePath+"/") {
			continue
		}
		n, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		if n > initAllocLimit {
			t.Errorf("%s allocates %d bytes while it is initialised, more than %d: every run pays for them", f[1], n, initAllocLimit)
		}
	}
	if seen == 0 {
		t.Fatalf("no initialisation trace (GODEBUG=inittrace=1):\n%s", stderr.String())
	}
}

// modulePath is the module's path, the prefix of its packages' paths.
const modulePath = "github.com/idemport/idemport"
