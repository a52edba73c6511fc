package main

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/idemport/idemport/internal/gcstart"
	"github.com/idemport/idemport/internal/testkit"
)

// TestMain turns the collector on again, as main does (see gcstart), with
// the test process's own setting.
func TestMain(m *testing.M) {
	debug.SetGCPercent(gcstart.Percent())
	os.Exit(testkit.Main(m))
}
