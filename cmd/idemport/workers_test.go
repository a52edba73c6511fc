package main

// Claim decisions, several workers on one file (processes and goroutines),
// frozen workers, and schema-qualified tables: what PostgreSQL, where many
// writers work at once, needs proven. Each test runs on both targets where
// it makes sense; on SQLite the processes share one writer.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/internal/proc"
	"github.com/idemport/idemport/internal/testkit"
)

// started is a binary started in the background, with its output captured.
type started struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
}

// start starts the binary against tg; it is killed at cleanup if still
// running.
func start(t *testing.T, tg *testkit.Target, dir string, env []string, args ...string) *started {
	t.Helper()
	return launch(t, tg.Cmd(t, dir, env, args...))
}

// launch starts cmd with its output captured; it is killed at cleanup if
// still running.
func launch(t *testing.T, cmd *exec.Cmd) *started {
	t.Helper()
	s := &started{cmd: cmd}
	s.cmd.Stdout, s.cmd.Stderr = &s.stdout, &s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		s.cmd.Wait() // reap it; an error only says it was reaped before
	})
	return s
}

// stopped waits until s, started with a failpoint that stops it, has
// stopped, and returns it.
func stopped(t *testing.T, s *started) *started {
	t.Helper()
	testkit.WaitStopped(t, s.cmd.Process.Pid)
	return s
}

// attemptOf returns the ID of the attempt recorded for process pid.
func attemptOf(t *testing.T, tg *testkit.Target, pid int) string {
	t.Helper()
	got := testkit.Query(t, tg.DB, tg.Rebind(`SELECT attempt_id FROM `+tg.Ledger("attempts")+` WHERE pid = ?`), pid)
	if len(got) != 1 {
		t.Fatalf("%d attempts of pid %d", len(got), pid)
	}
	return got[0][0].(string)
}

// planOnly makes the operation exist, planned, with no partition done: the
// run that planned it is killed right after planning. Being dead on this
// host, it holds up nobody.
func planOnly(t *testing.T, tg *testkit.Target, dir string, args ...string) {
	t.Helper()
	r := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=after-plan"}, append([]string{"import"}, args...)...)
	if r.Signal != syscall.SIGKILL {
		t.Fatalf("the planning run was not killed: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// checkCommittedOnce asserts that every partition is done, each by one
// attempt, and that every attempt's counters hold exactly the partitions
// marked done by it: no partition counted twice, none lost. It returns the
// number of partitions each attempt committed.
func checkCommittedOnce(t *testing.T, tg *testkit.Target, partitions int) map[string]int64 {
	t.Helper()
	p := tg.Ledger("partitions")
	if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+p+` WHERE done = 1 AND done_by IS NOT NULL AND lease_attempt IS NULL`); n != int64(partitions) {
		t.Fatalf("%d of %d partitions done, with a done_by and no lease", n, partitions)
	}
	rows := testkit.Query(t, tg.DB, `SELECT a.attempt_id, a.partitions_committed, a.rows_read,
		(SELECT count(*) FROM `+p+` d WHERE d.done_by = a.attempt_id),
		(SELECT coalesce(`+tg.Sum("d.row_count")+`, 0) FROM `+p+` d WHERE d.done_by = a.attempt_id)
		FROM `+tg.Ledger("attempts")+` a ORDER BY a.attempt_id`)
	by := map[string]int64{}
	var total int64
	for _, r := range rows {
		if r[1] != r[3] || r[2] != r[4] {
			t.Fatalf("attempt %s counted %v partitions and %v rows, but is done_by of %v partitions holding %v rows", r[0], r[1], r[2], r[3], r[4])
		}
		by[r[0].(string)] = r[3].(int64)
		total += r[3].(int64)
	}
	if total != int64(partitions) {
		t.Fatalf("attempts committed %d partitions in all, want %d", total, partitions)
	}
	return by
}

// regexpLine reports whether some line of s matches the regular
// expression re.
func regexpLine(s, re string) bool {
	return regexp.MustCompile(`(?m)` + re).MatchString(s)
}

// TestClaimDecisionTable walks every row of the README's claim decision
// table, with its exit code. A decision that has no effect (busy,
// duplicate, refused, conflict) must write nothing: on PostgreSQL not even
// a new row version.
func TestClaimDecisionTable(t *testing.T) {
	t.Parallel()
	rows := []struct {
		name string
		run  func(t *testing.T, tg *testkit.Target, dir string)
	}{
		{"new", func(t *testing.T, tg *testkit.Target, dir string) {
			want := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 120, 31)
			r := importTo(t, tg, dir, nil, 0, "--partition-rows", "50", "orders.csv")
			if r.Outcome != "imported" || r.Rows.Inserted != 120 || r.Partitions.Committed != 3 || r.Partitions.Skipped != 0 || r.RecoveredLease {
				t.Fatalf("new file: %+v", r)
			}
			checkOrders(t, tg, "orders", want)
			if got := testkit.Query(t, tg.DB, `SELECT o.state, o.attempts, a.outcome FROM `+tg.Ledger("operations")+` o JOIN `+tg.Ledger("attempts")+` a ON a.attempt_id = o.completed_by`); !reflect.DeepEqual(got, [][]any{{"completed", int64(1), "imported"}}) {
				t.Fatalf("ledger: %v", got)
			}
		}},
		{"processing/held/busy", func(t *testing.T, tg *testkit.Target, dir string) {
			testkit.Orders(t, filepath.Join(dir, "orders.csv"), 50, 32)
			// The holder claims the only partition and freezes; its lease
			// (60s) stays valid.
			stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=after-partition-claim:stop"}, "import", "orders.csv"))
			before := tg.Snapshot(t)
			busy := importTo(t, tg, dir, nil, 4, "orders.csv")
			if busy.Outcome != "busy" || !strings.Contains(busy.Error, "holds every unfinished partition") || !strings.Contains(busy.Error, "stopped: resume it with `kill -CONT") {
				t.Fatalf("busy: %+v", busy)
			}
			waited := importTo(t, tg, dir, nil, 4, "--wait=1s", "orders.csv")
			if waited.Outcome != "busy" || *waited.DurationMs < 1000 {
				t.Fatalf("--wait 1s: after %dms: %+v", *waited.DurationMs, waited)
			}
			if d := before.Diff(tg.Snapshot(t)); d != "" {
				t.Fatalf("a busy run wrote to %s", d)
			}
		}},
		{"processing/expired/recovered", func(t *testing.T, tg *testkit.Target, dir string) {
			want := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 50, 33)
			holder := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=after-partition-claim:stop"}, "import", "--lease", "1s", "--output", "json", "orders.csv"))
			stalled := attemptOf(t, tg, holder.cmd.Process.Pid)
			waitLeasesExpired(t, tg) // the frozen holder renews nothing
			took := importTo(t, tg, dir, nil, 0, "--lease", "1s", "orders.csv")
			if took.Outcome != "resumed" || !took.RecoveredLease || !reflect.DeepEqual(took.RecoveredFrom, []string{stalled}) || took.Partitions.Committed != 1 {
				t.Fatalf("takeover of %s: %+v", stalled, took)
			}
			testkit.Continue(holder.cmd.Process)
			h := testkit.Wait(t, holder.cmd)
			if h.Code != 1 || !strings.Contains(h.Stdout, "lease lost") {
				t.Fatalf("thawed holder: exit %d\n%s%s", h.Code, h.Stdout, h.Stderr)
			}
			checkExact(t, tg, "ordinal", want)
		}},
		{"processing/dead-holder/recovered-at-once", func(t *testing.T, tg *testkit.Target, dir string) {
			want := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 50, 34)
			// Killed holding the only partition, with a lease of 60s.
			dead := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=after-partition-claim"}, "import", "orders.csv")
			if dead.Signal != syscall.SIGKILL {
				t.Fatalf("holder not killed: exit %d", dead.Code)
			}
			gone := testkit.Query(t, tg.DB, `SELECT lease_attempt FROM `+tg.Ledger("partitions"))
			took := importTo(t, tg, dir, nil, 0, "orders.csv")
			if took.Outcome != "resumed" || !took.RecoveredLease || !reflect.DeepEqual(took.RecoveredFrom, []string{gone[0][0].(string)}) {
				t.Fatalf("takeover from a dead holder %v: %+v", gone, took)
			}
			if *took.DurationMs > 30000 {
				t.Fatalf("the takeover took %dms: it waited for the lease to expire", *took.DurationMs)
			}
			checkExact(t, tg, "ordinal", want)
		}},
		{"failed/resume", func(t *testing.T, tg *testkit.Target, dir string) {
			want := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 300, 35)
			failed := importTo(t, tg, dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit:2:error"}, 1, "--partition-rows", "100", "orders.csv")
			if failed.Outcome != "failed" || !strings.Contains(failed.Error, "injected failure") {
				t.Fatalf("failing run: %+v", failed)
			}
			if got := testkit.Query(t, tg.DB, `SELECT state, lease_attempt FROM `+tg.Ledger("operations")); !reflect.DeepEqual(got, [][]any{{"failed", nil}}) {
				t.Fatalf("operation after the failure: %v", got)
			}
			again := importTo(t, tg, dir, nil, 0, "--partition-rows", "100", "orders.csv")
			if again.Outcome != "resumed" || again.AttemptID == failed.AttemptID || again.RecoveredLease ||
				again.Partitions.Skipped != 2 || again.Partitions.Committed != 1 || again.Rows.Inserted != 100 {
				t.Fatalf("resume: %+v", again)
			}
			checkExact(t, tg, "ordinal", want)
			if got := testkit.Query(t, tg.DB, `SELECT attempt_id, outcome, partitions_committed FROM `+tg.Ledger("attempts")+` ORDER BY started_at`); !reflect.DeepEqual(got,
				[][]any{{failed.AttemptID, "failed", int64(2)}, {again.AttemptID, "resumed", int64(1)}}) {
				t.Fatalf("attempts: %v", got)
			}
		}},
		{"completed/duplicate", func(t *testing.T, tg *testkit.Target, dir string) {
			testkit.Orders(t, filepath.Join(dir, "orders.csv"), 120, 36)
			first := importTo(t, tg, dir, nil, 0, "--partition-rows", "50", "orders.csv")
			before := tg.Snapshot(t)
			dup := importTo(t, tg, dir, nil, 0, "--partition-rows", "50", "orders.csv")
			if dup.Outcome != "duplicate" || dup.AttemptID != first.AttemptID || dup.Rows.Inserted != 0 || dup.Previous == nil || dup.Previous.Rows.Inserted != 120 || dup.Partitions.Committed != 0 {
				t.Fatalf("duplicate: %+v", dup)
			}
			if d := before.Diff(tg.Snapshot(t)); d != "" {
				t.Fatalf("a duplicate wrote to %s", d)
			}
		}},
		{"refused/refused", func(t *testing.T, tg *testkit.Target, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "items.csv"), []byte("id,qty\n1,5\n2,five\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			first := importTo(t, tg, dir, nil, 5, "--column", "qty:int64", "items.csv")
			if first.Outcome != "refused" || !strings.Contains(first.Error, "1 of 2 rows is bad") {
				t.Fatalf("refusal: %+v", first)
			}
			before := tg.Snapshot(t)
			again := importTo(t, tg, dir, nil, 5, "--column", "qty:int64", "items.csv")
			if again.Outcome != "refused" || !strings.Contains(again.Error, "refused earlier") || !strings.Contains(again.Error, `row 2 column "qty" value "five"`) {
				t.Fatalf("refused again: %+v", again)
			}
			if d := before.Diff(tg.Snapshot(t)); d != "" {
				t.Fatalf("a repeated refusal wrote to %s", d)
			}
			if tg.TableExists(t, "items") {
				t.Fatal("a refused file created its table")
			}
		}},
		{"any/different/conflict", func(t *testing.T, tg *testkit.Target, dir string) {
			testkit.Orders(t, filepath.Join(dir, "a.csv"), 30, 37)
			testkit.Orders(t, filepath.Join(dir, "b.csv"), 30, 38)
			importTo(t, tg, dir, nil, 0, "--file-id", "day1", "--table", "orders", "a.csv")
			before := tg.Snapshot(t, "quickcheck") // b.csv's digest may be remembered
			content := importTo(t, tg, dir, nil, 3, "--file-id", "day1", "--table", "orders", "b.csv")
			if content.Outcome != "conflict" || !strings.Contains(content.Error, "content differs") {
				t.Fatalf("other content: %+v", content)
			}
			mapping := importTo(t, tg, dir, nil, 3, "--file-id", "day1", "--table", "orders", "--key", "order_id", "a.csv")
			if mapping.Outcome != "conflict" || !strings.Contains(mapping.Error, "mapping differs") {
				t.Fatalf("other mapping: %+v", mapping)
			}
			if d := before.Diff(tg.Snapshot(t, "quickcheck")); d != "" {
				t.Fatalf("a conflict wrote to %s", d)
			}
		}},
	}
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, row := range rows {
			t.Run(row.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				row.run(t, testkit.NewTarget(t, name, dir), dir)
			})
		}
	})
}

// TestWorkerProcessesShareOneFile starts four processes at once on one
// planned 20-partition file and SIGKILLs one of them midway, while it holds
// a partition's lease: the others share the partitions, take over the dead
// one's lease at once (it died on this host), and finish; every partition
// is committed exactly once and counted once.
func TestWorkerProcessesShareOneFile(t *testing.T) {
	// Not parallel: it polls for a moment when one of four processes holds
	// a lease with free partitions left, which the load of other tests can
	// make too short to see.
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		const partitions, per = 20, 2500
		want := testkit.Orders(t, filepath.Join(dir, "orders.csv"), partitions*per, 41)
		args := []string{"--partition-rows", fmt.Sprint(per), "orders.csv"}
		// Planned beforehand, so that the four start on an equal footing
		// instead of three waiting for the planner.
		planOnly(t, tg, dir, args...)

		procs := make([]*started, 4)
		for i := range procs {
			procs[i] = start(t, tg, dir, nil, append([]string{"import", "--output", "json"}, args...)...)
		}
		watchdog := time.AfterFunc(2*time.Minute, func() {
			for _, p := range procs {
				p.cmd.Process.Kill()
			}
		})
		defer watchdog.Stop()

		// Midway: a process that committed a partition and holds the lease
		// of another while free partitions remain, so that it dies holding
		// a lease someone else must take over.
		p := tg.Ledger("partitions")
		victim := -1
		for deadline := time.Now().Add(time.Minute); victim < 0; {
			if time.Now().After(deadline) {
				t.Fatal("found no moment when a process held a lease with free partitions left")
			}
			state := testkit.Query(t, tg.DB, `SELECT a.pid,
				(SELECT count(*) FROM `+p+` d WHERE d.done_by = a.attempt_id),
				(SELECT count(*) FROM `+p+` d WHERE d.done = 0 AND d.lease_attempt = a.attempt_id),
				(SELECT count(*) FROM `+p+` d WHERE d.done = 0 AND d.lease_attempt IS NULL)
				FROM `+tg.Ledger("attempts")+` a WHERE a.ended_at IS NULL`)
			for _, s := range state {
				i := slices.IndexFunc(procs, func(p *started) bool { return int64(p.cmd.Process.Pid) == s[0] })
				if i >= 0 && s[1].(int64) >= 1 && s[2].(int64) >= 1 && s[3].(int64) >= 2 {
					victim = i
					break
				}
			}
			if victim < 0 {
				time.Sleep(2 * time.Millisecond)
			}
		}
		deadAttempt := attemptOf(t, tg, procs[victim].cmd.Process.Pid)
		procs[victim].cmd.Process.Signal(syscall.SIGKILL)
		killed := time.Now()
		// Reap it at once, as a shell or supervisor would: an unreaped
		// zombie still looks alive to the others (see
		// TestDeadUnreapedHolderIsRecoveredAtOnce).
		if r := testkit.Wait(t, procs[victim].cmd); r.Signal != syscall.SIGKILL {
			t.Fatalf("the victim was not killed: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}

		recovered := false
		committed := map[string]int64{}
		for i, proc := range procs {
			if i == victim {
				continue
			}
			r := testkit.Wait(t, proc.cmd)
			if r.Code != 0 && r.Code != 4 {
				t.Fatalf("process %d: exit %d\n%s%s", i, r.Code, r.Stdout, r.Stderr)
			}
			res := parseResults(t, r.Stdout)[0]
			wantCode, known := map[string]int{"imported": 0, "resumed": 0, "duplicate": 0, "busy": 4}[res.Outcome]
			if !known || r.Code != wantCode || res.ExitCode != wantCode {
				t.Fatalf("process %d: outcome %s, exit %d", i, res.Outcome, r.Code)
			}
			if res.Outcome == "resumed" {
				committed[res.AttemptID] = res.Partitions.Committed
			}
			recovered = recovered || slices.Contains(res.RecoveredFrom, deadAttempt)
			t.Logf("process %d: %s, %d partitions committed, recovered from %v", i, res.Outcome, res.Partitions.Committed, res.RecoveredFrom)
		}
		if since := time.Since(killed); since > 30*time.Second {
			t.Fatalf("the others took %v after the kill: they waited for the 60s lease", since)
		}
		if !recovered {
			t.Fatalf("no process reported taking over the lease of the killed attempt %s", deadAttempt)
		}
		checkExact(t, tg, "ordinal", want)
		by := checkCommittedOnce(t, tg, partitions)
		for id, n := range committed {
			if by[id] != n {
				t.Fatalf("attempt %s reported %d partitions committed, the ledger has %d done by it", id, n, by[id])
			}
		}
		if by[deadAttempt] < 1 {
			t.Fatalf("the killed attempt is done_by of %d partitions, want at least 1", by[deadAttempt])
		}
		workers := 0
		for _, n := range by {
			if n > 0 {
				workers++
			}
		}
		if workers < 2 {
			t.Fatalf("only %d attempt(s) committed partitions: %v", workers, by)
		}
		if n := testkit.Int(t, tg.DB, `SELECT sum(recovered_leases) FROM `+tg.Ledger("attempts")); n < 1 {
			t.Fatalf("the ledger counts %d recovered leases", n)
		}
	})
}

// TestWorkersInOneProcess applies a 20-partition file with --workers 4:
// exact target, each partition committed once by the one attempt.
func TestWorkersInOneProcess(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		want := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 20000, 42)
		r := importTo(t, tg, dir, nil, 0, "--workers", "4", "--partition-rows", "1000", "orders.csv")
		if r.Outcome != "imported" || r.Partitions.Total != 20 || r.Partitions.Committed != 20 || r.Rows.Inserted != 20000 {
			t.Fatalf("--workers 4: %+v", r)
		}
		checkExact(t, tg, "ordinal", want)
		if by := checkCommittedOnce(t, tg, 20); !reflect.DeepEqual(by, map[string]int64{r.AttemptID: 20}) {
			t.Fatalf("partitions done by %v", by)
		}
	})
}

// TestFrozenWorkerCommitsNothingAfterTakeover freezes a run (SIGSTOP)
// after its second commit, holding the lease of its next partition, then
// starts two more runs at once: they share the rest of the partitions, one
// takes the frozen run's lease over once it expires, and the operation
// completes. Thawed, the frozen run must fail with "lease lost" and change
// nothing: not the target, not the partitions, not the operation (on
// PostgreSQL not even a row version).
func TestFrozenWorkerCommitsNothingAfterTakeover(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		const partitions, per = 20, 1000
		want := testkit.Orders(t, filepath.Join(dir, "orders.csv"), partitions*per, 43)
		args := []string{"import", "--output", "json", "--partition-rows", fmt.Sprint(per), "orders.csv"}
		// The frozen run's lease is short, so that it runs out while the
		// others work; theirs is long, so that however late a loaded
		// machine runs their heartbeats, the frozen run's lease is the only
		// one ever taken over.
		frozen := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit:2:stop"}, slices.Concat(args, []string{"--lease", "2s"})...))
		stalled := attemptOf(t, tg, frozen.cmd.Process.Pid)
		if n := testkit.Int(t, tg.DB, tg.Rebind(`SELECT count(*) FROM `+tg.Ledger("partitions")+` WHERE done = 0 AND lease_attempt = ?`), stalled); n != 1 {
			t.Fatalf("the frozen run holds %d leases, want the one on its next partition", n)
		}
		live := slices.Concat(args, []string{"--lease", "10m"})
		others := []*started{start(t, tg, dir, nil, live...), start(t, tg, dir, nil, live...)}
		var took string
		for i, o := range others {
			// A run that arrives while the other holds every free partition
			// and the frozen one's lease is still valid is busy.
			r := testkit.Wait(t, o.cmd)
			if r.Code != 0 && r.Code != 4 {
				t.Fatalf("run %d: exit %d\n%s%s", i, r.Code, r.Stdout, r.Stderr)
			}
			res := parseResults(t, r.Stdout)[0]
			if wantCode, ok := map[string]int{"resumed": 0, "duplicate": 0, "busy": 4}[res.Outcome]; !ok || wantCode != r.Code {
				t.Fatalf("run %d: exit %d: %+v", i, r.Code, res)
			}
			if slices.Contains(res.RecoveredFrom, stalled) {
				took = res.AttemptID
			}
		}
		if took == "" {
			t.Fatalf("neither run took over the frozen run's lease")
		}
		checkExact(t, tg, "ordinal", want)
		before := tg.Snapshot(t, "attempts")

		testkit.Continue(frozen.cmd.Process)
		f := testkit.Wait(t, frozen.cmd)
		if f.Code != 1 || !strings.Contains(f.Stdout, "lease lost") {
			t.Fatalf("thawed run: exit %d\n%s%s", f.Code, f.Stdout, f.Stderr)
		}
		if d := before.Diff(tg.Snapshot(t, "attempts")); d != "" {
			t.Fatalf("the thawed run wrote to %s after the takeover", d)
		}
		checkExact(t, tg, "ordinal", want)
		if by := checkCommittedOnce(t, tg, partitions); by[stalled] != 2 || by[took] < 1 {
			t.Fatalf("partitions done by %v; want 2 by the frozen %s, some by %s", by, stalled, took)
		}
		if got := testkit.Query(t, tg.DB, tg.Rebind(`SELECT outcome, partitions_committed FROM `+tg.Ledger("attempts")+` WHERE attempt_id = ?`), stalled); !reflect.DeepEqual(got, [][]any{{"failed", int64(2)}}) {
			t.Fatalf("frozen attempt: %v", got)
		}
	})
}

// TestQualifiedTableOnPostgres imports with --table SCHEMA.orders: the
// table is created in that schema, not in the one on the search path, and
// status, history and verify name it.
func TestQualifiedTableOnPostgres(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.Postgres)
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.Postgres, dir)
	sales := pgtest.Schema(t, tg.DB) // as a user would create "sales" first
	table := sales + ".orders"
	want := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 120, 44)

	r := importTo(t, tg, dir, nil, 0, "--table", table, "--partition-rows", "50", "orders.csv")
	if r.Outcome != "imported" || r.Table != table || r.Rows.Inserted != 120 {
		t.Fatalf("import into %s: %+v", table, r)
	}
	if !tg.TableExists(t, table) || tg.TableExists(t, "orders") {
		t.Fatalf("%s exists: %v; orders on the search path exists: %v", table, tg.TableExists(t, table), tg.TableExists(t, "orders"))
	}
	checkOrders(t, tg, table, want)
	if again := importTo(t, tg, dir, nil, 0, "--table", table, "orders.csv"); again.Outcome != "duplicate" || again.Table != table {
		t.Fatalf("rerun: %+v", again)
	}
	// The same file into the unqualified table is another operation.
	if other := importTo(t, tg, dir, nil, 0, "orders.csv"); other.Outcome != "imported" || other.Table != "orders" {
		t.Fatalf("unqualified: %+v", other)
	}
	checkOrders(t, tg, "orders", want)

	status := tg.Exec(t, dir, nil, "status")
	if status.Code != 0 || !regexpLine(status.Stdout, `^`+table+`\s+orders.csv\s+sha256:\S+\s+completed\s+120\s+3/3\s+1\s`) {
		t.Fatalf("status: %d\n%s%s", status.Code, status.Stdout, status.Stderr)
	}
	var ops []struct {
		Table      string
		State      string
		Partitions struct{ Total, Done int64 }
	}
	if js := tg.Exec(t, dir, nil, "status", "--output", "json"); js.Code != 0 || decodeLines(js.Stdout, &ops) != nil {
		t.Fatalf("status --output json: %d\n%s%s", js.Code, js.Stdout, js.Stderr)
	}
	i := slices.IndexFunc(ops, func(o struct {
		Table      string
		State      string
		Partitions struct{ Total, Done int64 }
	}) bool {
		return o.Table == table
	})
	if i < 0 || ops[i].State != "completed" || ops[i].Partitions.Total != 3 || ops[i].Partitions.Done != 3 {
		t.Fatalf("status --output json: %+v", ops)
	}
	hist := tg.Exec(t, dir, nil, "history", "orders.csv")
	if hist.Code != 0 || !strings.Contains(hist.Stdout, table+" ← "+r.FileID+": completed, 1 attempt, last seen as orders.csv,") ||
		!strings.Contains(hist.Stdout, r.AttemptID) {
		t.Fatalf("history: %d\n%s%s", hist.Code, hist.Stdout, hist.Stderr)
	}
	if v := tg.Exec(t, dir, nil, "verify", "--table", table, "orders.csv"); v.Code != 0 || !strings.Contains(v.Stdout, "ok: "+table+" holds all 120 rows") {
		t.Fatalf("verify: %d\n%s%s", v.Code, v.Stdout, v.Stderr)
	}

	var hops []struct {
		Table      string
		Partitions struct{ Total, Done int64 }
	}
	if js := tg.Exec(t, dir, nil, "history", "--output", "json", "--table", table, "orders.csv"); js.Code != 0 || decodeLines(js.Stdout, &hops) != nil || len(hops) != 1 || hops[0].Table != table {
		t.Fatalf("history --output json: %d\n%s%s", js.Code, js.Stdout, js.Stderr)
	}
	if hops[0].Partitions.Total != 3 || hops[0].Partitions.Done != 3 {
		t.Fatalf("history --output json reports partitions %+v for a completed 3-partition operation (status says 3/3)", hops[0].Partitions)
	}
}

// TestFailedAttemptReportsItsPartitions fails a run after its third of four
// partitions committed: the ledger and the rerun agree it committed three,
// and so must its own JSON result.
func TestFailedAttemptReportsItsPartitions(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		want := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 200, 45)
		failed := importTo(t, tg, dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit:3:error"}, 1, "--partition-rows", "50", "orders.csv")
		if failed.Outcome != "failed" || failed.Rows.Inserted != 150 || failed.Partitions.Total != 4 {
			t.Fatalf("failed run: %+v", failed)
		}
		if got := testkit.Query(t, tg.DB, `SELECT outcome, partitions_committed, rows_inserted FROM `+tg.Ledger("attempts")); !reflect.DeepEqual(got, [][]any{{"failed", int64(3), int64(150)}}) {
			t.Fatalf("failed attempt: %v", got)
		}
		again := importTo(t, tg, dir, nil, 0, "--partition-rows", "50", "orders.csv")
		if again.Outcome != "resumed" || again.Partitions.Skipped != 3 || again.Partitions.Committed != 1 {
			t.Fatalf("rerun: %+v", again)
		}
		checkExact(t, tg, "ordinal", want)
		if failed.Partitions.Committed != 3 {
			t.Fatalf("a failed run's JSON result says partitions.committed %d, but it committed 3 (rows.inserted %d, ledger 3)", failed.Partitions.Committed, failed.Rows.Inserted)
		}
	})
}

// TestDeadUnreapedHolderIsRecoveredAtOnce kills a run holding the only
// partition and leaves it unreaped (a zombie, as under a parent that does
// not wait for its children, such as PID 1 in a container without an init):
// the process no longer exists, so a rerun on this host should take its
// lease over at once rather than report busy until the lease expires.
func TestDeadUnreapedHolderIsRecoveredAtOnce(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		want := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 50, 46)
		holder := start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=after-partition-claim"}, "import", "orders.csv")
		waitZombie(t, holder.cmd.Process.Pid)
		r := tg.Exec(t, dir, nil, "import", "--output", "json", "orders.csv")
		holder.cmd.Wait() // reaped only now
		if r.Code == 4 {
			t.Fatalf("a dead but unreaped holder (zombie) on this host counts as alive; the rerun is busy until its lease expires: %s", r.Stdout)
		}
		if r.Code != 0 {
			t.Fatalf("rerun: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if res := parseResults(t, r.Stdout)[0]; res.Outcome != "resumed" || !res.RecoveredLease {
			t.Fatalf("rerun: %+v", res)
		}
		checkExact(t, tg, "ordinal", want)
	})
}

// waitZombie waits until process pid has exited but is not yet reaped.
func waitZombie(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if proc.Inspect(pid).State == proc.Exited {
			return
		}
	}
	t.Fatalf("process %d did not die", pid)
}

// TestWaitForPartitionLockedByFrozenHolder freezes a run inside a
// partition's transaction, past its lease, and starts another: the frozen
// transaction still locks that partition (SQLite: the write lock;
// PostgreSQL: the partition's row, which FOR UPDATE SKIP LOCKED passes
// over), so the other, given --wait, must wait for it, not take it over,
// and wait without spinning (without --wait it is busy: see
// TestFrozenHolderMakesOthersBusy). Thawed, the frozen run commits the
// partition it still holds
// (and may then lose its next, expired claim), and together they end
// exact. "Without spinning" is counted, not timed: the waiting run logs
// each claim it tries (debug), and over a stretch of its waiting it may try
// once per poll interval (lease/4) and once more for the round it was in
// when the stretch began; a loaded machine only makes it try less. A run
// that tries again without pausing tries hundreds of times.
func TestWaitForPartitionLockedByFrozenHolder(t *testing.T) {
	t.Parallel()
	const poll = 250 * time.Millisecond // --lease 1s: lease/4
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		want := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 1000, 47)
		args := []string{"import", "--output", "json", "--lease", "1s", "--partition-rows", "100", "orders.csv"}
		frozen := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=inside-partition:2:stop"}, args...))
		waitLeasesExpired(t, tg)
		log := filepath.Join(dir, "other.log")
		other := startLogging(t, tg.Cmd(t, dir, nil, append(args, "--wait=5m", "--log-level", "debug", "--log-format", "json")...), log)
		// It does what it can, then waits. On PostgreSQL it commits the
		// 7 partitions the frozen transaction does not lock (that one
		// holds partition 2 and its claim of partition 3; it committed
		// partition 1), then polls; on SQLite nothing: the frozen run holds
		// the write lock, and its claim of the operation waits for it.
		// Count only once it is waiting, however long the work before took
		// on a loaded machine.
		if tg.IsPostgres() {
			waitFor(t, 60*time.Second, "the other run to commit the 7 partitions it can", func() bool {
				return testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("partitions")+` WHERE done = 1`) == 8
			})
		} else {
			waitFor(t, 60*time.Second, "the other run to try to claim the operation", func() bool {
				return slices.ContainsFunc(readLog(t, log), func(l logLine) bool { return l.Msg == "claiming the operation" })
			})
		}
		from := time.Now()
		time.Sleep(2 * time.Second) // a stretch of its waiting, long enough to show a spin
		until := time.Now()
		// Counted before the thaw: a run that spins may never end. A line
		// still being written is left out, which only lowers the count.
		tries := 0
		for _, l := range readLog(t, log) {
			if (l.Msg == "claiming the operation" || l.Msg == "claiming partitions") && !l.Time.Before(from) && l.Time.Before(until) {
				tries++
			}
		}
		most := int(until.Sub(from)/poll) + 2
		t.Logf("the waiting run tried %d claims in %v of waiting (at most %d without spinning)", tries, until.Sub(from).Round(time.Millisecond), most)
		if tries > most {
			t.Fatalf("while the frozen run's transaction locks a partition, the other run spins: %d claims in %v of waiting, more than one per %v", tries, until.Sub(from), poll)
		}
		testkit.Continue(frozen.cmd.Process)
		// The frozen run's next claim, made in the frozen transaction,
		// expired long ago: it may lose that partition to the other run
		// as soon as it commits the one it holds.
		if r := testkit.Wait(t, frozen.cmd); r.Code != 0 && (r.Code != 1 || !strings.Contains(r.Stdout, "lease lost")) {
			t.Fatalf("thawed run: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if r := testkit.Wait(t, other.cmd); r.Code != 0 {
			t.Fatalf("other run: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		checkExact(t, tg, "ordinal", want)
		checkCommittedOnce(t, tg, 10)
		counts := map[string]int{}
		for _, l := range readLog(t, log) {
			counts[l.Msg]++
		}
		// The log says what is counted (a renamed message must not make
		// the count 0): on SQLite the claim of the operation, which waits
		// for the write lock; on PostgreSQL the rounds of partition claims,
		// and that it waited between them.
		if counts["claiming the operation"] == 0 ||
			(tg.IsPostgres() && (counts["claiming partitions"] == 0 || counts["waiting for the partitions other attempts hold"] == 0)) {
			t.Fatalf("the other run's log does not show its claims and its waiting: %v", counts)
		}
	})
}

// startLogging starts cmd, as launch does, with its log (stderr) written
// to the file log, which the test may read while it runs.
func startLogging(t *testing.T, cmd *exec.Cmd, log string) *started {
	t.Helper()
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	s := &started{cmd: cmd}
	s.cmd.Stdout, s.cmd.Stderr = &s.stdout, f
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		s.cmd.Wait() // reap it; an error only says it was reaped before
	})
	return s
}

// logLine is a line of the binary's log in JSON (--log-format json).
type logLine struct {
	Time time.Time `json:"time"`
	Msg  string    `json:"msg"`
}

// readLog returns the lines of the JSON log in the file path, as far as
// they are written; a line being written is left out.
func readLog(t *testing.T, path string) []logLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []logLine
	for l := range strings.Lines(string(b)) {
		if !strings.HasSuffix(l, "\n") {
			break
		}
		var ll logLine
		if err := json.Unmarshal([]byte(l), &ll); err != nil {
			t.Fatalf("%s: not a JSON log line: %v\n%s", path, err, l)
		}
		lines = append(lines, ll)
	}
	return lines
}

// TestLiveHolderMidTransactionIsNotBusy stops a run inside its first
// partition's transaction, which has also claimed the next (uncommitted,
// so that partition looks free to others but SKIP LOCKED passes it over),
// and makes it look like a run on another host, alive. A second run finds
// nothing it can claim: it must wait for the live holder, not exit busy as
// if a stalled holder locked the partition; thawed, the first finishes and
// both exit 0 with the file imported exactly once.
func TestLiveHolderMidTransactionIsNotBusy(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.Postgres) // SQLite's writer holds the whole write lock instead
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.Postgres, dir)
	want := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 200, 48)
	args := []string{"import", "--output", "json", "--lease", "10m", "--partition-rows", "100", "orders.csv"}
	holder := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=inside-partition:1:stop"}, args...))
	// Elsewhere, its process cannot be seen stopped: to the other run it is
	// a live attempt in the middle of its transaction.
	testkit.Int(t, tg.DB, tg.Rebind(`WITH u AS (UPDATE `+tg.Ledger("attempts")+` SET host = 'elsewhere' WHERE pid = ? RETURNING 1) SELECT count(*) FROM u`), holder.cmd.Process.Pid)

	log, err := os.Create(filepath.Join(dir, "other.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	other := tg.Cmd(t, dir, nil, append(args, "--log-level", "debug")...)
	var out bytes.Buffer
	other.Stdout, other.Stderr = &out, log
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	ended := make(chan testkit.Run, 1)
	go func() { ended <- testkit.Wait(t, other) }()
	deadline := time.After(60 * time.Second)
	for waiting := false; !waiting; {
		select {
		case r := <-ended:
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("while the holder is alive in its transaction, the other run ended: exit %d\n%s%s", r.Code, r.Stdout, b)
		case <-deadline:
			t.Fatalf("the other run neither waited nor ended in 60s")
		case <-time.After(10 * time.Millisecond):
			b, _ := os.ReadFile(log.Name())
			waiting = strings.Contains(string(b), "waiting for the partitions other attempts hold")
		}
	}
	testkit.Continue(holder.cmd.Process)
	if r := testkit.Wait(t, holder.cmd); r.Code != 0 {
		t.Fatalf("holder: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r := <-ended
	if res := parseResults(t, r.Stdout); r.Code != 0 || res[0].Outcome != "resumed" {
		t.Fatalf("other run: exit %d\n%s", r.Code, r.Stdout)
	}
	checkExact(t, tg, "ordinal", want)
	checkCommittedOnce(t, tg, 2)
}

// waitFor polls cond every 10ms until it holds, failing t after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// waitLeasesExpired waits until no lease on the target is live by the
// database's clock, by which runs judge leases: the lease of a holder that
// is stopped (so renews nothing) has run out, however slowly the machine
// runs.
func waitLeasesExpired(t *testing.T, tg *testkit.Target) {
	t.Helper()
	waitFor(t, time.Minute, "the stopped holder's lease to run out", func() bool { return tg.LiveLeases(t) == 0 })
}

// expireLeases makes every lease on the target run out now, as the
// passing of its time would, for tests whose holder must first be seen
// holding a live lease however slowly the machine runs (so its lease is
// long) and then lose it: the holder is stopped or dead and renews
// nothing.
func expireLeases(t *testing.T, tg *testkit.Target) {
	t.Helper()
	for _, table := range []string{"partitions", "operations"} {
		if _, err := tg.DB.Exec(`UPDATE ` + tg.Ledger(table) + ` SET lease_expires = ` + tg.Now() + ` - 1 WHERE lease_attempt IS NOT NULL`); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFrozenHolderMakesOthersBusy freezes a run inside a partition's
// transaction (SIGSTOP, as Ctrl-Z does) and starts another without --wait:
// it must exit 4 (busy) by itself (a run waiting forever never returns
// here; how long it took is measured, not asserted), naming the
// holder's attempt, host:pid, that it is stopped and how to resume it —
// not fail with "database is locked" (SQLite), nor wait on the locked
// partition forever (PostgreSQL). Whatever it committed meanwhile stays
// committed, once, and a run after the holder is resumed ends exact.
func TestFrozenHolderMakesOthersBusy(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		want := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 1000, 49)
		args := []string{"import", "--output", "json", "--partition-rows", "100", "orders.csv"}
		frozen := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=inside-partition:2:stop"}, args...))
		holder := attemptOf(t, tg, frozen.cmd.Process.Pid)

		r := tg.Exec(t, dir, nil, append(args, "--busy-timeout", "1s")...)
		if r.Code != exitBusy {
			t.Fatalf("exit %d, want 4\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		res := parseResults(t, r.Stdout)[0]
		if res.Outcome != "busy" {
			t.Fatalf("outcome %q, want busy: %+v", res.Outcome, res)
		}
		host, _ := os.Hostname()
		for _, s := range []string{holder, fmt.Sprintf("%s:%d", host, frozen.cmd.Process.Pid), fmt.Sprintf("kill -CONT %d", frozen.cmd.Process.Pid), "--wait"} {
			if !strings.Contains(res.Error, s) {
				t.Fatalf("the busy message does not say %q: %s", s, res.Error)
			}
		}

		testkit.Continue(frozen.cmd.Process)
		if f := testkit.Wait(t, frozen.cmd); f.Code != 0 {
			t.Fatalf("thawed run: exit %d\n%s%s", f.Code, f.Stdout, f.Stderr)
		}
		again := tg.Exec(t, dir, nil, args...)
		if again.Code != 0 {
			t.Fatalf("rerun: exit %d\n%s%s", again.Code, again.Stdout, again.Stderr)
		}
		checkExact(t, tg, "ordinal", want)
		checkCommittedOnce(t, tg, 10)
	})
}
