package main

// Corrected files: a file ID imported again with other content conflicts,
// and with --replace the new version replaces the earlier one, killed at
// any point or not.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/ledger"
)

// replaceMode is one way of importing the orders file a corrected version
// replaces: ordinal or by key, with --atomic or not.
type replaceMode struct {
	name   string
	key    bool
	atomic bool
}

var replaceModes = []replaceMode{{"ordinal", false, false}, {"ordinal-atomic", false, true}, {"key", true, false}, {"key-atomic", true, true}}

// args returns the import's flags in mode m, for the file orders.csv.
func (m replaceMode) args(extra ...string) []string {
	args := []string{"--file-id", "{path}", "--partition-rows", "100"}
	if m.key {
		args = append(args, "--key", "order_id")
	}
	if m.atomic {
		args = append(args, "--atomic")
	}
	return append(append(args, extra...), "orders.csv")
}

// versions writes the first version of orders.csv (400 rows) into dir and
// returns its rows and those of the corrected version: ordinal, 300 rows
// of other values; by key, keys 1-100 gone, 101-400 with other values
// and 401-450 new.
func (m replaceMode) versions(t *testing.T, dir string) (v1, v2 [][]string) {
	t.Helper()
	v1 = testkit.Orders(t, filepath.Join(dir, "orders.csv"), 400, 11)
	if m.key {
		v2 = testkit.Orders(t, filepath.Join(dir, "v2.csv"), 450, 12)[100:]
	} else {
		v2 = testkit.Orders(t, filepath.Join(dir, "v2.csv"), 300, 12)
	}
	return v1, v2
}

// check asserts that orders holds exactly rows, value by value: in
// ordinal mode each at its ordinal, by key each at its key.
func (m replaceMode) check(t *testing.T, tg *testkit.Target, rows [][]string) {
	t.Helper()
	if !m.key {
		checkOrders(t, tg, "orders", rows)
		return
	}
	got := testkit.Query(t, tg.DB, fmt.Sprintf(`SELECT order_id, customer_id, sku, quantity, unit_price, status, %s, note FROM orders ORDER BY order_id`,
		tg.TimeText("created_at")))
	if len(got) != len(rows) {
		t.Fatalf("orders has %d rows, want %d", len(got), len(rows))
	}
	for i, g := range got {
		w := rows[i]
		price, _ := strconv.ParseFloat(w[4], 64)
		created, _ := time.Parse(time.RFC3339, w[6])
		var note any = w[7]
		if w[7] == "" {
			note = nil
		}
		want := []any{mustInt(w[0]), mustInt(w[1]), w[2], mustInt(w[3]), price, w[5], created.UTC().Format("2006-01-02T15:04:05.000000Z"), note}
		if !reflect.DeepEqual(g, want) {
			t.Fatalf("row %d:\n got  %#v\n want %#v", i+1, g, want)
		}
	}
}

// checkReplaced asserts the ledger of a completed replacement: the
// operation completed, replacing content v1, and the earlier one kept
// among past operations as replaced by content v2.
func checkReplaced(t *testing.T, tg *testkit.Target, v1, v2 string) {
	t.Helper()
	op := testkit.Query(t, tg.DB, `SELECT state, content_digest, replaces FROM `+tg.Ledger("operations"))
	if want := [][]any{{"completed", v2, v1}}; !reflect.DeepEqual(op, want) {
		t.Fatalf("operation (state, content, replaces) %v, want %v", op, want)
	}
	past := testkit.Query(t, tg.DB, `SELECT state, content_digest, replaced_by FROM `+tg.Ledger("operations_past"))
	if want := [][]any{{"replaced", v1, v2}}; !reflect.DeepEqual(past, want) {
		t.Fatalf("past operations (state, content, replaced by) %v, want %v", past, want)
	}
}

// TestReplaceCorrectedFile imports a file, then a corrected version under
// the same file ID: without --replace a conflict whose next step names
// --replace, with it the new version replacing the old (ordinal and by key,
// with --atomic or not), history showing the old one replaced by the new,
// and a rerun a duplicate.
func TestReplaceCorrectedFile(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, m := range replaceModes {
			t.Run(m.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				v1rows, v2rows := m.versions(t, dir)
				first := importTo(t, tg, dir, nil, 0, m.args()...)
				if first.Outcome != "imported" {
					t.Fatalf("first version: %s %s", first.Outcome, first.Error)
				}
				m.check(t, tg, v1rows)
				testkit.WriteOrders(t, filepath.Join(dir, "orders.csv"), v2rows)

				conflict := importTo(t, tg, dir, nil, 3, m.args()...)
				if conflict.Outcome != "conflict" || !strings.Contains(conflict.Next, "rerun with --replace") {
					t.Fatalf("without --replace: %s, next %q", conflict.Outcome, conflict.Next)
				}
				text := tg.Exec(t, dir, nil, append([]string{"import"}, m.args()...)...)
				if text.Code != 3 || !strings.Contains(text.Stdout+text.Stderr, "next: if this is a corrected version of that file, rerun with --replace") {
					t.Fatalf("without --replace, in text: exit %d\n%s%s", text.Code, text.Stdout, text.Stderr)
				}
				m.check(t, tg, v1rows)

				res := importTo(t, tg, dir, nil, 0, m.args("--replace")...)
				if res.Outcome != "imported" || res.Replaces != first.ContentDigest || res.Rows.Read != int64(len(v2rows)) {
					t.Fatalf("--replace: %s (replaces %s, read %d) %s", res.Outcome, res.Replaces, res.Rows.Read, res.Error)
				}
				// Ordinal: every row of the first version removed; by key,
				// keys 1-100, which the corrected version lacks.
				if want := map[bool]int64{false: 400, true: 100}[m.key]; res.Removed != want {
					t.Fatalf("removed %d rows of the first version, want %d", res.Removed, want)
				}
				m.check(t, tg, v2rows)
				checkReplaced(t, tg, first.ContentDigest, res.ContentDigest)
				if !m.key {
					if n := testkit.Int(t, tg.DB, `SELECT rows_inserted FROM `+tg.Ledger("operations")); n != int64(len(v2rows)) {
						t.Fatalf("the replacing operation inserted %d rows, want the table's %d", n, len(v2rows))
					}
				}

				h := tg.Exec(t, dir, nil, "history", "--output", "json", "orders.csv")
				var entries []struct {
					State      string `json:"state"`
					Content    string `json:"content_digest"`
					Replaces   string `json:"replaces"`
					ReplacedBy string `json:"replaced_by"`
				}
				if err := decodeLines(h.Stdout, &entries); err != nil || h.Code != 0 {
					t.Fatalf("history: exit %d %v\n%s%s", h.Code, err, h.Stdout, h.Stderr)
				}
				if len(entries) != 2 || entries[0].State != "completed" || entries[0].Replaces != first.ContentDigest ||
					entries[1].State != string(ledger.Replaced) || entries[1].ReplacedBy != res.ContentDigest || entries[1].Content != first.ContentDigest {
					t.Fatalf("history: %+v", entries)
				}
				h = tg.Exec(t, dir, nil, "history", "orders.csv")
				if !strings.Contains(h.Stdout, "orders ← orders.csv: replaced by content "+ledger.ShortDigest(res.ContentDigest)) {
					t.Fatalf("history in text:\n%s", h.Stdout)
				}

				again := importTo(t, tg, dir, nil, 0, m.args("--replace")...)
				if again.Outcome != "duplicate" {
					t.Fatalf("rerun: %s %s", again.Outcome, again.Error)
				}
				m.check(t, tg, v2rows)
			})
		}
	})
}

// TestReplaceNeedsANamingFileID refuses --replace (exit 2) for a file
// known by its content, which has no other version.
func TestReplaceNeedsANamingFileID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.SQLite, dir)
	testkit.Orders(t, filepath.Join(dir, "orders.csv"), 10, 1)
	for _, args := range [][]string{{"--replace", "orders.csv"}, {"--replace", "--file-id", "x/{digest}", "orders.csv"}} {
		run := tg.Exec(t, dir, nil, append([]string{"import"}, args...)...)
		if run.Code != 2 || !strings.Contains(run.Stderr+run.Stdout, "--replace needs a --file-id that names the file") {
			t.Fatalf("%v: exit %d\n%s%s", args, run.Code, run.Stdout, run.Stderr)
		}
	}
}

// replaceKills are where TestReplaceKilledAtEachBoundary kills a
// replacement in each mode: every failpoint it passes, the replacement's
// own (replace-prepared: in the plan's transaction, or with --atomic the
// completing one; replace-swept: by key, in the completing one) among them.
func replaceKills(m replaceMode) []string {
	kills := []string{"after-claim:1", "after-plan:1", "inside-partition:2", "after-partition-commit:2", "before-finalize:1", "replace-prepared:1"}
	if m.key {
		kills = append(kills, "replace-swept:1")
	}
	return append(kills, "before-event:1", "inside-finalize:1", "after-finalize:1")
}

// replaceChain orders replaceKills(m) as a replacement passes them, for
// TestReplaceKilledAtEachBoundary's chain: without --atomic the plan's
// transaction prepares the replacement (replace-prepared), before the plan
// is stored; with --atomic the completing transaction does.
func replaceChain(m replaceMode) []string {
	kills := replaceKills(m)
	if m.atomic {
		return kills
	}
	kills = slices.DeleteFunc(kills, func(k string) bool { return k == "replace-prepared:1" })
	return slices.Insert(kills, slices.Index(kills, "after-claim:1")+1, "replace-prepared:1")
}

// TestReplaceKilledAtEachBoundary kills a replacement with SIGKILL at each
// failpoint it passes, in each mode, each rerun at the next one
// (replaceChain), and reruns it to completion: the table then holds
// exactly the corrected version, value by value, and the ledger records
// the replacement once. With --atomic, the table holds exactly the first
// version after every kill before the completing transaction commits.
// The run after a kill at replaceKills' i-th point is run with --replace
// when i is even and without it (the ledger knows what the operation
// replaces) when odd, as when each kill had a subtest of its own (76
// subtests of three processes; now 8 of 12 or 13): every point is still
// killed at in every mode on every target, and followed by the same kind
// of run, but the table is compared after the whole chain rather than
// after each kill's rerun.
func TestReplaceKilledAtEachBoundary(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, m := range replaceModes {
			t.Run(m.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				v1rows, v2rows := m.versions(t, dir)
				first := importTo(t, tg, dir, nil, 0, m.args()...)
				testkit.WriteOrders(t, filepath.Join(dir, "orders.csv"), v2rows)
				kills, chain := replaceKills(m), replaceChain(m)
				next := m.args("--replace") // the first run of the replacement says so
				for _, kill := range chain {
					killed := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=" + kill}, append([]string{"import"}, next...)...)
					if killed.Signal != syscall.SIGKILL {
						t.Fatalf("not killed at %s (chain %v): exit %d\n%s%s", kill, chain, killed.Code, killed.Stdout, killed.Stderr)
					}
					if m.atomic && kill != "after-finalize:1" {
						m.check(t, tg, v1rows) // nothing of the replacement is seen
					}
					if slices.Index(kills, kill)%2 == 0 {
						next = m.args("--replace")
					} else {
						next = m.args()
					}
				}
				res := importTo(t, tg, dir, nil, 0, next...)
				if res.Outcome == "conflict" || res.Outcome == "failed" {
					t.Fatalf("rerun: %s %s", res.Outcome, res.Error)
				}
				m.check(t, tg, v2rows)
				checkReplaced(t, tg, first.ContentDigest, fileDigest(t, filepath.Join(dir, "orders.csv")))
				if !m.key {
					if n := testkit.Int(t, tg.DB, `SELECT rows_inserted FROM `+tg.Ledger("operations")); n != int64(len(v2rows)) {
						t.Fatalf("the replacing operation inserted %d rows, want the table's %d", n, len(v2rows))
					}
				}
			})
		}
	})
}

// TestOrdinalImportNotesOtherContentAtSamePath imports a corrected file
// as another file (by its content, the default): the rows add up, and the
// import says so in a note, in text and JSON, naming the ways to say what
// the file is and the undo that removes the earlier rows; that undo leaves
// exactly the corrected file. The same content imported from the same path
// under another file ID says so too.
func TestOrdinalImportNotesOtherContentAtSamePath(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		testkit.Orders(t, filepath.Join(dir, "orders.csv"), 200, 1)
		first := importTo(t, tg, dir, nil, 0, "orders.csv")
		if len(first.Notes) != 0 {
			t.Fatalf("first import notes %q", first.Notes)
		}
		v2 := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 150, 2)
		undo := "idemport undo " + first.FileID + " --table orders"
		want := fmt.Sprintf("orders already holds 200 rows of orders.csv with other content (%s): this adds 150 more; use --replace with --file-id '{path}', --key, or --snapshot; to remove the earlier rows: %s",
			ledger.ShortDigest(first.ContentDigest), undo)
		res := importTo(t, tg, dir, nil, 0, "orders.csv")
		if res.Outcome != "imported" || !reflect.DeepEqual(res.Notes, []string{want}) {
			t.Fatalf("second import: %s, notes %q, want %q", res.Outcome, res.Notes, want)
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM orders`); n != 350 {
			t.Fatalf("orders holds %d rows, want 350", n)
		}
		// The note's undo, as it says it.
		if run := tg.Exec(t, dir, nil, strings.Fields(undo)[1:]...); run.Code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", undo, run.Code, run.Stdout, run.Stderr)
		}
		checkOrders(t, tg, "orders", v2)

		// The same content again, now named by its path: it would add a
		// second copy of it.
		named := importTo(t, tg, dir, nil, 0, "--file-id", "{path}", "orders.csv")
		want = fmt.Sprintf("orders already holds 150 rows of this content from orders.csv, imported as file ID %s: this adds 150 more under file ID orders.csv; to remove the earlier rows: idemport undo %s --table orders",
			res.FileID, res.FileID)
		if named.Outcome != "imported" || !reflect.DeepEqual(named.Notes, []string{want}) {
			t.Fatalf("the same content under another file ID: %s, notes %q, want %q", named.Outcome, named.Notes, want)
		}

		testkit.Orders(t, filepath.Join(dir, "orders.csv"), 100, 3)
		text := tg.Exec(t, dir, nil, "import", "orders.csv")
		if text.Code != 0 || !strings.Contains(text.Stdout, "  note: orders already holds 150 rows of orders.csv with other content (") {
			t.Fatalf("third import, in text: exit %d\n%s%s", text.Code, text.Stdout, text.Stderr)
		}
	})
}

// TestReplaceRefusedThenCorrected replaces a file with a version that has
// a bad row: refused (exit 5), nothing of the first version removed, and
// status saying the refused version replaces the first's content. A
// version corrected again supersedes the refused one and finishes the
// replacement: the table holds exactly it.
func TestReplaceRefusedThenCorrected(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		m := replaceModes[0]
		v1, v3 := m.versions(t, dir)
		first := importTo(t, tg, dir, nil, 0, m.args()...)
		bad := testkit.Orders(t, filepath.Join(dir, "v2.csv"), 350, 13)
		bad[10][3] = "many" // quantity
		testkit.WriteOrders(t, filepath.Join(dir, "orders.csv"), bad)
		if res := importTo(t, tg, dir, nil, 5, m.args("--replace")...); res.Outcome != "refused" {
			t.Fatalf("a bad version: %s %s", res.Outcome, res.Error)
		}
		m.check(t, tg, v1)
		// The replacement waits for a corrected version: status says so.
		st := tg.Exec(t, dir, nil, "status")
		if want := `^orders\s+orders\.csv\s+orders\.csv\s+refused, replacing content ` + regexp.QuoteMeta(ledger.ShortDigest(first.ContentDigest)) + `\s`; st.Code != 0 || !regexpLine(st.Stdout, want) {
			t.Fatalf("status after the refused version: exit %d, want a line %s\n%s%s", st.Code, want, st.Stdout, st.Stderr)
		}
		testkit.WriteOrders(t, filepath.Join(dir, "orders.csv"), v3)
		res := importTo(t, tg, dir, nil, 0, m.args("--replace")...)
		if res.Outcome != "imported" || res.Replaces != first.ContentDigest || res.Removed != 400 {
			t.Fatalf("the version corrected again: %s (replaces %s, removed %d) %s", res.Outcome, res.Replaces, res.Removed, res.Error)
		}
		m.check(t, tg, v3)
		past := testkit.Query(t, tg.DB, `SELECT state FROM `+tg.Ledger("operations_past")+` ORDER BY created_at`)
		if fmt.Sprint(past) != "[[replaced] [superseded]]" {
			t.Fatalf("past operations %v", past)
		}
	})
}

// TestUndoAReplacement undoes the operation that replaced a file: its
// rows go, and the replaced version does not come back (its rows were
// removed); the next import of the file starts over.
func TestUndoAReplacement(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		m := replaceModes[0]
		_, v2 := m.versions(t, dir)
		importTo(t, tg, dir, nil, 0, m.args()...)
		testkit.WriteOrders(t, filepath.Join(dir, "orders.csv"), v2)
		importTo(t, tg, dir, nil, 0, m.args("--replace")...)
		if run := tg.Exec(t, dir, nil, "undo", "orders.csv"); run.Code != 0 {
			t.Fatalf("undo: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
		if n := rowsLeft(t, tg, "orders"); n != 0 {
			t.Fatalf("orders holds %d rows after the undo, want 0", n)
		}
		if res := importTo(t, tg, dir, nil, 0, m.args()...); res.Outcome != "imported" {
			t.Fatalf("import after the undo: %s %s", res.Outcome, res.Error)
		}
		m.check(t, tg, v2)
	})
}

// fileDigest is the content digest of the uncompressed file at path.
func fileDigest(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TestReadOnlyCommandsOnALedgerBeforeReplace runs the commands that open
// the database read-only (status, history, plan, import --dry-run) on a
// ledger an earlier version wrote, before the migration that added the
// columns of replacements: they read it as it is. The next import
// migrates it.
func TestReadOnlyCommandsOnALedgerBeforeReplace(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		testkit.Orders(t, filepath.Join(dir, "orders.csv"), 50, 1)
		first := importTo(t, tg, dir, nil, 0, "orders.csv")
		// The ledger as the version before 0014_replace left it.
		for _, q := range []string{
			`ALTER TABLE ` + tg.Ledger("operations") + ` DROP COLUMN replaces`,
			`ALTER TABLE ` + tg.Ledger("operations_past") + ` DROP COLUMN replaced_by`,
			`DELETE FROM ` + tg.Ledger("migrations") + ` WHERE component = 'ledger' AND version = 14`,
		} {
			if _, err := tg.DB.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		for _, args := range [][]string{{"status"}, {"history", "orders.csv"}, {"plan", "orders.csv"}, {"import", "--dry-run", "orders.csv"}} {
			run := tg.Exec(t, dir, nil, args...)
			if run.Code != 0 || !strings.Contains(run.Stdout, first.FileID[:19]) {
				t.Fatalf("%v on the earlier ledger: exit %d\n%s%s", args, run.Code, run.Stdout, run.Stderr)
			}
		}
		if res := importTo(t, tg, dir, nil, 0, "orders.csv"); res.Outcome != "duplicate" {
			t.Fatalf("import on the earlier ledger: %s %s", res.Outcome, res.Error)
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("operations")+` WHERE replaces IS NULL`); n != 1 {
			t.Fatalf("the import did not migrate the ledger: %d operations without replaces", n)
		}
	})
}

// TestConcurrentReplacements starts 4 runs of the same replacement at
// once, in each mode: exactly one replaces (the others join it, wait for
// it, or find it done), and the table holds exactly the corrected version.
func TestConcurrentReplacements(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, m := range replaceModes {
			t.Run(m.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				_, v2rows := m.versions(t, dir)
				first := importTo(t, tg, dir, nil, 0, m.args()...)
				testkit.WriteOrders(t, filepath.Join(dir, "orders.csv"), v2rows)
				var wg sync.WaitGroup
				results := make([]testkit.Run, 4)
				start := make(chan struct{})
				for i := range results {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						results[i] = tg.Exec(t, dir, nil, append([]string{"import", "--output", "json", "--wait", "2m"}, m.args("--replace")...)...)
					}()
				}
				close(start)
				wg.Wait()
				outcomes := map[string]int{}
				for i, r := range results {
					if r.Code != 0 {
						t.Fatalf("run %d: exit %d\n%s%s", i, r.Code, r.Stdout, r.Stderr)
					}
					res := parseResults(t, r.Stdout)[0]
					outcomes[res.Outcome]++
					if res.Outcome == "imported" && res.Replaces != first.ContentDigest {
						t.Fatalf("run %d replaced %q, want %s", i, res.Replaces, first.ContentDigest)
					}
				}
				if outcomes["imported"] != 1 {
					t.Fatalf("outcomes %v: want exactly one run to replace", outcomes)
				}
				m.check(t, tg, v2rows)
				checkReplaced(t, tg, first.ContentDigest, fileDigest(t, filepath.Join(dir, "orders.csv")))
			})
		}
	})
}

// TestReapplyAReplacement applies a completed replacement again
// (--reapply): it is no replacement any more, so it removes nothing and
// finds every row of the file unchanged.
func TestReapplyAReplacement(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		m := replaceModes[0]
		_, v2 := m.versions(t, dir)
		importTo(t, tg, dir, nil, 0, m.args()...)
		testkit.WriteOrders(t, filepath.Join(dir, "orders.csv"), v2)
		importTo(t, tg, dir, nil, 0, m.args("--replace")...)
		res := importTo(t, tg, dir, nil, 0, m.args("--reapply")...)
		if res.Outcome != "imported" || res.Removed != 0 || res.Replaces != "" || res.Rows.Unchanged != int64(len(v2)) || res.Rows.Inserted != 0 {
			t.Fatalf("--reapply: %s, removed %d, replaces %q, rows %+v", res.Outcome, res.Removed, res.Replaces, res.Rows)
		}
		m.check(t, tg, v2)
	})
}

// TestStreamsHaveNoPath pipes two contents into one table: standard input
// has a name, not a path, so the second adds its rows without a note about
// rows from the same path.
func TestStreamsHaveNoPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.SQLite, dir)
	for i, data := range []string{"id,v\n1,a\n2,b\n", "id,v\n1,c\n"} {
		run := pipe(t, tg, dir, nil, data, "import", "--output", "json", "--table", "s", "--format", "csv", "-")
		res := parseResults(t, run.Stdout)
		if run.Code != 0 || len(res) != 1 || res[0].Outcome != "imported" || len(res[0].Notes) != 0 {
			t.Fatalf("stream %d: exit %d %+v\n%s", i+1, run.Code, res, run.Stderr)
		}
	}
}
