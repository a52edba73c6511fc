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
			_, err := fmt.Fprintf(e.stdout, "idemport %s (commit %s, %s)\n", version, rev, runtime.Version())
			return err
		},
	}
}
