package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
