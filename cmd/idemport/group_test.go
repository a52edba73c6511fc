package main

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestGroupKilledThenRerun kills the binary importing an orders file whose
// keys are shuffled, which SQLite commits in groups of partitions (1, 1,
// 2, 4 and 2 of its ten), inside a group (its sixth partition marked done,
// the seventh not begun), at the end of a group before its COMMIT, and
// right after a group's COMMIT, then reruns it: the rerun finds done
// exactly the partitions of the groups committed before the kill, and
// the table ends with every row of the file, counted once. Elsewhere each
// partition commits alone.
func TestGroupKilledThenRerun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		point            string
		grouped, ungroup int64 // partitions the rerun finds done, grouped or not
	}{
		{"before-partition-commit:6", 4, 5},
		{"before-partition-commit:8", 4, 7},
		{"after-partition-commit:5", 8, 5},
	}
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, c := range cases {
			t.Run(c.point, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				path := filepath.Join(dir, "orders.csv")
				rows := testkit.Orders(t, path, crashRows, 11)
				shuffled := slices.Clone(rows)
				rand.New(rand.NewPCG(3, 5)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
				testkit.WriteOrders(t, path, shuffled)
				args := []string{"--key", "order_id", "--partition-rows", fmt.Sprint(crashRows / crashPartitions), "orders.csv"}
				killed := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=" + c.point}, append([]string{"import"}, args...)...)
				if killed.Signal != syscall.SIGKILL {
					t.Fatalf("not killed at %s: exit %d\n%s%s", c.point, killed.Code, killed.Stdout, killed.Stderr)
				}
				skipped := c.ungroup
				if name == testkit.SQLite {
					skipped = c.grouped
				}
				res := importTo(t, tg, dir, nil, 0, args...)
				if res.Outcome != "resumed" || res.Partitions.Skipped != skipped || res.Partitions.Committed != crashPartitions-skipped ||
					res.Rows.Inserted != (crashPartitions-skipped)*crashRows/crashPartitions {
					t.Fatalf("rerun: %s, partitions %+v, rows %+v; want resumed, %d skipped", res.Outcome, res.Partitions, res.Rows, skipped)
				}
				checkExact(t, tg, "natural", rows)
			})
		}
	})
}
