package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// historyLine is what these tests read of a line of history --output json.
type historyLine struct {
	Table    string `json:"table"`
	FileID   string `json:"file_id"`
	File     string `json:"file"`
	Attempts []struct {
		AttemptID string `json:"attempt_id"`
		File      string `json:"file"`
		Outcome   string `json:"outcome"`
	} `json:"attempts_detail"`
}

func history(t *testing.T, tg *testkit.Target, dir string, wantCode int, args ...string) []historyLine {
	t.Helper()
	r := tg.Exec(t, dir, nil, append([]string{"history", "--output", "json"}, args...)...)
	var out []historyLine
	if r.Code != wantCode || decodeLines(r.Stdout, &out) != nil {
		t.Fatalf("history %v: exit %d, want %d\n%s%s", args, r.Code, wantCode, r.Stdout, r.Stderr)
	}
	return out
}

// TestHistoryFindsAMovedFile imports a file from a drop directory, moves
// it to an archive and reruns it there: history still finds the operation
// by the path it had, status shows the last path seen, and a file ID
// prefix finds it when it is unambiguous.
func TestHistoryFindsAMovedFile(t *testing.T) {
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		os.Mkdir(filepath.Join(dir, "drop"), 0o755)
		os.Mkdir(filepath.Join(dir, "archive"), 0o755)
		dropped, archived := "drop/orders-2026-11-26.csv", "archive/orders-2026-11-26.csv"
		testkit.Orders(t, filepath.Join(dir, dropped), 120, 41)
		first := importTo(t, tg, dir, nil, 0, "--table", "orders", "--partition-rows", "50", dropped)
		if err := os.Rename(filepath.Join(dir, dropped), filepath.Join(dir, archived)); err != nil {
			t.Fatal(err)
		}
		for _, arg := range []string{dropped, "./" + dropped, first.FileID[:16]} {
			h := history(t, tg, dir, 0, arg)
			if len(h) != 1 || h[0].FileID != first.FileID || len(h[0].Attempts) != 1 || h[0].Attempts[0].AttemptID != first.AttemptID {
				t.Fatalf("history %s after the move: %+v", arg, h)
			}
		}
		// Rerun from the archive: a duplicate, and the name status shows is
		// the last one seen; the first is still found through its attempt.
		dup := importTo(t, tg, dir, nil, 0, "--table", "orders", "--partition-rows", "50", archived)
		if dup.Outcome != "duplicate" {
			t.Fatalf("rerun from the archive: %+v", dup)
		}
		st := tg.Exec(t, dir, nil, "status")
		if !regexpLine(st.Stdout, `^orders\s+`+archived+`\s+sha256:`) {
			t.Fatalf("status does not show the last path seen:\n%s", st.Stdout)
		}
		if h := history(t, tg, dir, 0, dropped); len(h) != 1 || h[0].File != archived || h[0].Attempts[0].File != dropped {
			t.Fatalf("history %s after the rerun: %+v", dropped, h)
		}
		// A prefix two file IDs share is refused, naming both.
		testkit.Orders(t, filepath.Join(dir, "other.csv"), 10, 42)
		importTo(t, tg, dir, nil, 0, "other.csv")
		amb := tg.Exec(t, dir, nil, "history", "sha256:")
		if amb.Code != 2 || !strings.Contains(amb.Stderr, "sha256: is the start of 2 file IDs") || !strings.Contains(amb.Stderr, first.FileID) {
			t.Fatalf("ambiguous prefix: exit %d\n%s%s", amb.Code, amb.Stdout, amb.Stderr)
		}
		none := tg.Exec(t, dir, nil, "history", "drop/nothing.csv")
		if none.Code != 1 || !strings.Contains(none.Stderr, "no operation for drop/nothing.csv") {
			t.Fatalf("unknown path: exit %d\n%s%s", none.Code, none.Stdout, none.Stderr)
		}
	})
}

// TestOutcomesAgree checks the one vocabulary of outcomes: an attempt
// stopped while it holds its lease is running in history; once killed and
// its lease expired it is died; an interrupted import is interrupted in
// its JSON result and in history.
func TestOutcomesAgree(t *testing.T) {
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		testkit.Orders(t, filepath.Join(dir, "orders.csv"), 300, 43)
		args := []string{"import", "--lease", "2s", "--partition-rows", "100", "orders.csv"}
		run := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit:1:stop"}, args...))
		if h := history(t, tg, dir, 0, "orders.csv"); len(h) != 1 || h[0].Attempts[0].Outcome != "running" {
			t.Fatalf("a stopped attempt holding its lease: %+v", h)
		}
		run.cmd.Process.Signal(syscall.SIGKILL)
		testkit.Wait(t, run.cmd)
		time.Sleep(2100 * time.Millisecond) // its lease expires
		if h := history(t, tg, dir, 0, "orders.csv"); len(h) != 1 || h[0].Attempts[0].Outcome != "died" {
			t.Fatalf("a killed attempt whose lease expired: %+v", h)
		}

		cmd := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=inside-partition:2:stop"},
			"import", "--output", "json", "--partition-rows", "100", "orders.csv")).cmd
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Process.Signal(syscall.SIGCONT)
		r := testkit.Wait(t, cmd)
		rs := parseResults(t, r.Stdout)
		if r.Code != 130 || len(rs) != 1 || rs[0].Outcome != "interrupted" || rs[0].ExitCode != 130 {
			t.Fatalf("interrupted import: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		h := history(t, tg, dir, 0, "orders.csv")
		if len(h) != 1 || len(h[0].Attempts) != 2 || h[0].Attempts[0].Outcome != "died" || h[0].Attempts[1].Outcome != "interrupted" {
			t.Fatalf("history after the interrupt: %+v", h)
		}
	})
}
