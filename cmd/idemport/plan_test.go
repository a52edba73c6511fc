package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// planJSON is the part of plan's JSON report these tests read.
type planJSON struct {
	Decision     string            `json:"decision"`
	Detail       string            `json:"detail"`
	SweepRefused string            `json:"sweep_refused"`
	Partitions   []json.RawMessage `json:"partitions"`
	GrowTo       int64             `json:"partition_grow_to"`
}

// prediction is the decision, and whether the --max-delete guard would
// refuse the sweep.
func (p planJSON) prediction() string {
	if p.SweepRefused != "" {
		return p.Decision + ", sweep refused"
	}
	return p.Decision
}

// planTo runs plan against tg and returns its report.
func planTo(t *testing.T, tg *testkit.Target, dir string, args ...string) planJSON {
	t.Helper()
	r := tg.Exec(t, dir, nil, append([]string{"plan", "--output", "json"}, args...)...)
	if r.Code != 0 {
		t.Fatalf("plan %v: exit %d\nstdout: %s\nstderr: %s", args, r.Code, r.Stdout, r.Stderr)
	}
	var p planJSON
	if err := json.Unmarshal([]byte(r.Stdout), &p); err != nil {
		t.Fatalf("plan %v: %v\n%s", args, err, r.Stdout)
	}
	return p
}

// TestPlanTakesEveryFlagThatChangesTheDecision runs plan, on SQLite and
// PostgreSQL, with each import flag that changes what an import decides
// (--reapply, --replace, --min-age, --as-of, --max-delete): plan takes it, predicts
// otherwise than without it, and predicts what the import given the same
// flags then does.
func TestPlanTakesEveryFlagThatChangesTheDecision(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		for _, tc := range []struct {
			name string
			// setup imports what the state needs, with the common args.
			setup [][]string
			// file is planned and imported with args, then flag.
			file string
			args []string
			flag []string
			// without is plan's decision without flag; want with it, and
			// the import's outcome and exit code.
			without, want, outcome string
			code                   int
		}{
			{name: "reapply", setup: [][]string{{"orders.csv"}}, file: "orders.csv", flag: []string{"--reapply"},
				without: "duplicate", want: "reapply", outcome: "imported"},
			// tue.csv is a corrected version of the file day1.
			{name: "replace", setup: [][]string{{"orders.csv"}}, file: "tue.csv", args: []string{"--file-id", "day1"}, flag: []string{"--replace"},
				without: "conflict", want: "replace", outcome: "imported"},
			{name: "min-age", file: "orders.csv", flag: []string{"--min-age", "1h"},
				without: "create", want: "skipped", outcome: "skipped"},
			{name: "as-of", setup: [][]string{{"--as-of", "2026-11-30", "tue.csv"}}, file: "mon.csv", flag: []string{"--as-of", "2026-11-29"},
				args: []string{"--snapshot", "--key", "order_id"}, without: "create", want: "stale", outcome: "stale"},
			// half.csv has half the keys of orders.csv: the sweep would
			// delete half the table, over the default 10%.
			{name: "max-delete", setup: [][]string{{"orders.csv"}}, file: "half.csv", flag: []string{"--max-delete", "50%"},
				args: []string{"--snapshot", "--key", "order_id"}, without: "create, sweep refused", want: "create", outcome: "imported"},
			{name: "max-delete-too-low", setup: [][]string{{"orders.csv"}}, file: "half.csv", flag: []string{"--max-delete", "19"},
				args: []string{"--snapshot", "--key", "order_id", "--max-delete", "100%"}, without: "create", want: "create, sweep refused", outcome: "refused", code: 5},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				testkit.Orders(t, filepath.Join(dir, "orders.csv"), 40, 1)
				testkit.Orders(t, filepath.Join(dir, "tue.csv"), 40, 2)
				testkit.Orders(t, filepath.Join(dir, "mon.csv"), 40, 1)
				testkit.Orders(t, filepath.Join(dir, "half.csv"), 20, 1)
				common := append([]string{"--table", "orders"}, tc.args...)
				for _, s := range tc.setup {
					setup := slices.Concat(common, s)
					if res := importTo(t, tg, dir, nil, 0, setup...); res.Outcome != "imported" {
						t.Fatalf("setup %v: %+v", s, res)
					}
				}
				if p := planTo(t, tg, dir, slices.Concat(common, []string{tc.file})...); p.prediction() != tc.without {
					t.Fatalf("plan without %v predicts %s (%s), want %s", tc.flag, p.prediction(), p.Detail, tc.without)
				}
				args := slices.Concat(common, tc.flag, []string{tc.file})
				before := tg.Snapshot(t)
				p := planTo(t, tg, dir, args...)
				if p.prediction() != tc.want {
					t.Fatalf("plan %v predicts %s (%s), want %s", tc.flag, p.prediction(), p.Detail, tc.want)
				}
				if d := before.Diff(tg.Snapshot(t)); d != "" {
					t.Fatalf("plan wrote to %s", d)
				}
				if res := importTo(t, tg, dir, nil, tc.code, args...); res.Outcome != tc.outcome {
					t.Fatalf("import %v ends %s (%s), plan predicted %s", tc.flag, res.Outcome, res.Error, tc.want)
				}
			})
		}
	})
}
