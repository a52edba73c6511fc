package main

// The life of an import after something went wrong: superseding a refused
// import, undo, a dropped table, files still being written, named
// deliveries, dead attempts. Each scenario is what a user types, in order,
// with the exit codes and the target's rows afterwards, on both targets.

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// life is one scenario's target, directory and steps.
type life struct {
	t   *testing.T
	tg  *testkit.Target
	dir string
}

// write writes a file into the scenario's directory and returns its path.
func (l *life) write(name, content string) string {
	l.t.Helper()
	p := filepath.Join(l.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		l.t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour) // written long ago, for --min-age
	if err := os.Chtimes(p, old, old); err != nil {
		l.t.Fatal(err)
	}
	return p
}

// run runs the binary and checks its exit code; it returns the run.
func (l *life) run(want int, args ...string) testkit.Run {
	l.t.Helper()
	r := l.tg.Exec(l.t, l.dir, nil, args...)
	if r.Code != want {
		l.t.Fatalf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Code, want, r.Stdout, r.Stderr)
	}
	return r
}

// rows returns the table's rows, columns cols as text, one line each,
// ordered by the first column; "" for an empty table and "(no table)"
// when it does not exist.
func (l *life) rows(table string, cols ...string) string {
	l.t.Helper()
	if !l.tg.TableExists(l.t, table) {
		return "(no table)"
	}
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = "coalesce(" + l.tg.Text(c) + ", 'NULL')"
	}
	got := testkit.Query(l.t, l.tg.DB, `SELECT `+strings.Join(sel, ` || '|' || `)+` FROM `+table+` ORDER BY `+cols[0])
	var lines []string
	for _, r := range got {
		lines = append(lines, r[0].(string))
	}
	return strings.Join(lines, "\n")
}

// states returns the states of the (current) operations on table, oldest
// first, and of its past ones.
func (l *life) states(table string) (current, past string) {
	l.t.Helper()
	join := func(q string) string {
		var s []string
		for _, r := range testkit.Query(l.t, l.tg.DB, l.tg.Rebind(q), table) {
			s = append(s, r[0].(string))
		}
		return strings.Join(s, ",")
	}
	return join(`SELECT state FROM ` + l.tg.Ledger("operations") + ` WHERE table_name = ? ORDER BY created_at`),
		join(`SELECT state FROM ` + l.tg.Ledger("operations_past") + ` WHERE table_name = ? ORDER BY created_at`)
}

func (l *life) wantRows(table, want string, cols ...string) {
	l.t.Helper()
	if got := l.rows(table, cols...); got != want {
		l.t.Fatalf("%s holds\n%s\nwant\n%s", table, got, want)
	}
}

func (l *life) wantStates(table, current, past string) {
	l.t.Helper()
	c, p := l.states(table)
	if c != current || p != past {
		l.t.Fatalf("operations on %s: current %q, past %q; want %q, %q", table, c, p, current, past)
	}
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		name string
		f    func(l *life)
	}{
		{"refused for a wrong delimiter, then corrected: supersedes", func(l *life) {
			f := l.write("eu.csv", "id;name\n1;\"x,y\"\n2;plain\n")
			r := l.run(exitRefused, "import", f)
			l.wantRows("eu", "(no table)", "id")
			r = l.run(exitOK, "import", "--delimiter", ";", f)
			if !strings.Contains(r.Stdout, "supersedes the refused operation") {
				l.t.Fatalf("no note of the superseded operation:\n%s", r.Stdout)
			}
			l.wantRows("eu", "1|x,y\n2|plain", "id", "name")
			l.wantStates("eu", "completed", "superseded")
			r = l.run(exitOK, "history", f)
			if !strings.Contains(r.Stdout, "superseded") {
				l.t.Fatalf("history does not show the superseded operation:\n%s", r.Stdout)
			}
			// The corrected import is now the file's: a rerun is a duplicate.
			l.run(exitOK, "import", "--delimiter", ";", f)
			l.wantRows("eu", "1|x,y\n2|plain", "id", "name")
		}},
		{"refused by a --column type, corrected with another", func(l *life) {
			f := l.write("qty.csv", "id,qty\n1,5\n2,abc\n")
			l.run(exitRefused, "import", "--column", "qty:int64", f)
			l.run(exitOK, "import", "--column", "qty:string", f)
			l.wantRows("qty", "1|5\n2|abc", "id", "qty")
			l.wantStates("qty", "completed", "superseded")
		}},
		{"a completed import with effects is still a conflict", func(l *life) {
			f := l.write("c.csv", "id,qty\n1,5\n")
			l.run(exitOK, "import", "--file-id", "c", f)
			g := l.write("c2.csv", "id,qty\n1,6\n")
			l.run(exitConflict, "import", "--file-id", "c", "--table", "c", g)
			l.wantRows("c", "1|5", "id", "qty")
		}},
		{"--column equal to the table's type changes nothing", func(l *life) {
			a := l.write("items.csv", "id,qty\n1,5\n2,7\n")
			l.run(exitOK, "import", a)
			// The same file again, now naming the type the table has: a duplicate, not a conflict.
			r := l.run(exitOK, "import", "--column", "qty:int64", a)
			if !strings.Contains(r.Stdout, "already imported") {
				l.t.Fatalf("want a duplicate:\n%s", r.Stdout)
			}
			// A run that gave --column from the start stays a duplicate of itself too.
			b := l.write("more.csv", "id,qty\n3,9\n")
			l.run(exitOK, "import", "--table", "items", "--column", "qty:int64", b)
			r = l.run(exitOK, "import", "--table", "items", "--column", "qty:int64", b)
			if !strings.Contains(r.Stdout, "already imported") {
				l.t.Fatalf("want a duplicate:\n%s", r.Stdout)
			}
			l.wantRows("items", "1|5\n2|7\n3|9", "id", "qty")
		}},
		{"undo in ordinal mode removes the rows; the file imports again", func(l *life) {
			f := l.write("u.csv", "id,v\n1,a\n2,\n3,\"\"\n")
			g := l.write("other.csv", "id,v\n9,z\n")
			l.run(exitOK, "import", "--table", "u", f)
			l.run(exitOK, "import", "--table", "u", g)
			r := l.run(exitOK, "undo", f)
			if !strings.Contains(r.Stdout, "removed 3 rows") {
				l.t.Fatalf("undo output:\n%s", r.Stdout)
			}
			l.wantRows("u", "9|z", "id", "v")
			r = l.run(exitOK, "status")
			if strings.Contains(r.Stdout, "undone") {
				l.t.Fatalf("status lists the undone operation:\n%s", r.Stdout)
			}
			r = l.run(exitOK, "history", f)
			if !strings.Contains(r.Stdout, "undone") || !strings.Contains(r.Stdout, "undo") {
				l.t.Fatalf("history does not show the undo:\n%s", r.Stdout)
			}
			l.run(exitOK, "undo", f) // again: nothing to do
			l.run(exitOK, "import", "--table", "u", f)
			l.wantRows("u", "1|a\n2|NULL\n3|\n9|z", "id", "v")
			l.wantStates("u", "completed,completed", "undone")
			n := testkit.Int(l.t, l.tg.DB, `SELECT count(*) FROM `+l.tg.Ledger("attempts")+` WHERE "trigger" = 'undo'`)
			if n != 1 {
				l.t.Fatalf("%d undo attempts recorded, want 1", n)
			}
		}},
		{"gc moves old undone operations to history", func(l *life) {
			f := l.write("g.csv", "id\n1\n")
			l.run(exitOK, "import", f)
			l.run(exitOK, "undo", f)
			r := l.run(exitOK, "status", "--state", "undone")
			if !strings.Contains(r.Stdout, "undone") {
				l.t.Fatalf("status --state undone:\n%s", r.Stdout)
			}
			time.Sleep(50 * time.Millisecond)
			r = l.run(exitOK, "gc", "--older-than", "10ms", "--output", "json")
			if !strings.Contains(r.Stdout, `"retired":1`) && !strings.Contains(r.Stdout, `"retired": 1`) {
				l.t.Fatalf("gc did not retire the undone operation:\n%s", r.Stdout)
			}
			r = l.run(exitOK, "status", "--state", "undone")
			if strings.Contains(r.Stdout, "undone") {
				l.t.Fatalf("status still lists the undone operation after gc:\n%s", r.Stdout)
			}
			l.wantStates("g", "", "undone")
			r = l.run(exitOK, "history", f)
			if !strings.Contains(r.Stdout, "undone") {
				l.t.Fatalf("history lost the undone operation:\n%s", r.Stdout)
			}
			// And the file imports again as a new operation.
			l.run(exitOK, "import", f)
			l.wantRows("g", "1", "id")
			l.wantStates("g", "completed", "undone")
		}},
		{"undo in natural-key mode needs --forget", func(l *life) {
			f := l.write("k.csv", "id,v\n1,a\n2,b\n")
			l.run(exitOK, "import", "--key", "id", f)
			r := l.run(exitUsage, "undo", f)
			if !strings.Contains(r.Stderr, "--forget") {
				l.t.Fatalf("no hint at --forget:\n%s", r.Stderr)
			}
			l.wantRows("k", "1|a\n2|b", "id", "v")
			l.run(exitOK, "undo", "--forget", f)
			l.wantRows("k", "1|a\n2|b", "id", "v")
			r = l.run(exitOK, "import", "--key", "id", f)
			if !strings.Contains(r.Stdout, "imported") || strings.Contains(r.Stdout, "already") {
				l.t.Fatalf("want a new import:\n%s", r.Stdout)
			}
			l.wantRows("k", "1|a\n2|b", "id", "v")
		}},
		{"a dropped table is imported again; --reapply applies again", func(l *life) {
			f := l.write("fix.csv", "id,v\n1,a\n2,b\n")
			l.run(exitOK, "import", f)
			if _, err := l.tg.DB.Exec(`DROP TABLE fix`); err != nil {
				l.t.Fatal(err)
			}
			r := l.run(exitOK, "import", "--output", "json", f)
			if !strings.Contains(r.Stdout, `"outcome":"imported"`) || !strings.Contains(r.Stdout, "no longer exists") {
				l.t.Fatalf("want imported with a note:\n%s", r.Stdout)
			}
			l.wantRows("fix", "1|a\n2|b", "id", "v")
			if _, err := l.tg.DB.Exec(`DELETE FROM fix WHERE id = 2`); err != nil {
				l.t.Fatal(err)
			}
			r = l.run(exitOK, "import", "--reapply", f)
			if !strings.Contains(r.Stdout, "imported 1 rows") && !strings.Contains(r.Stdout, "imported 1 row") {
				l.t.Fatalf("want one row written again:\n%s", r.Stdout)
			}
			l.wantRows("fix", "1|a\n2|b", "id", "v")
			l.wantStates("fix", "completed", "")
			// Ordinary reruns are duplicates again.
			r = l.run(exitOK, "import", f)
			if !strings.Contains(r.Stdout, "already imported") {
				l.t.Fatalf("want a duplicate:\n%s", r.Stdout)
			}
		}},
		{"--min-age skips a file still being written", func(l *life) {
			f := l.write("late.csv", "id\n1\n2\n")
			now := time.Now()
			if err := os.Chtimes(f, now, now); err != nil {
				l.t.Fatal(err)
			}
			r := l.run(exitOK, "import", "--min-age", "10m", f)
			if !strings.Contains(r.Stdout, "skipped") || strings.Count(r.Stdout, "less than --min-age") != 1 {
				l.t.Fatalf("want skipped, with its reason once:\n%s", r.Stdout)
			}
			l.wantRows("late", "(no table)", "id")
			l.write("late.csv", "id\n1\n2\n3\n") // complete, and old enough now
			l.run(exitOK, "import", "--min-age", "10m", f)
			l.wantRows("late", "1\n2\n3", "id")
		}},
		{"named deliveries: the same bytes on another day are applied", func(l *life) {
			mon := l.write("orders-mon.csv", "id,v\nA,10\n")
			tue := l.write("orders-tue.csv", "id,v\nA,12\n")
			wed := l.write("orders-wed.csv", "id,v\nA,10\n") // Monday's bytes
			for _, f := range []string{mon, tue} {
				l.run(exitOK, "import", "--table", "orders", "--key", "id", f)
			}
			// Without a file ID template, Wednesday is Monday's duplicate: say why.
			r := l.run(exitOK, "import", "--table", "orders", "--key", "id", wed)
			if !strings.Contains(r.Stdout, "already imported") || !strings.Contains(r.Stdout, "--file-id") {
				l.t.Fatalf("want a duplicate pointing at --file-id:\n%s", r.Stdout)
			}
			l.wantRows("orders", "A|12", "id", "v")
			for _, f := range []string{mon, tue, wed} {
				l.run(exitOK, "import", "--table", "orders", "--key", "id", "--file-id", "orders/{name}", f)
			}
			l.wantRows("orders", "A|10", "id", "v")
			got := testkit.Int(l.t, l.tg.DB, l.tg.Rebind(`SELECT count(*) FROM `+l.tg.Ledger("operations")+` WHERE file_id = ?`), "orders/orders-wed.csv")
			if got != 1 {
				l.t.Fatalf("no operation named orders/orders-wed.csv")
			}
			// Same ID, other bytes: a conflict.
			l.write("orders-wed.csv", "id,v\nA,11\n")
			l.run(exitConflict, "import", "--table", "orders", "--key", "id", "--file-id", "orders/{name}", wed)
		}},
		{"a killed attempt is recorded as died once taken over", func(l *life) {
			f := l.write("d.csv", "id\n1\n2\n3\n4\n")
			r := l.tg.Exec(l.t, l.dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit"}, "import", "--partition-rows", "2", f)
			if r.Signal != syscall.SIGKILL {
				l.t.Fatalf("want the first run killed, got %+v", r)
			}
			l.run(exitOK, "import", f)
			l.wantRows("d", "1\n2\n3\n4", "id")
			got := testkit.Query(l.t, l.tg.DB, `SELECT coalesce(outcome, '') FROM `+l.tg.Ledger("attempts")+` ORDER BY started_at`)
			if len(got) != 2 || got[0][0] != "died" || got[1][0] != "resumed" {
				l.t.Fatalf("attempt outcomes %v, want died then resumed", got)
			}
		}},
		{"a source that changes under an attempt is abandoned and its rows removed", func(l *life) {
			var b strings.Builder
			b.WriteString("id\n")
			for i := 1; i <= 6; i++ {
				b.WriteString(strings.Repeat("x", i) + "\n")
			}
			f := l.write("upload.csv", b.String())
			s := stopped(l.t, start(l.t, l.tg, l.dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit:1:stop"},
				"import", "--partition-rows", "2", "--file-id", "upload/today", f))
			l.wantRows("upload", "x\nxx", "id")
			// The upload goes on: the file grows under the stopped run.
			full := b.String() + "xxxxxxx\n"
			if err := os.WriteFile(f, []byte(full), 0o644); err != nil {
				l.t.Fatal(err)
			}
			testkit.Continue(s.cmd.Process)
			err := s.cmd.Wait()
			if code := s.cmd.ProcessState.ExitCode(); code != exitFailed {
				l.t.Fatalf("stopped run: exit %d (%v), want 1\n%s", code, err, s.stderr.String())
			}
			if !strings.Contains(s.stdout.String()+s.stderr.String(), "abandoned") {
				l.t.Fatalf("no word of the abandoned import:\n%s\n%s", s.stdout.String(), s.stderr.String())
			}
			if l.tg.IsMariaDB() {
				l.wantRows("upload", "(no table)", "id") // the abandoned import drops the table it created
			} else {
				l.wantRows("upload", "", "id")
			}
			l.wantStates("upload", "abandoned", "")
			r := l.run(exitOK, "status")
			if !strings.Contains(r.Stdout, "abandoned") {
				l.t.Fatalf("status hides the abandoned operation:\n%s", r.Stdout)
			}
			old := time.Now().Add(-time.Hour)
			os.Chtimes(f, old, old)
			l.run(exitOK, "import", "--partition-rows", "2", "--file-id", "upload/today", f)
			l.wantRows("upload", "x\nxx\nxxx\nxxxx\nxxxxx\nxxxxxx\nxxxxxxx", "id")
			l.wantStates("upload", "completed", "abandoned")
		}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
				t.Parallel()
				dir := t.TempDir()
				sc.f(&life{t: t, tg: testkit.NewTarget(t, name, dir), dir: dir})
			})
		})
	}
}
