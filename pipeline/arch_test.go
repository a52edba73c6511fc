package pipeline

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportDirection guards the architecture: the leaf packages (reader,
// sink, ledger, checkpoint) do not import each other or anything above
// them, nor does the event sink package (internal/notify), the sink dialects import only package sink among the leaves, and
// nothing but the command imports pipeline.
func TestImportDirection(t *testing.T) {
	const mod = "github.com/idemport/idemport/"
	forbidden := map[string][]string{
		"reader":          {"sink", "ledger", "checkpoint", "pipeline", "cmd/idemport"},
		"sink":            {"reader", "ledger", "checkpoint", "pipeline", "cmd/idemport"},
		"sink/sqlite":     {"reader", "ledger", "checkpoint", "pipeline", "cmd/idemport"},
		"sink/postgres":   {"reader", "ledger", "checkpoint", "pipeline", "cmd/idemport"},
		"ledger":          {"reader", "sink", "checkpoint", "pipeline", "cmd/idemport"},
		"checkpoint":      {"reader", "sink", "ledger", "pipeline", "cmd/idemport"},
		"pipeline":        {"cmd/idemport"},
		"internal/notify": {"reader", "sink", "ledger", "checkpoint", "pipeline", "cmd/idemport"},
	}
	for pkg, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		deps := map[string]bool{}
		for _, d := range strings.Fields(string(out)) {
			deps[strings.TrimPrefix(d, mod)] = true
		}
		for _, b := range bad {
			if deps[b] {
				t.Errorf("%s imports %s", pkg, b)
			}
		}
	}
}
