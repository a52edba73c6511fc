package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// commit may be set at build time: go build -ldflags "-X main.commit=$(git rev-parse HEAD)".
var commit = ""

func newVersionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version",
		Example: `  idemport version
  go build -ldflags "-X main.commit=$(git rev-parse HEAD)" ./cmd/idemport   # to stamp the commit`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			_, err := fmt.Fprintln(e.stdout, versionText())
			return err
		},
	}
}

// versionText is what "idemport version" and "idemport --version" print:
// the module version, the commit and the Go version.
func versionText() string {
	version, rev := "(devel)", commit
	if info, ok := debug.ReadBuildInfo(); ok {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && rev == "" {
				rev = s.Value
			}
		}
	}
	if rev == "" {
		rev = "unknown"
	}
	return fmt.Sprintf("idemport %s (commit %s, %s)", version, rev, runtime.Version())
}
