package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// groupRows is the rows of the file of the group tests, in partitions of
// groupPartRows: ten partitions, which a driver that groups commits
// (SQLite) commits in groups of 1, 1, 2, 4 and 2 partitions when its keys
// are shuffled (each group's rows reach the rows done when it began).
const (
	groupRows     = 1000
	groupPartRows = 100
)

// groupFile is a file of groupRows rows, id and v, whose ids are shuffled
// (in file order when sorted), and the value of v for each id.
func groupFile(sorted bool) (string, map[int64]string) {
	ids := make([]int64, groupRows)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	if !sorted {
		rand.New(rand.NewPCG(7, 11)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	}
	want := make(map[int64]string, len(ids))
	var b strings.Builder
	b.WriteString("id,v\n")
	for i, id := range ids {
		v := fmt.Sprintf("v%d-%d", id, i)
		want[id] = v
		fmt.Fprintf(&b, "%d,%s\n", id, v)
	}
	return b.String(), want
}

// groupsOf returns the partitions (1-based) that end each commit of the
// group tests' file: each its own where partitions do not group.
func groupsOf(grouped bool) []int64 {
	if grouped {
		return []int64{1, 2, 4, 8, 10}
	}
	return []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
}

// committedBefore is how many partitions are committed when the k-th
// partition's COMMIT (its group's) has not been sent, ends being the
// partitions that end each commit.
func committedBefore(ends []int64, k int64) int64 {
	var done int64
	for _, e := range ends {
		if e >= k {
			break
		}
		done = e
	}
	return done
}

// committedWith is how many partitions are committed once the k-th
// partition's group committed.
func committedWith(ends []int64, k int64) int64 {
	for _, e := range ends {
		if e >= k {
			return e
		}
	}
	return ends[len(ends)-1]
}

// TestGroupFailsWholeThenResumes: partitions of shuffled keys that commit
// in one transaction (on SQLite) commit together or not at all. An import
// failed at a partition's last point before its COMMIT (inside a group,
// or at its end), or right after a group's COMMIT, leaves exactly the
// partitions of the groups committed before: their rows, done marks and
// counts, and the failed attempt's result says so; the rerun applies the
// rest, counts exactly what it did, reports progress only of committed
// partitions, and the table holds every row of the file as it is there.
// A file in key order commits each partition alone, on every database.
func TestGroupFailsWholeThenResumes(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, sorted := range []bool{false, true} {
			order := "shuffled"
			if sorted {
				order = "sorted"
			}
			for _, point := range []string{"before-partition-commit:3", "before-partition-commit:6", "before-partition-commit:8", "after-partition-commit:5", "after-partition-commit:8"} {
				t.Run(order+"/"+point, func(t *testing.T) {
					ctx := context.Background()
					f := newFx(t, name)
					content, want := groupFile(sorted)
					req := Request{Path: f.write(t, "items.csv", content), PartitionRows: groupPartRows, Mapping: Mapping{Table: "items", Key: []string{"id"}}}
					ends := groupsOf(f.e.st.GroupCommits && !sorted)
					var k int64
					fmt.Sscanf(point[strings.LastIndexByte(point, ':')+1:], "%d", &k)
					done := committedBefore(ends, k)
					if strings.HasPrefix(point, "after") {
						done = committedWith(ends, k) // its group committed
					}
					failed := f.failing(t, point+":error").Import(ctx, req)
					f.wantOutcome(t, failed, Failed)
					if failed.Rows.Inserted != done*groupPartRows || failed.Partitions.Committed != done {
						t.Errorf("failed run: inserted %d, %d partitions committed, want %d, %d", failed.Rows.Inserted, failed.Partitions.Committed, done*groupPartRows, done)
					}
					got := f.rows(t, `SELECT o.state, o.rows_inserted, (SELECT count(*) FROM items),
						(SELECT count(*) FROM `+f.tg.Ledger("partitions")+` WHERE done = 1)
						FROM `+f.tg.Ledger("operations")+` o`)
					if w := [][]any{{"failed", done * groupPartRows, done * groupPartRows, done}}; !reflect.DeepEqual(got, w) {
						t.Fatalf("failed at %s: operation (state, inserted), table rows, partitions done %v, want %v", point, got, w)
					}
					var (
						mu      sync.Mutex
						reports []Progress
						early   []string
					)
					req.Progress = func(p Progress) {
						if p.Phase != "apply" {
							return
						}
						// Reported once committed: another connection sees it done.
						var n int64
						if err := f.e.st.DB.QueryRowContext(ctx, `SELECT count(*) FROM `+f.tg.Ledger("partitions")+` WHERE done = 1`).Scan(&n); err != nil || n < p.Partitions {
							mu.Lock()
							early = append(early, fmt.Sprintf("%d partitions reported, %d done (%v)", p.Partitions, n, err))
							mu.Unlock()
						}
						mu.Lock()
						reports = append(reports, p)
						mu.Unlock()
					}
					res := f.e.Import(ctx, req)
					if res.Err != nil || res.Outcome != Resumed {
						t.Fatalf("rerun: %s %v", res.Outcome, res.Err)
					}
					left := int64(10) - done
					if res.Rows.Inserted != left*groupPartRows || res.Rows.Updated != 0 || res.Rows.Unchanged != 0 ||
						res.Partitions.Committed != left || res.Partitions.Skipped != done || res.Partitions.Total != 10 {
						t.Errorf("rerun: rows %+v, partitions %+v, want %d inserted, %d committed, %d skipped", res.Rows, res.Partitions, left*groupPartRows, left, done)
					}
					if len(early) > 0 {
						t.Errorf("progress reported partitions before they committed: %v", early)
					}
					if last := reports[len(reports)-1]; last.Partitions != 10 || last.Rows != groupRows || int64(len(reports)) != left+2 {
						t.Errorf("progress: %d reports, last %+v; want one at the start, one per partition and the last", len(reports), last)
					}
					checkGroupTable(t, f, want)
				})
			}
		}
	})
}

// checkGroupTable checks that the operation completed with the rows of
// the table, and that the table holds want, value by value.
func checkGroupTable(t *testing.T, f *fx, want map[int64]string) {
	t.Helper()
	got := f.rows(t, `SELECT o.state, o.rows_inserted, (SELECT count(*) FROM items), (SELECT count(DISTINCT id) FROM items),
		(SELECT count(*) FROM `+f.tg.Ledger("partitions")+` WHERE done = 1)
		FROM `+f.tg.Ledger("operations")+` o`)
	n := int64(len(want))
	if w := [][]any{{"completed", n, n, n, int64(10)}}; !reflect.DeepEqual(got, w) {
		t.Fatalf("operation (state, inserted), table rows, distinct ids, partitions done %v, want %v", got, w)
	}
	for _, r := range f.rows(t, `SELECT id, v FROM items`) {
		id, v := fmt.Sprint(r[0]), fmt.Sprint(r[1])
		var k int64
		fmt.Sscan(id, &k)
		if want[k] != v {
			t.Fatalf("id %s: v %q, want %q", id, v, want[k])
		}
	}
}
