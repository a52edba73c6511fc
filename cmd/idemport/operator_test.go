package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// normalize replaces what changes from run to run (attempt and event IDs, times,
// durations, hosts and pids) with placeholders.
func normalize(s string) string {
	for _, r := range []struct{ re, with string }{
		{`[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}`, "<attempt>"},
		{`[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}`, "<event>"},
		{`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z`, "<rfc3339ms>"}, // an event's own times
		{`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`, "<rfc3339>"},        // JSON: what jq's fromdateiso8601 reads
		{`\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ`, "<time>"},
		{`time=\S+`, "time=<time>"}, // slog's text handler
		{`\(\S+:\d+, stopped: resume it with ` + "`kill -CONT \\d+`", "(<host>:<pid>, stopped: resume it with `kill -CONT <pid>`"},
		{`"duration_ms":\d+`, `"duration_ms":0`},
		{`\(\d+(\.\d+)?(µs|ms|s)\)`, "(<duration>)"},
		{`; \d+(\.\d+)?(µs|ms|s)\)`, "; <duration>)"},
		{`"host": ?"[^"]*"`, `"host":"<host>"`},
		{`"pid": ?\d+`, `"pid":0`},
		{`\S+:\d+(\s+<time>)`, "<host>:<pid>$1"},
	} {
		s = regexp.MustCompile(r.re).ReplaceAllString(s, r.with)
	}
	// Column widths follow the widest value (a pid's digits): compare the
	// tables' cells, not their padding.
	return regexp.MustCompile(` {2,}`).ReplaceAllString(s, "  ")
}

// golden compares got with testdata/golden/name, or rewrites it with -update.
// A .jsonl file must be JSON Lines: each line one JSON object, whose
// times are RFC 3339 in whole seconds.
func golden(t *testing.T, name, got string) {
	t.Helper()
	if strings.HasSuffix(name, ".jsonl") {
		jsonLines(t, name, got)
	}
	path := filepath.Join("..", "..", "testdata", "golden", name)
	got = normalize(got)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s differs from its golden file (run with -update after checking):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// jsonLines checks that out is JSON Lines: at least one line, each a JSON
// object, and every field named like a time (…_at, at, cutoff) is RFC 3339
// in UTC with whole seconds, as jq's fromdateiso8601 reads it. An outbox
// line's "event" is the event itself, whose times carry milliseconds as the
// README's event schema says: it is not walked. Every field is one the
// JSON reference (docs/reference.md) lists for the command, and none is
// null, nor an empty time, ID or error: a field that is not set is omitted.
func jsonLines(t *testing.T, name, out string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if out == "" || len(lines) == 0 {
		t.Fatalf("%s: no JSON lines", name)
	}
	listed := jsonReference(t, name)
	rfc3339 := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)
	var walk func(string, any)
	walk = func(key string, v any) {
		if key != "" && !strings.Contains(listed, "`"+key+"`") {
			t.Errorf("%s: field %q is not in the JSON reference of its command", name, key)
		}
		switch v := v.(type) {
		case nil:
			t.Errorf("%s: %s is null: a field that is not set is omitted", name, key)
		case map[string]any:
			for k, x := range v {
				if k != "event" {
					walk(k, x)
				}
			}
		case []any:
			for _, x := range v {
				walk(key, x)
			}
		case string:
			if v == "" && (strings.HasSuffix(key, "_at") || strings.HasSuffix(key, "_id") || strings.HasSuffix(key, "_by") || key == "at" || key == "error" || key == "next") {
				t.Errorf("%s: %s is empty: a field that is not set is omitted", name, key)
				return
			}
			if strings.HasSuffix(key, "_at") || key == "at" || key == "cutoff" {
				if _, err := time.Parse(time.RFC3339, v); err != nil || !rfc3339.MatchString(v) {
					t.Errorf("%s: %s = %q is not RFC 3339 in whole seconds", name, key, v)
				}
			}
		}
	}
	for i, line := range lines {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("%s line %d is not one JSON object: %v\n%s", name, i+1, err, line)
		}
		walk("", obj)
	}
}

// jsonReference returns the text of the JSON reference (docs/reference.md,
// "JSON output") that lists the fields of the command whose golden file is
// name: its bullet, with status's for history and plan's for import (whose
// --dry-run prints plan's objects).
func jsonReference(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "reference.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "## JSON output")
	if start < 0 {
		t.Fatal("docs/reference.md has no JSON output section")
	}
	doc = doc[start:]
	if end := strings.Index(doc[3:], "\n## "); end >= 0 {
		doc = doc[:end+3]
	}
	bullet := func(cmd string) string {
		i := strings.Index(doc, "- **"+cmd+"**:")
		if i < 0 {
			t.Fatalf("the JSON reference has no bullet for %s", cmd)
		}
		rest := doc[i+1:]
		if j := strings.Index(rest, "\n- **"); j >= 0 {
			rest = rest[:j]
		}
		if j := strings.Index(rest, "\n\n"); j >= 0 {
			rest = rest[:j]
		}
		return rest
	}
	// The paragraphs before the bullets define what several commands share.
	common := doc[:strings.Index(doc, "\n- **")]
	cmd := strings.TrimSuffix(name, ".jsonl")
	return common + commandBullets(cmd, bullet)
}

// commandBullets returns the bullets of the JSON reference that list the
// fields of cmd.
func commandBullets(cmd string, bullet func(string) string) string {
	switch cmd {
	case "import", "import-quiet":
		return bullet("import") + bullet("plan")
	case "history":
		return bullet("history") + bullet("status")
	case "rejects":
		return bullet("rejects list")
	case "outbox":
		return bullet("outbox list")
	}
	return bullet(cmd)
}

// TestGoldenOutputs runs a fixed scenario and compares the text and JSON of
// every command with golden files.
func TestGoldenOutputs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	orders, err := os.ReadFile("../../testdata/orders.csv")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "orders.csv"), orders, 0o644)
	os.WriteFile(filepath.Join(dir, "items.csv"), []byte("id,qty\n1,5\n2,five\n3,7\n"), 0o644)

	var imports bytes.Buffer
	for _, args := range [][]string{
		{"import", "--output", "json", "--partition-rows", "50", "orders.csv"},
		{"import", "--output", "json", "orders.csv"},
		{"import", "--output", "json", "--column", "qty:int64", "items.csv"},
		{"import", "--output", "json", "--column", "qty:int64", "--max-rejects", "1", "--table", "items2", "items.csv"},
		{"import", "--output", "json", "--key", "order_id", "orders.csv"},
	} {
		imports.WriteString(testkit.Exec(t, dir, nil, args...).Stdout)
	}
	golden(t, "import.jsonl", imports.String())

	text := testkit.Exec(t, dir, nil, "import", "orders.csv", "items.csv")
	golden(t, "import.txt", text.Stdout)
	// -q: the duplicates say nothing, the new file its result, no summary.
	os.WriteFile(filepath.Join(dir, "more.csv"), []byte("id,qty\n1,5\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "most.csv"), []byte("id,qty\n1,6\n"), 0o644)
	golden(t, "import-quiet.txt", testkit.Exec(t, dir, nil, "import", "-q", "orders.csv", "more.csv", "items.csv").Stdout)
	golden(t, "import-quiet.jsonl", testkit.Exec(t, dir, nil, "import", "--quiet", "-o", "json", "orders.csv", "most.csv", "more.csv").Stdout)
	golden(t, "status.txt", testkit.Exec(t, dir, nil, "status").Stdout)
	golden(t, "status.jsonl", testkit.Exec(t, dir, nil, "status", "--output", "json").Stdout)
	golden(t, "history.txt", testkit.Exec(t, dir, nil, "history", "orders.csv").Stdout)
	golden(t, "history.jsonl", testkit.Exec(t, dir, nil, "history", "--output", "json", "items.csv").Stdout)
	golden(t, "rejects.txt", testkit.Exec(t, dir, nil, "rejects", "list", "--table", "items2", "items.csv").Stdout)
	golden(t, "rejects.jsonl", testkit.Exec(t, dir, nil, "rejects", "list", "-o", "json", "--table", "items2", "items.csv").Stdout)
	golden(t, "plan.txt", testkit.Exec(t, dir, nil, "plan", "--partition-rows", "50", "orders.csv").Stdout)
	golden(t, "plan.jsonl", testkit.Exec(t, dir, nil, "plan", "-o", "json", "--column", "qty:int64", "--table", "items2", "items.csv").Stdout)
	golden(t, "verify.txt", testkit.Exec(t, dir, nil, "verify", "orders.csv").Stdout)
	golden(t, "verify.jsonl", testkit.Exec(t, dir, nil, "verify", "-o", "json", "orders.csv", "items.csv").Stdout)
	golden(t, "gc.jsonl", testkit.Exec(t, dir, nil, "gc", "--dry-run", "--older-than", "1d", "-o", "json").Stdout)
	golden(t, "undo.txt", testkit.Exec(t, dir, nil, "undo", "--table", "items", "items.csv").Stdout)
	golden(t, "undo.jsonl", testkit.Exec(t, dir, nil, "undo", "-o", "json", "--table", "items2", "items.csv").Stdout)
	// The outbox holds an event of each import and undo above, none owed
	// to a sink; --state failed lists none.
	outbox := testkit.Exec(t, dir, nil, "outbox", "list").Stdout + testkit.Exec(t, dir, nil, "outbox", "list", "--state", "failed").Stdout
	golden(t, "outbox.txt", outbox)
	golden(t, "outbox.jsonl", testkit.Exec(t, dir, nil, "outbox", "list", "-o", "json").Stdout)

	version := testkit.Exec(t, dir, nil, "version")
	flag := testkit.Exec(t, dir, nil, "--version")
	if version.Code != 0 || flag.Code != 0 || !strings.HasPrefix(flag.Stdout, "idemport ") || flag.Stdout != version.Stdout {
		t.Fatalf("--version %d %q, version %d %q: want the same text", flag.Code, flag.Stdout, version.Code, version.Stdout)
	}
}

// TestVerifyCatchesARowDeletedByHand deletes a target row behind idemport's
// back: verify must say so and exit 1.
func TestVerifyCatchesARowDeletedByHand(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"ordinal", "natural"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			testkit.Orders(t, filepath.Join(dir, "orders.csv"), 300, 24)
			args := []string{"orders.csv"}
			if mode == "natural" {
				args = append([]string{"--key", "order_id"}, args...)
			}
			importJSON(t, dir, nil, 0, args...)
			if ok := testkit.Exec(t, dir, nil, append([]string{"verify"}, args...)...); ok.Code != 0 || !strings.Contains(ok.Stdout, "ok: orders holds all 300 rows") {
				t.Fatalf("verify of an intact import: %d %s %s", ok.Code, ok.Stdout, ok.Stderr)
			}
			db := testkit.Open(t, filepath.Join(dir, "idemport.db"))
			if _, err := db.Exec(`DELETE FROM orders WHERE order_id = (SELECT min(order_id) FROM orders)`); err != nil {
				t.Fatal(err)
			}
			db.Close()
			bad := testkit.Exec(t, dir, nil, append([]string{"verify"}, args...)...)
			if bad.Code != 1 || !strings.Contains(bad.Stdout, "orders holds 299 of the file's rows, the ledger says 300") {
				t.Fatalf("verify after a deletion: %d %s %s", bad.Code, bad.Stdout, bad.Stderr)
			}
		})
	}
}

// TestGCKeepsDuplicateDetection trims an old import and reruns its file:
// still a duplicate, nothing written; the trimmed detail is gone.
func TestGCKeepsDuplicateDetection(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testkit.Orders(t, filepath.Join(dir, "orders.csv"), 250, 25)
	os.WriteFile(filepath.Join(dir, "items.csv"), []byte("id,qty\n1,5\n2,five\n"), 0o644)
	importJSON(t, dir, nil, 0, "--partition-rows", "100", "orders.csv")
	importJSON(t, dir, nil, 0, "--column", "qty:int64", "--max-rejects", "1", "items.csv")
	time.Sleep(20 * time.Millisecond)
	gc := testkit.Exec(t, dir, nil, "gc", "--older-than", "10ms")
	if gc.Code != 0 || !strings.Contains(gc.Stdout, "2 operations") || !strings.Contains(gc.Stdout, "4 partition rows, 1 reject payload;") {
		t.Fatalf("gc: %d %s %s", gc.Code, gc.Stdout, gc.Stderr)
	}
	db := testkit.Open(t, filepath.Join(dir, "idemport.db"))
	if n := testkit.Int(t, db, `SELECT (SELECT count(*) FROM idemport_partitions) + (SELECT count(*) FROM idemport_plans)`); n != 0 {
		t.Fatalf("%d plan or partition rows left", n)
	}
	if n := testkit.Int(t, db, `SELECT count(*) FROM idemport_operations WHERE state = 'completed'`); n != 2 {
		t.Fatalf("gc removed identity: %d completed operations left", n)
	}
	again := importJSON(t, dir, nil, 0, "--rehash", "--partition-rows", "100", "orders.csv")
	if again.Outcome != "duplicate" || again.Rows.Inserted != 0 || again.Previous == nil || again.Previous.Rows.Inserted != 250 {
		t.Fatalf("rerun after gc: %+v", again)
	}
	if r := testkit.Exec(t, dir, nil, "rejects", "export", "items.csv"); r.Code == 0 || !strings.Contains(r.Stderr, "removed (gc)") {
		t.Fatalf("export after gc: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestDryRunWritesNothing plans a file with import --dry-run: the output is
// the plan, and no database is created.
func TestDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testkit.Orders(t, filepath.Join(dir, "orders.csv"), 250, 26)
	r := testkit.Exec(t, dir, nil, "import", "--dry-run", "--partition-rows", "100", "orders.csv")
	if r.Code != 0 || !strings.Contains(r.Stdout, "an import would: import (create)") || strings.Count(r.Stdout, "\n") < 15 {
		t.Fatalf("dry run: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "idemport.db")); !os.IsNotExist(err) {
		t.Fatalf("a dry run created the database: %v", err)
	}
	importJSON(t, dir, nil, 0, "orders.csv")
	if r := testkit.Exec(t, dir, nil, "import", "--dry-run", "orders.csv"); !strings.Contains(r.Stdout, "an import would: duplicate") {
		t.Fatalf("dry run after import: %s", r.Stdout)
	}
}
