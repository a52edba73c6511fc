package ops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/failpoint"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/pipeline"
)

// TestUndoCommitsWithItsEvent fails an undo after it has written its
// effect and before its COMMIT (failpoint before-event, error action):
// nothing of it may be seen, neither the rows gone nor the operation undone
// nor its import.undone event; the next undo does it once, with exactly one
// event.
func TestUndoCommitsWithItsEvent(t *testing.T) {
	t.Parallel()
	const n = 9
	var content strings.Builder
	content.WriteString("id,v\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&content, "%d,v%d\n", i, i)
	}
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		ctx := context.Background()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		dsn, state := tg.Args[1], tg.Schema
		path := filepath.Join(dir, "items.csv")
		if err := os.WriteFile(path, []byte(content.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		e, err := pipeline.Open(ctx, dsn, pipeline.Options{StateSchema: state})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if res := e.Import(ctx, pipeline.Request{Path: path, PartitionRows: 3, Mapping: pipeline.Mapping{Table: "items"}}); res.Outcome != pipeline.Imported {
			t.Fatalf("import: %s (%v)", res.Outcome, res.Err)
		}
		open := func(spec string) *Operator {
			t.Helper()
			o := pipeline.Options{StateSchema: state}
			if spec != "" {
				fp, err := failpoint.Parse(spec)
				if err != nil {
					t.Fatal(err)
				}
				o.Failpoints = fp
			}
			op, err := Open(ctx, dsn, o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { op.Close() })
			return op
		}
		state3 := func() [][]any {
			items := `(SELECT count(*) FROM items)`
			if tg.IsMariaDB() && !tg.TableExists(t, "items") {
				items = `0` // MariaDB: an undone import drops the table it created
			}
			return testkit.Query(t, tg.DB, `SELECT o.state, `+items+`, (SELECT count(*) FROM `+tg.Ledger("outbox")+` WHERE kind = 'import.undone')
				FROM `+tg.Ledger("operations")+` o`)
		}
		if _, err := open("before-event:1:error").Undo(ctx, UndoRequest{FileOrID: path}); err == nil {
			t.Fatal("the undo did not fail at before-event")
		}
		if got, want := state3(), [][]any{{"completed", int64(n), int64(0)}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("undo failed before its event: operation state, table rows, undone events %v, want %v", got, want)
		}
		u, err := open("").Undo(ctx, UndoRequest{FileOrID: path})
		if err != nil || u.Deleted != n || u.EventID == "" {
			t.Fatalf("undo: %+v %v", u, err)
		}
		if got, want := state3(), [][]any{{"undone", int64(0), int64(1)}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("after the undo: operation state, table rows, undone events %v, want %v", got, want)
		}
	})
}
