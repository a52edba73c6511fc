//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestControlCharactersInNames: a newline, a carriage return or an
// escape sequence in a file name or a URL cannot forge a
// line of text output (or of the cron mail it becomes): every text output
// shows them escaped (\n, \r, \x1b), on stdout and stderr alike, and
// JSON output stays JSON.
func TestControlCharactersInNames(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		const forged = "forged: 1000000 rows imported into payments"
		good := "orders\n" + forged + "\r\x1b[2K.csv"
		if err := os.WriteFile(filepath.Join(dir, good), []byte("id,note\n1,a\n2,b\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		bad := "bad\n" + forged + ".csv"
		if err := os.WriteFile(filepath.Join(dir, bad), []byte("id,qty\n1,2\n2,x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		check := func(what string, run testkit.Run, codes ...int) {
			t.Helper()
			ok := false
			for _, c := range codes {
				ok = ok || run.Code == c
			}
			if !ok {
				t.Fatalf("%s: exit %d, want %v:\n%s\n%s", what, run.Code, codes, run.Stdout, run.Stderr)
			}
			for _, out := range []string{run.Stdout, run.Stderr} {
				for _, line := range strings.Split(out, "\n") {
					if strings.HasPrefix(strings.TrimLeft(line, " \r"), "forged") || strings.ContainsAny(line, "\r\x1b") {
						t.Fatalf("%s: a name forged a line: %q\nin\n%s", what, line, out)
					}
				}
			}
			if !strings.Contains(run.Stdout+run.Stderr, `\n`+forged) {
				t.Fatalf("%s: the name is not shown escaped:\n%s\n%s", what, run.Stdout, run.Stderr)
			}
		}
		check("import", tg.Exec(t, dir, nil, "import", "--table", "orders", good), 0)
		check("import of a bad file", tg.Exec(t, dir, nil, "import", "--table", "items", "--column", "qty:int64", "--file-id", "{name}", bad), 5)
		check("import of a missing file", tg.Exec(t, dir, nil, "import", "missing\n"+forged+".csv"), 1, 2)
		check("import of a URL", tg.Exec(t, dir, nil, "import", "http://127.0.0.1:9/x\n"+forged+".csv"), 1, 2)
		check("status", tg.Exec(t, dir, nil, "status"), 0)
		check("history", tg.Exec(t, dir, nil, "history", good), 0)
		check("plan", tg.Exec(t, dir, nil, "plan", "--table", "orders", good), 0)
		check("verify", tg.Exec(t, dir, nil, "verify", "--table", "orders", good), 0)
		check("rejects list", tg.Exec(t, dir, nil, "rejects", "list", "--table", "items", bad), 0)
		check("undo", tg.Exec(t, dir, nil, "undo", "--table", "orders", good), 0)
		// JSON output carries the names exactly.
		run := tg.Exec(t, dir, nil, "import", "--table", "orders", "--output", "json", good)
		if run.Code != 0 || !strings.Contains(run.Stdout, `"file":"orders\n`+forged+`\r\u001b[2K.csv"`) {
			t.Fatalf("import --output json: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
	})
}
