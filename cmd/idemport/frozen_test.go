package main

// Frozen holders where imports of different files meet: a run stopped
// (SIGSTOP, as Ctrl-Z does) inside its partition transaction holds locks
// another file's import needs (SQLite's write lock; PostgreSQL's locks on
// the rows it wrote, or on the table a schema change alters). The other
// import must not wait without limit: it waits --busy-timeout at most and
// exits 4 naming the holder, and readers never queue behind it for long.

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// keyedRows returns rows (id, v) for ids from..to, v being prefix and id.
func keyedRows(from, to int, prefix string) [][2]any {
	var rows [][2]any
	for id := from; id <= to; id++ {
		rows = append(rows, [2]any{id, fmt.Sprintf("%s%d", prefix, id)})
	}
	return rows
}

// overlay applies rows over the table want (id → v), as an import of a
// file of them does.
func overlay(want map[int64]string, rows [][2]any) {
	for _, r := range rows {
		want[int64(r[0].(int))] = r[1].(string)
	}
}

// checkKeyed asserts that table t holds exactly want, value by value.
func checkKeyed(t *testing.T, tg *testkit.Target, want map[int64]string) {
	t.Helper()
	got := keyValues(t, tg)
	if len(got) != len(want) {
		t.Fatalf("table t holds %d rows, want %d", len(got), len(want))
	}
	for _, g := range got {
		if w, ok := want[g[0].(int64)]; !ok || g[1] != w {
			t.Fatalf("table t: row %v, want %q", g, w)
		}
	}
}

// finishWithin waits for s to end, failing t if it has not after limit: a
// guard against a run that waits for ever, not a measure of its speed.
func finishWithin(t *testing.T, s *started, limit time.Duration, who string) testkit.Run {
	t.Helper()
	done := make(chan testkit.Run, 1)
	go func() { done <- testkit.Wait(t, s.cmd) }()
	select {
	case r := <-done:
		return r
	case <-time.After(limit):
		s.cmd.Process.Kill()
		<-done
		t.Fatalf("%s was still running after %v: it waits without limit\n%s%s", who, limit, s.stdout.String(), s.stderr.String())
	}
	return testkit.Run{}
}

// checkNamesHolder asserts that a busy result names the frozen holder:
// its attempt, its host:pid, that it is stopped and how to resume it.
func checkNamesHolder(t *testing.T, res result, holder string, pid int) {
	t.Helper()
	if res.Outcome != "busy" {
		t.Fatalf("outcome %q, want busy: %+v", res.Outcome, res)
	}
	host, _ := os.Hostname()
	for _, s := range []string{holder, fmt.Sprintf("%s:%d", host, pid), fmt.Sprintf("stopped: resume it with `kill -CONT %d`", pid)} {
		if !strings.Contains(res.Error, s) {
			t.Fatalf("the busy message does not say %q: %s", s, res.Error)
		}
	}
}

// TestFrozenHolderOfAnotherFile freezes an import of one file inside its
// second partition's transaction, and imports another file whose keys
// overlap the rows that transaction wrote: on SQLite the frozen run holds
// the write lock, on PostgreSQL the locks of those rows. The other import
// must exit 4 within its --busy-timeout (not wait for ever), naming the
// frozen attempt, its host:pid, that it is stopped and `kill -CONT PID`.
// Resumed, the frozen run finishes; the other, rerun, finishes too, and
// the table holds both files applied in that order, value by value.
func TestFrozenHolderOfAnotherFile(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		a, b := keyedRows(1, 400, "a"), keyedRows(50, 199, "b")
		writeKeyed(t, dir, "a.csv", a)
		writeKeyed(t, dir, "b.csv", b)
		args := []string{"import", "--output", "json", "--table", "t", "--key", "id", "--partition-rows", "100"}
		frozen := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=inside-partition:2:stop"}, append(args, "a.csv")...))
		holder := attemptOf(t, tg, frozen.cmd.Process.Pid)

		other := start(t, tg, dir, nil, append(args, "--busy-timeout", "1s", "b.csv")...)
		r := finishWithin(t, other, 2*time.Minute, "the other file's import")
		if r.Code != exitBusy {
			t.Fatalf("exit %d, want 4\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		checkNamesHolder(t, parseResults(t, r.Stdout)[0], holder, frozen.cmd.Process.Pid)

		// Asked to --wait, it waits through its lock timeouts instead, and
		// finishes once the holder is resumed.
		log := filepath.Join(dir, "waiting.log")
		waiting := startLogging(t, tg.Cmd(t, dir, nil, append(args, "--busy-timeout", "1s", "--wait", "10m", "--log-level", "debug", "--log-format", "json", "b.csv")...), log)
		waitFor(t, time.Minute, "the waiting import to wait through a lock timeout", func() bool {
			return slices.ContainsFunc(readLog(t, log), func(l logLine) bool {
				return l.Msg == "waiting for a lock another transaction holds" || l.Msg == "busy; waiting"
			})
		})
		testkit.Continue(frozen.cmd.Process)
		if f := testkit.Wait(t, frozen.cmd); f.Code != 0 {
			t.Fatalf("thawed run: exit %d\n%s%s", f.Code, f.Stdout, f.Stderr)
		}
		again := finishWithin(t, waiting, 2*time.Minute, "the waiting import")
		if res := parseResults(t, again.Stdout); again.Code != 0 || (res[0].Outcome != "imported" && res[0].Outcome != "resumed") {
			b, _ := os.ReadFile(log)
			t.Fatalf("the waiting import: exit %d\n%s%s", again.Code, again.Stdout, b)
		}
		want := map[int64]string{}
		overlay(want, a)
		overlay(want, b)
		checkKeyed(t, tg, want)
		states := testkit.Query(t, tg.DB, `SELECT file_id, state FROM `+tg.Ledger("operations")+` ORDER BY file_id`)
		if len(states) != 2 || !reflect.DeepEqual([]any{states[0][1], states[1][1]}, []any{"completed", "completed"}) {
			t.Fatalf("operations %v, want both completed", states)
		}
	})
}

// TestFrozenHolderAndSchemaChange freezes an import inside its partition
// transaction on PostgreSQL and imports another file with a new column
// (--evolve add): its ALTER TABLE waits for the frozen transaction. With
// a short --busy-timeout it exits 4 naming the holder, the table
// unchanged. With a long one it waits, and while it waits plain readers
// of the table must not queue behind its ALTER for longer than a try: a
// SELECT ends while that import still waits. Resumed, the frozen run
// finishes, the waiting import adds its column and finishes, and the table
// holds both files, value by value.
func TestFrozenHolderAndSchemaChange(t *testing.T) {
	testkit.Available(t, testkit.Postgres) // SQLite has no readers waiting on a writer
	t.Parallel()
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.Postgres, dir)
	const table = "frozen_readers"
	a := keyedRows(1, 400, "a")
	writeKeyed(t, dir, "a.csv", a)
	write(t, dir, "c.csv", "id,v,w\n1000,c1000,x\n1001,c1001,y\n")
	args := []string{"import", "--output", "json", "--table", table, "--key", "id", "--partition-rows", "100"}
	frozen := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=inside-partition:2:stop"}, append(args, "a.csv")...))
	holder := attemptOf(t, tg, frozen.cmd.Process.Pid)

	short := start(t, tg, dir, nil, append(args, "--evolve", "add", "--busy-timeout", "1s", "c.csv")...)
	r := finishWithin(t, short, 2*time.Minute, "the import that adds a column")
	if r.Code != exitBusy {
		t.Fatalf("exit %d, want 4\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	checkNamesHolder(t, parseResults(t, r.Stdout)[0], holder, frozen.cmd.Process.Pid)
	if cols := columnsOf(t, tg, table); slices.Contains(cols, "w") {
		t.Fatalf("the busy import changed the table: columns %v", cols)
	}

	long := start(t, tg, dir, nil, append(args, "--evolve", "add", "--busy-timeout", "10m", "c.csv")...)
	ended := make(chan testkit.Run, 1)
	go func() { ended <- testkit.Wait(t, long.cmd) }()
	waitFor(t, time.Minute, "the import's ALTER TABLE to wait for its lock", func() bool {
		return testkit.Int(t, tg.DB, `SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			WHERE NOT l.granted AND l.mode = 'AccessExclusiveLock' AND c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`, table) > 0
	})
	read := make(chan error, 1)
	var n int64
	go func() { read <- tg.DB.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n) }()
	select {
	case err := <-read:
		if err != nil {
			t.Fatal(err)
		}
	case r := <-ended:
		t.Fatalf("the import that adds a column ended before the reader (exit %d): the reader proved nothing\n%s%s", r.Code, r.Stdout, r.Stderr)
	case <-time.After(2 * time.Minute):
		t.Fatalf("a plain SELECT still queues behind the waiting ALTER TABLE after 2 minutes")
	}
	select {
	case r := <-ended:
		t.Fatalf("the import that adds a column ended while the holder was frozen: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	default:
	}
	if n != 100 {
		t.Fatalf("the reader counted %d rows, want the 100 of the frozen run's committed partition", n)
	}

	testkit.Continue(frozen.cmd.Process)
	if f := testkit.Wait(t, frozen.cmd); f.Code != 0 {
		t.Fatalf("thawed run: exit %d\n%s%s", f.Code, f.Stdout, f.Stderr)
	}
	select {
	case r := <-ended:
		if res := parseResults(t, r.Stdout); r.Code != 0 || fmt.Sprint(res[0].ColumnsAdded) != "[w]" {
			t.Fatalf("the import that adds a column: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the import that adds a column did not end once the holder was resumed")
	}
	want := [][]any{}
	for _, row := range a {
		want = append(want, []any{int64(row[0].(int)), row[1], nil})
	}
	want = append(want, []any{int64(1000), "c1000", "x"}, []any{int64(1001), "c1001", "y"})
	if got := testkit.Query(t, tg.DB, `SELECT id, v, w FROM `+table+` ORDER BY id`); !reflect.DeepEqual(got, want) {
		t.Fatalf("table %s holds %d rows %v…, want %d rows %v…", table, len(got), got[:min(3, len(got))], len(want), want[:3])
	}
}
