package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestDryRunExitsAsTheImportWould walks the decision table with
// import --dry-run before each import: the dry run's JSON says what the
// import would do (would) and its exit code, it exits with that code, and
// the import that follows has that outcome and exits with that code. The
// text never says an import would create a file it would refuse.
func TestDryRunExitsAsTheImportWould(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		testkit.Orders(t, filepath.Join(dir, "orders.csv"), 300, 95)
		testkit.Orders(t, filepath.Join(dir, "held.csv"), 300, 96)
		os.WriteFile(filepath.Join(dir, "items.csv"), []byte("id,qty\n1,5\n2,five\n3,7\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "v2.csv"), []byte("id,qty\n1,6\n"), 0o644)

		// step dry-runs args, then imports them, and checks both.
		step := func(what, would, outcome string, code int, args ...string) {
			t.Helper()
			dry := tg.Exec(t, dir, nil, append([]string{"import", "--dry-run", "-o", "json"}, args...)...)
			var rep struct {
				Would    string `json:"would"`
				ExitCode int    `json:"exit_code"`
			}
			if err := json.Unmarshal([]byte(dry.Stdout), &rep); err != nil || dry.Code != code || rep.Would != would || rep.ExitCode != code {
				t.Fatalf("%s: dry run exit %d, %+v (%v); want would %s, exit %d\n%s%s", what, dry.Code, rep, err, would, code, dry.Stdout, dry.Stderr)
			}
			text := tg.Exec(t, dir, nil, append([]string{"import", "--dry-run"}, args...)...)
			if text.Code != code || !strings.Contains(text.Stdout, "an import would: "+would) {
				t.Fatalf("%s: dry run text exit %d, want %d and would %s\n%s%s", what, text.Code, code, would, text.Stdout, text.Stderr)
			}
			if strings.Contains(text.Stdout, "refused") && would != "refuse" {
				t.Fatalf("%s: the dry run says refused but would %s:\n%s", what, would, text.Stdout)
			}
			if res := importTo(t, tg, dir, nil, code, args...); res.Outcome != outcome {
				t.Fatalf("%s: the import: %+v, want %s", what, res, outcome)
			}
		}

		step("a new file", "import", "imported", 0, "--partition-rows", "100", "orders.csv")
		step("the same file again", "duplicate", "duplicate", 0, "--partition-rows", "100", "orders.csv")
		step("too recent for --min-age", "skip", "skipped", 0, "--min-age", "1d", "--table", "recent", "orders.csv")
		step("bad rows", "refuse", "refused", exitRefused, "--column", "qty:int64", "items.csv")
		// The dry run says why in the import's words (the refusal's line).
		dry := tg.Exec(t, dir, nil, "import", "--dry-run", "--column", "qty:int64", "--table", "items_new", "items.csv")
		real := tg.Exec(t, dir, nil, "import", "--column", "qty:int64", "--table", "items_new", "items.csv")
		why := `1 of 3 rows is bad (at most 0 allowed); row 2 column "qty" value "five": not a valid int64`
		if !strings.Contains(dry.Stdout, "an import would: refuse (create): "+why+"\n") || !strings.Contains(real.Stdout, "refused: "+why) {
			t.Fatalf("a new file with bad rows: the dry run:\n%s\nthe import:\n%s", dry.Stdout, real.Stdout)
		}
		step("bad rows within --max-rejects", "import", "imported", 0, "--column", "qty:int64", "--max-rejects", "1", "--table", "items2", "items.csv")
		step("refused before", "refuse", "refused", exitRefused, "--column", "qty:int64", "items.csv")
		os.Rename(filepath.Join(dir, "v2.csv"), filepath.Join(dir, "items-v2.csv"))
		importTo(t, tg, dir, nil, 0, "--file-id", "v", "--table", "v", "items-v2.csv")
		os.WriteFile(filepath.Join(dir, "items-v2.csv"), []byte("id,qty\n1,7\n"), 0o644)
		step("the same file ID, other content", "conflict", "conflict", exitConflict, "--file-id", "v", "--table", "v", "items-v2.csv")

		// A run stopped holding the planning lease: busy.
		held := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=after-claim:stop"}, "import", "--partition-rows", "100", "held.csv")).cmd
		step("held by a live run", "busy", "busy", exitBusy, "--partition-rows", "100", "held.csv")
		held.Process.Signal(syscall.SIGKILL)
		testkit.Wait(t, held)
		// Killed: a rerun takes over and resumes.
		step("left by a killed run", "resume", "resumed", 0, "--partition-rows", "100", "held.csv")
	})
}
