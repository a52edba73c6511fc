package main

// Undo of a snapshot: the snapshot before it is current again. Its table can
// be brought back to that snapshot's extract with --reapply (or, for an
// ordinal soft sweep, by the undo itself), and staleness is judged against
// it. Each mode is run clean and with the undo killed inside its
// transaction and after its commit.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// undoLines renders a day's rows as the lines undoTable returns, each
// with state.
func undoLines(day []snapRow, state string) []string {
	var out []string
	for _, r := range day {
		name := r.name
		if name == null {
			name = "NULL"
		}
		out = append(out, r.id+"|"+name+"|"+r.v+"|"+state)
	}
	return out
}

// undoTable returns every row of items as id|name|v|live (or |deleted
// when soft and marked), sorted as text.
func undoTable(t *testing.T, tg *testkit.Target, soft bool) []string {
	t.Helper()
	state := `'live'`
	if soft {
		state = `CASE WHEN _idemport_deleted_at IS NULL THEN 'live' ELSE 'deleted' END`
	}
	var out []string
	for _, r := range testkit.Query(t, tg.DB, `SELECT `+tg.Text("id")+` || '|' || coalesce(name, 'NULL') || '|' || `+tg.Text("v")+` || '|' || `+state+` FROM items`) {
		out = append(out, r[0].(string))
	}
	slices.Sort(out)
	return out
}

func sortedLines(lines ...[]string) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l...)
	}
	slices.Sort(out)
	return out
}

// keyedLines is what a --key snapshot sequence leaves, as undoTable
// renders it.
func keyedLines(soft bool, days ...[]snapRow) []string {
	m := &snapModel{soft: soft, rows: map[string]snapRow{}, dead: map[string]bool{}}
	for _, d := range days {
		m.apply(d)
	}
	var out []string
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for id := range m.rows {
			if !yield(id) {
				return
			}
		}
	}) {
		state := "live"
		if m.dead[id] {
			state = "deleted"
		}
		out = append(out, undoLines([]snapRow{m.rows[id]}, state)...)
	}
	slices.Sort(out)
	return out
}

// TestSnapshotUndo: Mon's and Tue's extracts are imported as snapshots and
// Tue's is undone. Mon's is then current: the undo says how to bring the
// table back to it (an ordinal soft sweep's marks are cleared by the undo
// itself), --reapply of Mon restores the table to Mon's extract value by
// value, an extract older than Mon is stale and one taken between Mon and
// the undone Tue applies. Each mode runs clean and killed: the killed run's
// undo is killed inside its transaction (it changed nothing: the table is
// Tue's and Tue is still current), then its rerun after the commit (a
// rerun says it is already done and says again what is current). These
// were two subtests a mode, each importing the days again; one chain kills
// at the same two points.
func TestSnapshotUndo(t *testing.T) {
	t.Parallel()
	modes := []string{"key", "key-soft", "ordinal", "ordinal-soft"}
	mon, tue, mid := snapDays[0], snapDays[1], snapDays[2]
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, mode := range modes {
			for _, label := range []string{"clean", "killed"} {
				var kills []string
				if label == "killed" {
					kills = []string{"inside-undo", "after-undo"}
				}
				t.Run(mode+"/"+label, func(t *testing.T) {
					t.Parallel()
					dir := t.TempDir()
					tg := testkit.NewTarget(t, name, dir)
					keyed, soft := strings.HasPrefix(mode, "key"), strings.HasSuffix(mode, "-soft")
					for i, day := range snapDays {
						writeSnapDay(t, filepath.Join(dir, fmt.Sprintf("day%d.csv", i+1)), day)
					}
					writeSnapDay(t, filepath.Join(dir, "sun.csv"), mon[:len(mon)-1])
					snap := func(want int, asOf, file string, extra ...string) result {
						t.Helper()
						args := []string{"--table", "items", "--snapshot", "--as-of", asOf, "--partition-rows", "4"}
						if keyed {
							args = append(args, "--key", "id")
						}
						if soft {
							args = append(args, "--delete", "soft")
						}
						return importTo(t, tg, dir, nil, want, append(append(args, extra...), file)...)
					}
					check := func(step string, want []string) {
						t.Helper()
						if got := undoTable(t, tg, soft); !slices.Equal(got, want) {
							t.Fatalf("%s: items holds\n%s\nwant\n%s", step, strings.Join(got, "\n"), strings.Join(want, "\n"))
						}
					}
					snap(0, "2026-11-23", "day1.csv")
					snap(0, "2026-11-24", "day2.csv")
					afterTue := sortedLines(undoLines(tue, "live"))
					switch {
					case keyed:
						afterTue = keyedLines(soft, mon, tue)
					case soft:
						afterTue = sortedLines(undoLines(mon, "deleted"), undoLines(tue, "live"))
					}
					check("after Tue", afterTue)

					undo := []string{"undo", "--table", "items"}
					if keyed {
						undo = append(undo, "--forget")
					}
					undo = append(undo, "day2.csv")
					killAlong(t, tg, dir, kills, undo, func(i int) {
						if kills[i] == "inside-undo" {
							check("after a kill inside the undo", afterTue)
							// Tue is still current: Mon's extract is stale.
							args := []string{"import", "--dry-run", "--output", "json", "--table", "items", "--snapshot", "--as-of", "2026-11-23T12:00:00Z"}
							if keyed {
								args = append(args, "--key", "id")
							}
							if soft {
								args = append(args, "--delete", "soft")
							}
							dry := tg.Exec(t, dir, nil, append(args, "day3.csv")...)
							var rep struct{ Decision string }
							if err := json.Unmarshal([]byte(dry.Stdout), &rep); err != nil || rep.Decision != "stale" {
								t.Fatalf("after a kill inside the undo, an extract older than Tue: decision %q (%v), want stale\n%s%s", rep.Decision, err, dry.Stdout, dry.Stderr)
							}
						}
					})
					r := tg.Exec(t, dir, nil, undo...)
					if r.Code != 0 {
						t.Fatalf("undo: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
					}
					said := r.Stdout      // checked last: what the table holds comes first
					afterUndo := afterTue // by key, --forget keeps the rows
					if !keyed {
						afterUndo = nil // the undone file's rows go, and Mon's were deleted
						if soft {
							afterUndo = sortedLines(undoLines(mon, "live")) // Tue's marks are cleared
						}
					}
					check("after the undo", afterUndo)

					// Mon applied again: the table is exactly Mon's extract.
					if r := snap(0, "2026-11-23", "day1.csv", "--reapply"); r.ExitCode != 0 {
						t.Fatalf("--reapply of Mon: %+v", r)
					}
					afterMon := sortedLines(undoLines(mon, "live"))
					if keyed {
						afterMon = keyedLines(soft, mon, tue, mon)
					}
					check("after Mon reapplied", afterMon)

					// Older than Mon: stale, nothing written.
					before := tg.Snapshot(t, "quickcheck")
					if r := snap(0, "2026-11-22", "sun.csv"); r.Outcome != "stale" {
						t.Fatalf("an extract older than Mon: outcome %s, want stale", r.Outcome)
					}
					if d := before.Diff(tg.Snapshot(t, "quickcheck")); d != "" {
						t.Fatalf("a stale snapshot changed %s", d)
					}
					// Between Mon and the undone Tue: applied.
					if r := snap(0, "2026-11-23T12:00:00Z", "day3.csv"); r.Outcome != "imported" {
						t.Fatalf("an extract between Mon and the undone Tue: outcome %s, want imported", r.Outcome)
					}
					afterMid := sortedLines(undoLines(mid, "live"))
					switch {
					case keyed:
						afterMid = keyedLines(soft, mon, tue, mon, mid)
					case soft:
						afterMid = sortedLines(undoLines(mon, "deleted"), undoLines(mid, "live"))
					}
					check("after an extract between Mon and Tue", afterMid)

					committed := slices.Contains(kills, "after-undo") // the undo was killed after its commit
					if committed && !strings.Contains(said, "already undone") {
						t.Fatalf("undo after a kill past its commit says\n%s", said)
					}
					// Mon is current again, whichever run of the undo says so.
					if !strings.Contains(said, "day1.csv") || !strings.Contains(said, "2026-11-23T00:00:00Z") {
						t.Fatalf("undo does not name the snapshot now current:\n%s", said)
					}
					if soft && !keyed {
						if !committed && !strings.Contains(said, fmt.Sprintf("%d rows its sweep marked deleted are live again", len(mon))) {
							t.Fatalf("undo of an ordinal soft sweep does not say it cleared its marks:\n%s", said)
						}
					} else if !strings.Contains(said, "--reapply") {
						t.Fatalf("undo does not say how to restore the table to Mon's extract:\n%s", said)
					}
				})
			}
		}
	})
}

// TestSnapshotUndoNotLatest: undoing a snapshot that is not the latest
// leaves the latest current (an extract older than it stays stale) and
// says nothing about restoring; undoing the latest then leaves no snapshot
// current, so any extract applies.
func TestSnapshotUndoNotLatest(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, mode := range []string{"key", "ordinal-soft"} {
			t.Run(mode, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				keyed, soft := strings.HasPrefix(mode, "key"), strings.HasSuffix(mode, "-soft")
				for i, day := range snapDays {
					writeSnapDay(t, filepath.Join(dir, fmt.Sprintf("day%d.csv", i+1)), day)
				}
				snap := func(want int, asOf, file string) result {
					t.Helper()
					args := []string{"--table", "items", "--snapshot", "--as-of", asOf}
					if keyed {
						args = append(args, "--key", "id")
					}
					if soft {
						args = append(args, "--delete", "soft")
					}
					return importTo(t, tg, dir, nil, want, append(args, file)...)
				}
				snap(0, "2026-11-23", "day1.csv")
				snap(0, "2026-11-24", "day2.csv")
				undo := func(file string) testkit.Run {
					t.Helper()
					args := []string{"undo", "--table", "items"}
					if keyed {
						args = append(args, "--forget")
					}
					r := tg.Exec(t, dir, nil, append(args, file)...)
					if r.Code != 0 {
						t.Fatalf("undo %s: exit %d\n%s%s", file, r.Code, r.Stdout, r.Stderr)
					}
					return r
				}
				before := undoTable(t, tg, soft)
				r := undo("day1.csv")
				if strings.Contains(r.Stdout, "--reapply") || strings.Contains(r.Stdout, "live again") {
					t.Fatalf("undo of a snapshot that is not the latest offers to restore:\n%s", r.Stdout)
				}
				want := before
				if !keyed {
					want = sortedLines(undoLines(snapDays[1], "live")) // Mon's marked rows went with it
				}
				if got := undoTable(t, tg, soft); !slices.Equal(got, want) {
					t.Fatalf("after undoing Mon items holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				if r := snap(0, "2026-11-23T12:00:00Z", "day3.csv"); r.Outcome != "stale" {
					t.Fatalf("older than the current Tue: outcome %s, want stale", r.Outcome)
				}
				r = undo("day2.csv")
				if r := snap(0, "2026-11-23T12:00:00Z", "day3.csv"); r.Outcome != "imported" {
					t.Fatalf("with no snapshot current: outcome %s, want imported", r.Outcome)
				}
				if !strings.Contains(r.Stdout, "no earlier snapshot") {
					t.Fatalf("undo of the only snapshot left does not say none is current:\n%s", r.Stdout)
				}
			})
		}
	})
}
