package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/reader"
)

// atPoint is a Failpoints that runs do once, the first time the engine
// passes the point named at, and lets every point pass.
type atPoint struct {
	at   string
	do   func()
	once sync.Once
}

func (p *atPoint) Hit(name string) error {
	if name == p.at {
		p.once.Do(p.do)
	}
	return nil
}

// TestSourceChangedUnderResumedAttempt: an import killed (another process,
// SIGKILL) after 3 of its 10 partitions committed is resumed, and its file
// grows after the resuming run has claimed the operation, before it
// commits anything. The resumed attempt fails with the source changed and
// abandons the operation, removing the rows the killed attempt committed
// (the resumed one committed none); the file, imported again, then lands
// exactly once.
func TestSourceChangedUnderResumedAttempt(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		ctx := context.Background()
		f := newFx(t, name)
		path := f.write(t, "items.csv", itemsCSV(30))
		f.killedHolding(t, helperJob{Path: path, PartitionRows: 3, Failpoint: "after-partition-commit:3"})
		if got := f.rows(t, `SELECT count(*) FROM items`); !reflect.DeepEqual(got, [][]any{{int64(9)}}) {
			t.Fatalf("the killed import left %v rows, want its 3 partitions' 9", got)
		}

		grow := &atPoint{at: "after-claim", do: func() {
			file, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err == nil {
				_, err = file.WriteString("31,late\n")
				err = errors.Join(err, file.Close())
			}
			if err != nil {
				t.Error(err)
			}
		}}
		req := Request{Path: path, PartitionRows: 3, Mapping: Mapping{Table: "items"}}
		res := f.open(t, Options{Failpoints: grow}).Import(ctx, req)
		if res.Outcome != Failed || !errors.Is(res.Err, reader.ErrSourceChanged) || res.Partitions.Committed != 0 {
			t.Fatalf("resumed under a growing file: %s, %d partitions committed, %v; want failed, none, source changed", res.Outcome, res.Partitions.Committed, res.Err)
		}
		items := `(SELECT count(*) FROM items)`
		if f.tg.IsMariaDB() && !f.tg.TableExists(t, "items") {
			items = `0` // MariaDB: an abandoned import drops the table it created
		}
		got := f.rows(t, `SELECT o.state, `+items+`, (SELECT count(*) FROM `+f.tg.Ledger("partitions")+`) FROM `+f.tg.Ledger("operations")+` o`)
		if want := [][]any{{"abandoned", int64(0), int64(0)}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("operation state, table rows, partitions %v, want %v: the killed attempt's rows go with the abandoned operation", got, want)
		}

		res = f.e.Import(ctx, req)
		if res.Err != nil || res.Outcome != Imported || res.Rows.Inserted != 31 {
			t.Fatalf("the grown file: %s %+v %v", res.Outcome, res.Rows, res.Err)
		}
		got = f.rows(t, `SELECT count(*), count(DISTINCT id), min(id), max(id) FROM items`)
		if want := [][]any{{int64(31), int64(31), int64(1), int64(31)}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("items (rows, ids, min, max) %v, want %v", got, want)
		}
	})
}

// TestSourceChangedUnderAtomicImport: an --atomic import under a named
// file ID stages 3 of its partitions (9 rows), and its file is then
// rewritten shorter (5 rows) under it: the attempt abandons the operation.
// The rewritten file, imported under the same file ID, lands exactly: the
// abandoned operation's staging table went with it (before, on SQLite and
// PostgreSQL, it stayed with its 9 rows, and every attempt at the new
// version failed: staged rows outside every partition).
func TestSourceChangedUnderAtomicImport(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		ctx := context.Background()
		f := newFx(t, name)
		path := f.write(t, "items.csv", itemsCSV(30))
		fp := rewriteAfterCommits(t, path, 3, rewritten)
		req := Request{Path: path, FileID: "items", PartitionRows: 3, Mapping: Mapping{Table: "items", Atomic: true}}
		res := f.open(t, Options{Failpoints: fp}).Import(ctx, req)
		if res.Outcome != Failed || !errors.Is(res.Err, reader.ErrSourceChanged) {
			t.Fatalf("an import whose file was rewritten under it: %s, %v; want failed, source changed", res.Outcome, res.Err)
		}
		if got := f.rows(t, `SELECT state FROM `+f.tg.Ledger("operations")); !reflect.DeepEqual(got, [][]any{{"abandoned"}}) {
			t.Fatalf("operations: %v, want the one abandoned", got)
		}
		res = f.e.Import(ctx, req)
		if res.Err != nil || res.Outcome != Imported || res.Rows.Inserted != 5 {
			t.Fatalf("the rewritten file: %s %+v %v", res.Outcome, res.Rows, res.Err)
		}
		got := f.rows(t, `SELECT `+f.tg.Text("id")+`, v FROM items ORDER BY id`)
		if want := [][]any{{"1", "w1"}, {"2", "w2"}, {"3", "w3"}, {"4", "w4"}, {"5", "w5"}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("items %v, want %v", got, want)
		}
	})
}

// rewritten is what rewriteAfterCommits writes: five rows, so the file is
// shorter than the one being imported, and the values differ.
const rewritten = "id,v\n1,w1\n2,w2\n3,w3\n4,w4\n5,w5\n"

// rewriteAfterCommits returns failpoints that write content over path
// after the n-th partition commit of an import: its file changes under it.
func rewriteAfterCommits(t *testing.T, path string, n int, content string) failpointsFunc {
	commits := 0
	return func(name string) error {
		if name == "after-partition-commit" {
			if commits++; commits == n {
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Error(err)
				}
			}
		}
		return nil
	}
}

// failpointsFunc is a Failpoints that calls itself at every point.
type failpointsFunc func(name string) error

func (f failpointsFunc) Hit(name string) error { return f(name) }

// itemsCSV is a CSV file of n rows "i,vi", i from 1.
func itemsCSV(n int) string {
	var b strings.Builder
	b.WriteString("id,v\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d,v%d\n", i, i)
	}
	return b.String()
}

// TestSourceChangedUnderAReplacementKeepsTheTable: a --replace import
// whose file is rewritten under it is abandoned (its own rows removed);
// the table, which the first version's import created and the user then
// gave an index, stays with the index, on every database: the replacement
// did not create it (on MariaDB, where the ledger records the tables an
// operation created, it once inherited the first version's record and its
// abandon dropped the table). The rewritten file then replaces the first
// version exactly.
func TestSourceChangedUnderAReplacementKeepsTheTable(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		ctx := context.Background()
		f := newFx(t, name)
		path := f.write(t, "items.csv", itemsCSV(6))
		req := Request{Path: path, FileID: "items", PartitionRows: 3, Mapping: Mapping{Table: "items"}}
		f.wantOutcome(t, f.e.Import(ctx, req), Imported)
		testkit.Query(t, f.tg.DB, `CREATE INDEX items_by_v ON items (v)`)

		f.write(t, "items.csv", itemsCSV(30))
		fp := rewriteAfterCommits(t, path, 3, rewritten)
		replace := req
		replace.Replace = true
		res := f.open(t, Options{Failpoints: fp}).Import(ctx, replace)
		if res.Outcome != Failed || !errors.Is(res.Err, reader.ErrSourceChanged) {
			t.Fatalf("a replacement whose file was rewritten under it: %s, %v; want failed, source changed", res.Outcome, res.Err)
		}
		if got := f.rows(t, `SELECT state FROM `+f.tg.Ledger("operations")); !reflect.DeepEqual(got, [][]any{{"abandoned"}}) {
			t.Fatalf("operations: %v, want the replacement abandoned", got)
		}
		if !f.tg.TableExists(t, "items") || !f.tg.IndexExists(t, "items_by_v") {
			t.Fatalf("the abandoned replacement dropped items (there: %v) or its index", f.tg.TableExists(t, "items"))
		}

		res = f.e.Import(ctx, replace)
		if res.Err != nil || res.Outcome != Imported || res.Rows.Inserted != 5 {
			t.Fatalf("the rewritten file: %s %+v %v", res.Outcome, res.Rows, res.Err)
		}
		got := f.rows(t, `SELECT `+f.tg.Text("id")+`, v FROM items ORDER BY id`)
		if want := [][]any{{"1", "w1"}, {"2", "w2"}, {"3", "w3"}, {"4", "w4"}, {"5", "w5"}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("items %v, want %v", got, want)
		}
		if !f.tg.IndexExists(t, "items_by_v") {
			t.Fatalf("items lost its index")
		}
	})
}
