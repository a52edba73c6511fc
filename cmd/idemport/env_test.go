package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/idemport/idemport/internal/testkit"
)

// envTable is the table of docs/reference.md#environment: every
// variable, the flag it sets and the commands that take it, derived from
// the command tree.
func envTable(root *cobra.Command, allowed map[string]bool) string {
	cmds := map[string][]string{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if c.Runnable() {
			c.Flags().VisitAll(func(fl *pflag.Flag) {
				if allowed[fl.Name] {
					cmds[fl.Name] = append(cmds[fl.Name], strings.TrimPrefix(c.CommandPath(), "idemport "))
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("| variable | flag | commands |\n|---|---|---|\n")
	for _, n := range names {
		sort.Strings(cmds[n])
		fmt.Fprintf(&b, "| `%s` | `--%s` | %s |\n", envName(n), n, strings.Join(cmds[n], ", "))
	}
	return b.String()
}

// TestEnvTable: the table of variables in docs/reference.md lists every
// flag of every command (rewrite it with -update).
func TestEnvTable(t *testing.T) {
	t.Parallel()
	e := &env{getenv: func(string) string { return "" }}
	root := newRootCmd(e)
	table := envTable(root, envFlagNames(root))
	path := filepath.Join("..", "..", "docs", "reference.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- env-table -->\n", "<!-- /env-table -->"
	i, j := strings.Index(string(doc), begin), strings.Index(string(doc), end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q", path, begin, end)
	}
	if *update {
		doc = []byte(string(doc[:i+len(begin)]) + "\n" + table + "\n" + string(doc[j:]))
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got := strings.TrimSpace(string(doc[i+len(begin) : j])); got != strings.TrimSpace(table) {
		t.Fatalf("the table of variables in %s is not the flags': run go test ./cmd/idemport -run TestEnvTable -update\n--- want\n%s", path, table)
	}
}

// TestFeedsPrecedence: a flag on the command line wins over its
// environment variable, the variable over the feeds file, a feed's key
// over the file's defaults, and the defaults over the flag's default.
func TestFeedsPrecedence(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		y := "defaults:\n  into: ${FEEDS_DSN}\n  trigger: cron\n  table: from_defaults\n"
		if tg.IsPostgres() {
			y += "  state-schema: " + tg.Schema + "\n"
		}
		y += "feeds:\n  a:\n    source: a.csv\n    table: from_file\n  b:\n    source: b.csv\n"
		if err := os.WriteFile(filepath.Join(dir, "idemport.yaml"), []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"a.csv", "b.csv"} {
			if err := os.WriteFile(filepath.Join(dir, f), []byte("id,v\n1,"+f+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		base := []string{"FEEDS_DSN=" + tg.Args[1]}
		for _, c := range []struct {
			name    string
			env     []string
			args    []string
			tables  []string // of feeds a and b
			trigger string
		}{
			{"file", nil, nil, []string{"from_file", "from_defaults"}, "cron"},
			{"environment over file", []string{"IDEMPORT_TABLE=from_env", "IDEMPORT_TRIGGER=ci"}, nil, []string{"from_env", "from_env"}, "ci"},
			{"flag over both", []string{"IDEMPORT_TABLE=from_env", "IDEMPORT_TRIGGER=ci"}, []string{"--table", "from_flag", "--trigger", "manual"},
				[]string{"from_flag", "from_flag"}, "manual"},
		} {
			lines := runFeedsJSON(t, dir, append(slices.Clone(base), c.env...), 0, c.args...)
			var got []string
			for _, l := range lines {
				got = append(got, l.Table+" "+l.Outcome)
			}
			want := []string{c.tables[0] + " imported", c.tables[1] + " imported"}
			if c.tables[0] == c.tables[1] {
				want[1] = c.tables[1] + " imported" // one table, two files
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s: %q, want %q", c.name, got, want)
			}
			for _, table := range c.tables {
				if rows := feedTableRows(t, tg, table, "v", "v"); len(rows) == 0 {
					t.Fatalf("%s: %s is empty", c.name, table)
				}
			}
			q := tg.Rebind(`SELECT DISTINCT trigger FROM ` + tg.Ledger("attempts") + ` WHERE table_name = ?`)
			for _, table := range c.tables {
				if got := testkit.Query(t, tg.DB, q, table); len(got) != 1 || fmt.Sprint(got[0][0]) != c.trigger {
					t.Fatalf("%s: triggers of %s: %v, want %s", c.name, table, got, c.trigger)
				}
			}
		}
		// All tables, value by value: each feed's file landed only where
		// its precedence said.
		for table, want := range map[string][]string{
			"from_file": {"a.csv"}, "from_defaults": {"b.csv"}, "from_env": {"a.csv", "b.csv"}, "from_flag": {"a.csv", "b.csv"},
		} {
			if got := feedTableRows(t, tg, table, "v", "v"); !slices.Equal(got, want) {
				t.Fatalf("%s: %q, want %q", table, got, want)
			}
		}
	})
}

// TestEnvFlags: any command reads its import flags from the environment
// unless given on the command line; a value the flag refuses exits 2
// naming the variable.
func TestEnvFlags(t *testing.T) {
	// Not parallel: runInProcess changes the working directory of the test process.
	dir := t.TempDir()
	csv := filepath.Join(dir, "o.csv")
	if err := os.WriteFile(csv, []byte("id\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"IDEMPORT_INTO": filepath.Join(dir, "t.db"), "IDEMPORT_TABLE": "env_table", "IDEMPORT_OUTPUT": "json", "IDEMPORT_KEY": "id"}
	code, out, errb := runInProcess(t, dir, env, "import", "o.csv")
	if code != 0 || !strings.Contains(out, `"table":"env_table"`) || !strings.Contains(out, `"outcome":"imported"`) {
		t.Fatalf("exit %d\n%s%s", code, out, errb)
	}
	code, out, errb = runInProcess(t, dir, env, "status", "--output", "text")
	if code != 0 || !strings.HasPrefix(out, "TABLE") || !strings.Contains(out, "env_table") {
		t.Fatalf("status: exit %d\n%s%s", code, out, errb)
	}
	env["IDEMPORT_WORKERS"] = "many"
	code, _, errb = runInProcess(t, dir, env, "import", "o.csv")
	if code != exitUsage || !strings.HasPrefix(errb, "idemport: IDEMPORT_WORKERS: invalid argument \"many\" for \"--workers\" flag") {
		t.Fatalf("exit %d\n%s", code, errb)
	}
	if code, _, errb = runInProcess(t, dir, env, "import", "--workers", "2", "o.csv"); code != 0 {
		t.Fatalf("the flag did not win over IDEMPORT_WORKERS: exit %d\n%s", code, errb)
	}
}
