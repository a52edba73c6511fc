package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// feedLine is one JSON line of run: a file's result and its feed.
type feedLine struct {
	Feed     string `json:"feed"`
	File     string `json:"file"`
	Table    string `json:"table"`
	Outcome  string `json:"outcome"`
	ExitCode int    `json:"exit_code"`
	Error    string `json:"error"`
}

// feedsFile is an idemport.yaml of three feeds: orders by key, products
// as a keyed snapshot, events by ordinal. The target comes from the
// environment (${FEEDS_DSN}), as a secret would.
func feedsFile(tg *testkit.Target) string {
	return feedsDefaults(tg, "") + `feeds:
  orders:
    source: drop/orders-*.csv
    table: orders
    key: id
    file-id: orders/{name}
  products:
    source: [drop/products.csv]
    table: products
    key: [sku]
    snapshot: true
    max-delete: 100%
    partition-rows: 1
  events:
    source: drop/events-*.csv
    table: events
    file-id: events/{name}
    partition-rows: 2
`
}

// feedsDefaults is the defaults section of the tests' idemport.yaml files:
// the target from the environment (${FEEDS_DSN}), as a secret would be,
// trigger cron, tg's ledger schema on PostgreSQL, and the lines more.
func feedsDefaults(tg *testkit.Target, more string) string {
	y := "defaults:\n  into: ${FEEDS_DSN}\n  trigger: cron\n" + more
	if tg.IsPostgres() {
		y += "  state-schema: " + tg.Schema + "\n"
	}
	return y
}

// runFeedsJSON runs "idemport run --output json" in dir and returns its
// lines, checking its exit code.
func runFeedsJSON(t *testing.T, dir string, env []string, wantCode int, args ...string) []feedLine {
	t.Helper()
	r := testkit.Exec(t, dir, env, append([]string{"run", "--output", "json"}, args...)...)
	if r.Code != wantCode {
		t.Fatalf("run: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, wantCode, r.Stdout, r.Stderr)
	}
	var lines []feedLine
	for _, l := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		var fl feedLine
		if err := json.Unmarshal([]byte(l), &fl); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		lines = append(lines, fl)
	}
	return lines
}

// outcomes is "feed file outcome" per line.
func outcomes(lines []feedLine) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l.Feed+" "+filepath.Base(l.File)+" "+l.Outcome)
	}
	return out
}

func writeDrop(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "drop"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "drop", name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// feedTableRows is the table's rows, the listed columns in order, as text.
func feedTableRows(t *testing.T, tg *testkit.Target, table, cols, order string) []string {
	t.Helper()
	var out []string
	for _, row := range testkit.Query(t, tg.DB, fmt.Sprintf("SELECT %s FROM %s ORDER BY %s", cols, tg.QuoteTable(t, table), order)) {
		var cells []string
		for _, v := range row {
			cells = append(cells, fmt.Sprint(v))
		}
		out = append(out, strings.Join(cells, ","))
	}
	return out
}

// checkTables compares the three feeds' tables, whole, with want.
func checkTables(t *testing.T, tg *testkit.Target, orders, products, events []string) {
	t.Helper()
	for _, c := range []struct {
		table, cols, order string
		want               []string
	}{
		{"orders", "id, qty", "id", orders},
		{"products", "sku, price", "sku", products},
		{"events", "ev, n", "n", events},
	} {
		if got := feedTableRows(t, tg, c.table, c.cols, c.order); !slices.Equal(got, c.want) {
			t.Fatalf("%s:\n got  %q\n want %q", c.table, got, c.want)
		}
	}
	if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("operations")+` WHERE state NOT IN ('completed', 'refused', 'superseded')`); n != 0 {
		t.Fatalf("%d operations neither completed, refused nor superseded", n)
	}
}

// TestRunFeeds: night after night, "idemport run" imports a file of three
// feeds (by key, as a snapshot, by ordinal) exactly as import would: the
// first night imports, the second finds duplicates, a feed with a bad row
// is refused (exit 5) while the others import, and a run killed in the
// middle of the second feed is finished exactly by a rerun.
func TestRunFeeds(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		if err := os.WriteFile(filepath.Join(dir, "idemport.yaml"), []byte(feedsFile(tg)), 0o644); err != nil {
			t.Fatal(err)
		}
		env := []string{"FEEDS_DSN=" + tg.Args[1]}

		// Night 1: everything is new.
		writeDrop(t, dir, "orders-1.csv", "id,qty\n1,10\n2,20\n3,30\n")
		writeDrop(t, dir, "products.csv", "sku,price\na,1\nb,2\nc,3\n")
		writeDrop(t, dir, "events-1.csv", "ev,n\nclick,1\nview,2\nclick,3\nbuy,4\n")
		got := outcomes(runFeedsJSON(t, dir, env, 0))
		want := []string{"orders orders-1.csv imported", "products products.csv imported", "events events-1.csv imported"}
		if !slices.Equal(got, want) {
			t.Fatalf("night 1: %q, want %q", got, want)
		}
		night1 := func() {
			checkTables(t, tg, []string{"1,10", "2,20", "3,30"}, []string{"a,1", "b,2", "c,3"}, []string{"click,1", "view,2", "click,3", "buy,4"})
		}
		night1()

		// Night 2: the same files again are duplicates; nothing changes.
		got = outcomes(runFeedsJSON(t, dir, env, 0))
		want = []string{"orders orders-1.csv duplicate", "products products.csv duplicate", "events events-1.csv duplicate"}
		if !slices.Equal(got, want) {
			t.Fatalf("night 2: %q, want %q", got, want)
		}
		night1()

		// Night 3: a bad row refuses the orders feed (exit 5); the other
		// feeds import.
		writeDrop(t, dir, "orders-2.csv", "id,qty\n3,33\n4,40,extra\n5,50\n")
		writeDrop(t, dir, "products.csv", "sku,price\na,1\nb,5\nd,4\n")
		writeDrop(t, dir, "events-2.csv", "ev,n\nview,5\n")
		got = outcomes(runFeedsJSON(t, dir, env, exitRefused))
		want = []string{"orders orders-1.csv duplicate", "orders orders-2.csv refused", "products products.csv imported",
			"events events-1.csv duplicate", "events events-2.csv imported"}
		if !slices.Equal(got, want) {
			t.Fatalf("night 3: %q, want %q", got, want)
		}
		night3 := []string{"a,1", "b,5", "d,4"}
		checkTables(t, tg, []string{"1,10", "2,20", "3,30"}, night3, []string{"click,1", "view,2", "click,3", "buy,4", "view,5"})

		// Night 4: the orders file corrected, a new snapshot and a new
		// events file; the run is killed in the middle of the second
		// feed (after its first of three partitions), and the rerun
		// finishes exactly.
		writeDrop(t, dir, "orders-2.csv", "id,qty\n3,33\n4,40\n5,50\n")
		writeDrop(t, dir, "products.csv", "sku,price\na,1\nb,6\ne,7\n")
		writeDrop(t, dir, "events-3.csv", "ev,n\nbuy,6\nclick,7\nview,8\n")
		// orders-2.csv commits partition 1; products.csv's first is the 2nd.
		r := testkit.Exec(t, dir, append(env, "IDEMPORT_FAILPOINT=after-partition-commit:2"), "run", "--output", "json")
		if r.Signal != syscall.SIGKILL {
			t.Fatalf("not killed: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		lines := runFeedsJSON(t, dir, env, 0)
		got = outcomes(lines)
		want = []string{"orders orders-1.csv duplicate", "orders orders-2.csv duplicate", "products products.csv resumed",
			"events events-1.csv duplicate", "events events-2.csv duplicate", "events events-3.csv imported"}
		if !slices.Equal(got, want) {
			t.Fatalf("night 4 rerun: %q, want %q", got, want)
		}
		checkTables(t, tg, []string{"1,10", "2,20", "3,33", "4,40", "5,50"}, []string{"a,1", "b,6", "e,7"},
			[]string{"click,1", "view,2", "click,3", "buy,4", "view,5", "buy,6", "click,7", "view,8"})
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("operations")+` WHERE state = 'completed' AND table_name = 'products'`); n != 3 {
			t.Fatalf("%d completed products operations, want 3", n)
		}
	})
}

// TestRunFeedsFailFastDryRunMetrics: --dry-run plans every feed, writes
// nothing and exits as the run would; --fail-fast stops after the first feed that did not
// import cleanly; the metrics file labels each sample of the run with its
// feed.
func TestRunFeedsFailFastDryRunMetrics(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.SQLite, dir)
	if err := os.WriteFile(filepath.Join(dir, "feeds.yaml"), []byte(feedsFile(tg)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"FEEDS_DSN=" + tg.Path, "IDEMPORT_CONFIG=feeds.yaml"}
	writeDrop(t, dir, "orders-1.csv", "id,qty\n1,10\n2,20,extra\n")
	writeDrop(t, dir, "products.csv", "sku,price\na,1\n")
	writeDrop(t, dir, "events-1.csv", "ev,n\nclick,1\n")

	// The orders file has a bad row: the dry run exits 5, as the run would.
	r := testkit.Exec(t, dir, env, "run", "--dry-run", "--output", "json")
	if r.Code != exitRefused {
		t.Fatalf("--dry-run: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	var files []string
	for _, l := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		var p struct {
			Feed  string `json:"feed"`
			File  string `json:"file"`
			Table string `json:"table"`
		}
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		files = append(files, p.Feed+": "+p.Table+" "+filepath.Base(p.File))
	}
	if want := []string{"orders: orders orders-1.csv", "products: products products.csv", "events: events events-1.csv"}; !slices.Equal(files, want) {
		t.Fatalf("--dry-run planned %q, want %q", files, want)
	}
	if tables := tg.Tables(t); len(tables) != 0 {
		t.Fatalf("--dry-run wrote tables %q", tables)
	}

	r = testkit.Exec(t, dir, env, "run", "--fail-fast")
	if r.Code != exitRefused || !strings.Contains(r.Stderr, "idemport: --fail-fast: not run: products, events\n") ||
		!strings.HasPrefix(r.Stdout, "[orders] drop/orders-1.csv: ") {
		t.Fatalf("--fail-fast: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if tg.TableExists(t, "products") || tg.TableExists(t, "events") {
		t.Fatalf("--fail-fast ran the feeds after the refused one: %q", tg.Tables(t))
	}

	r = testkit.Exec(t, dir, env, "run", "--metrics-file", "nightly.prom")
	if r.Code != exitRefused {
		t.Fatalf("exit %d, want 5\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	prom, err := os.ReadFile(filepath.Join(dir, "nightly.prom"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(string(prom), "\n") {
		if strings.HasPrefix(l, "idemport_last_run_files{") || strings.HasPrefix(l, "idemport_last_run_exit_code") {
			got = append(got, l)
		}
	}
	want := []string{
		`idemport_last_run_files{job="nightly",feed="events",table="events",outcome="imported"} 1`,
		`idemport_last_run_files{job="nightly",feed="orders",table="orders",outcome="refused"} 1`,
		`idemport_last_run_files{job="nightly",feed="products",table="products",outcome="imported"} 1`,
		`idemport_last_run_exit_code{job="nightly"} 5`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("metrics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestFeedsOperatorCommands: status, verify, undo and plan take --feed
// NAME and need nothing else: the feed's target, table and mapping come
// from the feeds file; "idemport feeds" lists each feed's last outcome.
func TestFeedsOperatorCommands(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		if err := os.WriteFile(filepath.Join(dir, "idemport.yaml"), []byte(feedsFile(tg)), 0o644); err != nil {
			t.Fatal(err)
		}
		env := []string{"FEEDS_DSN=" + tg.Args[1]}
		writeDrop(t, dir, "orders-1.csv", "id,qty\n1,10\n2,20\n")
		writeDrop(t, dir, "products.csv", "sku,price\na,1\n")
		writeDrop(t, dir, "events-1.csv", "ev,n\nclick,1\nview,2\n")
		runFeedsJSON(t, dir, env, 0)

		exec := func(want int, args ...string) testkit.Run {
			t.Helper()
			r := testkit.Exec(t, dir, env, args...)
			if r.Code != want {
				t.Fatalf("%q: exit %d, want %d\n%s%s", args, r.Code, want, r.Stdout, r.Stderr)
			}
			return r
		}
		var tables []string
		for _, l := range strings.Split(strings.TrimSpace(exec(0, "status", "--feed", "events", "--output", "json").Stdout), "\n") {
			var op struct {
				Table, File, State string
			}
			if err := json.Unmarshal([]byte(l), &op); err != nil {
				t.Fatal(err)
			}
			tables = append(tables, op.Table+" "+filepath.Base(op.File)+" "+op.State)
		}
		if want := []string{"events events-1.csv completed"}; !slices.Equal(tables, want) {
			t.Fatalf("status --feed events: %q, want %q", tables, want)
		}

		if r := exec(0, "verify", "--feed", "orders"); !strings.Contains(r.Stdout, "drop/orders-1.csv: ok: orders holds all 2 rows") {
			t.Fatalf("verify --feed orders:\n%s", r.Stdout)
		}
		if _, err := tg.DB.Exec(`DELETE FROM orders WHERE id = 2`); err != nil {
			t.Fatal(err)
		}
		if r := exec(1, "verify", "--feed", "orders"); !strings.Contains(r.Stdout, "drop/orders-1.csv: DIFFERS") {
			t.Fatalf("verify --feed orders after a row was deleted:\n%s", r.Stdout)
		}

		writeDrop(t, dir, "events-2.csv", "ev,n\nbuy,3\n")
		var plan struct {
			Table    string `json:"table"`
			Decision string `json:"decision"`
		}
		if err := json.Unmarshal([]byte(exec(0, "plan", "--feed", "events", "--output", "json", "drop/events-2.csv").Stdout), &plan); err != nil {
			t.Fatal(err)
		}
		if plan.Table != "events" || plan.Decision != "create" {
			t.Fatalf("plan --feed events: %+v", plan)
		}

		exec(0, "undo", "--feed", "events", "drop/events-1.csv")
		if rows := feedTableRows(t, tg, "events", "ev, n", "n"); len(rows) != 0 {
			t.Fatalf("events after undo --feed: %q", rows)
		}
		if n := testkit.Int(t, tg.DB, tg.Rebind(`SELECT count(*) FROM `+tg.Ledger("operations")+` WHERE table_name = 'events' AND state = 'undone'`)); n != 1 {
			t.Fatalf("%d undone events operations, want 1", n)
		}

		var feeds []string
		for _, l := range strings.Split(strings.TrimSpace(exec(0, "feeds", "--output", "json").Stdout), "\n") {
			var f struct {
				Feed  string `json:"feed"`
				Last  string `json:"last_state"`
				Rows  *int64 `json:"rows"`
				AgeS  *int64 `json:"age_seconds"`
				Table string `json:"table"`
			}
			if err := json.Unmarshal([]byte(l), &f); err != nil {
				t.Fatal(err)
			}
			if f.Rows == nil || f.AgeS == nil || *f.AgeS < 0 {
				t.Fatalf("feeds: %s", l)
			}
			feeds = append(feeds, fmt.Sprintf("%s %s %s %d", f.Feed, f.Table, f.Last, *f.Rows))
		}
		if want := []string{"orders orders completed 2", "products products completed 1", "events events undone 2"}; !slices.Equal(feeds, want) {
			t.Fatalf("feeds: %q, want %q", feeds, want)
		}
		exec(exitUsage, "status", "--feed", "nope")
	})
}
