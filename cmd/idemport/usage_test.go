package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestEveryUsageErrorExits2 runs the binary with each kind of usage error,
// in every command: each must exit 2, say what was wrong on stderr, print
// no help on stdout and create no database.
func TestEveryUsageErrorExits2(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"imprt", "orders.csv"}, `unknown command "imprt" for "idemport"; did you mean import?`},
		{[]string{"import"}, "import needs at least one FILE, DIR or GLOB"},
		{[]string{"rejects", "frob"}, `unknown command "frob" for "idemport rejects"`},
		{[]string{"rejects", "list"}, "accepts 1 arg(s), received 0"},
		{[]string{"completion", "frob"}, `unknown command "frob" for "idemport completion"`},
		{[]string{"help", "frob"}, `unknown command "frob" for "idemport"`},
		{[]string{"status", "extra"}, `unknown command "extra" for "idemport status"`},
		{[]string{"history"}, "accepts 1 arg(s), received 0"},
		{[]string{"plan", "a.csv", "b.csv"}, "accepts 1 arg(s), received 2"},
		{[]string{"verify"}, "verify needs at least one FILE, or --feed NAME"},
		{[]string{"version", "extra"}, `unknown command "extra"`},
		{[]string{"import", "--bogus", "orders.csv"}, "unknown flag: --bogus"},
		{[]string{"status", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"import", "--workers", "many", "orders.csv"}, `invalid argument "many" for "--workers"`},
		{[]string{"import", "--workers", "0", "orders.csv"}, "must be positive"},
		{[]string{"import", "--trigger", "nightly", "orders.csv"}, `--trigger "nightly"`},
		{[]string{"import", "--wait", "orders.csv"}, `--wait "orders.csv": want a duration such as 30s, 10m or 1d, or forever (--wait takes a value)`},
		{[]string{"import", "--wait", "soon", "orders.csv"}, `--wait "soon"`},
		{[]string{"import", "--wait=-1s", "orders.csv"}, `--wait "-1s"`},
		{[]string{"import", "--metrics-job", "nightly", "orders.csv"}, "--metrics-job names the job of --metrics-file, which is not set"},
		{[]string{"gc", "--older-than", "soon"}, `--older-than "soon"`},
		{[]string{"rejects", "list", "--output", "yaml", "orders.csv"}, `--output "yaml"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			testkit.Orders(t, filepath.Join(dir, "orders.csv"), 10, 60)
			r := testkit.Exec(t, dir, nil, tc.args...)
			if r.Code != 2 || !strings.Contains(r.Stderr, tc.says) || r.Stdout != "" {
				t.Fatalf("exit %d, want 2 with %q on stderr and nothing on stdout\nstdout: %s\nstderr: %s", r.Code, tc.says, r.Stdout, r.Stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "idemport.db")); !os.IsNotExist(err) {
				t.Fatalf("a usage error created the database: %v", err)
			}
		})
	}
	// Asking for help is not an error.
	for _, args := range [][]string{{}, {"rejects"}, {"help", "import"}, {"import", "--help"}} {
		if r := testkit.Exec(t, t.TempDir(), nil, args...); r.Code != 0 || !strings.Contains(r.Stdout, "Usage:") {
			t.Fatalf("idemport %s: exit %d\n%s%s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
		}
	}
}

// TestWaitTakesAValue passes --wait in each form: the value is the wait,
// never a file to import.
func TestWaitTakesAValue(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testkit.Orders(t, filepath.Join(dir, "orders.csv"), 30, 61)
	for i, wait := range [][]string{{"--wait", "30m"}, {"--wait=30m"}, {"--wait", "forever"}, {"--wait=forever"}, {"--wait", "0"}} {
		args := append(wait, "--table", "t"+string(rune('a'+i)), "orders.csv")
		if res := importJSON(t, dir, nil, 0, args...); res.File != "orders.csv" || res.Outcome != "imported" || res.Rows.Inserted != 30 {
			t.Fatalf("%v: %+v", wait, res)
		}
	}
}

// TestNoFilesToImport runs an import on an empty drop directory and on a
// glob that matches nothing: exit 0, "no files to import" on stderr,
// nothing on stdout, and the metrics file still written with the ledger's
// gauges. A named file or a glob's directory that does not exist stays an
// error.
func TestNoFilesToImport(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		testkit.Orders(t, filepath.Join(dir, "orders.csv"), 20, 62)
		importTo(t, tg, dir, nil, 0, "orders.csv")
		drop := filepath.Join(dir, "drop")
		os.Mkdir(drop, 0o755)
		os.WriteFile(filepath.Join(drop, "README"), []byte("not a data file\n"), 0o644) // no supported format
		for _, arg := range []string{"drop", "drop/*.csv", "drop/*.parquet"} {
			for _, output := range []string{"text", "json"} {
				os.Remove(filepath.Join(dir, "m.prom"))
				r := tg.Exec(t, dir, nil, "import", "--output", output, "--metrics-file", "m.prom", arg)
				if r.Code != 0 || r.Stdout != "" || r.Stderr != "idemport: no files to import in "+arg+"\n" {
					t.Fatalf("import %s -o %s: exit %d\nstdout: %s\nstderr: %s", arg, output, r.Code, r.Stdout, r.Stderr)
				}
				m := readMetrics(t, filepath.Join(dir, "m.prom"))
				if v := m.value(t, "idemport_last_run_exit_code", "job", "m"); v != 0 {
					t.Fatalf("exit code in the metrics: %v", v)
				}
				if v := m.value(t, "idemport_operations", "job", "m", "table", "orders", "state", "completed"); v != 1 {
					t.Fatalf("operations in the metrics of a run without files: %v", v)
				}
				m.value(t, "idemport_last_success_timestamp_seconds", "job", "m", "table", "orders")
			}
		}
		if r := tg.Exec(t, dir, nil, "import", "missing.csv"); r.Code != 1 || !strings.Contains(r.Stdout, "missing.csv: failed: no such file or directory") {
			t.Fatalf("a named file that does not exist: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if r := tg.Exec(t, dir, nil, "import", "nodir/*.csv"); r.Code != 1 || !strings.Contains(r.Stderr, `pattern "nodir/*.csv": stat nodir: no such file or directory`) {
			t.Fatalf("a glob in a directory that does not exist: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
	})
}
