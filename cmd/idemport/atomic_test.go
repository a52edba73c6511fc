//go:build !windows

package main

import (
	"bufio"
	"cmp"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/internal/testkit"
)

// poller is a second process (the sqlite3, psql or mariadb shell) that reads the
// target table in a loop, one autocommit query after another, and records
// each state it saw: "rows,sum".
type poller struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	seen map[string]int
	done chan struct{}
}

func startPoller(t *testing.T, tg *testkit.Target, table string) *poller {
	t.Helper()
	var cmd *exec.Cmd
	query := "SELECT count(*) || ',' || coalesce(sum(v), 0) FROM " + table + ";\n"
	switch {
	case tg.IsPostgres():
		query = "SELECT count(*) || ',' || coalesce(sum(v), 0) FROM " + testkit.QuoteOne(tg.Schema) + "." + table + ";\n"
		cmd = exec.Command("psql", "-X", "-q", "-At", pgtest.DSN(t))
	case tg.IsMariaDB():
		u, err := url.Parse(tg.Args[1])
		if err != nil {
			t.Fatal(err)
		}
		query = "SELECT CONCAT(count(*), ',', coalesce(sum(v), 0)) FROM " + table + ";\n"
		// --unbuffered: the client writes each answer as it has it, not
		// a buffer of some 340 at a time, which made each waitReads wait
		// for hundreds of scans of the table.
		cmd = exec.Command("mariadb", "--batch", "--unbuffered", "--skip-column-names", "--protocol=tcp", "-h", u.Hostname(), "-P", cmp.Or(u.Port(), "3306"),
			"-u", u.User.Username(), strings.TrimPrefix(u.Path, "/"))
		if pw, ok := u.User.Password(); ok {
			cmd.Env = append(os.Environ(), "MYSQL_PWD="+pw)
		}
	default:
		cmd = exec.Command("sqlite3", tg.Path)
	}
	// The shell reads queries from a loop that feeds it as fast as it answers.
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd = exec.Command("bash", "-c", `while :; do printf '%s' "$Q"; done | `+strings.Join(quoteArgs(cmd.Args), " "))
	cmd.Env = append(env, "Q="+query)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &poller{cmd: cmd, seen: map[string]int{}, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.seen[sc.Text()]++
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() { p.stop() })
	return p
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return out
}

// reads returns how many answers the poller has read so far.
func (p *poller) reads() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.seen {
		n += c
	}
	return n
}

// waitReads waits until the poller has read n more answers than it had
// when called, so that a state the target is in now is seen by a reader,
// however slowly the machine runs. It fails the test if the poller stops
// answering for a minute.
func (p *poller) waitReads(t *testing.T, n int) {
	t.Helper()
	want := p.reads() + n
	for deadline := time.Now().Add(time.Minute); p.reads() < want; {
		if time.Now().After(deadline) {
			t.Fatalf("the poller answered %d times in a minute, want %d", p.reads()-(want-n), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stop ends the poller's process group and returns the states it saw.
func (p *poller) stop() map[string]int {
	if p.cmd.Process != nil {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.cmd.Wait()
		p.cmd.Process = nil
		<-p.done
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen
}

// TestAtomicReadersSeeOldOrNew: while a large file is imported with
// --atomic (killed midway and resumed), a second process polling the
// table sees only the old state or the complete new one; the same import
// without --atomic, polled the same way, is seen half done (so the poller
// can see what --atomic hides).
func TestAtomicReadersSeeOldOrNew(t *testing.T) {
	t.Parallel()
	const old, upd, extra = 40000, 40000, 8000
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, atomic := range []bool{true, false} {
			t.Run(fmt.Sprintf("atomic=%v", atomic), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				write := func(file string, n, v int) {
					var b strings.Builder
					b.WriteString("id,v,note\n")
					for i := 1; i <= n; i++ {
						fmt.Fprintf(&b, "%d,%d,row %d\n", i, v, i)
					}
					if err := os.WriteFile(filepath.Join(dir, file), []byte(b.String()), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				write("a.csv", old, 1)
				write("b.csv", upd+extra, 2)
				args := []string{"--table", "items", "--key", "id", "--partition-rows", "4000"}
				if atomic {
					args = append(args, "--atomic")
				}
				importTo(t, tg, dir, nil, 0, append(args, "a.csv")...)
				before, after := fmt.Sprintf("%d,%d", old, old), fmt.Sprintf("%d,%d", upd+extra, 2*(upd+extra))
				p := startPoller(t, tg, "items")
				p.waitReads(t, 3) // reading before the import starts
				killed := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=inside-partition:6"}, append([]string{"import"}, append(args, "b.csv")...)...)
				if killed.Signal != syscall.SIGKILL {
					t.Fatalf("not killed: exit %d\n%s%s", killed.Code, killed.Stdout, killed.Stderr)
				}
				p.waitReads(t, 3) // the state a kill midway leaves is read for sure
				res := importTo(t, tg, dir, nil, 0, append(args, "b.csv")...)
				if res.Outcome != "resumed" {
					t.Fatalf("rerun: outcome %s, want resumed", res.Outcome)
				}
				p.waitReads(t, 3) // and the state it ends in
				seen := p.stop()
				var between []string
				polls := 0
				for s, n := range seen {
					polls += n
					if s != before && s != after {
						between = append(between, s)
					}
				}
				if atomic && len(between) > 0 {
					t.Fatalf("with --atomic a reader saw %d intermediate states, e.g. %v (old %s, new %s)", len(between), between[:min(3, len(between))], before, after)
				}
				if !atomic && len(between) == 0 {
					t.Fatalf("without --atomic the poller saw only %v in %d reads: it cannot tell", seen, polls)
				}
				if got := testkit.Query(t, tg.DB, `SELECT count(*), `+tg.Sum("v")+`, count(DISTINCT id) FROM items`); fmt.Sprint(got) != fmt.Sprintf("[[%d %d %d]]", upd+extra, 2*(upd+extra), upd+extra) {
					t.Fatalf("table after the import: %v", got)
				}
				for _, tbl := range tg.Tables(t) {
					if strings.Contains(tbl, "_idemport_stage_") {
						t.Fatalf("staging table %s left behind", tbl)
					}
				}
			})
		}
	})
}

// TestGCDropsStagingOfUndoneImports: the staging table of an --atomic
// import killed midway survives gc while the import can resume, and goes
// with the undo of the import, which says so (gc then finds nothing to
// drop); the file then imports anew.
func TestGCDropsStagingOfUndoneImports(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		l := &life{t: t, tg: testkit.NewTarget(t, name, dir), dir: dir}
		rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 100, 3)
		stages := func() int {
			n := 0
			for _, tbl := range l.tg.Tables(t) {
				if strings.Contains(tbl, "_idemport_stage_") {
					n++
				}
			}
			return n
		}
		args := []string{"import", "--atomic", "--partition-rows", "20", "orders.csv"}
		if r := l.tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit:2"}, args...); r.Signal != syscall.SIGKILL {
			t.Fatalf("not killed: exit %d\n%s", r.Code, r.Stderr)
		}
		if n := testkit.Int(t, l.tg.DB, `SELECT count(*) FROM orders`); n != 0 {
			t.Fatalf("%d rows visible in orders before the import completed", n)
		}
		l.run(0, l.tg.With("gc")...)
		if stages() != 1 {
			t.Fatalf("gc dropped the staging table of a resumable import")
		}
		// The undo drops the staging table, and says so. Where DDL
		// commits alone, the import recorded it as a table it created,
		// and the undo dropped it with orders.
		if out := l.run(0, l.tg.With("undo", "orders.csv")...); stages() != 0 || !strings.Contains(out.Stdout, "_idemport_stage_") {
			t.Fatalf("the undo left the staging table of the import, or did not say it dropped it:\n%s", out.Stdout)
		}
		if l.tg.IsMariaDB() && l.tg.TableExists(t, "orders") {
			t.Fatalf("the undo left the tables the import created: %v", l.tg.Tables(t))
		}
		if out := l.run(0, l.tg.With("gc")...); strings.Contains(out.Stdout, "_idemport_stage_") {
			t.Fatalf("gc found a staging table after the undo:\n%s", out.Stdout)
		}
		importTo(t, l.tg, dir, nil, 0, "--atomic", "--partition-rows", "20", "orders.csv")
		checkOrders(t, l.tg, "orders", rows)
	})
}

// TestAtomicRefusesARowTheTablesCheckRefuses: an --atomic import by key
// into a table with a CHECK and a NOT NULL the plan pass cannot check
// refuses the rows that break them as they are staged, as the same
// import without --atomic does: over --max-rejects the file is refused
// (the table untouched), and the rerun the message names, with a higher
// --max-rejects, quarantines them, moves the good rows and is then a
// duplicate. Never a move that fails on every rerun.
func TestAtomicRefusesARowTheTablesCheckRefuses(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		l := &life{t: t, tg: testkit.NewTarget(t, name, dir), dir: dir}
		for _, q := range []string{
			`CREATE TABLE at1 (id bigint PRIMARY KEY, qty bigint CHECK (qty >= 0), pad text NOT NULL, _idemport_file bigint, _idemport_row bigint)`,
			`INSERT INTO at1 (id, qty, pad) VALUES (9, 9, 'z')`,
		} {
			if _, err := l.tg.DB.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		l.write("f.csv", "id,qty,pad\n1,5,a\n2,-1,b\n3,7,c\n4,-1,d\n5,0,\n6,-1,f\n7,0,g\n")
		before := "9|9|z"
		args := []string{"import", "--table", "at1", "--key", "id", "--atomic", "f.csv"}
		r := l.run(5, append(args, "--max-rejects", "3")...)
		if !strings.Contains(r.Stdout, "more bad rows than --max-rejects 3") || !strings.Contains(r.Stdout, "rerun with a higher --max-rejects") {
			t.Fatalf("over --max-rejects, the refusal does not say so and what to do:\n%s", r.Stdout)
		}
		if got := l.rows("at1", "id", "qty", "pad"); got != before {
			t.Fatalf("a refused file changed the table:\n%s", got)
		}
		l.run(0, append(args, "--max-rejects", "4")...)
		if got, want := l.rows("at1", "id", "qty", "pad"), "1|5|a\n3|7|c\n7|0|g\n9|9|z"; got != want {
			t.Fatalf("table:\n%s\nwant:\n%s", got, want)
		}
		out := l.run(0, "rejects", "list", "--table", "at1", "f.csv").Stdout
		for _, want := range []string{`2 .* constraint .*qty`, `4 .* constraint .*qty`, `5 .* pad .* null `, `6 .* constraint .*qty`} {
			if !regexp.MustCompile(`(?m)^` + want).MatchString(out) {
				t.Fatalf("no rejected row %q:\n%s", want, out)
			}
		}
		if r := l.run(0, append(args, "--max-rejects", "4")...); !strings.Contains(r.Stdout, "already imported") {
			t.Fatalf("the rerun is not a duplicate:\n%s", r.Stdout)
		}
		if got, want := l.rows("at1", "id", "qty", "pad"), "1|5|a\n3|7|c\n7|0|g\n9|9|z"; got != want {
			t.Fatalf("after the rerun, table:\n%s\nwant:\n%s", got, want)
		}
	})
}

// TestAtomicMoveRefusedByTheTable: an --atomic import by key whose rows
// break a constraint the staging table cannot carry (a unique index on a
// column besides the key, its duplicate already stored; on MariaDB also a
// CHECK over a column the stage holds in another type) is refused at the
// move, exit 5, not failed: the message names the table's reason, and the
// next: line the undo --forget that gets out; a rerun is refused the same
// way, the table value for value as before. That command forgets the
// import and drops its stage, and the fixed file then imports exactly.
func TestAtomicMoveRefusedByTheTable(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		type refusal struct {
			constraint, reason, bad string
		}
		cases := []refusal{{`CREATE UNIQUE INDEX am1_code ON am1 (code)`, `(?i)unique|duplicate`, "id,qty,code\n1,5,a\n2,-1,b\n3,7,z\n"}}
		if name == testkit.MariaDB {
			// The stage holds code as text, not varchar(20): it does not
			// carry a CHECK over it.
			cases = append(cases, refusal{`ALTER TABLE am1 ADD CONSTRAINT am1_code CHECK (code <> 'x')`, `(?i)am1_code`, "id,qty,code\n1,5,a\n2,-1,x\n3,7,c\n"})
		}
		for _, c := range cases {
			dir := t.TempDir()
			l := &life{t: t, tg: testkit.NewTarget(t, name, dir), dir: dir}
			for _, q := range []string{`CREATE TABLE am1 (id bigint PRIMARY KEY, qty bigint, code varchar(20), _idemport_file bigint, _idemport_row bigint)`,
				c.constraint, `INSERT INTO am1 (id, qty, code) VALUES (9, 9, 'z')`} {
				if _, err := l.tg.DB.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			l.write("f.csv", c.bad)
			before := "9|9|z"
			args := []string{"import", "--table", "am1", "--key", "id", "--atomic", "f.csv"}
			next := regexp.MustCompile(`(?m)^  next: idemport undo --forget --table am1 (\S+) `)
			var undo []string
			for i := range 2 { // the rerun is refused the same way
				r := l.run(5, args...)
				out := r.Stdout + r.Stderr
				if !strings.Contains(out, "refused: the file cannot be moved into am1 as it is") || !regexp.MustCompile(c.reason).MatchString(out) {
					t.Fatalf("%s, run %d: the refusal does not say the table refused the move, and why:\n%s", c.constraint, i, out)
				}
				m := next.FindStringSubmatch(out)
				if m == nil {
					t.Fatalf("%s, run %d: no next: line naming undo --forget:\n%s", c.constraint, i, out)
				}
				undo = []string{"undo", "--forget", "--table", "am1", m[1]}
				if got := l.rows("am1", "id", "qty", "code"); got != before {
					t.Fatalf("%s, run %d: a refused move changed the table:\n%s", c.constraint, i, got)
				}
			}
			l.run(0, undo...)
			for _, tb := range l.tg.Tables(t) {
				if strings.Contains(tb, "_idemport_stage_") {
					t.Fatalf("undo --forget left the staging table %s", tb)
				}
			}
			l.write("f.csv", "id,qty,code\n1,5,a\n2,1,b\n3,7,c\n")
			l.run(0, args...)
			want := "1|5|a\n2|1|b\n3|7|c\n9|9|z"
			if got := l.rows("am1", "id", "qty", "code"); got != want {
				t.Fatalf("after the fixed file, table:\n%s\nwant:\n%s", got, want)
			}
			for _, tb := range l.tg.Tables(t) {
				if strings.Contains(tb, "_idemport_stage_") {
					t.Fatalf("the fixed file left the staging table %s", tb)
				}
			}
			if r := l.run(0, args...); !strings.Contains(r.Stdout, "already imported") {
				t.Fatalf("the rerun of the fixed file is not a duplicate:\n%s", r.Stdout)
			}
		}
	})
}
