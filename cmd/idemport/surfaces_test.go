package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

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
	t.Parallel()
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
// stopped while it holds its lease is stopped in history; once killed,
// holding no partition, it is died; an interrupted import is interrupted
// in its JSON result and in history. (TestStatusJudgesHolders: killed
// while holding a partition, it is gone until a rerun takes it over.)
func TestOutcomesAgree(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		testkit.Orders(t, filepath.Join(dir, "orders.csv"), 1000, 43)
		args := []string{"import", "--lease", "10m", "--partition-rows", "100", "orders.csv"}
		run := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit:1:stop"}, args...))
		if h := history(t, tg, dir, 0, "orders.csv"); len(h) != 1 || h[0].Attempts[0].Outcome != "stopped" {
			t.Fatalf("a stopped attempt holding its lease: %+v", h)
		}
		run.cmd.Process.Signal(syscall.SIGKILL)
		testkit.Wait(t, run.cmd)
		expireLeases(t, tg) // its lease runs out
		if h := history(t, tg, dir, 0, "orders.csv"); len(h) != 1 || h[0].Attempts[0].Outcome != "died" {
			t.Fatalf("a killed attempt whose lease expired: %+v", h)
		}

		cmd := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=inside-partition:2:stop"},
			"import", "--output", "json", "--partition-rows", "100", "orders.csv")).cmd
		cmd.Process.Signal(syscall.SIGINT)
		testkit.Continue(cmd.Process)
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

// TestMessagesSayWhatToDoNext runs each way an import can stop short and
// compares what it says with a golden file: every message names the file,
// what is wrong and the command or flag that moves the user on.
func TestMessagesSayWhatToDoNext(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		os.WriteFile(filepath.Join(dir, "items.csv"), []byte("id,qty\n1,5\n2,five\n3,7\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "wide.csv"), []byte("id,qty,colour\n1,5,red\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "one.csv"), []byte("id,qty\n1,5\n"), 0o644)
		testkit.Orders(t, filepath.Join(dir, "orders.csv"), 300, 44)
		var out strings.Builder
		step := func(wantCode int, args ...string) {
			t.Helper()
			r := tg.Exec(t, dir, nil, args...)
			if r.Code != wantCode {
				t.Fatalf("%v: exit %d, want %d\n%s%s", args, r.Code, wantCode, r.Stdout, r.Stderr)
			}
			fmt.Fprintf(&out, "$ idemport %s\n%s%s[exit %d]\n", strings.Join(args, " "), r.Stdout, r.Stderr, r.Code)
		}
		step(0, "import", "one.csv")
		step(5, "import", "--column", "qty:int64", "items.csv")
		step(0, "rejects", "list", "items.csv")
		step(3, "import", "--key", "id", "one.csv")
		// A table that does not fit the file: refused, nothing written,
		// and nothing remembered, so that the file imports once it fits.
		step(5, "import", "--table", "one", "wide.csv")
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("operations")+` WHERE file_path = 'wide.csv'`); n != 0 {
			t.Fatalf("%d operations left for a file refused for its table", n)
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM one`); n != 1 {
			t.Fatalf("one holds %d rows after the refusal, want 1", n)
		}
		if _, err := tg.DB.Exec(`ALTER TABLE one ADD COLUMN colour TEXT`); err != nil {
			t.Fatal(err)
		}
		step(0, "import", "--table", "one", "wide.csv")
		step(1, "import", "nodir/")
		holder := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=after-claim:1:stop"}, "import", "--partition-rows", "100", "orders.csv"))
		step(4, "import", "--partition-rows", "100", "orders.csv")
		holder.cmd.Process.Signal(syscall.SIGKILL)
		testkit.Wait(t, holder.cmd)
		golden(t, "messages.txt", out.String())
	})
}

// TestMissingSchemaIsAUsageError imports into schema.table on PostgreSQL
// where the schema does not exist: exit 2 naming it, and no operation left
// in the ledger.
func TestMissingSchemaIsAUsageError(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.Postgres)
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.Postgres, dir)
	os.WriteFile(filepath.Join(dir, "one.csv"), []byte("id,qty\n1,5\n"), 0o644)
	r := tg.Exec(t, dir, nil, "import", "--table", "nosuch_"+tg.Schema+".one", "one.csv")
	if r.Code != 2 || !strings.Contains(r.Stdout, `no such schema "nosuch_`+tg.Schema+`"`) || !strings.Contains(r.Stdout, "CREATE SCHEMA") {
		t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("operations")); n != 0 {
		t.Fatalf("%d operations left behind", n)
	}
	if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("attempts")); n != 0 {
		t.Fatalf("%d attempts left behind", n)
	}
}

// TestTableOfThreePartsIsAUsageError imports with --table a.b.c on
// PostgreSQL and MariaDB: exit 2, a line naming the flag and the name,
// and no operation left in the ledger.
func TestTableOfThreePartsIsAUsageError(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.Postgres, testkit.MariaDB}, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		os.WriteFile(filepath.Join(dir, "one.csv"), []byte("id,qty\n1,5\n"), 0o644)
		r := tg.Exec(t, dir, nil, "import", "--table", "a.b.c", "one.csv")
		if r.Code != 2 || !strings.Contains(r.Stdout, "--table a.b.c: it has 3 parts; a table name is table or schema.table") {
			t.Fatalf("exit %d, want 2 naming --table a.b.c\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("operations")); n != 0 {
			t.Fatalf("%d operations left behind", n)
		}
	})
}

// TestLogsCarryPathAndError reads the JSON log of a refused import: it
// names the file and says why.
func TestLogsCarryPathAndError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "items.csv"), []byte("id,qty\n1,5\n2,five\n"), 0o644)
	r := testkit.Exec(t, dir, nil, "import", "--log-format", "json", "--column", "qty:int64", "items.csv")
	var logs []map[string]any
	if err := decodeLines(r.Stderr, &logs); err != nil || r.Code != 5 {
		t.Fatalf("exit %d, log %v\n%s", r.Code, err, r.Stderr)
	}
	for _, l := range logs {
		if l["msg"] == "refused" {
			if l["file"] != "items.csv" || !strings.Contains(fmt.Sprint(l["error"]), `row 2 column "qty" value "five"`) {
				t.Fatalf("refused log line: %v", l)
			}
			return
		}
	}
	t.Fatalf("no refused line in the log:\n%s", r.Stderr)
}
