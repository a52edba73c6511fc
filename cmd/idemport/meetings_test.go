package main

// Features meeting each other: two "idemport run" of one config at once,
// --replace with --evolve killed midway, and status while a replacement
// is held.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/ledger"
)

// lineRows returns the rows of query as lines of their values as text
// joined by "|", NULL as NULL, in the order the query gives.
func lineRows(t *testing.T, tg *testkit.Target, query string) []string {
	t.Helper()
	var out []string
	for _, row := range testkit.Query(t, tg.DB, query) {
		var cells []string
		for _, v := range row {
			if v == nil {
				cells = append(cells, "NULL")
				continue
			}
			cells = append(cells, fmt.Sprint(v))
		}
		out = append(out, strings.Join(cells, "|"))
	}
	return out
}

// meetingFeeds is an idemport.yaml of three feeds sharing one target, each
// file cut into partitions of 25 rows so that two runs meet inside files:
// orders by key, events by ordinal, products as a keyed snapshot.
func meetingFeeds(tg *testkit.Target) string {
	return feedsDefaults(tg, "  partition-rows: 25\n") + `feeds:
  orders:
    source: drop/orders-*.csv
    table: orders
    key: id
    file-id: orders/{name}
  events:
    source: drop/events-*.csv
    table: events
    file-id: events/{name}
  products:
    source: [drop/products.csv]
    table: products
    key: [sku]
    snapshot: true
    max-delete: 100%
`
}

// meetingNight writes night n's files into dir/drop: two orders files of
// 120 rows with keys of their own, two events files of 110 rows and a
// products snapshot of 80 rows, with values that change meaning when
// mishandled (leading zeros, int64 edges, empty and NULL, quotes). It
// returns the lines each table must hold afterwards given what earlier
// nights left in orders and events, as lineRows renders them.
func meetingNight(t *testing.T, dir string, n int, orders, events []string) (o, e, p []string) {
	t.Helper()
	notes := []string{"007", `"a, ""quoted"" note"`, `""`, "", "9223372036854775807", "-0", "x"}
	shown := []string{"007", `a, "quoted" note`, "", "NULL", "9223372036854775807", "-0", "x"}
	for f := 1; f <= 2; f++ {
		var b strings.Builder
		b.WriteString("id,qty,note\n")
		for i := 1; i <= 120; i++ {
			id := (n*2+f)*1000 + i
			k := (id + n) % len(notes)
			fmt.Fprintf(&b, "%d,%d,%s\n", id, id*7-n, notes[k])
			orders = append(orders, fmt.Sprintf("%d|%d|%s", id, id*7-n, shown[k]))
		}
		writeDrop(t, dir, fmt.Sprintf("orders-%d-%d.csv", n, f), b.String())
		b.Reset()
		b.WriteString("ev,n\n")
		for i := 1; i <= 110; i++ {
			ev := []string{"click", "view", "buy", "0012"}[(i+f+n)%4]
			fmt.Fprintf(&b, "%s,%d\n", ev, (n*2+f)*1000+i)
			events = append(events, fmt.Sprintf("%s|%d", ev, (n*2+f)*1000+i))
		}
		writeDrop(t, dir, fmt.Sprintf("events-%d-%d.csv", n, f), b.String())
	}
	var b strings.Builder
	b.WriteString("sku,price\n")
	for i := 1; i <= 80; i++ {
		sku := fmt.Sprintf("s%03d", i+n*40)       // each night drops 40 skus and adds 40
		price := fmt.Sprintf("%d.%d5", i+n, i%10) // a float64 whose shortest text is itself
		fmt.Fprintf(&b, "%s,%s\n", sku, price)
		p = append(p, sku+"|"+price)
	}
	writeDrop(t, dir, "products.csv", b.String())
	slices.Sort(orders)
	slices.Sort(events)
	slices.Sort(p)
	return orders, events, p
}

// checkMeetingTables compares the three tables, whole, with the lines
// wanted, and checks that every operation completed and no lease is live.
func checkMeetingTables(t *testing.T, tg *testkit.Target, when string, orders, events, products []string) {
	t.Helper()
	for _, c := range []struct {
		table, query string
		want         []string
	}{
		{"orders", `SELECT ` + tg.Text("id") + `, ` + tg.Text("qty") + `, note FROM orders`, orders},
		{"events", `SELECT ev, ` + tg.Text("n") + ` FROM events`, events},
		{"products", `SELECT sku, ` + tg.Text("price") + ` FROM products`, products},
	} {
		got := lineRows(t, tg, c.query)
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Fatalf("%s: %s holds %d rows, want %d:\n got  %q\n want %q", when, c.table, len(got), len(c.want), got, c.want)
		}
	}
	if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM events GROUP BY _idemport_file, _idemport_row ORDER BY count(*) DESC LIMIT 1`); n != 1 {
		t.Fatalf("%s: an events row written %d times", when, n)
	}
	// Counts agree with the tables: each row of orders and events was
	// inserted once, by one operation.
	for _, table := range []string{"orders", "events"} {
		n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+table)
		if sum := testkit.Int(t, tg.DB, tg.Rebind(`SELECT `+tg.Sum("rows_inserted")+` FROM `+tg.Ledger("operations")+` WHERE table_name = ?`), table); sum != n {
			t.Fatalf("%s: the operations of %s inserted %d rows, the table holds %d", when, table, sum, n)
		}
	}
	if bad := lineRows(t, tg, `SELECT table_name, state FROM `+tg.Ledger("operations")+` WHERE state <> 'completed'`); len(bad) != 0 {
		t.Fatalf("%s: operations not completed: %q", when, bad)
	}
	if n := tg.LiveLeases(t); n != 0 {
		t.Fatalf("%s: %d live leases", when, n)
	}
}

// TestTwoRunsOfOneConfigAtOnce starts two "idemport run" of the same
// idemport.yaml at once over the same files, night after night, on each
// database: with --wait both exit 0; without it each exits 0, or 4 when
// it found a file held by the other (a busy line for that file); either
// way each file is imported by exactly one of them (the other joins it,
// finds it done, or is busy), the tables hold every row once, value by
// value, every operation is completed, and a third run afterwards finds
// every file a duplicate and changes nothing.
func TestTwoRunsOfOneConfigAtOnce(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		if err := os.WriteFile(filepath.Join(dir, "idemport.yaml"), []byte(meetingFeeds(tg)), 0o644); err != nil {
			t.Fatal(err)
		}
		env := []string{"FEEDS_DSN=" + tg.Args[1]}
		var orders, events, products []string
		for night, wait := range []bool{true, false} {
			orders, events, products = meetingNight(t, dir, night+1, orders, events)
			files, _ := filepath.Glob(filepath.Join(dir, "drop", "*.csv"))
			args := []string{"run", "--output", "json"}
			if wait {
				args = append(args, "--wait", "2m")
			}
			runs := make([]testkit.Run, 2)
			var wg sync.WaitGroup
			begin := make(chan struct{})
			for i := range runs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-begin
					runs[i] = testkit.Exec(t, dir, env, args...)
				}()
			}
			close(begin)
			wg.Wait()
			when := fmt.Sprintf("night %d (wait %v)", night+1, wait)
			byFile := map[string][]string{}
			for i, r := range runs {
				var lines []feedLine
				if err := decodeLines(r.Stdout, &lines); err != nil {
					t.Fatalf("%s: run %d: %v\n%s", when, i, err, r.Stdout)
				}
				busy := false
				for _, l := range lines {
					byFile[filepath.Base(l.File)] = append(byFile[filepath.Base(l.File)], l.Outcome)
					busy = busy || l.Outcome == "busy"
					if want := map[string]int{"busy": exitBusy}[l.Outcome]; l.ExitCode != want {
						t.Fatalf("%s: run %d: %s %s exit_code %d, want %d (%s)", when, i, l.File, l.Outcome, l.ExitCode, want, l.Error)
					}
				}
				want := 0
				if busy {
					want = exitBusy
				}
				if r.Code != want || (wait && busy) {
					t.Fatalf("%s: run %d: exit %d, want %d (wait %v)\nstdout:\n%s\nstderr:\n%s", when, i, r.Code, want, wait, r.Stdout, r.Stderr)
				}
			}
			if len(byFile) != len(files) {
				t.Fatalf("%s: the runs decided %d files, want %d: %v", when, len(byFile), len(files), byFile)
			}
			for file, outs := range byFile {
				if strings.HasPrefix(file, "orders-1-") || strings.HasPrefix(file, "events-1-") {
					if night == 1 && slices.Equal(outs, []string{"duplicate", "duplicate"}) {
						continue // night 1's files, decided again on night 2
					}
				}
				slices.Sort(outs)
				ok := len(outs) == 2 && slices.Contains(outs, "imported") &&
					slices.ContainsFunc(outs, func(o string) bool { return o == "resumed" || o == "duplicate" || (o == "busy" && !wait) }) &&
					!(outs[0] == "imported" && outs[1] == "imported")
				if !ok {
					t.Fatalf("%s: %s decided %v by the two runs: want one imported, the other resumed, duplicate or busy", when, file, outs)
				}
			}
			checkMeetingTables(t, tg, when, orders, events, products)

			// A rerun afterwards changes nothing.
			before := tg.Snapshot(t, "quickcheck", "attempts", "locks")
			lines := runFeedsJSON(t, dir, env, 0)
			for _, l := range lines {
				if l.Outcome != "duplicate" {
					t.Fatalf("%s: the rerun found %s %s", when, l.File, l.Outcome)
				}
			}
			if len(lines) != len(files) {
				t.Fatalf("%s: the rerun decided %d files, want %d", when, len(lines), len(files))
			}
			if d := before.Diff(tg.Snapshot(t, "quickcheck", "attempts", "locks")); d != "" {
				t.Fatalf("%s: the rerun changed %s", when, d)
			}
			checkMeetingTables(t, tg, when+", rerun", orders, events, products)
		}
	})
}

// evolvedVersions writes items.csv's first version into dir (id,a: 60
// rows, a int64 with its edges) and returns it and the corrected one as
// CSV: without a key the corrected file holds other values; by key it
// lacks keys 1-10 and adds 61-70. Its a holds values an int64 column
// cannot (leading zeros, a word, a fraction), and it has a new column b
// (empty, NULL and words).
func evolvedVersions(t *testing.T, dir string, key bool) (v1, v2 string) {
	t.Helper()
	var b1, b2 strings.Builder
	b1.WriteString("id,a\n")
	b2.WriteString("id,a,b\n")
	edges := []string{"-9223372036854775808", "9223372036854775807", "9007199254740993"}
	for id := 1; id <= 60; id++ {
		a := fmt.Sprint(id * 3)
		if id <= len(edges) {
			a = edges[id-1]
		}
		fmt.Fprintf(&b1, "%d,%s\n", id, a)
	}
	first, last := 1, 60
	if key {
		first, last = 11, 70
	}
	for id := first; id <= last; id++ {
		a := fmt.Sprint(id * 5)
		switch {
		case id%5 == 0:
			a = fmt.Sprintf("%04d", id)
		case id%7 == 0:
			a = "abc"
		case id%11 == 0:
			a = fmt.Sprintf("%d.50", id)
		case id == first:
			a = edges[0]
		}
		bv := []string{"", `""`, fmt.Sprintf("b%d", id)}[id%3]
		fmt.Fprintf(&b2, "%d,%s,%s\n", id, a, bv)
	}
	writeFile(t, dir, "items.csv", b1.String())
	return b1.String(), b2.String()
}

// csvLines renders a version written by evolvedVersions as the table's
// rows by id (id|a|b|row), as itemLines reads them: b NULL where the file
// has no such column or an unquoted empty field, "" where it has "".
func csvLines(content string) []string {
	var out []string
	for i, l := range strings.Split(strings.TrimSpace(content), "\n")[1:] {
		f := strings.Split(l, ",")
		b := "NULL"
		if len(f) > 2 && f[2] != "" {
			b = strings.Trim(f[2], `"`)
		}
		out = append(out, fmt.Sprintf("%s|%s|%s|%d", f[0], f[1], b, i+1))
	}
	return out
}

// itemLines returns items' rows, id|a|b|row by id, as text; b is NULL
// while the table has no such column.
func itemLines(t *testing.T, tg *testkit.Target) []string {
	t.Helper()
	b := "NULL"
	if strings.Contains(tableColumns(t, tg, "items", false), "b:") {
		b = "b"
	}
	return lineRows(t, tg, `SELECT `+tg.Text("id")+`, `+tg.Text("a")+`, `+b+`, `+tg.Text("_idemport_row")+` FROM items ORDER BY items.id`)
}

// TestReplaceWithEvolve replaces a file with a corrected version that needs
// a new column and a widened one (--replace --evolve widen), without a key
// and by key, with --atomic or not, on each database: killed at every
// failpoint the replacement passes (those of the replacement, of the DDL
// where it commits alone, and of each partition), each rerun at the next
// point, with and without --replace alternately, and run to completion.
// The table then equals, value by value and column type by column type,
// what a single clean import of the corrected file gives into a fresh
// target, which itself holds the file exactly; the ledger records the
// replacement once. Undoing the replacement (without a key) removes its
// rows, and the replaced version is not brought back (the reference:
// "import it again to restore it"): the table stays, empty, with its
// evolved columns, on every database (on MariaDB too, where DDL commits
// alone and an undo drops the tables its operation created: the
// replacement did not create it). Importing the first version again then
// restores its values exactly. By key, undo refuses without --forget (exit 2) and changes
// nothing.
func TestReplaceWithEvolve(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, m := range replaceModes {
			t.Run(m.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				args := func(extra ...string) []string {
					a := []string{"--table", "items", "--file-id", "{path}", "--partition-rows", "10", "--workers", "1", "--evolve", "widen"}
					if m.key {
						a = append(a, "--key", "id")
					}
					if m.atomic {
						a = append(a, "--atomic")
					}
					return append(append(a, extra...), "items.csv")
				}
				v1, v2 := evolvedVersions(t, dir, m.key)
				first := importTo(t, tg, dir, nil, 0, args()...)
				if got, want := itemLines(t, tg), csvLines(v1); !slices.Equal(got, want) {
					t.Fatalf("the first version:\n got  %q\n want %q", got, want)
				}
				writeFile(t, dir, "items.csv", v2)

				chain := replaceChain(m)
				if tg.IsMariaDB() && !m.atomic {
					// Where DDL commits alone, the evolution's record and
					// its ALTER TABLE come before the first partition.
					at := slices.Index(chain, "after-plan:1") + 1
					chain = slices.Insert(chain, at, "after-ddl-record:1", "after-ddl:1")
				}
				next := args("--replace")
				for i, kill := range chain {
					killed := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=" + kill}, append([]string{"import"}, next...)...)
					if killed.Signal != syscall.SIGKILL {
						t.Fatalf("not killed at %s (chain %v): exit %d\n%s%s", kill, chain, killed.Code, killed.Stdout, killed.Stderr)
					}
					if m.atomic && kill != "after-finalize:1" {
						if got, want := itemLines(t, tg), csvLines(v1); !slices.Equal(got, want) {
							t.Fatalf("--atomic, killed at %s: the table shows something of the replacement:\n got  %q\n want %q", kill, got, want)
						}
					}
					if i%2 == 0 {
						next = args()
					} else {
						next = args("--replace")
					}
				}
				res := importTo(t, tg, dir, nil, 0, next...)
				if res.Outcome == "conflict" || res.Outcome == "failed" {
					t.Fatalf("rerun: %s %s", res.Outcome, res.Error)
				}
				checkReplaced(t, tg, first.ContentDigest, fileDigest(t, filepath.Join(dir, "items.csv")))

				// One clean import of the corrected file into a fresh target.
				cleanDir := t.TempDir()
				clean := testkit.NewTarget(t, name, cleanDir)
				writeFile(t, cleanDir, "items.csv", v2)
				if r := importTo(t, clean, cleanDir, nil, 0, args()...); r.Outcome != "imported" {
					t.Fatalf("clean import: %s %s", r.Outcome, r.Error)
				}
				want := itemLines(t, clean)
				if exp := csvLines(v2); !slices.Equal(want, exp) {
					t.Fatalf("the clean import of the corrected file:\n got  %q\n want %q", want, exp)
				}
				if got := itemLines(t, tg); !slices.Equal(got, want) {
					t.Fatalf("after the replacement the table holds\n %q\nwant, as a clean import of the corrected file,\n %q", got, want)
				}
				if got, want := tableColumns(t, tg, "items", false), tableColumns(t, clean, "items", false); got != want {
					t.Fatalf("after the replacement the table's columns are %s, a clean import's %s", got, want)
				}
				if again := importTo(t, tg, dir, nil, 0, args("--replace")...); again.Outcome != "duplicate" {
					t.Fatalf("a rerun after the replacement: %s %s", again.Outcome, again.Error)
				}

				cols := tableColumns(t, tg, "items", false)
				if m.key {
					before := itemLines(t, tg)
					if run := tg.Exec(t, dir, nil, "undo", "--table", "items", "items.csv"); run.Code != exitUsage {
						t.Fatalf("undo by key without --forget: exit %d, want %d\n%s%s", run.Code, exitUsage, run.Stdout, run.Stderr)
					}
					if got := itemLines(t, tg); !slices.Equal(got, before) {
						t.Fatalf("a refused undo changed the table:\n got  %q\n want %q", got, before)
					}
					return
				}
				run := tg.Exec(t, dir, nil, "undo", "--table", "items", "items.csv")
				if run.Code != 0 {
					t.Fatalf("undo: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
				}
				if !tg.TableExists(t, "items") || strings.Contains(run.Stdout, "dropped: items") {
					t.Fatalf("the undo of the replacement dropped items, which the replacement did not create (exists: %v)\n%s", tg.TableExists(t, "items"), run.Stdout)
				}
				if got := itemLines(t, tg); len(got) != 0 {
					t.Fatalf("after the undo items holds %q, want no rows", got)
				}
				if got := tableColumns(t, tg, "items", false); got != cols {
					t.Fatalf("the undo changed the columns: %s, were %s", got, cols)
				}
				writeFile(t, dir, "items.csv", v1)
				if r := importTo(t, tg, dir, nil, 0, args()...); r.Outcome != "imported" {
					t.Fatalf("the first version again after the undo: %s %s", r.Outcome, r.Error)
				}
				if got, want := itemLines(t, tg), csvLines(v1); !slices.Equal(got, want) {
					t.Fatalf("the first version again after the undo:\n got  %q\n want %q", got, want)
				}
			})
		}
	})
}

// boundedRun runs the binary against tg and fails t when it has not ended
// within a minute (it is then killed): a read-only command must not hang
// behind an import.
func boundedRun(t *testing.T, tg *testkit.Target, dir string, args ...string) testkit.Run {
	t.Helper()
	s := start(t, tg, dir, nil, args...)
	done := make(chan struct{})
	timer := time.AfterFunc(time.Minute, func() { s.cmd.Process.Kill() })
	defer timer.Stop()
	go func() { s.cmd.Wait(); close(done) }()
	<-done
	if !timer.Stop() {
		t.Fatalf("%v did not end within a minute\n%s%s", args, s.stdout.String(), s.stderr.String())
	}
	return testkit.Run{Code: s.cmd.ProcessState.ExitCode(), Stdout: s.stdout.String(), Stderr: s.stderr.String()}
}

// TestStatusWhileReplacing holds a replacement (--replace, without a key
// and by key) at each of its steps on each database: stopped (SIGSTOP)
// inside the plan's transaction that removes the earlier version's rows
// or forgets their ordinals (replace-prepared), after its first partition
// committed, before it completes, by key inside the completing
// transaction that deletes the keys the new version lacks
// (replace-swept); or killed inside a partition. Meanwhile status (text
// and JSON) and history end within a minute, exit 0, and say what the
// ledger holds: the operation processing with the new content, replacing
// the earlier one (history: the earlier one replaced by it), its
// partitions done and total and rows read and inserted as recorded, and
// the leases the ledger holds: the held process's, stopped or gone (and
// planning while it plans), until every partition is done, then none
// (text: processing, no lease), text naming the content it replaces
// ("processing, replacing content sha256:…"). A rerun meanwhile resumes
// and finishes it or is busy (exit 4). The held import, continued (or
// rerun after the kill), finishes the replacement exactly, and status
// then says completed (JSON: replacing the earlier content).
func TestStatusWhileReplacing(t *testing.T) {
	t.Parallel()
	host, _ := os.Hostname()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, m := range []replaceMode{replaceModes[0], replaceModes[2]} {
			holds := []string{"replace-prepared:1:stop", "after-partition-commit:1:stop", "inside-partition:2", "before-finalize:1:stop"}
			if m.key {
				holds = append(holds, "replace-swept:1:stop")
			}
			for _, hold := range holds {
				t.Run(m.name+"/"+strings.Split(hold, ":")[0], func(t *testing.T) {
					t.Parallel()
					dir := t.TempDir()
					tg := testkit.NewTarget(t, name, dir)
					_, v2 := m.versions(t, dir)
					first := importTo(t, tg, dir, nil, 0, m.args()...)
					testkit.WriteOrders(t, filepath.Join(dir, "orders.csv"), v2)
					v2digest := fileDigest(t, filepath.Join(dir, "orders.csv"))

					held := start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=" + hold}, append([]string{"import", "--workers", "1"}, m.args("--replace")...)...)
					pid := held.cmd.Process.Pid
					killed := !strings.HasSuffix(hold, ":stop")
					leaseState := "stopped"
					if killed {
						if r := testkit.Wait(t, held.cmd); r.Signal != syscall.SIGKILL {
							t.Fatalf("not killed at %s: exit %d\n%s%s", hold, r.Code, r.Stdout, r.Stderr)
						}
						leaseState = "gone"
					} else {
						stopped(t, held)
					}

					// What the ledger holds of the operation, and who holds a
					// lease on it or on an unfinished partition: the held
					// process, until every partition is done.
					op := lineRows(t, tg, `SELECT state, content_digest, coalesce(replaces, 'NULL'), `+tg.Text("rows_read")+`, `+tg.Text("rows_inserted")+` FROM `+tg.Ledger("operations"))
					parts := lineRows(t, tg, `SELECT `+tg.Text("count(*)")+`, `+tg.Text("coalesce("+tg.Sum("done")+", 0)")+` FROM `+tg.Ledger("partitions"))
					if want := "processing|" + v2digest + "|" + first.ContentDigest; len(op) != 1 || !strings.HasPrefix(op[0], want+"|") {
						t.Fatalf("the ledger holds %q, want one operation %s", op, want)
					}
					holders := lineRows(t, tg, `SELECT lease_attempt FROM `+tg.Ledger("operations")+` WHERE lease_attempt IS NOT NULL
						UNION SELECT lease_attempt FROM `+tg.Ledger("partitions")+` WHERE done = 0 AND lease_attempt IS NOT NULL`)
					allDone := strings.HasPrefix(hold, "before-finalize") || strings.HasPrefix(hold, "replace-swept")
					if want := map[bool]int{false: 1, true: 0}[allDone]; len(holders) != want || (want == 1 && holders[0] != attemptOf(t, tg, pid)) {
						t.Fatalf("held at %s, the ledger's leases are held by %q, want %d by the held process", hold, holders, want)
					}

					st := boundedRun(t, tg, dir, "status", "-o", "json")
					var ops []struct {
						Table, State string
						FileID       string `json:"file_id"`
						Content      string `json:"content_digest"`
						Replaces     string `json:"replaces"`
						Rows         struct{ Read, Inserted int64 }
						Partitions   struct{ Total, Done int64 }
						Leases       []struct {
							Attempt  string `json:"attempt_id"`
							Host     string
							PID      int
							Planning bool
							State    string
						}
					}
					if err := decodeLines(st.Stdout, &ops); err != nil || st.Code != 0 || len(ops) != 1 {
						t.Fatalf("status -o json: exit %d %v\n%s%s", st.Code, err, st.Stdout, st.Stderr)
					}
					o := ops[0]
					said := fmt.Sprintf("%s|%s|%s|%d|%d", o.State, o.Content, o.Replaces, o.Rows.Read, o.Rows.Inserted)
					if said != op[0] || fmt.Sprintf("%d|%d", o.Partitions.Total, o.Partitions.Done) != parts[0] || o.Table != "orders" || o.FileID != "orders.csv" {
						t.Fatalf("status says %s, partitions %d/%d; the ledger holds %s, partitions %s\n%s", said, o.Partitions.Done, o.Partitions.Total, op[0], parts[0], st.Stdout)
					}
					planning := strings.HasPrefix(hold, "replace-prepared")
					if len(o.Leases) != len(holders) || len(holders) == 1 && (o.Leases[0].Attempt != holders[0] || o.Leases[0].PID != pid || o.Leases[0].Host != host ||
						o.Leases[0].State != leaseState || o.Leases[0].Planning != planning) {
						t.Fatalf("status's leases %+v; the ledger's holders %q, want them %s by %s:%d, planning %v", o.Leases, holders, leaseState, host, pid, planning)
					}
					text := boundedRun(t, tg, dir, "status")
					line := fmt.Sprintf(`^orders\s+orders\.csv\s+orders\.csv\s+%%s, replacing content %s\s+%d\s+%d/%d\s+1\s+%%s\s`,
						regexp.QuoteMeta(ledger.ShortDigest(first.ContentDigest)), o.Rows.Read, o.Partitions.Done, o.Partitions.Total)
					switch {
					case allDone:
						line = fmt.Sprintf(line, "processing", "-")
					case killed:
						line = fmt.Sprintf(line, `gone \(a rerun takes over\)`, regexp.QuoteMeta(fmt.Sprintf("%s:%d", host, pid))+` \(gone\)`)
					default:
						line = fmt.Sprintf(line, "stopped", regexp.QuoteMeta(fmt.Sprintf("%s:%d", host, pid))+` \((planning, )?stopped\)`)
					}
					if text.Code != 0 || !regexpLine(text.Stdout, line) {
						t.Fatalf("status: exit %d, want a line %s\n%s%s", text.Code, line, text.Stdout, text.Stderr)
					}
					h := boundedRun(t, tg, dir, "history", "orders.csv")
					if h.Code != 0 || !strings.Contains(h.Stdout, "orders ← orders.csv: processing, replacing content "+ledger.ShortDigest(first.ContentDigest)) ||
						!strings.Contains(h.Stdout, "orders ← orders.csv: replaced by content "+ledger.ShortDigest(v2digest)) {
						t.Fatalf("history: exit %d\n%s%s", h.Code, h.Stdout, h.Stderr)
					}

					if killed {
						importTo(t, tg, dir, nil, 0, m.args()...)
					} else {
						// A rerun meanwhile finishes what no lease holds, or
						// finds the held process in its way, inside its
						// transaction (busy). Between partitions it would
						// wait out the held lease (60s) and take over.
						if !strings.HasPrefix(hold, "after-partition-commit") {
							r := tg.Exec(t, dir, nil, append([]string{"import", "--output", "json", "--busy-timeout", "2s"}, m.args()...)...)
							res := parseResults(t, r.Stdout)
							if len(res) != 1 || !(r.Code == 0 && res[0].Outcome == "resumed" || r.Code == exitBusy && res[0].Outcome == "busy") {
								t.Fatalf("a rerun while held at %s: exit %d\n%s%s", hold, r.Code, r.Stdout, r.Stderr)
							}
						}
						if err := testkit.Continue(held.cmd.Process); err != nil {
							t.Fatal(err)
						}
						if r := testkit.Wait(t, held.cmd); r.Code != 0 {
							t.Fatalf("the held replacement, continued: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
						}
					}
					m.check(t, tg, v2)
					checkReplaced(t, tg, first.ContentDigest, v2digest)
					st = boundedRun(t, tg, dir, "status", "-o", "json")
					ops = nil
					if err := decodeLines(st.Stdout, &ops); err != nil || len(ops) != 1 || ops[0].State != "completed" || ops[0].Replaces != first.ContentDigest || len(ops[0].Leases) != 0 {
						t.Fatalf("status after the replacement: %v %+v", err, ops)
					}
					// Done, the replacement is completed (history says what
					// it replaced).
					text = boundedRun(t, tg, dir, "status")
					if done := `^orders\s+orders\.csv\s+orders\.csv\s+completed\s+\d+\s+\d+/\d+\s`; text.Code != 0 || !regexpLine(text.Stdout, done) {
						t.Fatalf("status after the replacement: exit %d, want a line %s\n%s%s", text.Code, done, text.Stdout, text.Stderr)
					}
				})
			}
		}
	})
}
