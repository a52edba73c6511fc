package main

// The crash suite: kill, stall, interrupt and starve the real binary at every
// boundary of the pipeline and at random moments, then rerun it, and check
// the target holds exactly the file's rows, the ledger says completed, and
// the counters add up.

import (
	"bytes"
	"database/sql"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/failpoint"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/sink/postgres"
)

var soak = flag.Int("soak", 50, "iterations of the random SIGKILL soak test")

// crashRows and crashPartitions shape the file the boundary tests use: ten
// partitions, so first, middle and last are distinct.
const (
	crashRows       = 1000
	crashPartitions = 10
)

// checkExact asserts the whole outcome of an import of an orders file into
// an empty table: exact content, one row per key, operation completed,
// counters consistent across every attempt and with the table: the
// operation inserted every row the table holds, so a partition whose rows
// committed without its done mark and counts (and were then counted
// unchanged by the rerun) shows.
func checkExact(t *testing.T, tg *testkit.Target, mode string, rows [][]string) {
	t.Helper()
	if mode == "ordinal" {
		checkOrders(t, tg, "orders", rows)
	} else {
		checkByKey(t, tg, rows)
	}
	op := testkit.Query(t, tg.DB, `SELECT state, rows_read, rows_inserted, rows_updated + rows_unchanged + rows_stale, rows_rejected FROM `+tg.Ledger("operations"))
	if want := [][]any{{"completed", int64(len(rows)), testkit.Int(t, tg.DB, `SELECT count(*) FROM orders`), int64(0), int64(0)}}; !reflect.DeepEqual(op, want) {
		t.Fatalf("operation (state, read, inserted, updated+unchanged+stale, rejected) %v, want %v: inserted must be the table's rows", op, want)
	}
	if n := testkit.Int(t, tg.DB, `SELECT `+tg.Sum("rows_inserted")+` FROM `+tg.Ledger("attempts")); n != int64(len(rows)) {
		t.Fatalf("the attempts inserted %d rows in all, want %d", n, len(rows))
	}
	// Each partition committed once, and the attempts' counters add up to
	// the partitions' and to the file.
	if got := testkit.Query(t, tg.DB, `SELECT count(*), `+tg.Sum("row_count")+` FROM `+tg.Ledger("partitions")+` WHERE done = 1`); got[0][1] != int64(len(rows)) {
		t.Fatalf("done partitions cover %v rows, want %d", got[0][1], len(rows))
	}
	att := testkit.Query(t, tg.DB, `SELECT `+tg.Sum("rows_read")+`, `+tg.Sum("partitions_committed")+` FROM `+tg.Ledger("attempts"))
	part := testkit.Query(t, tg.DB, `SELECT `+tg.Sum("row_count")+`, count(*) FROM `+tg.Ledger("partitions"))
	if !reflect.DeepEqual(att, part) {
		t.Fatalf("attempts counted %v (rows, partitions), partitions hold %v", att, part)
	}
}

// checkByKey asserts a natural-key table holds exactly the file's rows.
func checkByKey(t *testing.T, tg *testkit.Target, rows [][]string) {
	t.Helper()
	got := testkit.Query(t, tg.DB, `SELECT order_id, sku, note FROM orders ORDER BY order_id`)
	if len(got) != len(rows) {
		t.Fatalf("%d rows, want %d", len(got), len(rows))
	}
	for i, g := range got {
		var note any = rows[i][7]
		if rows[i][7] == "" {
			note = nil
		}
		if want := []any{mustInt(rows[i][0]), rows[i][2], note}; !reflect.DeepEqual(g, want) {
			t.Fatalf("row %d: got %v, want %v", i, g, want)
		}
	}
}

// killedElsewhere names the failpoints a plain import of an orders file
// does not pass, each with the test that kills there.
var killedElsewhere = map[string]string{
	"after-ddl-record": "TestMariaDBKilledAtDDLSteps", // where DDL commits alone
	"after-ddl":        "TestMariaDBKilledAtDDLSteps",
	"inside-isolation": "TestKillDuringIsolationThenRerun",
	"inside-overlap":   "TestOverlapKilledThenRerun",     // a file of 8 MiB or more
	"inside-mend":      "TestRemoteKilledMendingTheCopy", // a remote object's reused copy with a bad range

	"inside-early-overlap": "TestOverlapKilledBeforeItsClaim",
	"before-sweep":         "TestSnapshotSequence",
	"replace-prepared":     "TestReplaceKilledAtEachBoundary",
	"replace-swept":        "TestReplaceKilledAtEachBoundary",
	"after-sweep":          "TestSnapshotSequence",
	"before-move":          "TestAtomicCountsAKeyStoredBeforeItsMove",
	"inside-move":          "TestAtomicMoveMeetsAKeyStoredMeanwhile", // --atomic into MariaDB
	"inside-undo":          "TestSnapshotUndo",
	"after-undo":           "TestSnapshotUndo",
	"before-publish":       "TestOutboxKillAtEachDeliveryBoundary",
	"after-publish":        "TestOutboxKillAtEachDeliveryBoundary",
	"during-retry":         "TestOutboxKillAtEachDeliveryBoundary",
}

// TestCrashAtEveryBoundary kills the binary with SIGKILL at every
// failpoint an import passes (failpoint.Names but those killedElsewhere),
// at the first, a middle and the last partition, in ordinal and
// natural-key mode, then reruns it, on every target (on MariaDB also at
// the DDL steps a new table takes there, and the ledger must record the
// table made once, planned). No attempt may be recorded failed. A new
// failpoint fails the test until it is killed at here or named in
// killedElsewhere.
func TestCrashAtEveryBoundary(t *testing.T) {
	t.Parallel()
	type tc struct {
		point   string
		n       int   // which pass of the point
		skipped int64 // partitions the rerun finds done
		outcome string
	}
	var cases []tc
	cases = append(cases, tc{"after-identify", 1, 0, "imported"}, tc{"after-claim", 1, 0, "resumed"}, tc{"after-plan", 1, 0, "resumed"})
	for _, k := range []int{1, crashPartitions / 2, crashPartitions} {
		cases = append(cases,
			tc{"after-partition-claim", k, int64(k - 1), "resumed"},
			tc{"inside-partition", k, int64(k - 1), "resumed"},
			tc{"before-partition-commit", k, int64(k - 1), "resumed"},
			tc{"after-partition-commit", k, int64(k), "resumed"})
	}
	cases = append(cases, tc{"before-finalize", 1, crashPartitions, "resumed"}, tc{"before-event", 1, crashPartitions, "resumed"},
		tc{"inside-finalize", 1, crashPartitions, "resumed"}, tc{"after-finalize", 1, crashPartitions, "duplicate"})
	for _, point := range failpoint.Names {
		if _, ok := killedElsewhere[point]; !ok && !slices.ContainsFunc(cases, func(c tc) bool { return c.point == point }) {
			t.Fatalf("no crash test kills at failpoint %s: add it to the cases here, or to killedElsewhere with the test that does", point)
		}
	}
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		cases := cases
		if name == testkit.MariaDB {
			// Where DDL commits alone, a plain import into a new table
			// passes the DDL steps too, between its claim and its plan.
			cases = slices.Insert(slices.Clone(cases), 2, tc{"after-ddl-record", 1, 0, "resumed"}, tc{"after-ddl", 1, 0, "resumed"})
		}
		for _, mode := range []string{"ordinal", "natural"} {
			for _, c := range cases {
				t.Run(fmt.Sprintf("%s/%s:%d", mode, c.point, c.n), func(t *testing.T) {
					t.Parallel()
					dir := t.TempDir()
					tg := testkit.NewTarget(t, name, dir)
					rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), crashRows, 11)
					args := []string{"--partition-rows", fmt.Sprint(crashRows / crashPartitions), "orders.csv"}
					if mode == "natural" {
						args = append([]string{"--key", "order_id"}, args...)
					}
					env := []string{fmt.Sprintf("IDEMPORT_FAILPOINT=%s:%d", c.point, c.n)}
					killed := tg.Exec(t, dir, env, append([]string{"import"}, args...)...)
					if killed.Signal != syscall.SIGKILL {
						t.Fatalf("not killed at %s:%d: exit %d\n%s%s", c.point, c.n, killed.Code, killed.Stdout, killed.Stderr)
					}
					if c.point == "after-partition-claim" {
						// The reader claims partition k while the writer works on
						// k-1, so k-2 or k-1 partitions are done when it dies.
						done := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("partitions")+` WHERE done = 1`)
						if done != c.skipped && done != c.skipped-1 {
							t.Fatalf("%d partitions done when killed after claiming partition %d", done, c.n)
						}
						c.skipped = done
					}
					res := importTo(t, tg, dir, nil, 0, args...)
					if res.Outcome != c.outcome || res.Partitions.Skipped != c.skipped || res.Partitions.Total != crashPartitions {
						t.Fatalf("rerun: outcome %s skipped %d of %d, want %s skipped %d", res.Outcome, res.Partitions.Skipped, res.Partitions.Total, c.outcome, c.skipped)
					}
					if c.outcome != "duplicate" && res.Partitions.Committed != crashPartitions-c.skipped {
						t.Fatalf("rerun committed %d partitions, want %d", res.Partitions.Committed, crashPartitions-c.skipped)
					}
					checkExact(t, tg, mode, rows)
					if n := testkit.Int(t, tg.DB, `SELECT sum(rows_inserted) FROM `+tg.Ledger("attempts")); n != crashRows {
						t.Fatalf("attempts inserted %d rows in all, want %d", n, crashRows)
					}
					if failed := testkit.Query(t, tg.DB, `SELECT attempt_id, outcome, error FROM `+tg.Ledger("attempts")+` WHERE outcome = 'failed'`); len(failed) > 0 {
						t.Fatalf("attempts recorded failed: %v", failed)
					}
					if tg.IsMariaDB() {
						// The table the import made is recorded once, as its
						// own and planned, wherever the DDL steps were cut.
						if got := createdRecords(t, tg); len(got) != 1 || got[0][2] != "orders" || got[0][3] != int64(1) {
							t.Fatalf("created: %v, want orders alone, planned", got)
						}
					}
				})
			}
		}
	})
}

// soakIterations is how many iterations the soak runs on target name:
// -soak when given, else its default on SQLite, 15 on PostgreSQL and 8 on
// MariaDB, where each iteration costs more.
func soakIterations(name string) int {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "soak" })
	switch {
	case given:
		return *soak
	case name == testkit.Postgres:
		return 15
	case name == testkit.MariaDB:
		return 8
	}
	return *soak
}

// killPoint says how far the import of file (a path pattern for LIKE)
// into target tg got when a run of it was killed: no ledger or operation
// yet, or the operation's state and how many of its planned partitions
// were done.
func killPoint(t *testing.T, tg *testkit.Target, file string) string {
	t.Helper()
	for _, table := range []string{"operations", "partitions"} {
		name := "idemport_" + table
		if tg.IsPostgres() {
			name = tg.Schema + "." + table
		}
		if !tg.TableExists(t, name) {
			return "no ledger" // killed before its tables were made
		}
	}
	var state string
	var done, total int64
	p := tg.Ledger("partitions")
	err := tg.DB.QueryRow(tg.Rebind(`SELECT o.state,
		(SELECT count(*) FROM `+p+` p WHERE p.table_name = o.table_name AND p.file_id = o.file_id AND p.done = 1),
		(SELECT count(*) FROM `+p+` p WHERE p.table_name = o.table_name AND p.file_id = o.file_id)
		FROM `+tg.Ledger("operations")+` o WHERE o.file_path LIKE ?`), file).Scan(&state, &done, &total)
	switch {
	case err == sql.ErrNoRows:
		return "no operation"
	case err != nil:
		t.Fatalf("where the import of %s was killed: %v", file, err)
	}
	return fmt.Sprintf("%s, %d of %d partitions done", state, done, total)
}

// eachSoakTarget runs a soak's f as one subtest per target named, the
// targets at the same time. A soak aims its kills within the time a run
// takes, timed by runs of its own before its rounds; so it runs alone,
// apart from the package's other tests, whose load would come and go
// under it, but its targets run together: each works in targets,
// directories and processes of its own, and times its runs under the load
// of the others, the load its rounds then meet. Where the others end first
// and its runs get quicker, kills land late: the soaks count their kills
// and run more rounds until they have enough.
func eachSoakTarget(t *testing.T, names []string, f func(t *testing.T, name string)) {
	t.Helper()
	testkit.EachOf(t, names, func(t *testing.T, name string) {
		t.Parallel()
		f(t, name)
	})
}

// soakKills counts the runs a soak killed at each point (killPoint).
type soakKills map[string]int

func (k soakKills) total() int {
	n := 0
	for _, c := range k {
		n += c
	}
	return n
}

// enough reports whether the kills prove something for a soak of the
// iterations asked for: at least one per two iterations (the first run of
// an iteration is aimed inside a full run), at three distinct points once
// there are enough of them.
func (k soakKills) enough(iterations int) bool {
	n := k.total()
	return n >= max(1, iterations/2) && len(k) >= min(3, 1+n/4)
}

// more reports whether a soak asked for iterations, having run done, runs
// another: until it has run those asked for, and then, since a loaded
// machine can make random kills land early or late, until its kills are
// enough, up to four times the iterations asked for.
func (k soakKills) more(done, iterations int) bool {
	return done < iterations || !k.enough(iterations) && done < 4*iterations
}

// check fails the soak unless its kills are enough (see enough).
func (k soakKills) check(t *testing.T, done, iterations int) {
	t.Helper()
	n := k.total()
	t.Logf("%d iterations (%d asked for), %d kills at %d points: %v", done, iterations, n, len(k), map[string]int(k))
	if !k.enough(iterations) {
		t.Fatalf("%d kills at %d distinct points in %d iterations, want at least %d kills at %d points: the soak proved too little",
			n, len(k), done, max(1, iterations/2), min(3, 1+n/4))
	}
}

// fullRun returns how long a full import of args (from dir) takes on a
// fresh target of kind name: the shorter of two runs, timed once the
// binary is built, so that neither the build nor one loaded moment aims
// the kills past the end of the runs.
func fullRun(t *testing.T, name, dir string, args ...string) time.Duration {
	t.Helper()
	testkit.Binary(t)
	span := time.Duration(math.MaxInt64)
	for range 2 {
		began := time.Now()
		importTo(t, testkit.NewTarget(t, name, t.TempDir()), dir, nil, 0, args...)
		span = min(span, time.Since(began))
	}
	return span
}

// TestRandomKillSoak kills the binary at random moments, reruns it (killing
// again at random, up to three times) until it completes, and checks every
// iteration ends exact. It asserts the kills it made (soakKills.check), so it
// proves something when run alone. -soak=N sets the number of iterations
// (default 50 on SQLite, 15 on PostgreSQL, 8 on MariaDB).
func TestRandomKillSoak(t *testing.T) {
	// Not parallel: its kills are aimed within the time a run takes (see eachSoakTarget).
	eachSoakTarget(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 1))
		dir := t.TempDir()
		const n = 4000
		rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), n, 12)
		// How long a full run takes here, to aim the kills inside it.
		span := fullRun(t, name, dir, "--partition-rows", "200", "orders.csv")
		killed := soakKills{}
		iterations := soakIterations(name)
		i := 0
		for ; killed.more(i, iterations); i++ {
			tg := testkit.NewTarget(t, name, t.TempDir())
			mode := []string{"ordinal", "natural"}[i%2]
			args := []string{"import", "--output", "json", "--partition-rows", "200", "orders.csv"}
			if mode == "natural" {
				args = append(args, "--key", "order_id")
			}
			for attempt := 0; ; attempt++ {
				cmd := tg.Cmd(t, dir, nil, args...)
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				if attempt < 3 {
					// The first run is killed within a full run's time; a
					// later one, resuming, may well end first.
					within := int64(span)
					if attempt > 0 {
						within = within * 5 / 4
					}
					time.AfterFunc(time.Duration(rng.Int64N(within)), func() { cmd.Process.Signal(syscall.SIGKILL) })
				}
				r := testkit.Wait(t, cmd)
				if r.Signal == syscall.SIGKILL {
					killed[killPoint(t, tg, "orders.csv")]++
					continue
				}
				if r.Code != 0 {
					t.Fatalf("iteration %d attempt %d: exit %d\n%s%s", i, attempt, r.Code, r.Stdout, r.Stderr)
				}
				break
			}
			checkExact(t, tg, mode, rows)
		}
		killed.check(t, i, iterations)
	})
}

// TestConcurrentRuns starts 8 runs of the same import at once: exactly one
// effect, every partition committed once, documented exit codes.
func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 3000, 13)
		var wg sync.WaitGroup
		results := make([]testkit.Run, 8)
		start := make(chan struct{})
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				results[i] = tg.Exec(t, dir, nil, "import", "--output", "json", "--partition-rows", "200", "orders.csv")
			}()
		}
		close(start)
		wg.Wait()
		outcomes := map[string]int{}
		for i, r := range results {
			if r.Code != 0 && r.Code != 4 {
				t.Fatalf("run %d: exit %d\n%s%s", i, r.Code, r.Stdout, r.Stderr)
			}
			res := parseResults(t, r.Stdout)[0]
			outcomes[res.Outcome]++
			want := map[string]int{"imported": 0, "resumed": 0, "duplicate": 0, "busy": 4}[res.Outcome]
			if _, known := map[string]bool{"imported": true, "resumed": true, "duplicate": true, "busy": true}[res.Outcome]; !known || res.ExitCode != want || r.Code != want {
				t.Fatalf("run %d: outcome %s exit %d", i, res.Outcome, r.Code)
			}
		}
		if outcomes["imported"] != 1 {
			t.Fatalf("outcomes %v: want exactly one run to create the operation", outcomes)
		}
		t.Logf("outcomes: %v", outcomes)
		checkExact(t, tg, "ordinal", rows)
		if n := testkit.Int(t, tg.DB, `SELECT sum(rows_inserted) FROM `+tg.Ledger("attempts")); n != 3000 {
			t.Fatalf("attempts inserted %d in all", n)
		}
	})
}

// TestStalledHolderCommitsNothingAfterTakeover freezes a run (SIGSTOP)
// after it committed three partitions, lets a second run take over its
// lease and finish, then thaws the first: it must stop without writing.
func TestStalledHolderCommitsNothingAfterTakeover(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), crashRows, 14)
		args := []string{"import", "--output", "json", "--lease", "2s", "--partition-rows", "100", "orders.csv"}
		holder := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit:3:stop"}, args...)).cmd

		// Its leases run out, as 2 s would make them: stopped, it renews
		// nothing (TestClaimDecisionTable's processing/expired/recovered
		// waits for a lease to run out by itself).
		expireLeases(t, tg)
		took := importTo(t, tg, dir, nil, 0, args[3:]...)
		if !took.RecoveredLease || took.Outcome != "resumed" || took.Partitions.Skipped != 3 || took.Partitions.Committed != 7 {
			t.Fatalf("takeover: %+v", took)
		}
		testkit.Continue(holder.Process)
		h := testkit.Wait(t, holder)
		if h.Code != 1 || !strings.Contains(h.Stdout, "lease lost") {
			t.Fatalf("thawed holder: exit %d\n%s%s", h.Code, h.Stdout, h.Stderr)
		}
		checkExact(t, tg, "ordinal", rows)
		first := testkit.Query(t, tg.DB, `SELECT partitions_committed, rows_inserted, outcome FROM `+tg.Ledger("attempts")+` ORDER BY started_at LIMIT 1`)
		if want := [][]any{{int64(3), int64(300), "failed"}}; !reflect.DeepEqual(first, want) {
			t.Fatalf("stalled attempt: %v, want %v", first, want)
		}
	})
}

// TestLedgerWipedAfterPartialRun drops idemport's tables after a run was
// killed halfway, and reruns: no row is duplicated.
func TestLedgerWipedAfterPartialRun(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), crashRows, 15)
		killed := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=inside-partition:5"}, "import", "--partition-rows", "100", "orders.csv")
		if killed.Signal != syscall.SIGKILL {
			t.Fatalf("not killed: %d", killed.Code)
		}
		dropLedger(t, tg)
		res := importTo(t, tg, dir, nil, 0, "--partition-rows", "100", "orders.csv")
		if res.Outcome != "imported" || res.Rows.Inserted != 600 || res.Rows.Unchanged != 400 {
			t.Fatalf("rerun: %+v", res)
		}
		checkOrders(t, tg, "orders", rows)
	})
}

// TestInterruptRollsBackAndReleases sends SIGINT or SIGTERM while a
// partition is written but not committed: the run finishes or rolls back
// that partition, exits 130 saying how many partitions it committed,
// releases its claims, and a rerun is exact.
func TestInterruptRollsBackAndReleases(t *testing.T) {
	t.Parallel()
	// Small partitions: after the stopped run is let go, the signal it
	// got while stopped must be seen before it could apply the rest of the
	// file; with 96 partitions left (a commit each) it always is, where
	// with 6 a loaded machine could let the run finish first.
	const partRows = 10
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			t.Run(sig.String(), func(t *testing.T) {
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), crashRows, 16)
				cmd := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=inside-partition:4:stop"}, "import", "--partition-rows", strconv.Itoa(partRows), "orders.csv")).cmd
				cmd.Process.Signal(sig)
				testkit.Continue(cmd.Process)
				r := testkit.Wait(t, cmd)
				var committed int64
				if _, err := fmt.Sscanf(r.Stdout, "orders.csv: interrupted; rerun to resume (this run committed %d partitions)", &committed); err != nil || r.Code != 130 {
					t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
				}
				if committed < 3 || strings.Contains(r.Stderr, "context canceled") {
					t.Fatalf("committed %d partitions; stderr %s", committed, r.Stderr)
				}
				if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM orders`); n != committed*partRows {
					t.Fatalf("%d rows after the interrupt, want the %d committed partitions' rows", n, committed)
				}
				if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("partitions")+` WHERE done = 1`); n != committed {
					t.Fatalf("%d partitions marked done, the run said %d", n, committed)
				}
				if got := testkit.Query(t, tg.DB, `SELECT o.state, (SELECT count(*) FROM `+tg.Ledger("partitions")+` WHERE lease_attempt IS NOT NULL),
					(SELECT outcome FROM `+tg.Ledger("attempts")+`) FROM `+tg.Ledger("operations")+` o`); !reflect.DeepEqual(got, [][]any{{"failed", int64(0), "interrupted"}}) {
					t.Fatalf("ledger after the interrupt: %v\nstdout %s\nstderr %s", got, r.Stdout, r.Stderr)
				}
				res := importTo(t, tg, dir, nil, 0, "--partition-rows", strconv.Itoa(partRows), "orders.csv")
				if res.Outcome != "resumed" || res.RecoveredLease || res.Partitions.Skipped != committed {
					t.Fatalf("rerun: %+v", res)
				}
				checkExact(t, tg, "ordinal", rows)
			})
		}
	})
}

// TestInterruptDuringCommitFinishesIt sends SIGINT while a partition's
// COMMIT is in flight on PostgreSQL: the COMMIT, once sent, is waited for
// rather than cancelled, so the run knows it committed that partition and
// says so, and the target holds exactly the partitions the run reports.
// Cancelling the COMMIT instead leaves its outcome unknown to the client
// (the race behind a rare "400 rows after the interrupt" in
// TestInterruptRollsBackAndReleases). The COMMIT is held open by a
// deferred constraint trigger that sleeps on the third partition's first
// row. SQLite's COMMIT cannot be cancelled or held open this way, so the
// test runs on PostgreSQL only.
func TestInterruptDuringCommitFinishesIt(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.Postgres)
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.Postgres, dir)
	rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), crashRows, 20)
	args := []string{"import", "--partition-rows", "100", "orders.csv"}
	// The first run commits one partition (creating the table) and dies.
	if r := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit:1"}, args...); r.Signal != syscall.SIGKILL {
		t.Fatalf("first run not killed: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	marker := "slow_commit_" + tg.Schema
	for _, q := range []string{
		`CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW._idemport_row = 201 THEN
				PERFORM set_config('application_name', '` + marker + `', true);
				PERFORM pg_sleep(3);
			END IF;
			RETURN NULL;
		END $$`,
		`CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT OR UPDATE ON orders
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit()`,
	} {
		if _, err := tg.DB.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	run := start(t, tg, dir, nil, args...)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if testkit.Int(t, tg.DB, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event = 'PgSleep'`, marker) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the third partition's COMMIT never started\n%s%s", run.stdout.String(), run.stderr.String())
		}
	}
	run.cmd.Process.Signal(syscall.SIGINT)
	r := testkit.Wait(t, run.cmd)
	if r.Code != 130 || !strings.Contains(r.Stdout, "orders.csv: interrupted; rerun to resume (this run committed 2 partitions)") {
		t.Fatalf("interrupted during the third partition's COMMIT: exit %d, want 130 with 2 partitions committed\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM orders`); n != 300 {
		t.Fatalf("%d rows after the interrupt, want the 3 committed partitions' 300", n)
	}
	if got := testkit.Query(t, tg.DB, `SELECT count(*) FILTER (WHERE done = 1), count(*) FILTER (WHERE lease_attempt IS NOT NULL) FROM `+tg.Ledger("partitions")); !reflect.DeepEqual(got, [][]any{{int64(3), int64(0)}}) {
		t.Fatalf("partitions done and still leased: %v, want 3 and 0", got)
	}
	if _, err := tg.DB.Exec(`DROP TRIGGER slow_commit ON orders`); err != nil {
		t.Fatal(err)
	}
	res := importTo(t, tg, dir, nil, 0, "--partition-rows", "100", "orders.csv")
	if res.Outcome != "resumed" || res.Partitions.Skipped != 3 || res.Partitions.Committed != 7 {
		t.Fatalf("rerun: %+v", res)
	}
	checkExact(t, tg, "ordinal", rows)
}

// TestLockedDatabaseFailsCleanly holds SQLite's write lock while a run needs
// it: the run is busy (exit 4) saying another process holds the lock, and a
// rerun resumes.
func TestLockedDatabaseFailsCleanly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), crashRows, 17)
	cmd := stopped(t, launch(t, testkit.Cmd(t, dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit:2:stop"},
		"import", "--partition-rows", "100", "--busy-timeout", "300ms", "orders.csv"))).cmd
	tg := testkit.NewTarget(t, testkit.SQLite, dir)
	conn, err := tg.DB.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	testkit.Continue(cmd.Process)
	r := testkit.Wait(t, cmd)
	if _, err := conn.ExecContext(t.Context(), `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	// Another process kept the write lock past the busy timeout: busy
	// (exit 4), never a failure, and nothing half-recorded.
	if r.Code != exitBusy || !strings.Contains(r.Stdout, "busy: another process holds the database's write lock") {
		t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	res := importJSON(t, dir, nil, 0, "--partition-rows", "100", "orders.csv")
	if res.Outcome != "resumed" || res.Partitions.Skipped < 2 {
		t.Fatalf("rerun: %+v", res)
	}
	checkExact(t, tg, "ordinal", rows)
}

// TestDiskFullFailsCleanly runs the import with a file size limit, as on a
// full disk: it fails with exit 1 and a clear error, and a rerun with room
// resumes exactly.
func TestDiskFullFailsCleanly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 3000, 18)
	// RLIMIT_FSIZE in 1 KiB blocks: the database (and its WAL, which the
	// migrations fill first) cannot grow past 512 KiB.
	cmd := exec.Command("bash", "-c", `ulimit -f 512 && exec "$0" "$@"`, testkit.Binary(t), "import", "--partition-rows", "100", "orders.csv")
	cmd.Dir = dir
	r := testkit.Wait(t, launch(t, cmd).cmd)
	if r.Code != 1 || !(strings.Contains(r.Stdout, "database or disk is full") || strings.Contains(r.Stdout, "disk I/O error") || strings.Contains(r.Stdout, "file too large")) {
		t.Fatalf("exit %d (signal %v)\n%s%s", r.Code, r.Signal, r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stdout+r.Stderr, "migration") {
		t.Fatalf("the disk filled up before the import began:\n%s%s", r.Stdout, r.Stderr)
	}
	res := importJSON(t, dir, nil, 0, "--partition-rows", "100", "orders.csv")
	if res.Outcome != "resumed" {
		t.Fatalf("rerun: %+v", res)
	}
	checkExact(t, testkit.NewTarget(t, testkit.SQLite, dir), "ordinal", rows)
}

// TestReadOnlyDatabaseFailsCleanly makes the target file read-only after a
// partial run (as root too: see modesBind): the rerun fails with exit 1 and
// says the database is read-only; once writable again, a rerun is exact.
func TestReadOnlyDatabaseFailsCleanly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), crashRows, 19)
	killed := testkit.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=inside-partition:3"}, "import", "--partition-rows", "100", "orders.csv")
	if killed.Signal != syscall.SIGKILL {
		t.Fatalf("not killed: %d", killed.Code)
	}
	path := filepath.Join(dir, "idemport.db")
	undo := makeReadOnly(t, path)
	r := testkit.Wait(t, launch(t, modesBind(t, testkit.Cmd(t, dir, nil, "import", "--partition-rows", "100", "orders.csv"))).cmd)
	undo()
	if r.Code != 1 || !strings.Contains(strings.ToLower(r.Stdout+r.Stderr), "readonly database") {
		t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	res := importJSON(t, dir, nil, 0, "--partition-rows", "100", "orders.csv")
	if res.Outcome != "resumed" || res.Partitions.Skipped != 2 {
		t.Fatalf("rerun: %+v", res)
	}
	checkExact(t, testkit.NewTarget(t, testkit.SQLite, dir), "ordinal", rows)
}

// makeReadOnly makes path read-only by its mode (which binds root only
// in a command from modesBind), and returns how to undo it.
func makeReadOnly(t *testing.T, path string) func() {
	t.Helper()
	// A clean close by the last connection checkpoints the WAL (the killed
	// run left its commits there) into the file and removes it.
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatal("the WAL outlived its last connection")
	}
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	return func() { os.Chmod(path, 0o644) }
}

// modesBind returns cmd made to respect files' modes. A user other than
// root does anyway; root overrides them (CAP_DAC_OVERRIDE), so as root cmd
// runs under setpriv (util-linux) without the capabilities that override
// them, as it would for another user. This needs neither an immutable
// attribute (chattr +i: most containers' file systems and capabilities
// refuse it) nor another user: where it cannot be done the test fails,
// rather than skip and cover nothing.
func modesBind(t *testing.T, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		return cmd
	}
	if runtime.GOOS != "linux" {
		t.Fatalf("as root on %s this test cannot make a file read-only to the binary: run it as another user", runtime.GOOS)
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatalf("as root this test needs setpriv (util-linux) to run the binary without CAP_DAC_OVERRIDE: %v", err)
	}
	const caps = "-dac_override,-dac_read_search"
	cmd.Args = append([]string{setpriv, "--inh-caps=" + caps, "--bounding-set=" + caps, cmd.Path}, cmd.Args[1:]...)
	cmd.Path = setpriv
	return cmd
}

// TestKillDuringFreshStateMigrations SIGKILLs an import into a fresh
// PostgreSQL state schema while its migrations, which run beside the
// hash, are held by another transaction's uncommitted table of the name
// of the checkpoints' first, which they create after all of the ledger's
// (one transaction per migration would leave those). The server's session of the killed process then
// either runs them on once the holder ends (applied) or is ended first
// (not applied): the state holds all the migrations, and by name the
// tables their files create, or no table at all, the target no row; a
// rerun imports the file exactly, its state has those tables, and
// another is a duplicate.
func TestKillDuringFreshStateMigrations(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.Postgres)
	// Every migration, and the tables their files create, named as the
	// files name them (none is dropped or renamed by a later one), with
	// the table that records them: the state of a migrated schema.
	var all int64
	want := []string{"migrations"}
	for _, c := range []string{"ledger", "checkpoint"} {
		fsys, err := postgres.Driver{}.Migrations(c)
		if err != nil {
			t.Fatal(err)
		}
		ups, err := fs.Glob(fsys, "*.up.sql")
		if err != nil {
			t.Fatal(err)
		}
		all += int64(len(ups))
		for _, up := range ups {
			body, err := fs.ReadFile(fsys, up)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(body), "\n") {
				if name, ok := strings.CutPrefix(strings.TrimSpace(line), "CREATE TABLE {{prefix}}"); ok {
					want = append(want, strings.TrimRight(strings.Fields(name)[0], "("))
				}
			}
		}
	}
	slices.Sort(want)
	if len(want) < 10 {
		t.Fatalf("the migrations' files parsed to tables %q: too few, their CREATE TABLE lines were missed", want)
	}
	// state is the tables of the schema of the state and the target.
	state := func(t *testing.T, tg *testkit.Target) string {
		t.Helper()
		var names string
		if err := tg.DB.QueryRow(`SELECT coalesce(string_agg(tablename, ' ' ORDER BY tablename), '') FROM pg_tables WHERE schemaname = $1`, tg.Schema).Scan(&names); err != nil {
			t.Fatal(err)
		}
		return names
	}
	for _, ends := range []string{"applied", "not applied"} {
		t.Run(ends, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			tg := testkit.NewTarget(t, testkit.Postgres, dir)
			rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), crashRows, 43)
			hold, err := tg.DB.Begin()
			if err != nil {
				t.Fatal(err)
			}
			defer hold.Rollback()
			if _, err := hold.Exec(`CREATE TABLE ` + tg.Ledger("plans") + ` (x int)`); err != nil {
				t.Fatal(err)
			}
			run := launch(t, tg.Cmd(t, dir, nil, "import", "--partition-rows", "100", "orders.csv"))
			// The killed process's session, waiting for the holder's lock
			// in the migrations' one message.
			var pid int64
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				err := tg.DB.QueryRow(`SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND strpos(query, $1) > 0`, tg.Schema).Scan(&pid)
				if err == nil {
					break
				}
				if err != sql.ErrNoRows {
					t.Fatal(err)
				}
				if time.Now().After(deadline) {
					t.Fatalf("the import never waited for the held migrations\nstdout: %s\nstderr: %s", run.stdout.String(), run.stderr.String())
				}
			}
			run.cmd.Process.Signal(syscall.SIGKILL)
			if r := testkit.Wait(t, run.cmd); r.Signal != syscall.SIGKILL {
				t.Fatalf("not killed: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			if ends == "not applied" {
				if _, err := tg.DB.Exec(`SELECT pg_terminate_backend($1)`, pid); err != nil {
					t.Fatal(err)
				}
			}
			if err := hold.Rollback(); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(30 * time.Second); testkit.Int(t, tg.DB, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid) > 0; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the killed import's session did not end")
				}
			}
			tables := state(t, tg)
			if ends == "applied" {
				if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("migrations")); n != all {
					t.Fatalf("%d migrations recorded, want all %d", n, all)
				}
				if tables != strings.Join(want, " ") {
					t.Fatalf("the applied migrations left tables\n%s\nwant those their files create\n%s", tables, strings.Join(want, " "))
				}
				if testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("operations")) != 0 {
					t.Fatal("an operation recorded by an import killed during its state's migrations")
				}
			} else if tables != "" {
				t.Fatalf("migrations that were not applied left tables %s, want none", tables)
			}
			if tg.TableExists(t, "orders") && testkit.Int(t, tg.DB, `SELECT count(*) FROM orders`) != 0 {
				t.Fatal("rows written by an import killed during its state's migrations")
			}
			if res := importTo(t, tg, dir, nil, 0, "--partition-rows", "100", "orders.csv"); res.Outcome != "imported" {
				t.Fatalf("rerun: %+v", res)
			}
			if got, want := state(t, tg), strings.Join(slices.Sorted(slices.Values(append([]string{"orders"}, want...))), " "); got != want {
				t.Fatalf("after the rerun the schema has tables\n%s\nwant the target's and those the migrations' files create\n%s", got, want)
			}
			checkExact(t, tg, "ordinal", rows)
			if res := importTo(t, tg, dir, nil, 0, "--partition-rows", "100", "orders.csv"); res.Outcome != "duplicate" {
				t.Fatalf("second rerun: %+v", res)
			}
		})
	}
}
