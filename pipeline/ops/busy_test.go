package ops

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/pipeline"
	"github.com/idemport/idemport/sink"
)

// heldDriver is a target's driver whose import stops inside its first
// partition's transaction, once the partition is marked done and before
// its COMMIT, until release: it holds the locks that transaction took
// (SQLite's write lock; on PostgreSQL and MariaDB the partition's and the
// operation's rows) while its process runs on.
type heldDriver struct {
	sink.Driver
	reached, release chan struct{}
	once             sync.Once
}

func (d *heldDriver) Checkpoints(prefix string) checkpoint.Ops {
	return heldCheckpoints{d.Driver.Checkpoints(prefix), d}
}

type heldCheckpoints struct {
	checkpoint.Ops
	d *heldDriver
}

func (c heldCheckpoints) Complete(ctx context.Context, tx *sql.Tx, op checkpoint.Op, idx int, attempt string, rows idemtype.Rows) (int64, error) {
	n, err := c.Ops.Complete(ctx, tx, op, idx, attempt, rows)
	c.d.once.Do(func() {
		close(c.d.reached)
		<-c.d.release
	})
	return n, err
}

// TestUndoMeetsAHeldImport: an undo that meets a lock an import holds
// inside its partition transaction (in this process, running: not
// stopped) waits for it no longer than its busy timeout, then returns a
// *BusyError naming that import's attempt, having changed nothing, every
// table value by value as it was; once the import has committed, the same
// undo goes through. The lock met is SQLite's write lock, the rows of the
// import's own operation and partitions (an undo of the file being
// imported), or on PostgreSQL the table's lock that an import adding a
// column holds (an undo of another file of the table). An undo that meets
// no lock goes through at once: another file's rows on PostgreSQL and
// MariaDB, where an import's rows lock only themselves, and MariaDB's
// added column commits by itself. TestGroupMeetsOtherRuns checks the
// command's exit 4 on SQLite with a stopped holder.
func TestUndoMeetsAHeldImport(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		other  bool   // undo another file of the table, imported before
		evolve string // the held import's Evolve, its file with a column more
	}{
		{name: "same-file"},
		{name: "other-file", other: true},
		{name: "other-file-evolving", other: true, evolve: pipeline.EvolveAdd},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
				t.Parallel()
				undoMeetsAHeldImport(t, name, c.other, c.evolve)
			})
		})
	}
}

func undoMeetsAHeldImport(t *testing.T, name string, other bool, evolve string) {
	ctx := context.Background()
	dir := t.TempDir()
	tg := testkit.NewTarget(t, name, dir)
	dsn, state := tg.Args[1], tg.Schema
	write := func(file string, from, to int, extra bool) string {
		var content strings.Builder
		content.WriteString("id,v")
		if extra {
			content.WriteString(",w")
		}
		content.WriteString("\n")
		for i := from; i <= to; i++ {
			fmt.Fprintf(&content, "%d,v%d", i, i)
			if extra {
				fmt.Fprintf(&content, ",w%d", i)
			}
			content.WriteString("\n")
		}
		path := filepath.Join(dir, file)
		if err := os.WriteFile(path, []byte(content.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	path := write("items.csv", 1, 30, evolve != "")
	req := pipeline.Request{Path: path, PartitionRows: 10, Mapping: pipeline.Mapping{Table: "items", Evolve: evolve}, Lease: 10 * time.Minute}
	undone, deleted := path, int64(30)
	if other {
		e, err := pipeline.Open(ctx, dsn, pipeline.Options{StateSchema: state})
		if err != nil {
			t.Fatal(err)
		}
		early := write("early.csv", 101, 103, false)
		res := e.Import(ctx, pipeline.Request{Path: early, Mapping: pipeline.Mapping{Table: "items"}})
		e.Close()
		if res.Outcome != pipeline.Imported {
			t.Fatalf("import early.csv: %s %v", res.Outcome, res.Err)
		}
		undone, deleted = early, 3
	}

	// early.csv's rows, with on PostgreSQL the transaction that wrote each.
	earlyRows := func() [][]any {
		t.Helper()
		if !other {
			return nil
		}
		cols := "id, v"
		if tg.IsPostgres() {
			cols = "xmin::text, id, v"
		}
		return testkit.Query(t, tg.DB, `SELECT `+cols+` FROM items WHERE id > 100 ORDER BY id`)
	}
	early := earlyRows()

	d, err := pipeline.Drivers().Lookup(dsn)
	if err != nil {
		t.Fatal(err)
	}
	held := &heldDriver{Driver: d, reached: make(chan struct{}), release: make(chan struct{})}
	e, err := pipeline.Open(ctx, dsn, pipeline.Options{StateSchema: state, Drivers: sink.Registry{held}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var release sync.Once
	letGo := func() { release.Do(func() { close(held.release) }) }
	done := make(chan *pipeline.Result, 1)
	go func() { done <- e.Import(ctx, req) }()
	defer func() { letGo(); <-done }()
	// finish lets the import go on and returns its result, which must be
	// imported.
	finish := func() *pipeline.Result {
		t.Helper()
		letGo()
		res := <-done
		done <- res
		if res.Outcome != pipeline.Imported {
			t.Fatalf("the held import, let go: %s %v", res.Outcome, res.Err)
		}
		return res
	}
	select {
	case <-held.reached:
	case res := <-done:
		done <- res
		t.Fatalf("the import ended before it held its partition's transaction: %s %v", res.Outcome, res.Err)
	case <-time.After(time.Minute):
		t.Fatal("the import never held its partition's transaction")
	}

	// On PostgreSQL the table an import adds a column to is locked until
	// it commits, to readers too: its early rows are compared after.
	var skip []string
	if tg.IsPostgres() && evolve != "" {
		skip = []string{"items"}
	}
	before := tg.Snapshot(t, skip...)
	op, err := Open(ctx, dsn, pipeline.Options{StateSchema: state, BusyTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	// Past the busy timeout, many times over: an undo that waits longer
	// is stopped here, and fails the test.
	uctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	u, err := op.Undo(uctx, UndoRequest{FileOrID: undone})
	waited := time.Since(start)
	if !other || tg.Name == testkit.SQLite || (evolve != "" && tg.IsPostgres()) {
		var busy *BusyError
		if !errors.As(err, &busy) || uctx.Err() != nil {
			t.Fatalf("undo while the import holds its transaction: %+v, %v after %s; want a *BusyError within the busy timeout (1s)", u, err, waited.Round(time.Millisecond))
		}
		if diff := before.Diff(tg.Snapshot(t, skip...)); diff != "" {
			t.Fatalf("the busy undo changed %s", diff)
		}
		res := finish()
		if !slices.ContainsFunc(busy.Holders, func(h pipeline.Holder) bool { return h.Attempt == res.AttemptID && !h.Stopped }) {
			t.Fatalf("the busy undo named %+v (%v), not the running import %s", busy.Holders, err, res.AttemptID)
		}
		if got := earlyRows(); !reflect.DeepEqual(got, early) {
			t.Fatalf("early.csv's rows after the busy undo: %v, want %v as before", got, early)
		}
		u, err = op.Undo(ctx, UndoRequest{FileOrID: undone})
	} else {
		finish()
	}
	if err != nil || u.Deleted != deleted {
		t.Fatalf("undo: %+v, %v; want %d rows deleted", u, err, deleted)
	}
	if got := earlyRows(); len(got) != 0 {
		t.Fatalf("early.csv's rows after its undo: %v", got)
	}
}
