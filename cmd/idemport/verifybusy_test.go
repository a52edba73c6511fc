package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestVerifyWhileImporting verifies a file while another process imports
// it (frozen holding its only partition, its lease valid): verify says it
// is busy, naming the holder, with a next: line, and exits 4 — not a
// difference (exit 1) — in text and JSON, and writes nothing. Once the
// holder finishes, verify finds the import complete and exact.
func TestVerifyWhileImporting(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		want := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 50, 41)
		holder := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=after-partition-claim:stop"}, "import", "orders.csv"))
		attempt := attemptOf(t, tg, holder.cmd.Process.Pid)
		before := tg.Snapshot(t)

		v := tg.Exec(t, dir, nil, "verify", "orders.csv")
		if v.Code != 4 || !strings.Contains(v.Stdout, "orders.csv: busy: attempt "+attempt+" (") ||
			!strings.Contains(v.Stdout, "holds every unfinished partition") || strings.Contains(v.Stdout, "DIFFERS") ||
			!regexpLine(v.Stdout, `^  next: verify it again once that import ends: idemport verify .*orders\.csv$`) {
			t.Fatalf("verify during the import: exit %d\n%s%s", v.Code, v.Stdout, v.Stderr)
		}
		j := tg.Exec(t, dir, nil, "verify", "--output", "json", "orders.csv")
		var rep struct {
			State       string   `json:"state"`
			Busy        string   `json:"busy"`
			Differences []string `json:"differences"`
			Next        string   `json:"next"`
		}
		if err := json.Unmarshal([]byte(j.Stdout), &rep); err != nil {
			t.Fatalf("verify --output json: exit %d: %v\n%s%s", j.Code, err, j.Stdout, j.Stderr)
		}
		if j.Code != 4 || rep.State != "processing" || !strings.Contains(rep.Busy, attempt) || len(rep.Differences) != 0 || !strings.HasPrefix(rep.Next, "verify it again") {
			t.Fatalf("verify --output json during the import: exit %d %+v", j.Code, rep)
		}
		if d := before.Diff(tg.Snapshot(t)); d != "" {
			t.Fatalf("verify wrote to %s", d)
		}

		testkit.Continue(holder.cmd.Process)
		if h := testkit.Wait(t, holder.cmd); h.Code != 0 {
			t.Fatalf("thawed holder: exit %d\n%s%s", h.Code, h.Stdout, h.Stderr)
		}
		if v := tg.Exec(t, dir, nil, "verify", "orders.csv"); v.Code != 0 || !strings.Contains(v.Stdout, "orders.csv: ok: orders holds all 50 rows") {
			t.Fatalf("verify after the import: exit %d\n%s%s", v.Code, v.Stdout, v.Stderr)
		}
		checkOrders(t, tg, "orders", want)
	})
}
