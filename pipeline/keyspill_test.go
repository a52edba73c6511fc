package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/proc"
	"github.com/idemport/idemport/internal/testkit"
)

// TestKeySpillGoesToSpoolDir: the plan pass of a keyed file that holds
// fewer key hashes than it has rows spills them into Request.SpoolDir,
// created when missing, never into the system's temporary directory
// (here a regular file, so that a spill there fails the run), and leaves
// nothing behind; a SpoolDir that cannot be used fails the run naming it
// and --spool-dir. (ops' TestVerifySpillsToSpoolDir: verify's plan pass
// too.)
func TestKeySpillGoesToSpoolDir(t *testing.T) {
	f := newFx(t, testkit.SQLite)
	ctx := context.Background()
	var csv strings.Builder
	csv.WriteString("id,qty,name\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&csv, "%d,%d,item %d\n", i, i, i)
	}
	for i := 1; i <= 10; i++ { // later rows of the same keys supersede these
		fmt.Fprintf(&csv, "%d,%d,item %d again\n", i, 100+i, i)
	}
	path := f.write(t, "items.csv", csv.String())
	notDir := f.write(t, "not-a-dir", "")
	t.Setenv("TMPDIR", notDir)
	req := Request{Path: path, Mapping: Mapping{Table: "items", Key: []string{"id"}}, KeysHeld: 4}

	bad := req
	bad.SpoolDir, bad.Mapping.Table = notDir, "bad"
	res := f.e.Import(ctx, bad)
	if res.Outcome != Failed || res.Err == nil || !strings.Contains(res.Err.Error(), notDir) || !strings.Contains(res.Err.Error(), "--spool-dir") {
		t.Fatalf("SpoolDir a regular file: %s (%v), want a failure naming %s and --spool-dir", res.Outcome, res.Err, notDir)
	}
	if got := f.rows(t, `SELECT state FROM `+f.tg.Ledger("operations")+` WHERE table_name = 'bad'`); len(got) != 0 {
		t.Fatalf("the failed run left operations %v", got)
	}

	req.SpoolDir = filepath.Join(f.dir, "spool")
	f.wantOutcome(t, f.e.Import(ctx, req), Imported)
	got := f.rows(t, `SELECT COUNT(*), SUM(qty) FROM items`)
	if fmt.Sprint(got) != fmt.Sprint([][]any{{"40", "1820"}}) { // 820 - 55 + 1055
		t.Fatalf("rows: %v, want 40 with qty summing to 1820", got)
	}
	st, err := os.Stat(req.SpoolDir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("spool directory: %v %v, want mode 0700", st, err)
	}
	if left, _ := os.ReadDir(req.SpoolDir); len(left) != 0 {
		t.Fatalf("left in the spool directory: %v", left)
	}
}

// TestBadRowSpillGoesToSpoolDir: the bad rows a plan pass cannot hold in
// memory go to a file in Request.SpoolDir, as the key hashes do, never into
// the system's temporary directory (here a regular file, so that a spill
// there fails the run); the file is gone when the import ends. A SpoolDir
// that cannot be used fails, before the pass, only an import whose limit
// lets more bad rows in than the spill holds in memory: as a usage error
// naming it and --spool-dir, with nothing written and no operation left.
func TestBadRowSpillGoesToSpoolDir(t *testing.T) {
	f := newFx(t, testkit.SQLite)
	ctx := context.Background()
	notDir := f.write(t, "not-a-dir", "")
	t.Setenv("TMPDIR", notDir)
	many := spillHeld + 5
	req := Request{Path: f.write(t, "mostly.csv", allBad(many, 3)), MaxRejects: RejectLimit{Percent: 100}}

	few := Request{Path: f.write(t, "few.csv", allBad(2, 3)), MaxRejects: RejectLimit{Count: spillHeld - 1}, SpoolDir: notDir}
	f.wantOutcome(t, f.e.Import(ctx, few), Imported) // held in memory: the directory is not needed

	bad := req
	bad.SpoolDir = notDir
	res := f.e.Import(ctx, bad)
	var usage *UsageError
	if res.Outcome != Failed || !errors.As(res.Err, &usage) || !strings.Contains(res.Err.Error(), notDir) || !strings.Contains(res.Err.Error(), "--spool-dir") {
		t.Fatalf("SpoolDir a regular file: %s (%v), want a usage error naming %s and --spool-dir", res.Outcome, res.Err, notDir)
	}
	if f.tg.TableExists(t, "mostly") {
		t.Fatalf("the failed pass created its table")
	}
	if got := f.rows(t, `SELECT table_name, state FROM `+f.tg.Ledger("operations")+` WHERE table_name = 'mostly'`); len(got) != 0 {
		t.Fatalf("the failed run left operations %v", got)
	}

	req.SpoolDir = filepath.Join(f.dir, "spool")
	res = f.e.Import(ctx, req)
	f.wantOutcome(t, res, Imported)
	if res.Rows.Rejected != int64(many) || res.Rows.Inserted != 3 {
		t.Fatalf("imported %+v, want %d bad rows and 3 inserted", res.Rows, many)
	}
	q := `SELECT count(*), count(DISTINCT ordinal), sum(ordinal) FROM ` + f.tg.Ledger("rejects") + ` WHERE table_name = 'mostly'`
	if got, want := fmt.Sprint(f.rows(t, q)), fmt.Sprint([][]any{{many, many, many * (many + 1) / 2}}); got != want {
		t.Errorf("quarantine: %s, want %s", got, want)
	}
	if left, err := os.ReadDir(req.SpoolDir); err != nil || len(left) != 0 {
		t.Fatalf("left in the spool directory: %v (%v)", left, err)
	}
}

// TestSpillsOfKilledPassesAreSwept: the spill files a plan pass killed
// before it could remove them (key hashes, their partitions, bad rows) are
// removed by the next pass that spills into the same directory, and only
// those of processes that are gone: a live process's stay.
func TestSpillsOfKilledPassesAreSwept(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil || proc.Start(os.Getpid()) == 0 {
		t.Skip("needs sleep(1) and a platform that tells processes apart")
	}
	f := newFx(t, testkit.SQLite)
	ctx := context.Background()
	spool := filepath.Join(f.dir, "spool")
	if err := os.Mkdir(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	killed := exec.Command(sleep, "60")
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	pid, start := killed.Process.Pid, proc.Start(killed.Process.Pid)
	killed.Process.Kill()
	killed.Wait()
	live := fmt.Sprintf("idemport-keys-%d-%d-1", os.Getppid(), proc.Start(os.Getppid()))
	for _, name := range []string{"idemport-keys", "idemport-keyparts", "idemport-rejects"} {
		if err := os.WriteFile(filepath.Join(spool, fmt.Sprintf("%s-%d-%d-1", name, pid, start)), []byte("left"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(spool, live), []byte("live"), 0o600); err != nil {
		t.Fatal(err)
	}

	var csv strings.Builder
	csv.WriteString("id,qty\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&csv, "%d,%d\n", i, i)
	}
	keyed := Request{Path: f.write(t, "items.csv", csv.String()), Mapping: Mapping{Key: []string{"id"}}, KeysHeld: 4, SpoolDir: spool}
	f.wantOutcome(t, f.e.Import(ctx, keyed), Imported)
	bad := Request{Path: f.write(t, "mostly.csv", allBad(spillHeld+1, 1)), MaxRejects: RejectLimit{Percent: 100}, SpoolDir: spool}
	f.wantOutcome(t, f.e.Import(ctx, bad), Imported)

	entries, err := os.ReadDir(spool)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if fmt.Sprint(left) != fmt.Sprint([]string{live}) {
		t.Fatalf("left in the spool directory: %v, want only the live process's %s", left, live)
	}
}
