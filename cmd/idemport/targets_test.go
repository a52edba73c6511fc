package main

// How --into and the environment name the target: every form the README
// lists, PG* variables, IDEMPORT_INTO, read-only commands that must not
// create a database, and errors that name the target once and never its
// password.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/internal/testkit"
)

func TestSQLiteTargetForms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kv.csv"), []byte("k,v\n1,a\n2,b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ into, file string }{
		{"sqlite:wh1.db", "wh1.db"},
		{"sqlite://wh2.db", "wh2.db"},
		{"file:wh3.db?mode=rwc", "wh3.db"},
		{"wh4.db", "wh4.db"},
	} {
		r := testkit.Exec(t, dir, nil, "import", "--into", c.into, "kv.csv")
		if r.Code != 0 {
			t.Fatalf("--into %s: exit %d\n%s%s", c.into, r.Code, r.Stdout, r.Stderr)
		}
		db := testkit.Open(t, filepath.Join(dir, c.file))
		if n := testkit.Int(t, db, `SELECT count(*) FROM kv`); n != 2 {
			t.Fatalf("--into %s: %d rows in %s", c.into, n, c.file)
		}
	}
	for _, wrong := range []string{"sqlite:wh1.db", "sqlite:", "file:wh3.db?mode=rwc", "idemport.db"} {
		if _, err := os.Stat(filepath.Join(dir, wrong)); err == nil {
			t.Fatalf("a file named %q was created", wrong)
		}
	}

	// IDEMPORT_INTO is the default when --into is absent.
	r := testkit.Exec(t, dir, []string{"IDEMPORT_INTO=sqlite:env.db"}, "import", "kv.csv")
	if r.Code != 0 {
		t.Fatalf("IDEMPORT_INTO: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if n := testkit.Int(t, testkit.Open(t, filepath.Join(dir, "env.db")), `SELECT count(*) FROM kv`); n != 2 {
		t.Fatalf("IDEMPORT_INTO: %d rows in env.db", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "idemport.db")); err == nil {
		t.Fatal("the default idemport.db was written despite IDEMPORT_INTO")
	}
	// --into wins over IDEMPORT_INTO.
	r = testkit.Exec(t, dir, []string{"IDEMPORT_INTO=sqlite:env.db"}, "status", "--into", "wh4.db")
	if r.Code != 0 || !strings.Contains(r.Stdout, "kv") {
		t.Fatalf("status --into wh4.db: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if !strings.Contains(testkit.Exec(t, dir, nil, "import", "--help").Stdout, "IDEMPORT_INTO") {
		t.Fatal("import --help does not mention IDEMPORT_INTO")
	}
}

// TestReadOnlyCommandsNeedAnExistingDatabase: a typo in --into must not
// read as "nothing imported" (exit 0), nor create the file.
func TestReadOnlyCommandsNeedAnExistingDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kv.csv"), []byte("k,v\n1,a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"status"},
		{"history", "kv.csv"},
		{"verify", "kv.csv"},
		{"rejects", "list", "kv.csv"},
		{"rejects", "export", "kv.csv"},
		{"undo", "kv.csv"},
	} {
		r := testkit.Exec(t, dir, nil, append(args, "--into", "typo.db")...)
		if r.Code != exitFailed || !strings.Contains(r.Stderr, "typo.db does not exist") {
			t.Fatalf("%s: exit %d\n%s%s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "typo.db")); err == nil {
			t.Fatalf("%s created typo.db", strings.Join(args, " "))
		}
	}
}

func TestPostgresTargetForms(t *testing.T) {
	t.Parallel()
	db, schema := pgtest.Open(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kv.csv"), []byte("k,v\n1,a\n2,b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	count := func(table string) int64 {
		return testkit.Int(t, db, `SELECT count(*) FROM `+table)
	}
	// A libpq key=value string, not a SQLite file of that name.
	kv := "host=127.0.0.1 port=5432 user=postgres dbname=test sslmode=disable"
	r := testkit.Exec(t, dir, nil, "import", "--into", kv, "--state-schema", schema, "--table", schema+".kv1", "kv.csv")
	if r.Code != 0 || count(`"`+schema+`".kv1`) != 2 {
		t.Fatalf("key=value: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("the key=value target left files in the directory: %v", entries)
	}
	// What the DSN leaves out comes from the PG* variables, as in psql.
	env := []string{"PGHOST=127.0.0.1", "PGPORT=5432", "PGUSER=postgres", "PGSSLMODE=disable"}
	r = testkit.Exec(t, dir, env, "import", "--into", "dbname=test", "--state-schema", schema, "--table", schema+".kv2", "kv.csv")
	if r.Code != 0 || count(`"`+schema+`".kv2`) != 2 {
		t.Fatalf("PG* variables: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r = testkit.Exec(t, dir, append(env, "IDEMPORT_INTO=postgresql:///test"), "import", "--state-schema", schema, "--table", schema+".kv3", "kv.csv")
	if r.Code != 0 || count(`"`+schema+`".kv3`) != 2 {
		t.Fatalf("IDEMPORT_INTO=postgresql:///test: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	// An unreachable server: a configuration error (exit 2), one statement
	// of the error, naming host and database, never the password.
	for _, into := range []string{
		"postgres://postgres:s3cret@127.0.0.1:1/nowhere?sslmode=disable",
		"host=127.0.0.1 port=1 user=postgres password=s3cret dbname=nowhere sslmode=disable",
	} {
		r = testkit.Exec(t, dir, nil, "import", "--into", into, "kv.csv")
		out := r.Stdout + r.Stderr
		if r.Code != exitUsage || !strings.Contains(out, `"nowhere" on 127.0.0.1:1`) {
			t.Fatalf("unreachable %s: exit %d\n%s", into, r.Code, out)
		}
		if strings.Contains(out, "s3cret") {
			t.Fatalf("the password is shown:\n%s", out)
		}
		if strings.Contains(out, "create schema") || strings.Count(out, "connect to PostgreSQL") != 1 {
			t.Fatalf("the error repeats itself:\n%s", out)
		}
	}
}
