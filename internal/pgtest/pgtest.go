package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/idemport/idemport/internal/proc"
	"github.com/idemport/idemport/internal/testenv"
)

// terminal names the console of the process, whatever its output is
// bound to.
func terminal() string {
	if runtime.GOOS == "windows" {
		return "CONOUT$"
	}
	return "/dev/tty"
}

// Env is the environment variable that names the test server.
const Env = "IDEMPORT_TEST_POSTGRES"

// DSN returns the test server's connection string. When
// IDEMPORT_TEST_POSTGRES is not set it skips t, or fails it when the run
// requires PostgreSQL (internal/testenv).
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(Env)
	if dsn == "" {
		if !testenv.IsRequired(t, testenv.Postgres) {
			tellSkipped()
		}
		testenv.Unavailable(t, testenv.Postgres, Env+" is not set: the PostgreSQL tests do not run")
	}
	return dsn
}

// tellSkipped says on the terminal, once per go test run, that the
// PostgreSQL tests are being skipped and how to run them. go test shows
// the output of a package that passes only with -v, so a skip message in
// the test's output never reaches a plain "go test ./..."; the terminal
// does. A run is the go command that started this test binary (the
// binaries of all packages in one run share it): the first binary to skip
// a test creates a marker file named after that process, and the others
// find it there. Markers of runs that have ended are removed. Without a
// terminal (CI, where IDEMPORT_REQUIRE=postgres makes a skip a failure)
// it says nothing.
func tellSkipped() { tell(os.TempDir(), os.Getppid(), terminal()) }

// tell writes the skip message to the file terminal unless a marker in dir
// says run was told already, and removes the markers of runs that ended.
func tell(dir string, run int, terminal string) {
	prefix := filepath.Join(dir, "idemport-pgtest-skipped-")
	old, _ := filepath.Glob(prefix + "*")
	for _, m := range old {
		var pid int
		var start uint64
		if _, err := fmt.Sscanf(strings.TrimPrefix(m, prefix), "%d-%d", &pid, &start); err == nil && pid != run && proc.Gone(pid, start) {
			os.Remove(m)
		}
	}
	marker, err := os.OpenFile(fmt.Sprintf("%s%d-%d", prefix, run, proc.Start(run)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return // told already in this run, or no place to remember it
	}
	marker.Close()
	tty, err := os.OpenFile(terminal, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	defer tty.Close()
	fmt.Fprintf(tty, "idemport: the PostgreSQL tests were skipped: %s is not set; to run them too:\n  %s\n", Env, RunAll)
}

// RunAll is the command the skip message gives to run the PostgreSQL tests
// too. With the servers, cmd/idemport's tests alone take about 15 minutes
// on a shared 2-core machine (875 s; 1,781 s at a load average of 30),
// and go test stops a package's tests at 10 by default: hence its
// -timeout, which leaves room for a busier machine still.
const RunAll = Env + "='postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable' go test -timeout 40m ./..."

// URL returns the test server's connection string as a postgres:// URL
// whose connections put schema first on their search path, for programs
// (the idemport binary) that take a URL: unqualified table names then
// resolve in schema. It skips or fails t as DSN does, and fails t when
// IDEMPORT_TEST_POSTGRES is not in URL form.
func URL(t testing.TB, schema string) string {
	t.Helper()
	dsn := DSN(t)
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("%s must be a postgres:// URL, got %q", Env, dsn)
	}
	q := u.Query()
	q.Set("search_path", quote(schema))
	u.RawQuery = q.Encode()
	return u.String()
}

// Open creates a fresh schema with a random name and returns a pool whose
// connections resolve unqualified names in it (it is first on their
// search_path), and the schema's name. The pool is closed and the schema
// dropped, with everything in it, when t ends. Open skips t when
// IDEMPORT_TEST_POSTGRES is not set.
func Open(t testing.TB) (*sql.DB, string) {
	t.Helper()
	dsn := DSN(t)
	admin := connect(t, dsn, "")
	schema := Schema(t, admin)
	db := connect(t, dsn, schema)
	// Cleanups run last first: the test's pool closes before its schema is
	// dropped through the admin pool, which closes last.
	t.Cleanup(func() { db.Close() })
	return db, schema
}

// Schema creates another fresh schema through db, dropped with everything
// in it when t ends, and returns its name.
func Schema(t testing.TB, db *sql.DB) string {
	t.Helper()
	name := Name()
	if _, err := db.ExecContext(context.Background(), `CREATE SCHEMA `+quote(name)); err != nil {
		t.Fatalf("create schema %s: %v", name, err)
	}
	t.Cleanup(func() {
		if _, err := db.ExecContext(context.Background(), `DROP SCHEMA `+quote(name)+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

// Name returns a random name for a schema, unlikely to be in use:
// idemport_test_ and 12 hex digits.
func Name() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "idemport_test_" + hex.EncodeToString(b)
}

// connect opens a pool through the pgx database/sql driver, with schema
// first on the search path when it is not empty.
func connect(t testing.TB, dsn, schema string) *sql.DB {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("%s: %v", Env, err)
	}
	if schema != "" {
		cfg.RuntimeParams["search_path"] = quote(schema)
	}
	db := stdlib.OpenDB(*cfg)
	if err := db.PingContext(context.Background()); err != nil {
		db.Close()
		t.Fatalf("connect to %s: %v", Env, err)
	}
	if schema == "" {
		t.Cleanup(func() { db.Close() })
	}
	return db
}

// quote quotes a name, dots included.
func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }
