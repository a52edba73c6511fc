package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestWideRowsSurviveKills imports rows of about 1.2 KiB (SQLite keeps such
// rows in a rowid table's B-tree, where a WITHOUT ROWID table spilled each
// to an overflow page), by their place in the file and by a text key over
// a table an earlier file filled in part, killed inside a partition and
// after a commit, then rerun: the table must hold exactly the file's
// values, quotes, commas, line breaks and multi-byte characters included,
// every row once.
//
// In each mode the import is killed along a chain (killAlong): inside the
// 2nd partition, then its rerun after the commit of the 3rd (the 2nd of
// those left), the partitions done counted after each kill, and a third
// run completes it. These were two subtests per mode, each killed once
// (20 processes; now 14): what is given up is the table compared after a
// single kill's rerun; it is compared after the chain's, value by value.
// The rows stay 500 of about 1.2 KiB in 5 partitions: their width is the
// point.
func TestWideRowsSurviveKills(t *testing.T) {
	t.Parallel()
	const rows = 500
	value := func(i int, tag string) string {
		v := fmt.Sprintf("%s %04d é, \"q\"\n", tag, i) + strings.Repeat(string(rune('a'+i%26)), 1200)
		return v[:1200+i%7]
	}
	write := func(t *testing.T, path string, from, to int, tag string) {
		t.Helper()
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w := csv.NewWriter(f)
		w.Write([]string{"id", "k", "v"})
		for i := from; i < to; i++ {
			w.Write([]string{fmt.Sprint(i), fmt.Sprintf("key-%05d", i), value(i, tag)})
		}
		w.Flush()
		if err := f.Close(); err != nil || w.Error() != nil {
			t.Fatal(err, w.Error())
		}
	}
	var want [][]any
	for i := range rows {
		want = append(want, []any{int64(i), fmt.Sprintf("key-%05d", i), value(i, "new")})
	}
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, mode := range []struct {
			name string
			key  []string
		}{{"ordinal", nil}, {"text key", []string{"--key", "k"}}} {
			{
				t.Run(mode.name, func(t *testing.T) {
					t.Parallel()
					dir := t.TempDir()
					tg := testkit.NewTarget(t, name, dir)
					if mode.key != nil { // stored keys, to be updated
						write(t, filepath.Join(dir, "base.csv"), 0, 120, "old")
						importTo(t, tg, dir, nil, 0, append([]string{"--table", "t"}, append(mode.key, "base.csv")...)...)
					}
					write(t, filepath.Join(dir, "file.csv"), 0, rows, "new")
					args := append([]string{"--table", "t", "--partition-rows", "100"}, append(mode.key, "file.csv")...)
					var doneBefore int64 // the base file's
					if mode.key != nil {
						doneBefore = testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("partitions")+` WHERE done = 1`)
					}
					chain := []string{"inside-partition:2", "after-partition-commit:2"}
					killAlong(t, tg, dir, chain, append([]string{"import"}, args...), func(i int) {
						done := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("partitions")+` WHERE done = 1`) - doneBefore
						if want := []int64{1, 3}[i]; done != want {
							t.Fatalf("after the kill at %s %d partitions are done, want %d", chain[i], done, want)
						}
					})
					res := importTo(t, tg, dir, nil, 0, args...)
					if res.Outcome != "resumed" || res.Partitions.Total != 5 {
						t.Fatalf("rerun: %+v", res)
					}
					got := testkit.Query(t, tg.DB, `SELECT id, k, v FROM t ORDER BY id`)
					if len(got) != len(want) {
						t.Fatalf("%d rows, want %d", len(got), len(want))
					}
					if !reflect.DeepEqual(got, want) {
						for i := range got {
							if !reflect.DeepEqual(got[i], want[i]) {
								t.Fatalf("row %d: got %q, want %q", i, got[i], want[i])
							}
						}
					}
				})
			}
		}
	})
}
