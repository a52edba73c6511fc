package testkit

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/internal/testenv"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/mysql"
)

// MariaDB is the name of the third target: a database of its own on the
// MariaDB test server that IDEMPORT_TEST_MARIADB names (a mysql:// URL of
// a user who may create databases). It is not among TargetNames: its
// tests run on it by name (EachOf, AllTargetNames), since the command's
// tests must stay short.
const MariaDB = "mariadb"

// mariaEnv names the MariaDB test server.
const mariaEnv = "IDEMPORT_TEST_MARIADB"

// AllTargetNames returns every target, SQLite first, MariaDB last.
func AllTargetNames() []string { return []string{SQLite, Postgres, MariaDB} }

// EachOf runs f as one subtest per target named in names, as Each does.
func EachOf(t *testing.T, names []string, f func(t *testing.T, name string)) {
	t.Helper()
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			Available(t, name)
			f(t, name)
		})
	}
}

// mariaServer is the answer of the MariaDB test server, asked once.
var mariaServer = sync.OnceValues(func() (string, error) {
	dsn := os.Getenv(mariaEnv)
	if dsn == "" {
		return "", nil
	}
	db, err := mysql.Driver{}.Open(context.Background(), dsn, sink.Settings{ReadOnly: true})
	if err != nil {
		return dsn, err
	}
	return dsn, db.DB.Close()
})

// mariaDSN returns the MariaDB test server's URL, or skips t (fails it
// when the run requires MariaDB: internal/testenv).
func mariaDSN(t testing.TB) string {
	t.Helper()
	dsn, err := mariaServer()
	switch {
	case dsn == "":
		testenv.Unavailable(t, testenv.MariaDB, mariaEnv+" is not set: the MariaDB tests do not run")
	case err != nil:
		testenv.Unavailable(t, testenv.MariaDB, "MariaDB at "+mysql.Driver{}.Redact(dsn)+" does not answer: "+err.Error())
	}
	return dsn
}

// newMariaDB creates a database of its own for t on the MariaDB test
// server, dropped when t ends, and returns its URL and a pool on it whose
// connections are set up as the driver's (ANSI quotes, UTC).
func newMariaDB(t testing.TB) (string, *sql.DB) {
	t.Helper()
	dsn := mariaDSN(t)
	admin, err := mysql.Driver{}.Open(context.Background(), dsn, sink.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	name := pgtest.Name()
	if _, err := admin.DB.Exec(`CREATE DATABASE ` + QuoteOne(name) + ` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin`); err != nil {
		admin.DB.Close()
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		defer admin.DB.Close()
		if _, err := admin.DB.Exec(`DROP DATABASE IF EXISTS ` + QuoteOne(name)); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	db, err := mysql.Driver{}.Open(context.Background(), u.String(), sink.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.DB.Close() })
	return u.String(), db.DB
}
