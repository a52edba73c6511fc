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
// the module version, the commit and the Go version. A build from a
// checkout carries its commit (vcs.revision, stamped by go build unless
// -buildvcs=false), marked "-dirty" when the checkout had changes not
// committed; main.commit, set at link time, takes precedence.
func versionText() string {
	info, _ := debug.ReadBuildInfo()
	return formatVersion(info, commit, runtime.Version())
}

// formatVersion is versionText of the build info (nil when the binary has
// none), the commit set at link time, and the Go version.
func formatVersion(info *debug.BuildInfo, stamped, goVersion string) string {
	version, rev := "(devel)", stamped
	if info != nil {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		modified := false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if rev == "" {
					rev = s.Value
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if modified && stamped == "" && rev != "" {
			rev += "-dirty"
		}
	}
	if rev == "" {
		rev = "unknown: built without version control information (go build -buildvcs=true from a checkout stamps it)"
	}
	return fmt.Sprintf("idemport %s (commit %s, %s)", version, rev, goVersion)
}
