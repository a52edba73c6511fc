package main

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestKeyedLoadOverStoredKeysSurvivesKills imports, by key, a file whose
// partitions hold stored keys (changed and unchanged), new keys (int64
// edges among them), a stored key after new ones in one partition, and a
// key repeated across partitions, into a table an earlier file filled in
// part; the import is killed at a boundary of each kind of partition, then
// rerun. The table must then hold exactly the last-wins result, every key
// once, and the counters must add up. On PostgreSQL this drives every
// path of the writer: new keys copied straight into the table, a COPY
// stopped by a stored key and the batch merged instead, and copying
// resumed after a merge that inserted every row.
//
// The kills run along one chain (keyedChain), each rerun killed at the
// next, and the partitions done after each kill are counted, so each kill
// is known to have hit the partition it names: inside the 1st, inside the
// 3rd, inside the 4th, before and after the 4th's commit, inside the 6th.
// Each kill had a subtest of its own before (6 per target, of three
// processes each; now one of eight): what is given up is the table and
// the counters checked after each single kill's rerun; they are checked
// once, after the rerun that completes the chain, over six attempts.
func TestKeyedLoadOverStoredKeysSurvivesKills(t *testing.T) {
	t.Parallel()
	base := [][2]any{{10, "base-10"}, {11, "base-11"}, {12, "same-12"}, {13, "same-13"}, {40, "base-40"}, {99, "base-99"}}
	file := [][2]any{
		{10, "new-10"}, {11, "new-11"}, {12, "same-12"}, {13, "same-13"}, // 1: stored keys, two changed
		{int64(math.MinInt64), "min"}, {int64(math.MaxInt64), "max"}, {-1, "minus-1"}, {0, "zero"}, // 2: new keys
		{20, "new-20"}, {21, "new-21"}, {22, "new-22"}, {23, "new-23"}, // 3: new keys
		{30, "new-30"}, {31, "new-31"}, {32, "new-32"}, {40, "new-40"}, // 4: new keys, then a stored key
		{50, "first-50"}, {51, "new-51"}, {52, "new-52"}, {int64(math.MaxInt64 - 1), "max-1"}, // 5: new keys, 50 repeated in 6
		{60, "new-60"}, {61, "new-61"}, {50, "last-50"}, {int64(math.MinInt64 + 1), "min+1"}, // 6
	}
	want := map[any]any{}
	for _, r := range append(append([][2]any{}, base...), file...) {
		want[fmt.Sprint(r[0])] = r[1]
	}
	var wantRows [][]any
	for k, v := range want {
		wantRows = append(wantRows, []any{mustInt(k.(string)), v})
	}
	sort.Slice(wantRows, func(i, j int) bool { return wantRows[i][0].(int64) < wantRows[j][0].(int64) })
	const inserted, updated, unchanged, superseded = 18, 3, 2, 1

	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		writeKeyed(t, dir, "base.csv", base)
		writeKeyed(t, dir, "file.csv", file)
		importTo(t, tg, dir, nil, 0, "--table", "t", "--key", "id", "base.csv")
		doneBefore := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("partitions")+` WHERE done = 1`)
		args := []string{"--table", "t", "--key", "id", "--partition-rows", "4", "file.csv"}
		killAlong(t, tg, dir, keyedChain, append([]string{"import"}, args...), func(i int) {
			done := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("partitions")+` WHERE done = 1`) - doneBefore
			if done != keyedChainDone[i] {
				t.Fatalf("after the kill at %s (chain %v) %d partitions are done, want %d", keyedChain[i], keyedChain, done, keyedChainDone[i])
			}
		})
		res := importTo(t, tg, dir, nil, 0, args...)
		if res.Outcome != "resumed" || res.Partitions.Total != 6 {
			t.Fatalf("rerun: %+v", res)
		}
		if got := keyValues(t, tg); !reflect.DeepEqual(got, wantRows) {
			t.Fatalf("table t:\n got  %v\n want %v", got, wantRows)
		}
		checkOperationCounts(t, tg, res.FileID, int64(len(file)), superseded)
		got := testkit.Query(t, tg.DB, tg.Rebind(`SELECT rows_inserted, rows_updated, rows_unchanged, rows_stale FROM `+tg.Ledger("operations")+` WHERE file_id = ?`), res.FileID)
		if w := [][]any{{int64(inserted), int64(updated), int64(unchanged), int64(0)}}; !reflect.DeepEqual(got, w) {
			t.Fatalf("operation (inserted, updated, unchanged, stale) %v, want %v", got, w)
		}
		if n := testkit.Int(t, tg.DB, tg.Rebind(`SELECT count(*) FROM `+tg.Ledger("attempts")+` WHERE file_id = ?`), res.FileID); n != int64(len(keyedChain)+1) {
			t.Fatalf("%d attempts, want %d (each kill's and the completing one)", n, len(keyedChain)+1)
		}
	})
}

// keyedChain is TestKeyedLoadOverStoredKeysSurvivesKills' chain of kills.
// A failpoint's count is of the passes in that run, and a rerun passes
// only the partitions not yet done, so inside-partition:2 after three are
// done is inside the 4th, and after five inside the 6th. keyedChainDone is
// how many of the file's partitions are done after each kill.
var (
	keyedChain     = []string{"inside-partition:1", "inside-partition:3", "inside-partition:2", "before-partition-commit:1", "after-partition-commit:1", "inside-partition:2"}
	keyedChainDone = []int64{0, 2, 3, 3, 4, 5}
)
