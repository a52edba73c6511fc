package main

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestOutboxGCPrunesDeliveredEvents: gc deletes the events older than its
// window that every sink received before it (and those owed to no sink),
// and keeps, whatever their age, events pending or refused by a sink, an
// event one of whose sinks has not received it, and an old event delivered
// only lately. --dry-run deletes nothing. A pruned event is never sent
// again; the kept pending ones are delivered later with their IDs.
func TestOutboxGCPrunesDeliveredEvents(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		ok, down, refuse := newHook(t), newHook(t), newHook(t)
		down.status.Store(503)
		refuse.status.Store(422)
		runs := []struct {
			file  string
			hooks []*hook
		}{
			{"delivered.csv", []*hook{ok}},      // old, received: pruned
			{"nosink.csv", nil},                 // old, owed to no sink: pruned
			{"pending.csv", []*hook{down}},      // old, pending: kept
			{"refused.csv", []*hook{refuse}},    // old, refused for good: kept
			{"half.csv", []*hook{ok, down}},     // old, one sink received it: kept
			{"recent.csv", []*hook{ok}},         // received, recent: kept
			{"late.csv", []*hook{ok}},           // old, but received lately: kept
			{"delivered2.csv", []*hook{ok, ok}}, // old, received (one sink given twice): pruned
		}
		ids := map[string]string{}
		for i, r := range runs {
			testkit.Orders(t, filepath.Join(dir, r.file), 5, i+1)
			args := []string{"--notify-timeout", "300ms", r.file}
			for _, h := range r.hooks {
				args = append(args, "--notify", h.url())
			}
			res := importTo(t, tg, dir, nil, 0, args...)
			if res.EventID == "" {
				t.Fatalf("%s: no event", r.file)
			}
			ids[r.file] = res.EventID
		}
		// Age the old events (and their deliveries) by two days; late.csv's
		// event is old, its delivery is not.
		for _, f := range []string{"delivered.csv", "nosink.csv", "pending.csv", "refused.csv", "half.csv", "late.csv", "delivered2.csv"} {
			testkit.Query(t, tg.DB, tg.Rebind(`UPDATE `+tg.Ledger("outbox")+` SET created_at = created_at - 172800000 WHERE event_id = ?`), ids[f])
			if f != "late.csv" {
				testkit.Query(t, tg.DB, tg.Rebind(`UPDATE `+tg.Ledger("outbox_deliveries")+` SET delivered_at = delivered_at - 172800000
					WHERE event_id = ? AND delivered_at IS NOT NULL`), ids[f])
			}
		}
		before := outboxList(t, tg, dir)
		states := map[string][]string{}
		for _, d := range before {
			states[d.EventID] = append(states[d.EventID], d.State)
		}
		wantStates := map[string][]string{
			"delivered.csv": {"delivered"}, "nosink.csv": {""}, "pending.csv": {"pending"}, "refused.csv": {"failed"},
			"half.csv": {"delivered", "pending"}, "recent.csv": {"delivered"}, "late.csv": {"delivered"}, "delivered2.csv": {"delivered"},
		}
		for f, want := range wantStates {
			got := slices.Clone(states[ids[f]])
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("%s: deliveries %v before gc, want %v", f, got, want)
			}
		}
		gcJSON := func(args ...string) map[string]any {
			t.Helper()
			r := tg.Exec(t, dir, nil, append([]string{"gc", "--older-than", "1d", "-o", "json"}, args...)...)
			var out map[string]any
			if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &out) != nil {
				t.Fatalf("gc %v: exit %d\n%s%s", args, r.Code, r.Stdout, r.Stderr)
			}
			return out
		}
		if rep := gcJSON("--dry-run"); rep["events"] != 3.0 {
			t.Fatalf("gc --dry-run: %v, want 3 events", rep)
		}
		if got := outboxList(t, tg, dir); !reflect.DeepEqual(got, before) {
			t.Fatalf("gc --dry-run changed the outbox:\n%+v\nwant\n%+v", got, before)
		}
		if rep := gcJSON(); rep["events"] != 3.0 {
			t.Fatalf("gc: %v, want 3 events", rep)
		}
		pruned := []string{ids["delivered.csv"], ids["nosink.csv"], ids["delivered2.csv"]}
		var want []deliveryJSON
		for _, d := range before {
			if !slices.Contains(pruned, d.EventID) {
				want = append(want, d)
			}
		}
		if got := outboxList(t, tg, dir); !reflect.DeepEqual(got, want) {
			t.Fatalf("outbox after gc:\n%+v\nwant\n%+v", got, want)
		}
		for _, tbl := range []string{"outbox", "outbox_deliveries"} {
			if n := testkit.Int(t, tg.DB, tg.Rebind(`SELECT count(*) FROM `+tg.Ledger(tbl)+` WHERE event_id IN (?, ?, ?)`), pruned[0], pruned[1], pruned[2]); n != 0 {
				t.Fatalf("%d rows of pruned events left in %s", n, tbl)
			}
		}
		// A pruned event is not sent again: its file is a duplicate, and
		// delivering to its sink sends nothing.
		sent, _, _ := ok.requests()
		if res := importTo(t, tg, dir, nil, 0, "--notify", ok.url(), "delivered.csv"); res.Outcome != "duplicate" || res.EventID != "" {
			t.Fatalf("rerun after gc: %s %s", res.Outcome, res.EventID)
		}
		if again, _, _ := ok.requests(); len(again) != len(sent) {
			t.Fatalf("%d deliveries after gc to a sink that had them all", len(again)-len(sent))
		}
		// The kept pending ones go out once the sink is up, with their IDs.
		down.status.Store(200)
		if r := tg.Exec(t, dir, nil, "outbox", "deliver", "--notify", down.url(), "--notify-timeout", "20s"); r.Code != 0 {
			t.Fatalf("outbox deliver: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		keys, _, codes := down.requests()
		got := map[string]bool{}
		for i, k := range keys {
			if codes[i] == 200 {
				got[k] = true
			}
		}
		if !reflect.DeepEqual(got, map[string]bool{ids["pending.csv"]: true, ids["half.csv"]: true}) {
			t.Fatalf("delivered after gc: %v, want the events of pending.csv and half.csv", got)
		}
		if r := tg.Exec(t, dir, nil, "gc", "--older-than", "1d"); r.Code != 0 || strings.Contains(r.Stdout, "outbox event") {
			t.Fatalf("a second gc pruned events delivered just now:\n%s%s", r.Stdout, r.Stderr)
		}
		if n := len(outboxList(t, tg, dir)); n != len(want) {
			t.Fatalf("%d deliveries listed after the second gc, want %d", n, len(want))
		}
	})
}
