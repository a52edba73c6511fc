package main

// Within one file only the last occurrence of a key is applied, whatever
// order the file's partitions commit in: proven with a deterministic
// out-of-order commit between two processes, with a resume after a kill,
// and with a random-kill soak over a file of many repeated keys.

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// keyValues returns table t's (id, v) rows in id order.
func keyValues(t *testing.T, tg *testkit.Target) [][]any {
	t.Helper()
	return testkit.Query(t, tg.DB, `SELECT id, v FROM t ORDER BY id`)
}

// writeKeyed writes a CSV file of (id, v) rows to dir/name.
func writeKeyed(t *testing.T, dir, name string, rows [][2]any) {
	t.Helper()
	var b strings.Builder
	b.WriteString("id,v\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%v,%v\n", r[0], r[1])
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitDone waits until partition idx of the operation of fileID is done,
// by the run s.
func waitDone(t *testing.T, tg *testkit.Target, s *started, fileID string, idx int) {
	t.Helper()
	q := tg.Rebind(`SELECT count(*) FROM ` + tg.Ledger("partitions") + ` WHERE file_id = ? AND idx = ? AND done = 1`)
	for deadline := time.Now().Add(time.Minute); testkit.Int(t, tg.DB, q, fileID, idx) == 0; {
		if time.Now().After(deadline) {
			s.cmd.Process.Kill()
			s.cmd.Wait()
			t.Fatalf("partition %d of %s never committed\n%s%s", idx, fileID, s.stdout.String(), s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkOperationCounts asserts that the operation of fileID and its
// attempts count every row of the file exactly once, superseded ones
// included.
func checkOperationCounts(t *testing.T, tg *testkit.Target, fileID string, rows, superseded int64) {
	t.Helper()
	sum := `rows_inserted + rows_updated + rows_unchanged + rows_stale + rows_superseded + rows_rejected`
	op := testkit.Query(t, tg.DB, tg.Rebind(`SELECT state, rows_read, `+sum+`, rows_superseded FROM `+tg.Ledger("operations")+` WHERE file_id = ?`), fileID)
	if want := [][]any{{"completed", rows, rows, superseded}}; !reflect.DeepEqual(op, want) {
		t.Fatalf("operation (state, read, sum of outcomes, superseded) %v, want %v", op, want)
	}
	att := testkit.Query(t, tg.DB, tg.Rebind(`SELECT `+tg.Sum("rows_read")+`, `+tg.Sum(sum)+`, `+tg.Sum("rows_superseded")+`
		FROM `+tg.Ledger("attempts")+` WHERE file_id = ?`), fileID)
	if want := [][]any{{rows, rows, superseded}}; !reflect.DeepEqual(att, want) {
		t.Fatalf("attempts (read, sum of outcomes, superseded) %v, want %v", att, want)
	}
}

// TestLastOccurrenceWinsOutOfOrder commits a file's partitions in reverse
// order: one process stops (a failpoint) holding the partition with the
// first occurrences of keys 1-3, while another commits the partition with
// their last occurrences; then the first is let go (continue), or killed
// and its partition resumed by the other (kill). Key 1's last occurrence
// equals the stored value (written by an earlier file), and another file
// writes key 2 between the two commits. The table must end as the files
// applied in the order their effects committed: key 1 and 3 with the
// file's last values, key 2 with the other file's; the first occurrences
// are counted superseded.
func TestLastOccurrenceWinsOutOfOrder(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, how := range []string{"continue", "kill"} {
			t.Run(how, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				writeKeyed(t, dir, "base.csv", [][2]any{{1, "last-1"}, {9, "base-9"}})
				writeKeyed(t, dir, "a.csv", [][2]any{{1, "first-1"}, {2, "first-2"}, {3, "first-3"}, {1, "last-1"}, {2, "last-2"}, {3, "last-3"}, {4, "only-4"}})
				writeKeyed(t, dir, "between.csv", [][2]any{{2, "between-2"}})
				importTo(t, tg, dir, nil, 0, "--table", "t", "--key", "id", "base.csv")

				args := []string{"import", "--output", "json", "--table", "t", "--key", "id", "--partition-rows", "3", "--lease", "10m", "a.csv"}
				holder := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=after-partition-claim:1:stop"}, args...))
				if got := testkit.Query(t, tg.DB, `SELECT idx FROM `+tg.Ledger("partitions")+` WHERE lease_attempt IS NOT NULL`); !reflect.DeepEqual(got, [][]any{{int64(0)}}) {
					t.Fatalf("leased partitions %v, want the stopped run's 0", got)
				}
				fileID := testkit.Query(t, tg.DB, `SELECT file_id FROM `+tg.Ledger("partitions")+` WHERE lease_attempt IS NOT NULL`)[0][0].(string)
				other := start(t, tg, dir, nil, args...)
				waitDone(t, tg, other, fileID, 1)
				waitDone(t, tg, other, fileID, 2)
				importTo(t, tg, dir, nil, 0, "--table", "t", "--key", "id", "between.csv")

				var results []result
				switch how {
				case "continue":
					testkit.Continue(holder.cmd.Process)
					if r := testkit.Wait(t, holder.cmd); r.Code != 0 {
						t.Fatalf("the held run: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
					} else {
						results = append(results, parseResults(t, r.Stdout)...)
					}
				case "kill":
					holder.cmd.Process.Signal(syscall.SIGKILL)
					holder.cmd.Wait()
				}
				r := testkit.Wait(t, other.cmd)
				if r.Code != 0 {
					t.Fatalf("the other run: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
				}
				results = append(results, parseResults(t, r.Stdout)...)
				if how == "kill" && !results[0].RecoveredLease {
					t.Fatalf("the other run did not take over the killed run's partition: %+v", results[0])
				}

				want := [][]any{{int64(1), "last-1"}, {int64(2), "between-2"}, {int64(3), "last-3"}, {int64(4), "only-4"}, {int64(9), "base-9"}}
				if got := keyValues(t, tg); !reflect.DeepEqual(got, want) {
					t.Fatalf("table t:\n got  %v\n want %v", got, want)
				}
				var superseded, read int64
				for _, res := range results {
					superseded += res.Rows.Superseded
					read += res.Rows.Read
					if res.Rows.Read != res.Rows.Inserted+res.Rows.Updated+res.Rows.Unchanged+res.Rows.Stale+res.Rows.Superseded+res.Rows.Rejected {
						t.Fatalf("counters do not add up: %+v", res.Rows)
					}
				}
				if superseded != 3 || read != 7 {
					t.Fatalf("the runs read %d rows and superseded %d, want 7 and 3: %+v", read, superseded, results)
				}
				checkOperationCounts(t, tg, fileID, 7, 3)
				// verify counts the file's winning rows: 7 read, 3 superseded.
				if v := tg.Exec(t, dir, nil, "verify", "--table", "t", "--key", "id", "a.csv"); v.Code != 0 || !strings.Contains(v.Stdout, "ok: t holds all 4 rows") {
					t.Fatalf("verify: exit %d\n%s%s", v.Code, v.Stdout, v.Stderr)
				}
				hist := tg.Exec(t, dir, nil, "history", "--output", "json", "a.csv")
				if hist.Code != 0 || !strings.Contains(hist.Stdout, `"superseded":3`) {
					t.Fatalf("history: exit %d\n%s%s", hist.Code, hist.Stdout, hist.Stderr)
				}
			})
		}
	})
}

// TestLastWinsSoak imports files whose keys repeat many times, within and
// across partitions, with two processes of two workers each (whose
// partitions commit in any order) and SIGKILLs at random moments,
// rerunning until each completes;
// an earlier file holds, for some keys, the value of their last occurrence.
// After every iteration the whole table must equal the last-wins result
// computed from the files, and the counters must add up; the kills are
// counted and must prove something (soakKills.check). -soak=N raises the
// iterations (default 8 on SQLite, 4 on PostgreSQL and MariaDB).
func TestLastWinsSoak(t *testing.T) {
	// Not parallel: its kills are aimed within the time a run takes (see eachSoakTarget).
	eachSoakTarget(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 7))
		iterations := map[string]int{testkit.SQLite: 8, testkit.Postgres: 4, testkit.MariaDB: 4}[name]
		flag.Visit(func(f *flag.Flag) {
			if f.Name == "soak" {
				iterations = *soak
			}
		})
		// A key's occurrences lie within about 240 rows, so they fall in
		// neighbouring partitions, which are in flight at the same time.
		const n, domain = 3000, 3000/6 + 40
		file := func(i int) (rows [][2]any, last map[int]string) {
			rows, last = make([][2]any, n), map[int]string{}
			for j := range rows {
				id := j/6 + rng.IntN(40)
				rows[j] = [2]any{id, fmt.Sprintf("r%d-%d", i, j)}
				last[id] = rows[j][1].(string)
			}
			return rows, last
		}
		// How long one process takes to import such a file, to aim the
		// kills inside the runs. (Two runs that share the file take no
		// longer; a second one waiting for the first to finish ends later,
		// which made kills timed by them land after the work.)
		timing := t.TempDir()
		rows, _ := file(-1)
		writeKeyed(t, timing, "f.csv", rows)
		span := fullRun(t, name, timing, "--table", "t", "--key", "id", "--partition-rows", "100", "--workers", "2", "f.csv")
		killed := soakKills{}
		i := 0
		for ; killed.more(i, iterations); i++ {
			dir := t.TempDir()
			tg := testkit.NewTarget(t, name, dir)
			rows, last := file(i)
			// The earlier file: every third key already holds its last value.
			want := map[int]string{}
			var base [][2]any
			for id := range domain {
				if v, ok := last[id]; ok && id%3 == 0 {
					base = append(base, [2]any{id, v})
				} else if id%5 == 0 {
					base = append(base, [2]any{id, "base"})
				}
			}
			for _, r := range base {
				want[r[0].(int)] = r[1].(string)
			}
			for id, v := range last {
				want[id] = v
			}
			writeKeyed(t, dir, "base.csv", base)
			writeKeyed(t, dir, "f.csv", rows)
			importTo(t, tg, dir, nil, 0, "--table", "t", "--key", "id", "base.csv")

			// Two processes of two workers each.
			args := []string{"import", "--output", "json", "--table", "t", "--key", "id", "--partition-rows", "100", "--workers", "2", "--wait=5m", "f.csv"}
			done := tg.Rebind(`SELECT count(*) FROM ` + tg.Ledger("operations") + ` WHERE state = 'completed' AND file_path LIKE ?`)
			for attempt := 0; testkit.Int(t, tg.DB, done, "%f.csv") == 0; attempt++ {
				var cmds []*started
				for range 2 {
					s := launch(t, tg.Cmd(t, dir, nil, args...))
					if attempt < 3 {
						// A first run is killed within a full run's time; a
						// later one, resuming, may well end first.
						within := int64(span)
						if attempt > 0 {
							within = within * 5 / 4
						}
						time.AfterFunc(time.Duration(rng.Int64N(within)), func() { s.cmd.Process.Signal(syscall.SIGKILL) })
					}
					cmds = append(cmds, s)
				}
				n := 0 // processes killed in this attempt
				for _, s := range cmds {
					r := testkit.Wait(t, s.cmd)
					if r.Signal == syscall.SIGKILL {
						n++
						continue
					}
					if r.Code != 0 {
						t.Fatalf("iteration %d attempt %d: exit %d\n%s%s", i, attempt, r.Code, r.Stdout, r.Stderr)
					}
				}
				if n > 0 {
					killed[killPoint(t, tg, "%f.csv")] += n
				}
				if attempt > 20 {
					t.Fatalf("iteration %d: not completed after %d attempts", i, attempt)
				}
			}
			var exp [][]any
			for _, id := range slices.Sorted(func(yield func(int) bool) {
				for id := range want {
					if !yield(id) {
						return
					}
				}
			}) {
				exp = append(exp, []any{int64(id), want[id]})
			}
			if got := keyValues(t, tg); !reflect.DeepEqual(got, exp) {
				for k := range min(len(got), len(exp)) {
					if !reflect.DeepEqual(got[k], exp[k]) {
						t.Fatalf("iteration %d: first difference at row %d: got %v, want %v (%d rows, want %d)", i, k, got[k], exp[k], len(got), len(exp))
					}
				}
				t.Fatalf("iteration %d: %d rows, want %d", i, len(got), len(exp))
			}
			fileID := testkit.Query(t, tg.DB, `SELECT file_id FROM `+tg.Ledger("operations")+` WHERE file_path LIKE '%f.csv'`)[0][0].(string)
			checkOperationCounts(t, tg, fileID, n, int64(n-len(last)))
		}
		killed.check(t, i, iterations)
	})
}
