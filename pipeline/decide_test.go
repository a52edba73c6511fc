package pipeline

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/ledger"
)

// items is a CSV of n rows, id 1..n, with a value column whose text
// depends on seed (so two seeds are two contents).
func items(n, seed int) string {
	var b strings.Builder
	b.WriteString("id,qty,name\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d,%d,item %d-%d\n", i, i*seed, i, seed)
	}
	return b.String()
}

// decisionRow is one row of the claim decision table (docs/reference.md), built for
// real: setup brings the target to the row's state and returns the request
// of the run that meets it.
type decisionRow struct {
	name string
	// setup builds the state and returns the run's request.
	setup func(t *testing.T, f *fx) Request
	want  ledger.Decision
	// outcome is what the import then does.
	outcome Outcome
	// settled rows are decided without claiming, by the outcome alone
	// (skipped): the decision names the outcome.
	settled bool
	// live rows leave a holder running in this process, whose heartbeat
	// writes while plan runs.
	live bool
	// during, if set, runs while the import runs, given the import's
	// progress reports; the import waits for it (a holder to let go).
	during func(t *testing.T, f *fx, progress <-chan Progress)
	// check, if set, checks the import's result further.
	check func(t *testing.T, f *fx, res *Result)
}

// decisionRows are the rows of the table "What a run decides" (docs/reference.md),
// and the run that decides before the claim (--min-age).
func decisionRows() []decisionRow {
	imported := func(rows int64) func(t *testing.T, f *fx, res *Result) {
		return func(t *testing.T, f *fx, res *Result) {
			t.Helper()
			if n := f.rows(t, `SELECT count(*) FROM items`)[0][0].(int64); n != rows {
				t.Fatalf("items holds %d rows, want %d", n, rows)
			}
		}
	}
	// holds checks that items holds exactly the rows of items(n, seed),
	// value by value.
	holds := func(n, seed int) func(t *testing.T, f *fx, res *Result) {
		return func(t *testing.T, f *fx, res *Result) {
			t.Helper()
			var want [][]any
			for i := 1; i <= n; i++ {
				want = append(want, []any{int64(i), int64(i * seed), fmt.Sprintf("item %d-%d", i, seed)})
			}
			if got := f.rows(t, `SELECT id, qty, name FROM items ORDER BY id`); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("items holds %v, want %v", got, want)
			}
		}
	}
	// replaced runs the import of items(5, 1) as day1 in mapping m, and
	// returns the request of its corrected version, items(3, 2), with
	// --replace.
	replaced := func(m Mapping) func(t *testing.T, f *fx) Request {
		return func(t *testing.T, f *fx) Request {
			req := Request{Path: f.write(t, "items.csv", items(5, 1)), FileID: "day1", Mapping: m}
			f.wantOutcome(t, f.e.Import(context.Background(), req), Imported)
			f.write(t, "items.csv", items(3, 2))
			req.Replace = true
			return req
		}
	}
	return []decisionRow{
		{name: "nothing/create", want: ledger.Create, outcome: Imported, check: imported(3),
			setup: func(t *testing.T, f *fx) Request {
				return Request{Path: f.write(t, "items.csv", items(3, 1))}
			}},
		{name: "nothing/typed-file-into-a-narrower-table/create", want: ledger.Create, outcome: Refused,
			setup: func(t *testing.T, f *fx) Request {
				f.exec(t, `CREATE TABLE items (id BIGINT PRIMARY KEY, price INTEGER)`)
				return Request{Path: f.writeParquet(t, "items.parquet", []int64{1, 2}, []float64{1, 2}), Mapping: Mapping{Key: []string{"id"}}}
			}},
		{name: "nothing/bad-rows-over-max-rejects/create", want: ledger.Create, outcome: Refused,
			setup: func(t *testing.T, f *fx) Request {
				return Request{Path: f.write(t, "items.csv", "id,qty\n1,5\n2,five\n3,six\n"), Mapping: Mapping{Columns: intQty}, MaxRejects: RejectLimit{Count: 1}}
			}},
		{name: "nothing/bad-rows-within-max-rejects/create", want: ledger.Create, outcome: Imported, check: imported(1),
			setup: func(t *testing.T, f *fx) Request {
				return Request{Path: f.write(t, "items.csv", "id,qty\n1,5\n2,five\n3,six\n"), Mapping: Mapping{Columns: intQty}, MaxRejects: RejectLimit{Count: 2}}
			}},
		{name: "processing/planning-lease-live/busy", want: ledger.Busy, outcome: Busy, live: true,
			setup: func(t *testing.T, f *fx) Request {
				req := Request{Path: f.write(t, "items.csv", items(3, 1))}
				f.holdPlanning(t, req)
				return req
			}},
		{name: "processing/every-partition-held-live/busy", want: ledger.Busy, outcome: Busy, live: true,
			setup: func(t *testing.T, f *fx) Request {
				req := Request{Path: f.write(t, "items.csv", items(4, 1)), PartitionRows: 2}
				f.holdPartition(t, req) // partition 0 committed, 1 held
				return req
			}},
		{name: "processing/some-partition-free/resume", want: ledger.Resume, outcome: Resumed, live: true, check: imported(6),
			setup: func(t *testing.T, f *fx) Request {
				req := Request{Path: f.write(t, "items.csv", items(6, 1)), PartitionRows: 2}
				h := f.holdPartition(t, req) // partition 0 committed, 1 held, 2 free
				f.holder = h
				return req
			},
			during: func(t *testing.T, f *fx, progress <-chan Progress) {
				// The joiner commits the free partition, then waits for the
				// holder: let it go.
				for p := range progress {
					if p.Phase == "apply" && p.Partitions == 2 {
						break
					}
				}
				if res := f.holder.finish(); res.Err != nil {
					t.Errorf("holder: %s %v", res.Outcome, res.Err)
				}
			}},
		{name: "processing/partition-held-by-dead-process/resume", want: ledger.Resume, outcome: Resumed, check: func(t *testing.T, f *fx, res *Result) {
			imported(4)(t, f, res)
			if !res.RecoveredLease || res.Partitions.Committed != 1 {
				t.Fatalf("took over no lease: %+v", res)
			}
		}, setup: func(t *testing.T, f *fx) Request {
			// Killed holding the only partition: none is free.
			req := Request{Path: f.write(t, "items.csv", items(4, 1))}
			f.killedHolding(t, helperJob{Path: req.Path, Failpoint: "after-partition-claim"})
			return req
		}},
		{name: "processing/planning-lease-of-dead-process/plan", want: ledger.Plan, outcome: Resumed, check: func(t *testing.T, f *fx, res *Result) {
			imported(3)(t, f, res)
			if !res.RecoveredLease {
				t.Fatalf("took over no lease: %+v", res)
			}
		}, setup: func(t *testing.T, f *fx) Request {
			req := Request{Path: f.write(t, "items.csv", items(3, 1))}
			f.killedHolding(t, helperJob{Path: req.Path, Failpoint: "after-claim"})
			return req
		}},
		{name: "processing/lease-of-stopped-process-expired/resume", want: ledger.Resume, outcome: Resumed, check: func(t *testing.T, f *fx, res *Result) {
			imported(4)(t, f, res)
			if !res.RecoveredLease {
				t.Fatalf("took over no lease: %+v", res)
			}
		}, setup: func(t *testing.T, f *fx) Request {
			if runtime.GOOS == "windows" {
				t.Skip("Windows has no SIGSTOP")
			}
			req := Request{Path: f.write(t, "items.csv", items(4, 1)), PartitionRows: 2, Lease: time.Second}
			cmd := f.process(t, helperJob{Path: req.Path, PartitionRows: 2, Lease: time.Second, Failpoint: "after-partition-claim:stop"})
			testkit.WaitStopped(t, cmd.Process.Pid)
			f.waitLeasesExpired(t)
			return req
		}},
		{name: "failed/resume", want: ledger.Resume, outcome: Resumed, check: imported(6),
			setup: func(t *testing.T, f *fx) Request {
				req := Request{Path: f.write(t, "items.csv", items(6, 1)), PartitionRows: 2}
				f.wantOutcome(t, f.failing(t, "after-partition-commit:1:error").Import(context.Background(), req), Failed)
				return req
			}},
		{name: "failed-before-plan/plan", want: ledger.Plan, outcome: Resumed, check: imported(3),
			setup: func(t *testing.T, f *fx) Request {
				req := Request{Path: f.write(t, "items.csv", items(3, 1))}
				f.wantOutcome(t, f.failing(t, "after-claim:error").Import(context.Background(), req), Failed)
				return req
			}},
		{name: "completed/duplicate", want: ledger.Duplicate, outcome: Duplicate, check: imported(3),
			setup: func(t *testing.T, f *fx) Request {
				req := Request{Path: f.write(t, "items.csv", items(3, 1))}
				f.wantOutcome(t, f.e.Import(context.Background(), req), Imported)
				return req
			}},
		{name: "completed/table-dropped/reapply", want: ledger.Reapply, outcome: Imported, check: imported(3),
			setup: func(t *testing.T, f *fx) Request {
				req := Request{Path: f.write(t, "items.csv", items(3, 1))}
				f.wantOutcome(t, f.e.Import(context.Background(), req), Imported)
				f.exec(t, `DROP TABLE items`)
				return req
			}},
		{name: "completed/--reapply/reapply", want: ledger.Reapply, outcome: Imported, check: imported(3),
			setup: func(t *testing.T, f *fx) Request {
				req := Request{Path: f.write(t, "items.csv", items(3, 1))}
				f.wantOutcome(t, f.e.Import(context.Background(), req), Imported)
				req.Reapply = true
				return req
			}},
		{name: "refused/refuse", want: ledger.Refuse, outcome: Refused,
			setup: func(t *testing.T, f *fx) Request {
				req := Request{Path: f.write(t, "items.csv", "id,qty\n1,5\n2,five\n3,6\n"), Mapping: Mapping{Columns: intQty}}
				f.wantOutcome(t, f.e.Import(context.Background(), req), Refused)
				return req
			}},
		{name: "refused/limit-now-admits/plan", want: ledger.Plan, outcome: Resumed, check: imported(2),
			setup: func(t *testing.T, f *fx) Request {
				req := Request{Path: f.write(t, "items.csv", "id,qty\n1,5\n2,five\n3,6\n"), Mapping: Mapping{Columns: intQty}}
				f.wantOutcome(t, f.e.Import(context.Background(), req), Refused)
				req.MaxRejects = RejectLimit{Count: 1}
				return req
			}},
		{name: "refused/limit-still-too-low/refuse", want: ledger.Refuse, outcome: Refused,
			setup: func(t *testing.T, f *fx) Request {
				req := Request{Path: f.write(t, "items.csv", "id,qty\n1,5\n2,five\n3,six\n"), Mapping: Mapping{Columns: intQty}}
				f.wantOutcome(t, f.e.Import(context.Background(), req), Refused)
				req.MaxRejects = RejectLimit{Count: 1}
				return req
			}},
		{name: "refused-for-a-defect/no-limit-admits/refuse", want: ledger.Refuse, outcome: Refused,
			setup: func(t *testing.T, f *fx) Request {
				req := Request{Path: f.write(t, "items.csv.gz", truncatedGzip(t, items(2000, 1))), Mapping: Mapping{Table: "items"}}
				f.wantOutcome(t, f.e.Import(context.Background(), req), Refused)
				req.MaxRejects = RejectLimit{Percent: 100}
				return req
			}},
		{name: "refused/different/supersede", want: ledger.Supersede, outcome: Imported, check: imported(3),
			setup: func(t *testing.T, f *fx) Request {
				req := Request{Path: f.write(t, "items.csv", "id,qty\n1,5\n2,five\n3,6\n"), FileID: "day1", Mapping: Mapping{Columns: intQty}}
				f.wantOutcome(t, f.e.Import(context.Background(), req), Refused)
				f.write(t, "items.csv", "id,qty\n1,5\n2,7\n3,6\n")
				return req
			}},
		{name: "failed-before-any-commit/different/supersede", want: ledger.Supersede, outcome: Imported, check: imported(5),
			setup: func(t *testing.T, f *fx) Request {
				req := Request{Path: f.write(t, "items.csv", items(4, 1)), FileID: "day1", PartitionRows: 2}
				f.wantOutcome(t, f.failing(t, "after-plan:error").Import(context.Background(), req), Failed)
				f.write(t, "items.csv", items(5, 1))
				return req
			}},
		{name: "failed-after-a-commit/different/conflict", want: ledger.Conflict, outcome: Conflict,
			setup: func(t *testing.T, f *fx) Request {
				req := Request{Path: f.write(t, "items.csv", items(4, 1)), FileID: "day1", PartitionRows: 2}
				f.wantOutcome(t, f.failing(t, "after-partition-commit:1:error").Import(context.Background(), req), Failed)
				f.write(t, "items.csv", items(5, 1))
				return req
			}},
		{name: "processing/different-content/conflict", want: ledger.Conflict, outcome: Conflict, live: true,
			setup: func(t *testing.T, f *fx) Request {
				req := Request{Path: f.write(t, "items.csv", items(4, 1)), FileID: "day1", PartitionRows: 2}
				f.holdPartition(t, req)
				f.write(t, "items.csv", items(4, 2))
				return req
			}},
		{name: "completed/different-content/conflict", want: ledger.Conflict, outcome: Conflict, check: imported(3),
			setup: func(t *testing.T, f *fx) Request {
				req := Request{Path: f.write(t, "items.csv", items(3, 1)), FileID: "day1"}
				f.wantOutcome(t, f.e.Import(context.Background(), req), Imported)
				f.write(t, "items.csv", items(3, 2))
				return req
			}},
		{name: "completed/different-content/--replace/replace", want: ledger.Replace, outcome: Imported, check: holds(3, 2),
			setup: replaced(Mapping{Table: "items"})},
		{name: "completed/different-content/--replace/by-key/replace", want: ledger.Replace, outcome: Imported, check: holds(3, 2),
			setup: replaced(Mapping{Table: "items", Key: []string{"id"}})},
		{name: "completed/different-content/--replace/atomic/replace", want: ledger.Replace, outcome: Imported, check: holds(3, 2),
			setup: replaced(Mapping{Table: "items", Atomic: true})},
		{name: "completed/different-content/--replace/by-key-atomic/replace", want: ledger.Replace, outcome: Imported, check: holds(3, 2),
			setup: replaced(Mapping{Table: "items", Key: []string{"id"}, Atomic: true})},
		{name: "completed/different-mapping/--replace/conflict", want: ledger.Conflict, outcome: Conflict, check: holds(5, 1),
			setup: func(t *testing.T, f *fx) Request {
				req := replaced(Mapping{Table: "items"})(t, f)
				req.Mapping.Key = []string{"id"}
				return req
			}},
		{name: "completed/different-mapping/conflict", want: ledger.Conflict, outcome: Conflict, check: imported(3),
			setup: func(t *testing.T, f *fx) Request {
				req := Request{Path: f.write(t, "items.csv", items(3, 1)), FileID: "day1"}
				f.wantOutcome(t, f.e.Import(context.Background(), req), Imported)
				req.Mapping.Key = []string{"id"}
				return req
			}},
		{name: "undone/create", want: ledger.Create, outcome: Imported, check: imported(3),
			setup: func(t *testing.T, f *fx) Request {
				req := Request{Path: f.write(t, "items.csv", items(3, 1))}
				res := f.e.Import(context.Background(), req)
				f.wantOutcome(t, res, Imported)
				f.undo(t, res)
				return req
			}},
		{name: "abandoned-source-changed/create", want: ledger.Create, outcome: Imported, check: imported(5),
			setup: func(t *testing.T, f *fx) Request {
				req := Request{Path: f.write(t, "items.csv", items(4, 1)), FileID: "day1", PartitionRows: 2}
				changing := req
				changing.Progress = func(p Progress) {
					if p.Phase == "apply" && p.Partitions == 1 {
						f.write(t, "items.csv", items(5, 1)) // appended to while imported
					}
				}
				res := f.e.Import(context.Background(), changing)
				if res.Err == nil || !strings.Contains(res.Err.Error(), "source changed") {
					t.Fatalf("the import of a changing file: %s %v", res.Outcome, res.Err)
				}
				if got := f.rows(t, `SELECT state FROM `+f.tg.Ledger("operations")); fmt.Sprint(got) != "[[abandoned]]" {
					t.Fatalf("operation: %v", got)
				}
				return req
			}},
		{name: "recently-modified/skipped", want: -1, outcome: Skipped, settled: true,
			setup: func(t *testing.T, f *fx) Request {
				return Request{Path: f.write(t, "items.csv", items(3, 1)), MinAge: time.Hour}
			}},
		{name: "older-snapshot/stale", want: ledger.Stale, outcome: Stale, check: imported(3),
			setup: func(t *testing.T, f *fx) Request {
				day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
				m := Mapping{Table: "items", Key: []string{"id"}, Snapshot: &Snapshot{}}
				tue := Request{Path: f.write(t, "tue.csv", items(3, 2)), Mapping: m, AsOf: day.Add(24 * time.Hour)}
				f.wantOutcome(t, f.e.Import(context.Background(), tue), Imported)
				return Request{Path: f.write(t, "mon.csv", items(4, 1)), Mapping: m, AsOf: day}
			}},
		{name: "snapshot/sweep-over-max-delete/create", want: ledger.Create, outcome: Refused, check: imported(10),
			setup: func(t *testing.T, f *fx) Request {
				// Half the keys gone: more than the default 10%.
				f.wantOutcome(t, f.e.Import(context.Background(), Request{Path: f.write(t, "mon.csv", items(10, 1)), Mapping: keyedSnapshot}), Imported)
				return Request{Path: f.write(t, "tue.csv", items(5, 1)), Mapping: keyedSnapshot}
			}},
		{name: "snapshot/empty-file/create", want: ledger.Create, outcome: Refused, check: imported(10),
			setup: func(t *testing.T, f *fx) Request {
				f.wantOutcome(t, f.e.Import(context.Background(), Request{Path: f.write(t, "mon.csv", items(10, 1)), Mapping: keyedSnapshot}), Imported)
				return Request{Path: f.write(t, "tue.csv", items(0, 1)), Mapping: keyedSnapshot, MaxDelete: &RejectLimit{Percent: 99}}
			}},
		{name: "snapshot/sweep-within-max-delete/create", want: ledger.Create, outcome: Imported, check: imported(5),
			setup: func(t *testing.T, f *fx) Request {
				f.wantOutcome(t, f.e.Import(context.Background(), Request{Path: f.write(t, "mon.csv", items(10, 1)), Mapping: keyedSnapshot}), Imported)
				return Request{Path: f.write(t, "tue.csv", items(5, 1)), Mapping: keyedSnapshot, MaxDelete: &RejectLimit{Percent: 50}}
			}},
		{name: "snapshot/sweep-refused/resume", want: ledger.Resume, outcome: Refused, check: imported(10),
			setup: func(t *testing.T, f *fx) Request {
				f.wantOutcome(t, f.e.Import(context.Background(), Request{Path: f.write(t, "mon.csv", items(10, 1)), Mapping: keyedSnapshot}), Imported)
				req := Request{Path: f.write(t, "tue.csv", items(5, 1)), Mapping: keyedSnapshot, MaxDelete: &RejectLimit{Count: 4}}
				f.wantOutcome(t, f.e.Import(context.Background(), req), Refused)
				return req
			}},
		{name: "snapshot/sweep-refused/higher-limit/resume", want: ledger.Resume, outcome: Resumed, check: imported(5),
			setup: func(t *testing.T, f *fx) Request {
				f.wantOutcome(t, f.e.Import(context.Background(), Request{Path: f.write(t, "mon.csv", items(10, 1)), Mapping: keyedSnapshot}), Imported)
				req := Request{Path: f.write(t, "tue.csv", items(5, 1)), Mapping: keyedSnapshot}
				f.wantOutcome(t, f.e.Import(context.Background(), req), Refused)
				req.MaxDelete = &RejectLimit{Count: 5}
				return req
			}},
		{name: "snapshot/sweep-refused-after-new-keys/resume", want: ledger.Resume, outcome: Refused, check: imported(15),
			setup: func(t *testing.T, f *fx) Request {
				// Keys 1-5 and 11-15: 6-10 would go, half of the 10 there
				// were before the file (not a third of the 15 there are
				// once its new keys are in).
				f.wantOutcome(t, f.e.Import(context.Background(), Request{Path: f.write(t, "mon.csv", items(10, 1)), Mapping: keyedSnapshot}), Imported)
				tue := items(5, 1) + strings.SplitN(items(15, 1), "\n", 12)[11]
				req := Request{Path: f.write(t, "tue.csv", tue), Mapping: keyedSnapshot}
				f.wantOutcome(t, f.e.Import(context.Background(), req), Refused)
				req.MaxDelete = &RejectLimit{Percent: 40}
				return req
			}},
		{name: "atomic-snapshot/sweep-refused-after-new-keys/resume", want: ledger.Resume, outcome: Refused, check: imported(10),
			setup: func(t *testing.T, f *fx) Request {
				// As above, the file's rows staged: none is in the table
				// until the sweep is allowed.
				m := keyedSnapshot
				m.Atomic = true
				f.wantOutcome(t, f.e.Import(context.Background(), Request{Path: f.write(t, "mon.csv", items(10, 1)), Mapping: m}), Imported)
				tue := items(5, 1) + strings.SplitN(items(15, 1), "\n", 12)[11]
				req := Request{Path: f.write(t, "tue.csv", tue), Mapping: m}
				f.wantOutcome(t, f.e.Import(context.Background(), req), Refused)
				req.MaxDelete = &RejectLimit{Percent: 40}
				return req
			}},
		{name: "atomic-snapshot/sweep-refused-after-new-keys/higher-limit/resume", want: ledger.Resume, outcome: Resumed, check: imported(10),
			setup: func(t *testing.T, f *fx) Request {
				m := keyedSnapshot
				m.Atomic = true
				f.wantOutcome(t, f.e.Import(context.Background(), Request{Path: f.write(t, "mon.csv", items(10, 1)), Mapping: m}), Imported)
				tue := items(5, 1) + strings.SplitN(items(15, 1), "\n", 12)[11]
				req := Request{Path: f.write(t, "tue.csv", tue), Mapping: m}
				f.wantOutcome(t, f.e.Import(context.Background(), req), Refused)
				req.MaxDelete = &RejectLimit{Percent: 50}
				return req
			}},
		{name: "ordinal-snapshot/fewer-rows-than-replaced/create", want: ledger.Create, outcome: Refused, check: imported(18), // nothing deleted
			setup: func(t *testing.T, f *fx) Request {
				m := Mapping{Table: "items", Snapshot: &Snapshot{}}
				f.wantOutcome(t, f.e.Import(context.Background(), Request{Path: f.write(t, "mon.csv", items(10, 1)), Mapping: m}), Imported)
				return Request{Path: f.write(t, "tue.csv", items(8, 2)), Mapping: m}
			}},
		{name: "ordinal-snapshot/as-many-rows/create", want: ledger.Create, outcome: Imported, check: imported(10),
			setup: func(t *testing.T, f *fx) Request {
				m := Mapping{Table: "items", Snapshot: &Snapshot{}}
				f.wantOutcome(t, f.e.Import(context.Background(), Request{Path: f.write(t, "mon.csv", items(10, 1)), Mapping: m}), Imported)
				return Request{Path: f.write(t, "tue.csv", items(10, 2)), Mapping: m}
			}},
		{name: "completed-snapshot/duplicate", want: ledger.Duplicate, outcome: Duplicate, check: imported(3),
			setup: func(t *testing.T, f *fx) Request {
				m := Mapping{Table: "items", Key: []string{"id"}, Snapshot: &Snapshot{}}
				req := Request{Path: f.write(t, "mon.csv", items(3, 1)), Mapping: m}
				f.wantOutcome(t, f.e.Import(context.Background(), req), Imported)
				return req
			}},
	}
}

var intQty = map[string]idemtype.Type{"qty": idemtype.Int64}

// keyedSnapshot maps a file of items as the whole set of keys of items.
var keyedSnapshot = Mapping{Table: "items", Key: []string{"id"}, Snapshot: &Snapshot{}}

// truncatedGzip returns content gzipped with its last bytes cut off: a
// stream that cannot be decoded to its end, a defect of the file that no
// reject limit admits.
func truncatedGzip(t *testing.T, content string) string {
	t.Helper()
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	z.Write([]byte(content))
	z.Close()
	return string(b.Bytes()[:b.Len()-200])
}

func (f *fx) wantOutcome(t *testing.T, res *Result, want Outcome) {
	t.Helper()
	if res.Outcome != want {
		t.Fatalf("setup import: %s, want %s (%v)", res.Outcome, want, res.Err)
	}
}

// waitLeasesExpired waits until no partition lease is live, by the
// database's clock.
func (f *fx) waitLeasesExpired(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		p, err := f.e.st.CP.Progress(context.Background(), f.e.st.DB, f.operation(t), "")
		if err != nil {
			t.Fatal(err)
		}
		if p.Held == 0 && p.Total > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("leases still live: %+v", p)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDecisionTable builds every row of the claim decision table (docs/reference.md)
// for real (imports killed in another process, stopped, failed at a
// failpoint, refused, undone, abandoned, holders stopped in this process),
// and checks, on SQLite and PostgreSQL, that plan and import --dry-run
// (PlanFile, on an engine opened read-only as both commands open it, with
// the request each command can make) decide as the table says and write
// nothing, and that the import then decides the same and ends as that
// decision predicts.
func TestDecisionTable(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, row := range decisionRows() {
			t.Run(row.name, func(t *testing.T) {
				t.Parallel()
				f := newFx(t, name)
				req := row.setup(t, f)
				checkAgreement(t, f, row, req)
			})
		}
	})
}

// planRequest is the part of an import's request the plan command has
// flags for: every field that changes what an import decides.
func planRequest(req Request) Request {
	return Request{Path: req.Path, FileID: req.FileID, Mapping: req.Mapping, PartitionRows: req.PartitionRows, MaxRejects: req.MaxRejects,
		Reapply: req.Reapply, Replace: req.Replace, MinAge: req.MinAge, AsOf: req.AsOf, MaxDelete: req.MaxDelete, Rehash: req.Rehash}
}

// checkAgreement runs plan, import --dry-run and import on the state f is
// in, and checks that they decide row.want and agree.
func checkAgreement(t *testing.T, f *fx, row decisionRow, req Request) {
	t.Helper()
	ctx := context.Background()
	ro := f.open(t, Options{ReadOnly: true})
	var before testkit.Snapshot
	if !row.live {
		before = f.tg.Snapshot(t)
	}
	want := string(row.outcome)
	if !row.settled {
		want = row.want.String()
	}
	reports := map[string]*PlanReport{}
	for _, c := range []struct {
		name string
		req  Request
	}{{"plan", planRequest(req)}, {"import --dry-run", req}} {
		rep, err := PlanFile(ctx, ro, c.req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if rep.Decision != want {
			t.Errorf("%s decides %s (%s), want %s", c.name, rep.Decision, rep.Detail, want)
		}
		reports[c.name] = rep
	}
	if !row.live {
		if d := before.Diff(f.tg.Snapshot(t)); d != "" {
			t.Fatalf("plan and dry run wrote to %s", d)
		}
	}
	f.claimed.take()
	var progress chan Progress
	done := make(chan struct{})
	if row.during != nil {
		progress = make(chan Progress, 64)
		req.Progress = func(p Progress) { progress <- p }
		go func() {
			defer close(done)
			row.during(t, f, progress)
		}()
	}
	res := f.e.Import(ctx, req)
	if row.during != nil {
		close(progress)
		<-done
	}
	decided := outcomeDecision(res.Outcome)
	if got := f.claimed.take(); len(got) > 0 {
		decided = got[0]
	}
	if decided != want {
		t.Errorf("import decides %s (%s %v), want %s", decided, res.Outcome, res.Err, want)
	}
	for name, rep := range reports {
		// What a dry run prints with --output json, as a script reads it.
		var line struct {
			Would string `json:"would"`
		}
		if b, err := json.Marshal(rep); err != nil {
			t.Fatal(err)
		} else if err := json.Unmarshal(b, &line); err != nil {
			t.Fatal(err)
		}
		if w := wouldOf(res.Outcome); line.Would != w {
			t.Errorf("%s reports %q in JSON (decision %s, %s), import ends %s (%v), which is %q",
				name, line.Would, rep.Decision, rep.Refusal(), res.Outcome, res.Err, w)
		}
		p, why := predicted(rep)
		if p != res.Outcome || why != refusedFor(res) {
			t.Errorf("%s predicts %s %s (decision %s, %d of %d rows bad, at most %s; %s%s), import ends %s %s (%v)",
				name, p, why, rep.Decision, rep.Rejected, rep.Rows, rep.MaxRejects, rep.Error, rep.Unfit, res.Outcome, refusedFor(res), res.Err)
		}
	}
	if res.Outcome != row.outcome {
		t.Errorf("import ends %s (%v), want %s", res.Outcome, res.Err, row.outcome)
	}
	if row.check != nil && !t.Failed() {
		row.check(t, f, res)
	}
}

// wouldOf is the outcome a plan report's Would names for an import that
// ended o.
func wouldOf(o Outcome) string {
	switch o {
	case Imported:
		return WouldImport
	case Resumed:
		return WouldResume
	case Duplicate:
		return WouldDuplicate
	case Refused:
		return WouldRefuse
	case Conflict:
		return WouldConflict
	case Busy:
		return WouldBusy
	case Skipped:
		return WouldSkip
	case Stale:
		return WouldStale
	}
	return string(o)
}

// outcomeDecision is the decision behind an outcome reached without a
// claim: a settled decision, or one made before claiming.
func outcomeDecision(o Outcome) string {
	switch o {
	case Duplicate:
		return ledger.Duplicate.String()
	case Refused:
		return ledger.Refuse.String()
	case Conflict:
		return ledger.Conflict.String()
	case Busy:
		return ledger.Busy.String()
	case Stale:
		return ledger.Stale.String()
	}
	return string(o)
}

// predicted is the outcome an import ends with, as a plan report predicts
// it, and why it would refuse the file (see refusedFor): a decision that
// plans refuses a file whose plan pass refuses it.
func predicted(rep *PlanReport) (Outcome, string) {
	why := ""
	switch {
	case rep.Error != "":
		why = "for a defect"
	case rep.Unfit != "":
		why = "for its table"
	case !rep.MaxRejects.Allows(rep.Rejected, rep.Rows):
		why = "for bad rows"
	case rep.SweepRefused != "":
		why = "by the delete guard"
	}
	switch rep.Decision {
	case ledger.Create.String(), ledger.Supersede.String(), ledger.Reapply.String(), ledger.Replace.String():
		if why != "" {
			return Refused, why
		}
		return Imported, ""
	case ledger.Plan.String():
		if why != "" {
			return Refused, why
		}
		return Resumed, ""
	case ledger.Resume.String():
		if rep.SweepRefused != "" { // the plan is stored: only the sweep can refuse
			return Refused, "by the delete guard"
		}
		return Resumed, ""
	case ledger.Duplicate.String():
		return Duplicate, ""
	case ledger.Refuse.String():
		return Refused, "earlier"
	case ledger.Conflict.String():
		return Conflict, ""
	case ledger.Busy.String():
		return Busy, ""
	}
	return Outcome(rep.Decision), ""
}

// refusedFor says why an import refused its file: earlier (the stored
// refusal), for bad rows, for a defect of the file or past a limit of the
// database, for its table (which does not fit the file), or by the
// --max-delete guard of its snapshot's sweep.
func refusedFor(res *Result) string {
	switch {
	case res.Outcome != Refused:
		return ""
	case strings.HasPrefix(res.Err.Error(), "refused earlier"):
		return "earlier"
	case errors.As(res.Err, new(*DeleteGuardError)):
		return "by the delete guard"
	case res.Refusal == nil:
		return "for its table"
	case res.Refusal.Error != "":
		return "for a defect"
	}
	return "for bad rows"
}

// TestDecisionTableCoversTheREADME checks that every decision of the
// claim table has a row in TestDecisionTable.
func TestDecisionTableCoversTheREADME(t *testing.T) {
	t.Parallel()
	var have []ledger.Decision
	for _, r := range decisionRows() {
		have = append(have, r.want)
	}
	for d := ledger.Create; d <= ledger.Replace; d++ {
		if !slices.Contains(have, d) {
			t.Errorf("no row decides %s", d)
		}
	}
	readme, err := os.ReadFile("../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, found := strings.Cut(string(readme), "## What a run decides")
	if !found {
		t.Fatal(`docs/reference.md has no section "What a run decides"`)
	}
	table, _, _ = strings.Cut(table, "\n\n`")
	if n := strings.Count(table, "\n| ") - 1; n != 13 { // less the header
		t.Errorf("the table of docs/reference.md has %d rows, the test was written for 13: add the new ones", n)
	}
}
