package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestPartitionRowsUnsetGrows: plan into SQLite with --key and without
// --partition-rows plans partitions that grow from 100000 rows to
// 1000000, and with --partition-rows 100000 given (its default value),
// partitions of 100000 rows.
func TestPartitionRowsUnsetGrows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("id,v\n")
	for i := 1; i <= 300001; i++ {
		fmt.Fprintf(&b, "%d,x\n", i)
	}
	write(t, dir, "big.csv", b.String())
	tg := testkit.NewTarget(t, testkit.SQLite, dir)
	for _, c := range []struct {
		args   []string
		parts  int
		growTo int64
	}{{nil, 3, 1000000}, {[]string{"--partition-rows", "100000"}, 4, 0}} {
		p := planTo(t, tg, dir, append(append([]string{"--key", "id"}, c.args...), "big.csv")...)
		if len(p.Partitions) != c.parts || p.GrowTo != c.growTo {
			t.Errorf("plan %v: %d partitions growing to %d, want %d growing to %d", c.args, len(p.Partitions), p.GrowTo, c.parts, c.growTo)
		}
	}
}

// growKillRows is the rows of TestGrowingPartitionsKilledThenRerun's
// file: the growing partitions of 100000, 100000, 200000, 400000 rows and
// a last one of 50000. Groups of grown partitions form only from the
// sixth (its 1000000 rows fewer than the 1600000 done before it), so
// the file's partitions each commit alone; TestGroupKilledThenRerun
// kills inside groups of partitions of a fixed size, and
// TestGrownGroupKilledThenRerun inside a group of grown partitions that
// --partition-bytes cut short.
const growKillRows = 850000

// growKillSizes is the partitions of growKillRows rows as they grow.
var growKillSizes = []int64{100000, 100000, 200000, 400000, 50000}

// TestGrowingPartitionsKilledThenRerun kills the binary importing into
// SQLite by --key, without --partition-rows, a file of shuffled keys of
// 25 MB (so its first partitions are written while the plan pass runs,
// pipeline/overlap.go) along a chain: inside the overlap (no table, no
// plan left), after a partition committed (the grown plan stored: its
// partitions' rows), inside a partition by a rerun that gives
// --partition-rows (the stored plan is kept, whatever the flags), and
// before the completion. The last rerun completes: the table holds the
// file, every value compared as text, each key once, the ledger says
// completed with every partition done once and the counts adding up, and
// a run after it is a duplicate that writes nothing.
func TestGrowingPartitionsKilledThenRerun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.SQLite, dir)
	ids := make([]int, growKillRows)
	for i := range ids {
		ids[i] = i + 1
	}
	rand.New(rand.NewPCG(13, 17)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	want := [][]string{{"id", "v", "n"}}
	var b strings.Builder
	b.WriteString("id,v,n\n")
	for i, id := range ids {
		v, n := fmt.Sprintf("v%d-%d", id, i), fmt.Sprint(int64(id)*7919-3000000)
		if i%1000 == 999 {
			v = "" // an unquoted empty field is NULL
		}
		fmt.Fprintf(&b, "%d,%s,%s\n", id, v, n)
		if v == "" {
			v = nullText
		}
		want = append(want, []string{fmt.Sprint(id), v, n})
	}
	write(t, dir, "items.csv", b.String())
	args := []string{"import", "--table", "items", "--key", "id", "items.csv"}
	partitions := func() []int64 {
		var sizes []int64
		for _, r := range testkit.Query(t, tg.DB, `SELECT row_count FROM `+tg.Ledger("partitions")+` ORDER BY idx`) {
			sizes = append(sizes, r[0].(int64))
		}
		return sizes
	}
	done := func() int64 {
		return testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("partitions")+` WHERE done = 1`)
	}
	chain := []string{"inside-overlap:2", "after-partition-commit:2", "inside-partition:1", "before-finalize:1"}
	var before int64 // partitions done before the run killed inside a partition
	for _, point := range chain {
		runArgs := args
		if point == "inside-partition:1" {
			before = done()
			runArgs = append(slices.Clone(args[:len(args)-1]), "--partition-rows", "100000", "items.csv")
		}
		killAlong(t, tg, dir, []string{point}, runArgs, nil)
		switch point {
		case "inside-overlap:2":
			if tg.TableExists(t, "items") || testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("plans")) != 0 || len(partitions()) != 0 {
				t.Fatalf("killed inside the overlap: the table, a plan or partitions are left")
			}
		case "after-partition-commit:2":
			if got := partitions(); !slices.Equal(got, growKillSizes) {
				t.Fatalf("the stored plan's partitions hold %v rows, want %v", got, growKillSizes)
			}
			if n := done(); n < 2 || n >= int64(len(growKillSizes)) {
				t.Fatalf("killed after a partition committed: %d partitions done", n)
			}
		case "inside-partition:1":
			if got := partitions(); !slices.Equal(got, growKillSizes) {
				t.Fatalf("a rerun with --partition-rows changed the stored plan: %v rows, want %v", got, growKillSizes)
			}
			if n := done(); n != before {
				t.Fatalf("killed inside a partition: %d partitions done, %d before", n, before)
			}
		case "before-finalize:1":
			if n := done(); n != int64(len(growKillSizes)) || opState(t, tg) != "processing" {
				t.Fatalf("killed before the completion: %d partitions done, operation %s", n, opState(t, tg))
			}
		}
	}
	res := importTo(t, tg, dir, nil, 0, "--table", "items", "--key", "id", "items.csv")
	if res.Outcome != "resumed" || res.Partitions.Total != int64(len(growKillSizes)) || res.Partitions.Committed != 0 || res.Rows.Inserted != 0 {
		t.Fatalf("the last rerun: %s, partitions %+v, rows %+v; want resumed with nothing left to write", res.Outcome, res.Partitions, res.Rows)
	}
	checkTable(t, tg, "items", want)
	if n := testkit.Int(t, tg.DB, `SELECT count(DISTINCT id) FROM items`); n != growKillRows {
		t.Fatalf("%d distinct ids, want %d", n, growKillRows)
	}
	checkOverlapCounts(t, tg, growKillRows)
	sum := fileSum(t, tg.Path)
	again := importTo(t, tg, dir, nil, 0, "--table", "items", "--key", "id", "items.csv")
	if again.Outcome != "duplicate" || again.Rows != (result{}).Rows || again.Partitions.Committed != 0 {
		t.Fatalf("the run after the completion: %s, rows %+v, partitions %+v; want a duplicate that writes nothing", again.Outcome, again.Rows, again.Partitions)
	}
	if fileSum(t, tg.Path) != sum {
		t.Fatal("the duplicate run changed the database file")
	}
}
