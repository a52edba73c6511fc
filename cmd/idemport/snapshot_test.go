package main

// Snapshot imports: a nightly full extract whose missing rows were deleted
// at the source. The sequence Mon/Tue/Wed inserts, updates, deletes and
// brings a key back; it is run clean and with its imports killed at every
// failpoint a snapshot import passes (see TestSnapshotSequence), and after
// every day the whole table must be what the day's file says.

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/idemport/idemport/internal/failpoint"
	"github.com/idemport/idemport/internal/testkit"
)

// snapRow is one row of a day's file: id, name ("\x00" for NULL, written
// as an unquoted empty field; "" is a quoted empty string) and v.
type snapRow struct {
	id   string
	name string
	v    string
}

const null = "\x00"

// snapDays is the sequence. Tue deletes 3, updates 2 (to an empty string),
// 2^53+1 (to NULL) and the maximum, and inserts 100; Wed brings 3 back with
// a new value, deletes 4, inserts 101 and updates 1. Each day deletes 1 of
// 11 keys, within the default --max-delete of 10%.
var snapDays = [][]snapRow{
	{{"-9223372036854775808", "min", "1"}, {"1", "a", "10"}, {"2", "b", "20"}, {"3", "c", "30"}, {"4", "d", "40"},
		{"5", "e", "50"}, {"6", "f", "60"}, {"7", "g", "70"}, {"8", "h", "80"}, {"9007199254740993", "big", "9007199254740993"},
		{"9223372036854775807", "max", "-9223372036854775808"}},
	{{"-9223372036854775808", "min", "1"}, {"1", "a", "10"}, {"2", "", "21"}, {"4", "d", "40"},
		{"5", "e", "50"}, {"6", "f", "60"}, {"7", "g", "70"}, {"8", "h", "80"}, {"9007199254740993", null, "9007199254740993"},
		{"9223372036854775807", "max", "9223372036854775807"}, {"100", "new", "100"}},
	{{"-9223372036854775808", "min", "1"}, {"1", "a2", "11"}, {"2", "", "21"}, {"3", "back", "33"},
		{"5", "e", "50"}, {"6", "f", "60"}, {"7", "g", "70"}, {"8", "h", "80"}, {"9007199254740993", null, "9007199254740993"},
		{"9223372036854775807", "max", "9223372036854775807"}, {"100", "new", "100"}, {"101", "newer", "101"}},
}

// writeSnapDay writes a day's rows as CSV.
func writeSnapDay(t *testing.T, path string, rows []snapRow) {
	t.Helper()
	var b strings.Builder
	b.WriteString("id,name,v\n")
	for _, r := range rows {
		name := `"` + r.name + `"`
		if r.name == null {
			name = ""
		}
		fmt.Fprintf(&b, "%s,%s,%s\n", r.id, name, r.v)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapModel is what the table must hold after each day, one line per row:
// id|name|v (|live or |deleted with --delete soft), in id order.
type snapModel struct {
	soft bool
	rows map[string]snapRow
	dead map[string]bool
}

func (m *snapModel) apply(day []snapRow) {
	in := map[string]bool{}
	for _, r := range day {
		in[r.id] = true
		m.rows[r.id] = r
		delete(m.dead, r.id)
	}
	for id := range m.rows {
		if in[id] {
			continue
		}
		if m.soft {
			m.dead[id] = true
		} else {
			delete(m.rows, id)
		}
	}
}

func (m *snapModel) want() []string {
	var ids []string
	for id := range m.rows {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(mustInt(a), mustInt(b)) })
	var out []string
	for _, id := range ids {
		r := m.rows[id]
		name := r.name
		if name == null {
			name = "NULL"
		}
		line := id + "|" + name + "|" + r.v
		if m.soft {
			line += map[bool]string{true: "|deleted", false: "|live"}[m.dead[id]]
		}
		out = append(out, line)
	}
	return out
}

// snapTable returns the table's rows as snapModel.want renders them.
func snapTable(t *testing.T, tg *testkit.Target, soft bool) []string {
	t.Helper()
	cols := tg.Text("id") + ` || '|' || coalesce(name, 'NULL') || '|' || ` + tg.Text("v")
	if soft {
		cols += ` || '|' || CASE WHEN _idemport_deleted_at IS NULL THEN 'live' ELSE 'deleted' END`
	}
	var out []string
	for _, r := range testkit.Query(t, tg.DB, `SELECT `+cols+` FROM items ORDER BY id`) {
		out = append(out, r[0].(string))
	}
	return out
}

// snapKill is a kill at the n-th pass of a failpoint.
type snapKill struct {
	point string
	n     int
}

func (k snapKill) String() string { return fmt.Sprintf("%s:%d", k.point, k.n) }

// snapChains are the kill chains of TestSnapshotSequence. A day's import
// is killed at each kill of its chain in turn, each rerun at the next one,
// and then run to completion. Each chain starts with a fresh run and is
// ordered so that every rerun reaches its kill: the points before the plan
// in the order a run passes them (after-plan only where the plan is not
// stored yet); partition points whose count the partitions left still
// reach (a count of 3 only when all three of a day's partitions are left);
// the completing transaction's points, which every rerun passes again,
// last. The sweep's two points are in two chains, so every mode is killed
// inside a sweep on a day that deletes (day 2 or 3).
var snapChains = [3][]snapKill{
	{{"after-identify", 1}, {"after-claim", 1}, {"after-plan", 1}, {"inside-partition", 3}, {"inside-partition", 1},
		{"before-sweep", 1}, {"after-sweep", 1}},
	{{"before-partition-commit", 2}, {"after-partition-claim", 2}, {"after-partition-commit", 1},
		{"before-finalize", 1}, {"inside-finalize", 1}},
	{{"after-partition-commit", 3}, {"before-sweep", 1}, {"after-sweep", 1}, {"before-event", 1}, {"after-finalize", 1}},
}

// snapModes are the modes of TestSnapshotSequence.
var snapModes = []string{"key", "key-soft", "ordinal", "key-atomic", "ordinal-atomic"}

// snapChainOf returns the chain mode number m's killed sequence runs on
// day d (0-based): the chains rotate over the days from mode to mode.
func snapChainOf(m, d int) []snapKill { return snapChains[(m+d)%len(snapChains)] }

// TestSnapshotSequence runs the sequence in each mode on each target, once
// clean and once killed. The killed run kills each day's import at every
// kill of one chain (snapChains) before running it to completion, the
// three chains rotating over the days from mode to mode; after every day
// the whole table must be what the day's file says, value by value.
//
// What it covers: every failpoint a snapshot import passes is killed at in
// every mode on every target (the sweep in key, soft and ordinal sweeps, the
// completing transaction of --atomic, which moves the staged rows), each
// chain on each of the three days in some mode, and the sweep's points on
// a day that deletes in every mode. It no longer kills every point on every
// day of every mode (16 runs of the sequence a mode, 160 subtests of seven
// or eight processes); a kill after the first of a chain hits a rerun
// rather than a fresh run, which leaves what a fresh run's kill there
// leaves, with more attempts recorded (the completing transaction's points
// roll back the same transaction either way).
func TestSnapshotSequence(t *testing.T) {
	t.Parallel()
	// Every failpoint a snapshot import passes is killed at in every mode
	// (each mode runs all three chains, one a day). inside-move is passed
	// by an --atomic move into MariaDB alone, and killed at by
	// TestAtomicMoveMeetsAKeyStoredMeanwhile; before-move, by every
	// --atomic move, is killed at by TestAtomicCountsAKeyStoredBeforeItsMove.
	for _, point := range failpoint.Names {
		passed := !slices.Contains([]string{"after-ddl-record", "after-ddl", "inside-isolation", "inside-early-overlap", "inside-overlap", "inside-mend", "replace-prepared", "replace-swept", "before-move", "inside-move", "inside-undo", "after-undo", "before-publish", "after-publish", "during-retry"}, point)
		if !passed {
			continue
		}
		for m, mode := range snapModes {
			killed := false
			for d := range snapDays {
				killed = killed || slices.ContainsFunc(snapChainOf(m, d), func(k snapKill) bool { return k.point == point })
			}
			if !killed {
				t.Fatalf("a snapshot import passes failpoint %s, which the %s sequence never kills at", point, mode)
			}
		}
	}
	// Each chain runs on each day in some mode, and every mode is killed in
	// the sweep on a day that deletes.
	for c := range snapChains {
		for d := range snapDays {
			if !slices.ContainsFunc(snapModes, func(mode string) bool {
				return slices.Equal(snapChainOf(slices.Index(snapModes, mode), d), snapChains[c])
			}) {
				t.Fatalf("chain %d never runs on day %d", c, d+1)
			}
		}
	}
	for m, mode := range snapModes {
		for _, point := range []string{"before-sweep", "after-sweep"} {
			if !slices.ContainsFunc(snapChainOf(m, 1), func(k snapKill) bool { return k.point == point }) &&
				!slices.ContainsFunc(snapChainOf(m, 2), func(k snapKill) bool { return k.point == point }) {
				t.Fatalf("the %s sequence is never killed at %s on a day that deletes", mode, point)
			}
		}
	}
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for m, mode := range snapModes {
			t.Run(mode+"/clean", func(t *testing.T) {
				t.Parallel()
				snapSequence(t, name, mode, func(int) []snapKill { return nil })
			})
			t.Run(mode+"/killed", func(t *testing.T) {
				t.Parallel()
				snapSequence(t, name, mode, func(d int) []snapKill { return snapChainOf(m, d) })
			})
		}
	})
}

// snapSequence imports the days in mode, killing day d's import at each
// kill of chain(d) before running it to completion, and checks the table
// after each day and a rerun of the last.
func snapSequence(t *testing.T, name, mode string, chain func(d int) []snapKill) {
	dir := t.TempDir()
	tg := testkit.NewTarget(t, name, dir)
	m := &snapModel{soft: mode == "key-soft", rows: map[string]snapRow{}, dead: map[string]bool{}}
	modeArgs := func(asOf string) []string {
		args := []string{"--table", "items", "--snapshot", "--as-of", asOf, "--partition-rows", "4"}
		switch mode {
		case "key":
			args = append(args, "--key", "id")
		case "key-soft":
			args = append(args, "--key", "id", "--delete", "soft")
		case "key-atomic":
			args = append(args, "--key", "id", "--atomic")
		case "ordinal-atomic":
			args = append(args, "--atomic")
		}
		return args
	}
	var ordinal []string // ordinal mode: the last file's rows
	for i, day := range snapDays {
		file := fmt.Sprintf("day%d.csv", i+1)
		writeSnapDay(t, filepath.Join(dir, file), day)
		args := append(modeArgs(fmt.Sprintf("2026-11-%02d", 23+i)), file)
		kills := chain(i)
		for _, k := range kills {
			env := []string{"IDEMPORT_FAILPOINT=" + k.String()}
			killed := tg.Exec(t, dir, env, append([]string{"import"}, args...)...)
			if killed.Signal != syscall.SIGKILL {
				t.Fatalf("%s: not killed at %s (chain %v): exit %d\n%s%s", file, k, kills, killed.Code, killed.Stdout, killed.Stderr)
			}
		}
		res := importTo(t, tg, dir, nil, 0, args...)
		want := []string{"imported", "resumed"}
		if len(kills) > 0 && kills[len(kills)-1].point == "after-finalize" {
			want = []string{"duplicate"}
		}
		if !slices.Contains(want, res.Outcome) {
			t.Fatalf("%s: rerun outcome %s, want one of %v", file, res.Outcome, want)
		}
		m.apply(day)
		if strings.HasPrefix(mode, "ordinal") {
			ordinal = (&snapModel{rows: map[string]snapRow{}, dead: map[string]bool{}}).withDay(day)
			if got := snapTable(t, tg, false); !slices.Equal(got, ordinal) {
				t.Fatalf("after %s the table holds\n%s\nwant\n%s", file, strings.Join(got, "\n"), strings.Join(ordinal, "\n"))
			}
			if n := testkit.Int(t, tg.DB, `SELECT count(DISTINCT _idemport_file) FROM items`); n != 1 {
				t.Fatalf("after %s rows of %d files remain, want only the last file's", file, n)
			}
		} else if got := snapTable(t, tg, m.soft); !slices.Equal(got, m.want()) {
			t.Fatalf("after %s the table holds\n%s\nwant\n%s", file, strings.Join(got, "\n"), strings.Join(m.want(), "\n"))
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("operations")+` WHERE state <> 'completed'`); n != 0 {
			t.Fatalf("after %s %d operations are not completed", file, n)
		}
	}
	// A rerun of the last file deletes nothing and writes nothing.
	before := tg.Snapshot(t, "quickcheck")
	res := importTo(t, tg, dir, nil, 0, append(modeArgs("2026-11-25"), "day3.csv")...)
	if res.Outcome != "duplicate" || res.Deleted != 0 {
		t.Fatalf("rerun of the last day: outcome %s deleted %d, want duplicate deleted 0", res.Outcome, res.Deleted)
	}
	if d := before.Diff(tg.Snapshot(t, "quickcheck")); d != "" {
		t.Fatalf("rerun of the last day changed %s", d)
	}
	// The keys the snapshots recorded are gone with their operations.
	for _, tbl := range tg.Tables(t) {
		if strings.Contains(tbl, "_idemport_seen_") || strings.Contains(tbl, "_idemport_stage_") {
			t.Fatalf("table %s of recorded keys left behind", tbl)
		}
	}
}

// withDay returns the lines of a table holding exactly day's rows.
func (m *snapModel) withDay(day []snapRow) []string {
	m.apply(day)
	return m.want()
}

// TestSnapshotGuardOrderAndScope: the delete guard refuses a 50% deletion
// and an empty file with nothing of the sweep applied, and a rerun with a
// higher --max-delete completes; a stale snapshot writes nothing; a scoped
// snapshot sweeps only its slice of the table.
func TestSnapshotGuardOrderAndScope(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		l := &life{t: t, tg: testkit.NewTarget(t, name, dir), dir: dir}
		snap := func(want int, asOf, file string, extra ...string) result {
			t.Helper()
			args := append([]string{"--table", "items", "--key", "id", "--snapshot", "--as-of", asOf}, extra...)
			return importTo(t, l.tg, dir, nil, want, append(args, file)...)
		}
		var mon, tue strings.Builder
		mon.WriteString("id,name\n")
		tue.WriteString("id,name\n")
		for i := 1; i <= 10; i++ {
			fmt.Fprintf(&mon, "%d,n%d\n", i, i)
			if i%2 == 0 {
				fmt.Fprintf(&tue, "%d,n%d\n", i, i)
			}
		}
		l.write("mon.csv", mon.String())
		l.write("tue.csv", tue.String())
		l.write("empty.csv", "id,name\n")
		monRows := "1|n1\n10|n10\n2|n2\n3|n3\n4|n4\n5|n5\n6|n6\n7|n7\n8|n8\n9|n9"
		if r := snap(0, "2026-11-23", "mon.csv"); r.Outcome != "imported" || r.Rows.Inserted != 10 {
			t.Fatalf("mon: %+v", r)
		}
		l.wantRows("items", monRows, l.tg.Text("id"), "name")

		// Half the keys gone: refused, nothing deleted, resumable.
		r := snap(5, "2026-11-24", "tue.csv")
		if r.Outcome != "refused" || r.Deleted != 0 || !strings.Contains(r.Error, "would delete 5 of the 10 rows") {
			t.Fatalf("tue: outcome %s deleted %d error %q, want refused by the guard", r.Outcome, r.Deleted, r.Error)
		}
		l.wantRows("items", monRows, l.tg.Text("id"), "name")
		l.wantStates("items", "completed,failed", "")
		r = snap(5, "2026-11-24", "tue.csv", "--max-delete", "4")
		if r.Outcome != "refused" {
			t.Fatalf("tue with --max-delete 4: outcome %s, want refused", r.Outcome)
		}
		r = snap(0, "2026-11-24", "tue.csv", "--max-delete", "50%")
		if r.Outcome != "resumed" || r.Deleted != 5 {
			t.Fatalf("tue with --max-delete 50%%: outcome %s deleted %d, want resumed deleted 5", r.Outcome, r.Deleted)
		}
		l.wantRows("items", "10|n10\n2|n2\n4|n4\n6|n6\n8|n8", l.tg.Text("id"), "name")

		// An empty file sweeps only with 100%.
		for _, limit := range []string{"10%", "99%", "1000"} {
			r = snap(5, "2026-11-25", "empty.csv", "--max-delete", limit)
			if r.Outcome != "refused" || !strings.Contains(r.Error, "has no rows") {
				t.Fatalf("empty file with --max-delete %s: outcome %s error %q, want refused", limit, r.Outcome, r.Error)
			}
			l.wantRows("items", "10|n10\n2|n2\n4|n4\n6|n6\n8|n8", l.tg.Text("id"), "name")
		}

		// Older than the last applied: stale, nothing written anywhere.
		before := l.tg.Snapshot(t, "quickcheck")
		r = snap(0, "2026-11-20", "mon.csv", "--file-id", "mon-again")
		if r.Outcome != "stale" || r.ExitCode != 0 {
			t.Fatalf("stale: outcome %s exit %d", r.Outcome, r.ExitCode)
		}
		if d := before.Diff(l.tg.Snapshot(t, "quickcheck")); d != "" {
			t.Fatalf("a stale snapshot changed %s", d)
		}
		r = snap(0, "2026-11-25", "empty.csv", "--max-delete", "100%")
		if r.Outcome != "resumed" || r.Deleted != 5 {
			t.Fatalf("empty file with --max-delete 100%%: outcome %s deleted %d, want resumed deleted 5", r.Outcome, r.Deleted)
		}
		l.wantRows("items", "", l.tg.Text("id"), "name")

		// A scope: the EU feed's snapshot leaves the US rows alone.
		l.write("all.csv", "id,region,v\n1,EU,a\n2,EU,b\n3,US,c\n4,US,d\n5,EU,e\n6,EU,f\n7,EU,g\n8,EU,h\n9,EU,i\n10,EU,j\n11,EU,k\n")
		l.write("eu.csv", "id,region,v\n1,EU,a2\n2,EU,b\n5,EU,e\n6,EU,f\n7,EU,g\n8,EU,h\n9,EU,i\n10,EU,j\n11,EU,k\n12,EU,l\n")
		importTo(t, l.tg, dir, nil, 0, "--table", "regions", "--key", "id", "all.csv")
		r = importTo(t, l.tg, dir, nil, 0, "--table", "regions", "--key", "id", "--snapshot", "--snapshot-scope", "region=EU", "eu.csv")
		if r.Deleted != 0 {
			t.Fatalf("EU snapshot deleted %d rows, want 0", r.Deleted)
		}
		l.wantRows("regions", "1|EU|a2\n10|EU|j\n11|EU|k\n12|EU|l\n2|EU|b\n3|US|c\n4|US|d\n5|EU|e\n6|EU|f\n7|EU|g\n8|EU|h\n9|EU|i",
			l.tg.Text("id"), "region", "v")
		l.write("eu2.csv", "id,region,v\n1,EU,a2\n2,EU,b\n5,EU,e\n6,EU,f\n7,EU,g\n8,EU,h\n9,EU,i\n10,EU,j\n11,EU,k\n")
		r = importTo(t, l.tg, dir, nil, 0, "--table", "regions", "--key", "id", "--snapshot", "--snapshot-scope", "region=EU", "eu2.csv")
		if r.Deleted != 1 {
			t.Fatalf("second EU snapshot deleted %d rows, want 1", r.Deleted)
		}
		l.wantRows("regions", "1|EU|a2\n10|EU|j\n11|EU|k\n2|EU|b\n3|US|c\n4|US|d\n5|EU|e\n6|EU|f\n7|EU|g\n8|EU|h\n9|EU|i",
			l.tg.Text("id"), "region", "v")
	})
}

// TestSnapshotSaysOneRow: the counts a snapshot prints agree with their
// noun: "1 row", not "1 rows", in the dry run, the result and history.
func TestSnapshotSaysOneRow(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		os.WriteFile(filepath.Join(dir, "a.csv"), []byte("id,name,v\n1,a,1\n2,b,2\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "b.csv"), []byte("id,name,v\n1,a,1\n"), 0o644)
		args := []string{"import", "--table", "items", "--snapshot", "--key", "id", "--max-delete", "1"}
		importTo(t, tg, dir, nil, 0, append(args[1:], "--as-of", "2026-11-23", "a.csv")...)
		args = append(args, "--as-of", "2026-11-24", "b.csv")
		dry := tg.Exec(t, dir, nil, append(args, "--dry-run")...)
		if dry.Code != 0 || !strings.Contains(dry.Stdout, "would sweep: 1 row the file lacks") {
			t.Fatalf("dry run: exit %d\n%s%s", dry.Code, dry.Stdout, dry.Stderr)
		}
		run := tg.Exec(t, dir, nil, args...)
		if run.Code != 0 || !strings.Contains(run.Stdout, "; 1 row not in the snapshot deleted;") {
			t.Fatalf("import: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
		if h := tg.Exec(t, dir, nil, "history", "--table", "items", "b.csv"); h.Code != 0 || !strings.Contains(h.Stdout, "snapshot swept 1 row") || strings.Contains(h.Stdout, "1 rows") {
			t.Fatalf("history: exit %d\n%s%s", h.Code, h.Stdout, h.Stderr)
		}
	})
}

// TestSnapshotOrdinalSoftDelete: without --key, --snapshot --delete soft
// marks every row of the files a snapshot replaces, instead of deleting
// them: after each day (the second killed after its sweep and resumed) the
// table holds every day's rows, value by value, those of earlier days
// marked and the day's own live; a mark, once set, is never set again, and
// the run's deleted counts the rows it marked.
func TestSnapshotOrdinalSoftDelete(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		fileDay := map[string]int{}  // a row's _idemport_file → its day
		marks := map[string]string{} // a marked row's lineage → its mark
		var want []string
		for i, day := range snapDays {
			file := fmt.Sprintf("day%d.csv", i+1)
			writeSnapDay(t, filepath.Join(dir, file), day)
			args := []string{"import", "--table", "items", "--snapshot", "--delete", "soft", "--as-of", fmt.Sprintf("2026-11-%02d", 23+i), "--partition-rows", "4", file}
			if i == 1 {
				if r := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=after-sweep:1"}, args...); r.Signal != syscall.SIGKILL {
					t.Fatalf("%s: not killed: exit %d\n%s%s", file, r.Code, r.Stdout, r.Stderr)
				}
			}
			res := importTo(t, tg, dir, nil, 0, args[1:]...)
			wantDeleted := 0
			if i > 0 {
				wantDeleted = len(snapDays[i-1])
			}
			if res.Deleted != int64(wantDeleted) {
				t.Fatalf("%s: deleted %d, want %d (the rows of the day before)", file, res.Deleted, wantDeleted)
			}
			// Earlier days' lines become marked; the day's own are live.
			for j := range want {
				want[j] = strings.Replace(want[j], "|live", "|deleted", 1)
			}
			lines := (&snapModel{rows: map[string]snapRow{}, dead: map[string]bool{}}).withDay(day)
			for _, l := range lines {
				want = append(want, fmt.Sprintf("day%d|%s|live", i+1, l))
			}
			var got []string
			for _, r := range testkit.Query(t, tg.DB, `SELECT `+tg.Text("_idemport_file")+`, `+tg.Text("_idemport_row")+`,
				`+tg.Text("id")+` || '|' || coalesce(name, 'NULL') || '|' || `+tg.Text("v")+`, coalesce(`+tg.TimeText("_idemport_deleted_at")+`, '')
				FROM items ORDER BY _idemport_row, id`) {
				fk, lineage, mark := r[0].(string), r[0].(string)+":"+r[1].(string), r[3].(string)
				d, ok := fileDay[fk]
				if !ok {
					d = i + 1
					fileDay[fk] = d
				}
				state := "live"
				if mark != "" {
					state = "deleted"
					if old, ok := marks[lineage]; ok && old != mark {
						t.Fatalf("%s: the mark of %s moved from %s to %s", file, lineage, old, mark)
					}
					marks[lineage] = mark
				}
				got = append(got, fmt.Sprintf("day%d|%s|%s", d, r[2], state))
			}
			slices.Sort(got)
			sorted := slices.Clone(want)
			slices.Sort(sorted)
			if !slices.Equal(got, sorted) {
				t.Fatalf("after %s the table holds\n%s\nwant\n%s", file, strings.Join(got, "\n"), strings.Join(sorted, "\n"))
			}
		}
	})
}

// TestSnapshotResumesOverKeyedSeenTable: an operation planned when the
// table of keys seen was keyed by the key (as earlier versions made it)
// resumes over that table: its keys are recorded there and the sweep
// removes exactly the row the file lacks.
func TestSnapshotResumesOverKeyedSeenTable(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		l := &life{t: t, tg: testkit.NewTarget(t, name, dir), dir: dir}
		l.write("f1.csv", "id,a\n1,x\n2,y\n3,z\n9223372036854775807,max\n")
		l.write("f2.csv", "id,a\n2,y2\n3,z\n9223372036854775807,max\n4,w\n")
		args := []string{"--table", "items", "--key", "id", "--partition-rows", "2"}
		importTo(t, l.tg, dir, nil, 0, append(args, "f1.csv")...)
		args = append(args, "--snapshot", "--max-delete", "50%")
		if r := l.tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=after-plan:1"}, append(append([]string{"import"}, args...), "f2.csv")...); r.Signal != syscall.SIGKILL {
			t.Fatalf("not killed: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		var seen string
		for _, tbl := range l.tg.Tables(t) {
			if strings.HasPrefix(tbl, "_idemport_seen_") {
				seen = tbl
			}
		}
		if seen == "" {
			t.Fatalf("no table of keys seen among %v", l.tg.Tables(t))
		}
		typ := map[bool]string{true: "bigint", false: "INTEGER"}[l.tg.IsPostgres() || l.tg.IsMariaDB()]
		ref := testkit.QuoteOne(seen)
		if l.tg.IsPostgres() {
			ref = testkit.QuoteOne(l.tg.Schema) + "." + ref
		}
		for _, q := range []string{`DROP TABLE ` + ref, `CREATE TABLE ` + ref + ` (id ` + typ + `, _idemport_file ` + typ + `, _idemport_row ` + typ + `, PRIMARY KEY (id))`} {
			if _, err := l.tg.DB.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if r := importTo(t, l.tg, dir, nil, 0, append(args, "f2.csv")...); r.Outcome != "resumed" || r.Deleted != 1 {
			t.Fatalf("resumed: outcome %s, deleted %d; want resumed, 1", r.Outcome, r.Deleted)
		}
		l.wantRows("items", "2|y2\n3|z\n4|w\n9223372036854775807|max", "id", "a")
	})
}
