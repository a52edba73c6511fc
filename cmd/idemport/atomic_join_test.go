package main

// Several processes on one --atomic import: runs that join it while another
// completes it, stopped (failpoints) at the moments where they meet, and a
// soak of three processes of two workers each, SIGKILLed at random.

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// withApp returns tg's flags for the binary with its PostgreSQL
// connections named app (application_name), so that the test can see in
// pg_stat_activity when that process waits for a lock; on SQLite, tg's
// flags.
func withApp(t *testing.T, tg *testkit.Target, app string) []string {
	t.Helper()
	args := slices.Clone(tg.Args)
	if !tg.IsPostgres() {
		return args
	}
	u, err := url.Parse(args[1])
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	args[1] = u.String()
	return args
}

// waitForLock waits until the process whose connections are named app
// waits for a lock held by another transaction. SQLite cannot show that
// (a writer waits for the write lock in its busy handler), so there it
// gives the process a moment to get there; the test must hold either way.
// MariaDB names no connection, so there it waits until any connection to
// the target's database waits: for a row lock (information_schema's
// INNODB_TRX says LOCK WAIT; the process list's state then says only
// where the statement is, "Statistics" or "Updating") or for a table's
// metadata lock (the process list's state: "Waiting for table metadata
// lock"). The tests stop every other process on the target while the one
// named app runs into the lock.
func waitForLock(t *testing.T, tg *testkit.Target, app string) {
	t.Helper()
	if !tg.IsPostgres() && !tg.IsMariaDB() {
		time.Sleep(500 * time.Millisecond)
		return
	}
	waiting, args := `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, []any{app}
	if tg.IsMariaDB() {
		waiting, args = mariaWaiting, nil
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if testkit.Int(t, tg.DB, waiting, args...) > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never waited for a lock", app)
}

// mariaWaiting counts the other connections to the test's database that
// wait for a lock on MariaDB: for a table's metadata (the process list says
// so), or for a row. A row lock's waiter is not always listed in
// INNODB_TRX (MariaDB 10.11 left out the INSERTs waiting for the evolve
// lock's row, while listing their holders), so a statement that has run
// for a second or more counts too: nothing else the tests run takes that
// long on their small tables.
const mariaWaiting = `SELECT count(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID()
	AND (STATE LIKE 'Waiting for %lock%' OR COMMAND IN ('Query', 'Execute') AND TIME >= 1
		OR ID IN (SELECT trx_mysql_thread_id FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'))`

// continued sends s SIGCONT.
func continued(t *testing.T, s *started) {
	t.Helper()
	if err := testkit.Continue(s.cmd.Process); err != nil {
		t.Fatal(err)
	}
}

// finished waits for s and returns its one JSON result, failing t unless it
// exited with code.
func finished(t *testing.T, s *started, who string, code int) result {
	t.Helper()
	return parsed(t, testkit.Wait(t, s.cmd), who, code)
}

// parsed returns the one JSON result of r, failing t unless r exited with
// code.
func parsed(t *testing.T, r testkit.Run, who string, code int) result {
	t.Helper()
	if r.Code != code {
		t.Fatalf("%s: exit %d (signal %v), want %d\n%s%s", who, r.Code, r.Signal, code, r.Stdout, r.Stderr)
	}
	rs := parseResults(t, r.Stdout)
	if len(rs) != 1 {
		t.Fatalf("%s: %d results: %s", who, len(rs), r.Stdout)
	}
	return rs[0]
}

// checkAtomicSettled asserts what every --atomic import of an orders file
// must end in, however many processes met on it: the table exact, the
// operation completed, no attempt recorded failed, no staging table left,
// and a rerun a duplicate.
func checkAtomicSettled(t *testing.T, tg *testkit.Target, dir, mode string, rows [][]string, args ...string) {
	t.Helper()
	checkExact(t, tg, mode, rows)
	if failed := testkit.Query(t, tg.DB, `SELECT attempt_id, outcome, error FROM `+tg.Ledger("attempts")+` WHERE outcome = 'failed'`); len(failed) > 0 {
		t.Fatalf("attempts recorded failed: %v", failed)
	}
	if got := testkit.Query(t, tg.DB, `SELECT a.outcome FROM `+tg.Ledger("attempts")+` a JOIN `+tg.Ledger("operations")+` o ON a.attempt_id = o.completed_by`); len(got) != 1 || (got[0][0] != "imported" && got[0][0] != "resumed") {
		t.Fatalf("the attempt that completed the operation is recorded %v", got)
	}
	for _, name := range tg.Tables(t) {
		if strings.HasPrefix(name, "_idemport_stage_") {
			t.Fatalf("staging table %s left behind", name)
		}
	}
	if again := importTo(t, tg, dir, nil, 0, args...); again.Outcome != "duplicate" {
		t.Fatalf("rerun: %s, want duplicate", again.Outcome)
	}
}

// TestAtomicJoinersOfACompletingImport stops one process of an --atomic
// import before and inside the transaction that completes it, and brings
// another to the import at each moment where they meet: one that claimed
// before the completion and starts its workers after it, one that reaches
// its own completion while the first completes, and one that claims while
// the first completes. Each ends with exit 0, the operation completed (never
// moved back to processing or failed), nothing recorded failed, the table
// exact, and a rerun a duplicate.
func TestAtomicJoinersOfACompletingImport(t *testing.T) {
	t.Parallel()
	type tc struct {
		name      string
		first     string // the failpoints of the completing process
		joiner    string // the joiner's, if it stops
		outcome   string // the joiner's
		committed int64  // the joiner's
	}
	cases := []tc{
		{"workers start after the completion", "before-finalize:stop", "after-claim:stop", "resumed", 0},
		{"completes while the other completes", "before-finalize:stop,inside-finalize:stop", "before-finalize:stop", "resumed", 0},
		{"claims while the other completes", "inside-finalize:stop", "", "duplicate", 0},
	}
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), crashRows, 31)
				args := []string{"--atomic", "--workers", "2", "--partition-rows", fmt.Sprint(crashRows / crashPartitions), "orders.csv"}
				run := func(env, app string) *started {
					cmd := testkit.Cmd(t, dir, []string{"IDEMPORT_FAILPOINT=" + env},
						append(append([]string{"import", "--output", "json"}, withApp(t, tg, app)...), args...)...)
					return launch(t, cmd)
				}
				app := "joiner-" + tg.Schema
				first := stopped(t, run(c.first, ""))
				var joiner *started
				switch c.name {
				case "workers start after the completion":
					// The joiner claims while every partition is done and the
					// operation not yet completed, then stops before its
					// workers start; the first completes meanwhile.
					joiner = stopped(t, run(c.joiner, app))
					continued(t, first)
				case "completes while the other completes":
					// Both stop before their completing transactions; the
					// first goes on and stops inside its own, and the joiner
					// then starts its own.
					joiner = stopped(t, run(c.joiner, app))
					continued(t, first)
					stopped(t, first)
					continued(t, joiner)
					waitForLock(t, tg, app)
					continued(t, first)
				case "claims while the other completes":
					joiner = run(c.joiner, app)
					waitForLock(t, tg, app)
					continued(t, first)
				}
				res := finished(t, first, "the completing run", 0)
				if res.Outcome != "imported" || res.Partitions.Committed != crashPartitions {
					t.Fatalf("the completing run: %s committing %d partitions", res.Outcome, res.Partitions.Committed)
				}
				if c.name == "workers start after the completion" {
					continued(t, joiner)
				}
				r := testkit.Wait(t, joiner.cmd)
				if op := testkit.Query(t, tg.DB, `SELECT state FROM `+tg.Ledger("operations")); !reflect.DeepEqual(op, [][]any{{"completed"}}) {
					t.Errorf("after the joiner the operation is %v, want completed", op)
				}
				got := parsed(t, r, "the joiner", 0)
				if got.Outcome != c.outcome || got.Partitions.Committed != c.committed {
					t.Fatalf("the joiner: %s committing %d partitions, want %s committing %d", got.Outcome, got.Partitions.Committed, c.outcome, c.committed)
				}
				if by := testkit.Query(t, tg.DB, `SELECT completed_by FROM `+tg.Ledger("operations")); !reflect.DeepEqual(by, [][]any{{res.AttemptID}}) {
					t.Fatalf("completed by %v, want %s", by, res.AttemptID)
				}
				checkAtomicSettled(t, tg, dir, "ordinal", rows, args...)
			})
		}
	})
}

// hostRun is one process a host of the soak ran: when it ran and how it
// ended.
type hostRun struct {
	began, ended time.Time
	run          testkit.Run
}

// TestAtomicJoinSoak is the multi-host example of docs/postgres.md under fire: three
// processes of two workers each start the same --atomic import with --wait
// forever at random moments, and some are SIGKILLed at random and started
// again, as a host would rerun them, until each has exited by itself. Every
// process that was not killed must exit 0 as imported, resumed or
// duplicate; then the table must hold the file exactly, the operation be
// completed, no attempt be recorded failed, no staging table be left, and a
// rerun be a duplicate. Rounds alternate ordinal and --key mode. -soak=N
// sets the rounds (default 6 on SQLite and PostgreSQL and 3 on MariaDB,
// whose rounds take several times as long; the proof is
// -soak=50). The kills and joins are aimed at random, so a loaded machine
// can make a round end before any lands: the soak then runs more rounds,
// up to four times as many, until it has at least one kill per round asked
// for and a concurrent join per two, and fails if it still has not. A round
// in which no aimed kill landed (the processes were faster than the solo run that
// aimed them, as when the other targets' soaks end) halves the span the
// next round aims within.
func TestAtomicJoinSoak(t *testing.T) {
	// Not parallel: its kills are aimed within the time a run takes (see eachSoakTarget).
	eachSoakTarget(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 9))
		rounds := 6
		if name == testkit.MariaDB {
			rounds = 3
		}
		flag.Visit(func(f *flag.Flag) {
			if f.Name == "soak" {
				rounds = *soak
			}
		})
		dir := t.TempDir()
		const n = 20000
		rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), n, 41)
		base := []string{"--atomic", "--workers", "2", "--partition-rows", "500", "orders.csv"}
		// How long one process alone takes here (the binary built), to aim
		// the starts and the kills inside an import.
		testkit.Binary(t)
		full := time.Now()
		importTo(t, testkit.NewTarget(t, name, t.TempDir()), dir, nil, 0, base...)
		span := time.Since(full)
		var kills, joins, late int
		outcomes := map[string]int{}
		enough := func() bool { return kills >= rounds && joins >= rounds/2 }
		round := 0
		for ; round < rounds || !enough() && round < 4*rounds; round++ {
			// Each round in a subtest of its own, whose cleanup closes its
			// connections: the server's are shared.
			if !t.Run(fmt.Sprintf("round %d", round), func(t *testing.T) {
				tg := testkit.NewTarget(t, name, t.TempDir())
				mode, args := "ordinal", slices.Clone(base)
				if round%2 == 1 {
					mode, args = "natural", append([]string{"--key", "order_id"}, args...)
				}
				cmdArgs := append([]string{"import", "--output", "json", "--wait", "forever"}, args...)
				var wg sync.WaitGroup
				var aimed atomic.Int32 // processes with a kill aimed at them
				hosts := make([][]hostRun, 3)
				began := time.Now()
				// The third host starts once a partition is done, so that
				// every round has a process joining an import under way;
				// the others within the first quarter of a solo run.
				done := `SELECT count(*) FROM ` + tg.Ledger("partitions") + ` WHERE done = 1`
				for h := range hosts {
					delay := time.Duration(rng.Int64N(int64(span) / 2))
					var killAt []time.Duration // of the host's first processes
					for range rng.IntN(3) {
						killAt = append(killAt, time.Duration(rng.Int64N(int64(span))))
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						for h == 2 && time.Since(began) < time.Minute {
							var n int64
							if tg.DB.QueryRow(done).Scan(&n); n > 0 {
								break
							}
							time.Sleep(10 * time.Millisecond)
						}
						time.Sleep(delay / 2)
						for k := 0; ; k++ {
							s := launch(t, tg.Cmd(t, dir, nil, cmdArgs...))
							hr := hostRun{began: time.Now()}
							if k < len(killAt) {
								aimed.Add(1)
								time.AfterFunc(killAt[k], func() { s.cmd.Process.Signal(syscall.SIGKILL) })
							}
							hr.run = testkit.Wait(t, s.cmd)
							hr.ended = time.Now()
							hosts[h] = append(hosts[h], hr)
							if hr.run.Signal != syscall.SIGKILL {
								return
							}
						}
					}()
				}
				wg.Wait()
				before := kills
				defer func() {
					if aimed.Load() > 0 && kills == before {
						span /= 2
						t.Logf("no kill landed: the next round aims within %v", span)
					}
				}()
				for h, runs := range hosts {
					for i, hr := range runs {
						if hr.run.Signal == syscall.SIGKILL {
							kills++
							continue
						}
						res := parsed(t, hr.run, fmt.Sprintf("round %d (%s), host %d, process %d", round, mode, h, i), 0)
						outcomes[res.Outcome]++
						if !slices.Contains([]string{"imported", "resumed", "duplicate"}, res.Outcome) {
							t.Fatalf("round %d, host %d: outcome %s", round, h, res.Outcome)
						}
						// A join: this process resumed the import while a process
						// of another host was running.
						if res.Outcome != "resumed" {
							continue
						}
						for o, others := range hosts {
							if o != h && slices.ContainsFunc(others, func(x hostRun) bool { return x.began.Before(hr.ended) && hr.began.Before(x.ended) }) {
								joins++
								if res.Partitions.Committed == 0 {
									late++ // it met the import as the others finished it
								}
								break
							}
						}
					}
				}
				checkAtomicSettled(t, tg, dir, mode, rows, args...)
			}) {
				break
			}
		}
		t.Logf("%d rounds (%d asked for): %d kills, %d concurrent joins (%d of them committing nothing: the others were finishing), outcomes %v",
			round, rounds, kills, joins, late, outcomes)
		if !enough() {
			t.Fatalf("%d kills and %d concurrent joins in %d rounds: too few for the soak to have proved anything (want %d and %d)", kills, joins, round, rounds, rounds/2)
		}
	})
}

// TestAtomicMovedBackByAnEarlierVersion starts from what a run of an earlier
// version left when it joined an --atomic import as another completed it:
// the operation moved back to failed (or, killed, processing) though it had
// completed, its staging table dropped, and every rerun failing on it. The
// next run finds every partition done and the completion recorded: it sets
// the operation completed again, applies nothing twice and exits 0; the
// table holds the file exactly and a rerun is a duplicate.
func TestAtomicMovedBackByAnEarlierVersion(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, state := range []string{"failed", "processing"} {
			t.Run(state, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), crashRows, 32)
				args := []string{"--atomic", "--partition-rows", fmt.Sprint(crashRows / crashPartitions), "orders.csv"}
				first := importTo(t, tg, dir, nil, 0, args...)
				if _, err := tg.DB.Exec(tg.Rebind(`UPDATE `+tg.Ledger("operations")+` SET state = ?, attempts = attempts + 1`), state); err != nil {
					t.Fatal(err)
				}
				res := importTo(t, tg, dir, nil, 0, args...)
				if res.Outcome != "resumed" || res.Partitions.Committed != 0 || res.Partitions.Skipped != crashPartitions || res.Rows.Inserted != 0 {
					t.Fatalf("the run after: %s, %+v partitions, %+v rows", res.Outcome, res.Partitions, res.Rows)
				}
				if by := testkit.Query(t, tg.DB, `SELECT state, completed_by FROM `+tg.Ledger("operations")); !reflect.DeepEqual(by, [][]any{{"completed", first.AttemptID}}) {
					t.Fatalf("operation (state, completed by) %v, want completed by %s", by, first.AttemptID)
				}
				checkAtomicSettled(t, tg, dir, "ordinal", rows, args...)
			})
		}
	})
}
