package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/pipeline"
)

// snapIdentities returns, for each row of items, what identifies it across
// imports (its id by --key, its lineage in ordinal mode) and whether it is
// live (not marked deleted).
func snapIdentities(t *testing.T, tg *testkit.Target, ordinal, soft bool) map[string]bool {
	t.Helper()
	id, live := tg.Text("id"), `1`
	if ordinal {
		id = tg.Text("_idemport_file") + ` || ':' || ` + tg.Text("_idemport_row")
	}
	if soft {
		live = `CASE WHEN _idemport_deleted_at IS NULL THEN 1 ELSE 0 END`
	}
	out := map[string]bool{}
	if !tg.TableExists(t, "items") {
		return out
	}
	for _, r := range testkit.Query(t, tg.DB, `SELECT `+id+`, `+live+` FROM items`) {
		out[r[0].(string)] = fmt.Sprint(r[1]) == "1"
	}
	return out
}

// TestOutboxSnapshotEventCarriesDeleted: the import.completed event of a
// --snapshot import says how many rows its sweep deleted (or marked, with
// --delete soft), and that number is exactly the rows that left the table
// (or became marked) with it, day by day; 0 is said, not left out.
func TestOutboxSnapshotEventCarriesDeleted(t *testing.T) {
	t.Parallel()
	modes := map[string][]string{
		"key":            {"--key", "id"},
		"key-soft":       {"--key", "id", "--delete", "soft"},
		"ordinal":        nil,
		"key-atomic":     {"--key", "id", "--atomic"},
		"ordinal-atomic": {"--atomic"},
	}
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for mode, extra := range modes {
			t.Run(mode, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				h := newHook(t)
				ordinal, soft := mode == "ordinal" || mode == "ordinal-atomic", mode == "key-soft"
				// The last day repeats the second: a snapshot that deletes nothing.
				days := append(slices.Clone(snapDays), snapDays[2])
				for i, day := range days {
					file := fmt.Sprintf("day%d.csv", i+1)
					writeSnapDay(t, filepath.Join(dir, file), day)
					before := snapIdentities(t, tg, ordinal, soft)
					args := append([]string{"--table", "items", "--snapshot", "--as-of", fmt.Sprintf("2026-11-%02d", 23+i),
						"--partition-rows", "4", "--file-id", file, "--notify", h.url()}, extra...)
					res := importTo(t, tg, dir, nil, 0, append(args, file)...)
					after := snapIdentities(t, tg, ordinal, soft)
					var gone []string
					for id, live := range before {
						if nowLive, ok := after[id]; live && (!ok || !nowLive) {
							gone = append(gone, id)
						}
					}
					keys, bodies, _ := h.requests()
					if len(keys) != i+1 || keys[i] != res.EventID {
						t.Fatalf("%s: deliveries %v, want the %dth to be event %s", file, keys, i+1, res.EventID)
					}
					var raw map[string]json.RawMessage
					var ev pipeline.Event
					if err := json.Unmarshal(bodies[i], &raw); err != nil {
						t.Fatal(err)
					}
					if err := json.Unmarshal(bodies[i], &ev); err != nil {
						t.Fatal(err)
					}
					if _, ok := raw["deleted"]; !ok || ev.Deleted == nil {
						t.Fatalf("%s: the event has no deleted counter: %s", file, bodies[i])
					}
					if *ev.Deleted != int64(len(gone)) || res.Deleted != int64(len(gone)) {
						t.Fatalf("%s: event deleted %d, result %d; the sweep removed %d rows %v", file, *ev.Deleted, res.Deleted, len(gone), gone)
					}
					wantGone := map[int]int{0: 0, 1: 1, 2: 1, 3: 0} // by key: 3 leaves, then 4
					if ordinal {
						wantGone = map[int]int{0: 0, 1: len(days[0]), 2: len(days[1]), 3: len(days[2])}
					}
					if len(gone) != wantGone[i] {
						t.Fatalf("%s: %d rows left the table, want %d", file, len(gone), wantGone[i])
					}
					if ev.Kind != pipeline.EventCompleted || ev.Outcome != "imported" || ev.Operation.FileID != file ||
						ev.Rows.Read != int64(len(day)) {
						t.Fatalf("%s: event %s", file, bodies[i])
					}
				}
				// An import that is not a snapshot says nothing of deletions.
				testkit.Orders(t, filepath.Join(dir, "orders.csv"), 5, 1)
				res := importTo(t, tg, dir, nil, 0, "--notify", h.url(), "orders.csv")
				keys, bodies, _ := h.requests()
				var raw map[string]json.RawMessage
				if err := json.Unmarshal(bodies[len(bodies)-1], &raw); err != nil || keys[len(keys)-1] != res.EventID {
					t.Fatalf("last delivery %s: %v", bodies[len(bodies)-1], err)
				}
				if _, ok := raw["deleted"]; ok {
					t.Fatalf("a plain import's event has a deleted counter: %s", bodies[len(bodies)-1])
				}
			})
		}
	})
}
