package mysql

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/idemport/idemport/internal/testenv"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// testEnv names the test server: a mysql:// URL of a user who may create
// and drop databases, such as mysql://root@127.0.0.1:3306/test. Each test
// gets a database of its own on it, dropped when it ends.
const testEnv = "IDEMPORT_TEST_MARIADB"

// serverDSN returns the test server's URL, or skips t (fails it when the
// run requires MariaDB: internal/testenv) when it is unset or the server
// does not answer.
func serverDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(testEnv)
	if dsn == "" {
		testenv.Unavailable(t, testenv.MariaDB, testEnv+" is not set: the MariaDB tests do not run")
	}
	db, err := Driver{}.Open(t.Context(), dsn, sink.Settings{ReadOnly: true})
	if err != nil {
		testenv.Unavailable(t, testenv.MariaDB, "MariaDB at "+Driver{}.Redact(dsn)+" does not answer: "+err.Error())
	}
	db.DB.Close()
	return dsn
}

// testConnector returns this package's connector to dsn, with no
// settings.
func testConnector(t testing.TB, dsn string) driver.Connector {
	t.Helper()
	cfg, err := parseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	c, err := newConnector(cfg, sink.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// freshDSN creates a database of its own for t on the test server and
// returns its URL; the database is dropped when t ends.
func freshDSN(t testing.TB) string {
	t.Helper()
	dsn := serverDSN(t)
	b := make([]byte, 6)
	rand.Read(b)
	name := "idemport_test_" + hex.EncodeToString(b)
	admin := sql.OpenDB(testConnector(t, dsn))
	if _, err := admin.ExecContext(t.Context(), `CREATE DATABASE `+q(name)+` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin`); err != nil {
		admin.Close()
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		if _, err := admin.ExecContext(context.Background(), `DROP DATABASE IF EXISTS `+q(name)); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// openStore returns a database of its own opened through the driver.
func openStore(t *testing.T) drivertest.Store {
	t.Helper()
	return openStoreWith(t, sink.Settings{})
}

// openStoreWith returns a database of its own opened through the driver
// with s.
func openStoreWith(t *testing.T, s sink.Settings) drivertest.Store {
	t.Helper()
	return drivertest.OpenStore(t, Driver{}, freshDSN(t), s, func(t *testing.T, db *sql.DB) []string {
		return drivertest.Strings(t, db, `SELECT table_name || ' ' || group_concat(column_name || ':' || column_type || ':' || is_nullable
			ORDER BY ordinal_position SEPARATOR ',') FROM information_schema.columns
			WHERE table_schema = DATABASE() GROUP BY table_name ORDER BY 1`)
	})
}

func TestLedger(t *testing.T) {
	serverDSN(t) // skip once, not in every case
	drivertest.RunLedger(t, openStore)
}

func TestCheckpoint(t *testing.T) {
	serverDSN(t)
	drivertest.RunCheckpoint(t, openStore)
}
