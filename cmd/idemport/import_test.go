package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// result is one line of `import --output json`.
type result struct {
	File          string `json:"file"`
	FileID        string `json:"file_id"`
	ContentDigest string `json:"content_digest"`
	Table         string `json:"table"`
	AttemptID     string `json:"attempt_id"`
	Outcome       string `json:"outcome"`
	ExitCode      int    `json:"exit_code"`
	Rows          struct {
		Read, Inserted, Updated, Unchanged, Stale, Superseded, Rejected int64
	} `json:"rows"`
	Partitions struct {
		Total, Skipped, Committed int64
	} `json:"partitions"`
	Deleted        int64    `json:"deleted"`
	ColumnsAdded   []string `json:"columns_added"`
	ColumnsWidened []string `json:"columns_widened"`
	RecoveredLease bool     `json:"recovered_lease"`
	RecoveredFrom  []string `json:"recovered_from"`
	QuickCheck     bool     `json:"quick_check"`
	DurationMs     *int64   `json:"duration_ms"`
	Error          string   `json:"error"`
	EventID        string   `json:"event_id"`
	Notified       string   `json:"notified"`
	Notes          []string `json:"notes"`
	Next           string   `json:"next"`
	Replaces       string   `json:"replaces"`
	Removed        int64    `json:"removed"`
	Previous       *struct {
		State     string
		AttemptID string `json:"attempt_id"`
		At        string
		Rows      struct {
			Read, Inserted, Updated, Unchanged, Stale, Rejected int64
		} `json:"rows"`
	} `json:"previous"`
}

// decodeLines decodes JSON Lines into *list, one element a line.
func decodeLines[T any](out string, list *[]T) error {
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var v T
		if err := dec.Decode(&v); err != nil {
			return err
		}
		*list = append(*list, v)
	}
	return nil
}

func parseResults(t *testing.T, out string) []result {
	t.Helper()
	var rs []result
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var r result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("not a JSON result line: %q: %v", line, err)
		}
		if r.DurationMs == nil {
			t.Fatalf("result lacks duration_ms: %s", line)
		}
		rs = append(rs, r)
	}
	return rs
}

// importJSON runs `idemport import --output json` with args and returns its
// one result, checking the exit code.
func importJSON(t *testing.T, dir string, env []string, wantCode int, args ...string) result {
	t.Helper()
	run := testkit.Exec(t, dir, env, append([]string{"import", "--output", "json"}, args...)...)
	if run.Code != wantCode {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", run.Code, wantCode, run.Stdout, run.Stderr)
	}
	rs := parseResults(t, run.Stdout)
	if len(rs) != 1 {
		t.Fatalf("want 1 result, got %d: %s", len(rs), run.Stdout)
	}
	if rs[0].ExitCode != wantCode {
		t.Fatalf("result exit_code %d, want %d", rs[0].ExitCode, wantCode)
	}
	return rs[0]
}

// importTo is importJSON against the target tg.
func importTo(t *testing.T, tg *testkit.Target, dir string, env []string, wantCode int, args ...string) result {
	t.Helper()
	return importJSON(t, dir, env, wantCode, append(slices.Clone(tg.Args), args...)...)
}

// checkOrders asserts that table holds exactly the rows of an orders file,
// each once, keyed by its ordinal. The timestamp is compared as UTC text
// and the price as a float64 on both targets.
func checkOrders(t *testing.T, tg *testkit.Target, table string, want [][]string) {
	t.Helper()
	got := testkit.Query(t, tg.DB, fmt.Sprintf(`SELECT _idemport_row, order_id, customer_id, sku, quantity, unit_price, status, %s, note
		FROM %s ORDER BY _idemport_row`, tg.TimeText("created_at"), tg.QuoteTable(t, table)))
	if len(got) != len(want) {
		t.Fatalf("%s has %d rows, want %d", table, len(got), len(want))
	}
	if n := testkit.Int(t, tg.DB, fmt.Sprintf(`SELECT count(*) FROM (SELECT DISTINCT _idemport_file, _idemport_row FROM %s) k`, tg.QuoteTable(t, table))); n != int64(len(want)) {
		t.Fatalf("%d distinct keys for %d rows", n, len(want))
	}
	for i, g := range got {
		w := want[i]
		price, _ := strconv.ParseFloat(w[4], 64)
		created, _ := time.Parse(time.RFC3339, w[6])
		var note any = w[7]
		if w[7] == "" {
			note = nil // an unquoted empty field is NULL
		}
		exp := []any{int64(i + 1), mustInt(w[0]), mustInt(w[1]), w[2], mustInt(w[3]), price, w[5],
			created.UTC().Format("2006-01-02T15:04:05.000000Z"), note}
		if !reflect.DeepEqual(g, exp) {
			t.Fatalf("row %d:\n got  %#v\n want %#v", i+1, g, exp)
		}
	}
}

func mustInt(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

func TestImportThenRerunIsDuplicateWithZeroWrites(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 250, 1)

		first := importTo(t, tg, dir, nil, 0, "--partition-rows", "100", "orders.csv")
		if first.Outcome != "imported" || first.Table != "orders" || first.Rows.Inserted != 250 || first.Rows.Read != 250 ||
			first.Partitions.Total != 3 || first.Partitions.Committed != 3 || first.Partitions.Skipped != 0 {
			t.Fatalf("first import: %+v", first)
		}
		if !strings.HasPrefix(first.ContentDigest, "sha256:") || first.FileID != first.ContentDigest {
			t.Fatalf("identity: file_id %q, digest %q", first.FileID, first.ContentDigest)
		}
		checkOrders(t, tg, "orders", rows)

		// SQLite: the database file must stay byte-identical. PostgreSQL:
		// every row of the target and the ledger must keep its content and
		// its xmin (an UPDATE, even to the same values, writes a new version
		// with a new xmin).
		var before string
		if !tg.IsPostgres() {
			before = fileSum(t, tg.Path)
		}
		snap := tg.Snapshot(t)
		again := importTo(t, tg, dir, nil, 0, "--partition-rows", "100", "orders.csv")
		if again.Outcome != "duplicate" || again.AttemptID != first.AttemptID || again.Rows != (result{}).Rows ||
			again.Previous == nil || again.Previous.Rows.Inserted != 250 || again.Previous.AttemptID != first.AttemptID ||
			again.Partitions.Committed != 0 || again.Partitions.Skipped != 3 {
			t.Fatalf("rerun: %+v", again)
		}
		if !tg.IsPostgres() {
			if after := fileSum(t, tg.Path); after != before {
				t.Fatal("a duplicate run changed the database file")
			}
			if wal, err := os.Stat(tg.Path + "-wal"); err == nil && wal.Size() > 0 {
				t.Fatalf("a duplicate run left %d bytes of WAL", wal.Size())
			}
		}
		if d := snap.Diff(tg.Snapshot(t)); d != "" {
			t.Fatalf("a duplicate run wrote to %s", d)
		}

		text := tg.Exec(t, dir, nil, "import", "orders.csv")
		if text.Code != 0 || !strings.Contains(text.Stdout, "already imported into orders by attempt "+first.AttemptID) {
			t.Fatalf("text rerun: %d %q", text.Code, text.Stdout)
		}
	})
}

func TestFileIDReuseConflicts(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		testkit.Orders(t, filepath.Join(dir, "a.csv"), 20, 1)
		testkit.Orders(t, filepath.Join(dir, "b.csv"), 20, 2)
		importTo(t, tg, dir, nil, 0, "--file-id", "orders/2026-11-28", "--table", "orders", "a.csv")
		// b.csv is new to the quick check, which may remember its digest:
		// the one write a conflict may make.
		before := tg.Snapshot(t, "quickcheck")

		content := importTo(t, tg, dir, nil, 3, "--file-id", "orders/2026-11-28", "--table", "orders", "b.csv")
		if content.Outcome != "conflict" || !strings.Contains(content.Error, "content differs from the file imported as orders/2026-11-28") {
			t.Fatalf("changed content: %+v", content)
		}
		// (A --column naming the type the table already has would change
		// nothing, and so would not change the fingerprint: see TestLifecycle.)
		mapping := importTo(t, tg, dir, nil, 3, "--file-id", "orders/2026-11-28", "--table", "orders", "--column", "quantity:string", "a.csv")
		if mapping.Outcome != "conflict" || !strings.Contains(mapping.Error, "mapping differs") ||
			!strings.Contains(mapping.Error, `columns was {}, now {"quantity":"string"}`) {
			t.Fatalf("changed mapping: %+v", mapping)
		}
		if d := before.Diff(tg.Snapshot(t, "quickcheck")); d != "" {
			t.Fatalf("a conflict wrote to %s", d)
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("attempts")); n != 1 {
			t.Fatalf("conflicts recorded attempts: %d", n)
		}
	})
}

// TestKillInsidePartitionThenResume kills the process while partition 4 is
// written but not committed, and reruns.
func TestKillInsidePartitionThenResume(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, mode := range []string{"ordinal", "natural"} {
			t.Run(mode, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 1000, 3)
				args := []string{"--partition-rows", "100", "orders.csv"}
				if mode == "natural" {
					args = append([]string{"--key", "order_id"}, args...)
				}
				killed := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=inside-partition:4"}, append([]string{"import"}, args...)...)
				if killed.Signal != syscall.SIGKILL {
					t.Fatalf("want the run killed, got exit %d: %s %s", killed.Code, killed.Stdout, killed.Stderr)
				}
				if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM orders`); n != 300 {
					t.Fatalf("after the kill the target has %d rows, want the 3 committed partitions' 300", n)
				}
				res := importTo(t, tg, dir, nil, 0, args...)
				// The dead process held partition 4's lease; being on this host and
				// gone, its lease is taken over at once, without waiting for expiry.
				if res.Outcome != "resumed" || res.Partitions.Skipped != 3 || res.Partitions.Committed != 7 || res.Rows.Inserted != 700 || !res.RecoveredLease {
					t.Fatalf("rerun: %+v", res)
				}
				if mode == "ordinal" {
					checkOrders(t, tg, "orders", rows)
				}
				if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM orders`); n != 1000 {
					t.Fatalf("%d rows, want 1000", n)
				}
				if n := testkit.Int(t, tg.DB, `SELECT count(DISTINCT order_id) FROM orders`); n != 1000 {
					t.Fatalf("%d distinct order_id, want 1000", n)
				}
				if got := testkit.Query(t, tg.DB, `SELECT state, rows_read, rows_inserted FROM `+tg.Ledger("operations")); !reflect.DeepEqual(got, [][]any{{"completed", int64(1000), int64(1000)}}) {
					t.Fatalf("operation: %v", got)
				}
				if n := testkit.Int(t, tg.DB, `SELECT sum(rows_inserted) FROM `+tg.Ledger("attempts")); n != 1000 {
					t.Fatalf("attempts inserted %d in all, want 1000", n)
				}
				if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("partitions")+` WHERE done = 1`); n != 10 {
					t.Fatalf("%d partitions done", n)
				}
			})
		}
	})
}

// TestHeldLeaseIsBusyAndExpiredLeaseIsRecovered stalls a run that holds the
// only partition, checks a second run is busy, lets the lease expire, checks
// a third run takes it over and finishes, then wakes the first: it must fail
// without committing.
func TestHeldLeaseIsBusyAndExpiredLeaseIsRecovered(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 50, 4)
		// The lease is long, so the second run meets it live however
		// slowly the machine runs; then it runs out.
		holder := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=after-partition-claim:stop"}, "import", "--lease", "10m", "--output", "json", "orders.csv")).cmd

		busy := importTo(t, tg, dir, nil, 4, "--lease", "2s", "orders.csv")
		if busy.Outcome != "busy" || !strings.Contains(busy.Error, "busy") {
			t.Fatalf("second run: %+v", busy)
		}
		expireLeases(t, tg)
		took := importTo(t, tg, dir, nil, 0, "--lease", "2s", "orders.csv")
		if took.Outcome != "resumed" || !took.RecoveredLease || took.Rows.Inserted != 50 || took.Partitions.Committed != 1 {
			t.Fatalf("takeover: %+v", took)
		}
		testkit.Continue(holder.Process)
		h := testkit.Wait(t, holder)
		if h.Code != 1 || !strings.Contains(h.Stdout, "lease lost") {
			t.Fatalf("stalled holder: exit %d\n%s\n%s", h.Code, h.Stdout, h.Stderr)
		}
		checkOrders(t, tg, "orders", rows)
		if got := testkit.Query(t, tg.DB, `SELECT state, rows_inserted FROM `+tg.Ledger("operations")); !reflect.DeepEqual(got, [][]any{{"completed", int64(50)}}) {
			t.Fatalf("operation: %v", got)
		}
		if got := testkit.Query(t, tg.DB, `SELECT outcome, rows_inserted, recovered_leases FROM `+tg.Ledger("attempts")+` ORDER BY started_at`); !reflect.DeepEqual(got,
			[][]any{{"failed", int64(0), int64(0)}, {"resumed", int64(50), int64(1)}}) {
			t.Fatalf("attempts: %v", got)
		}
	})
}

func TestRefusedFileWritesNothing(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		data := "id,qty\n1,5\n2,five\n3,7\n4,\"x\"\n"
		if err := os.WriteFile(filepath.Join(dir, "items.csv"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		run := tg.Exec(t, dir, nil, "import", "--column", "qty:int64", "items.csv")
		if run.Code != 5 || !strings.Contains(run.Stdout, `refused: 2 of 4 rows are bad (at most 0 allowed); row 2 column "qty" value "five": not a valid int64; row 4 column "qty" value "x"`) {
			t.Fatalf("exit %d: %s", run.Code, run.Stdout)
		}
		if tg.TableExists(t, "items") {
			t.Fatal("a refused file created its target table")
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("rejects")); n != 0 {
			t.Fatal("a refused file stored rejects")
		}
		before := tg.Snapshot(t)
		again := importTo(t, tg, dir, nil, 5, "--column", "qty:int64", "items.csv")
		if again.Outcome != "refused" || !strings.Contains(again.Error, "refused earlier") {
			t.Fatalf("rerun: %+v", again)
		}
		if d := before.Diff(tg.Snapshot(t)); d != "" {
			t.Fatalf("the repeated refusal wrote to %s", d)
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("attempts")); n != 1 {
			t.Fatalf("the repeated refusal recorded an attempt: %d", n)
		}

		// A limit that admits the stored count of bad rows plans the file again.
		ok := importTo(t, tg, dir, nil, 0, "--column", "qty:int64", "--max-rejects", "2", "items.csv")
		if ok.Outcome != "imported" && ok.Outcome != "resumed" || ok.Rows.Inserted != 2 || ok.Rows.Rejected != 2 || ok.Rows.Read != 4 {
			t.Fatalf("within the limit: %+v", ok)
		}
		if got := testkit.Query(t, tg.DB, `SELECT id, qty FROM items ORDER BY id`); !reflect.DeepEqual(got, [][]any{{int64(1), int64(5)}, {int64(3), int64(7)}}) {
			t.Fatalf("target: %v", got)
		}
		if got := testkit.Query(t, tg.DB, `SELECT ordinal, column_name, raw_value, code FROM `+tg.Ledger("rejects")+` ORDER BY ordinal`); !reflect.DeepEqual(got,
			[][]any{{int64(2), "qty", "five", "type"}, {int64(4), "qty", "x", "type"}}) {
			t.Fatalf("rejects: %v", got)
		}
	})
}

func TestLedgerWipedRerunMakesNoDuplicates(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 300, 5)
		importTo(t, tg, dir, nil, 0, "--partition-rows", "100", "orders.csv")
		dropLedger(t, tg)
		res := importTo(t, tg, dir, nil, 0, "--partition-rows", "100", "orders.csv")
		if res.Outcome != "imported" || res.Rows.Inserted != 0 || res.Rows.Unchanged != 300 {
			t.Fatalf("rerun after the ledger was wiped: %+v", res)
		}
		checkOrders(t, tg, "orders", rows)
	})
}

func TestCSVSpectrumImportsExactly(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../testdata/csv-spectrum/csvs/*.csv")
	if err != nil || len(files) != 12 {
		t.Fatalf("csv-spectrum files: %d %v", len(files), err)
	}
	dir := t.TempDir()
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".csv")
		t.Run(name, func(t *testing.T) {
			abs, _ := filepath.Abs(path)
			importJSON(t, dir, nil, 0, "--table", name, abs)
			raw, err := os.ReadFile(filepath.Join("../../testdata/csv-spectrum/json", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var want []map[string]any
			if json.Unmarshal(raw, &want) != nil {
				var one map[string]any
				if err := json.Unmarshal(raw, &one); err != nil {
					t.Fatal(err)
				}
				want = []map[string]any{one}
			}
			if name == "location_coordinates" { // upstream erratum, see testdata/csv-spectrum/README.md
				want[0]["Contact Phone Number"] = "2095257564"
			}
			db := testkit.Open(t, filepath.Join(dir, "idemport.db"))
			cols := testkit.Query(t, db, `SELECT name FROM pragma_table_info(?) WHERE name NOT LIKE '\_idemport\_%' ESCAPE '\'`, name)
			var sel []string
			for _, c := range cols {
				sel = append(sel, fmt.Sprintf("CAST(%q AS TEXT)", c[0]))
			}
			got := testkit.Query(t, db, fmt.Sprintf(`SELECT %s FROM %q ORDER BY _idemport_row`, strings.Join(sel, ", "), name))
			var gotMaps []map[string]any
			for _, row := range got {
				m := map[string]any{}
				for i, c := range cols {
					m[c[0].(string)] = row[i]
				}
				gotMaps = append(gotMaps, m)
			}
			if !reflect.DeepEqual(gotMaps, want) {
				t.Fatalf("got  %q\nwant %q", gotMaps, want)
			}
		})
	}
}

// dropLedger drops every table idemport keeps for itself, as a user wiping
// the ledger would, keeping the target table orders.
func dropLedger(t *testing.T, tg *testkit.Target) {
	t.Helper()
	// operations, attempts, rejects, files, quickcheck, plans, partitions,
	// migrations.
	if n := tg.DropLedger(t, "orders"); n < 8 {
		t.Fatalf("only %d ledger tables dropped", n)
	}
	if !tg.TableExists(t, "orders") {
		t.Fatal("the target table went with the ledger")
	}
}

// TestQuickCheckSkipsHashingUnchangedFiles reruns a completed file: the
// digest comes from the quick check while path, size, times and inode are
// unchanged, and the file is hashed again when any of them changes — even a
// rewrite that restores the modification time.
func TestQuickCheckSkipsHashingUnchangedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "orders.csv")
	testkit.Orders(t, path, 100, 21)
	first := importJSON(t, dir, nil, 0, "orders.csv")
	if first.QuickCheck {
		t.Fatal("a new file came from the quick check")
	}
	again := importJSON(t, dir, nil, 0, "orders.csv")
	if !again.QuickCheck || again.Outcome != "duplicate" || again.ContentDigest != first.ContentDigest {
		t.Fatalf("unchanged rerun: %+v", again)
	}
	if forced := importJSON(t, dir, nil, 0, "--rehash", "orders.csv"); forced.QuickCheck || forced.Outcome != "duplicate" {
		t.Fatalf("--rehash: %+v", forced)
	}
	// Same size, same modification time, other bytes: the change time moves.
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	i := bytes.Index(b, []byte("SKU-"))
	b[i+4] = 'X'
	time.Sleep(10 * time.Millisecond)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	changed := importJSON(t, dir, nil, 0, "orders.csv")
	if changed.QuickCheck || changed.ContentDigest == first.ContentDigest || changed.Outcome != "imported" {
		t.Fatalf("rewritten file: %+v", changed)
	}
}

// TestMaxRejectsPercentage refuses a file with more bad rows than a
// percentage allows, and imports it when a rerun allows more.
func TestMaxRejectsPercentage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("id,qty\n")
	for i := 1; i <= 40; i++ {
		if i%20 == 0 {
			fmt.Fprintf(&b, "%d,bad%d\n", i, i)
		} else {
			fmt.Fprintf(&b, "%d,%d\n", i, i*2)
		}
	}
	os.WriteFile(filepath.Join(dir, "items.csv"), []byte(b.String()), 0o644)
	refused := importJSON(t, dir, nil, 5, "--column", "qty:int64", "--max-rejects", "2.5%", "items.csv")
	if refused.Outcome != "refused" || !strings.Contains(refused.Error, "2 of 40 rows are bad (at most 2.5% allowed)") {
		t.Fatalf("2 bad rows of 40 over 2.5%%: %+v", refused)
	}
	ok := importJSON(t, dir, nil, 0, "--column", "qty:int64", "--max-rejects", "5%", "items.csv")
	if ok.Rows.Inserted != 38 || ok.Rows.Rejected != 2 {
		t.Fatalf("2 bad rows of 40 within 5%%: %+v", ok)
	}
	if r := testkit.Exec(t, dir, nil, "import", "--max-rejects", "150%", "items.csv"); r.Code != 2 {
		t.Fatalf("--max-rejects 150%%: exit %d", r.Code)
	}
}

// TestWaitInsteadOfBusy starts a run while another holds the only
// partition: with --wait it waits instead of exiting 4, and finishes the
// import once the holder's lease expires. The holder's lease is long, so
// the run meets it live however slowly the machine runs; it runs out once
// the run says it waits.
func TestWaitInsteadOfBusy(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 40, 27)
		stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=after-partition-claim:stop"}, "import", "--lease", "10m", "orders.csv"))
		log, err := os.Create(filepath.Join(dir, "waiting.log"))
		if err != nil {
			t.Fatal(err)
		}
		defer log.Close()
		waiting := tg.Cmd(t, dir, nil, "import", "--output", "json", "--log-level", "debug", "--wait", "5m", "orders.csv")
		var out bytes.Buffer
		waiting.Stdout, waiting.Stderr = &out, log
		if err := waiting.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { waiting.Process.Kill(); waiting.Wait() })
		waitFor(t, time.Minute, "the second run to wait for the holder", func() bool {
			b, _ := os.ReadFile(log.Name())
			return strings.Contains(string(b), "busy; waiting")
		})
		expireLeases(t, tg)
		r := testkit.Wait(t, waiting)
		if res := parseResults(t, r.Stdout); r.Code != 0 || res[0].Outcome != "resumed" || !res[0].RecoveredLease {
			t.Fatalf("waiting run: exit %d\n%s", r.Code, r.Stdout)
		}
		checkOrders(t, tg, "orders", rows)
		if short := importTo(t, tg, dir, nil, 0, "--wait=1s", "orders.csv"); short.Outcome != "duplicate" {
			t.Fatalf("after completion: %+v", short)
		}
	})
}
