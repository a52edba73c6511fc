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
	"reflect"
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
	t.Run(testkit.SQLite, func(t *testing.T) {
		name := testkit.SQLite
		testkit.Available(t, name)
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

		testkit.Continue(frozen.cmd.Process)
		if f := testkit.Wait(t, frozen.cmd); f.Code != 0 {
			t.Fatalf("thawed run: exit %d\n%s%s", f.Code, f.Stdout, f.Stderr)
		}
		again := tg.Exec(t, dir, nil, append(args, "b.csv")...)
		if res := parseResults(t, again.Stdout); again.Code != 0 || (res[0].Outcome != "imported" && res[0].Outcome != "resumed") {
			t.Fatalf("rerun: exit %d\n%s%s", again.Code, again.Stdout, again.Stderr)
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
