package pipeline

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestWhatCommitsTogetherFailsTogether fails each write that must commit
// as one in the middle, after all of it is written and before its COMMIT
// (failpoints before-partition-commit and before-event, with the error
// action): a partition's rows with its done mark and counts, an
// operation's completion with its import.completed event (an undo with
// its import.undone event: TestUndoCommitsWithItsEvent, in package ops).
// Nothing of the write may then be seen; the rerun does it once, and the
// counts agree with the table: the operation counted every row inserted
// that the table holds, and each effect has exactly one event.
func TestWhatCommitsTogetherFailsTogether(t *testing.T) {
	t.Parallel()
	const n = 9
	var content strings.Builder
	content.WriteString("id,v\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&content, "%d,v%d\n", i, i)
	}
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, point := range []string{"before-partition-commit:1", "before-partition-commit:2", "before-event:1"} {
			for _, key := range [][]string{nil, {"id"}} {
				mode := "ordinal"
				if key != nil {
					mode = "key"
				}
				t.Run(point+"/"+mode, func(t *testing.T) {
					ctx := context.Background()
					f := newFx(t, name)
					req := Request{Path: f.write(t, "items.csv", content.String()), PartitionRows: 3, Mapping: Mapping{Table: "items", Key: key}}
					failed := f.failing(t, point+":error").Import(ctx, req)
					f.wantOutcome(t, failed, Failed)
					done := int64(0) // partitions the failed run committed
					if strings.HasPrefix(point, "before-partition-commit") {
						fmt.Sscanf(point, "before-partition-commit:%d", &done)
						done--
					} else {
						done = 3
					}
					got := f.rows(t, `SELECT o.state, o.rows_inserted, (SELECT count(*) FROM items),
						(SELECT count(*) FROM `+f.tg.Ledger("partitions")+` WHERE done = 1), (SELECT count(*) FROM `+f.tg.Ledger("outbox")+`)
						FROM `+f.tg.Ledger("operations")+` o`)
					if want := [][]any{{"failed", done * 3, done * 3, done, int64(0)}}; !reflect.DeepEqual(got, want) {
						t.Fatalf("failed at %s: operation (state, inserted), table rows, partitions done, events %v, want %v", point, got, want)
					}
					res := f.e.Import(ctx, req)
					if res.Err != nil || res.Outcome != Resumed || res.EventID == "" {
						t.Fatalf("rerun: %s %v, event %q", res.Outcome, res.Err, res.EventID)
					}
					got = f.rows(t, `SELECT o.state, o.rows_inserted, o.rows_unchanged, (SELECT count(*) FROM items),
						(SELECT count(*) FROM `+f.tg.Ledger("outbox")+` WHERE kind = 'import.completed' AND attempt_id = ?)
						FROM `+f.tg.Ledger("operations")+` o`, res.AttemptID)
					if want := [][]any{{"completed", int64(n), int64(0), int64(n), int64(1)}}; !reflect.DeepEqual(got, want) {
						t.Fatalf("after the rerun: operation (state, inserted, unchanged), table rows, its events %v, want %v", got, want)
					}
				})
			}
		}
	})
}
