package mysql

import (
	"database/sql"
	"testing"

	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// openEnv returns a database of its own as a drivertest.Env. MariaDB has
// no partial indexes (NoPartialIndexes).
func openEnv(t *testing.T) drivertest.Env {
	t.Helper()
	db, _ := openTarget(t, sink.Settings{})
	return drivertest.Env{DB: db, Driver: Driver{}, AutoKey: "BIGINT AUTO_INCREMENT PRIMARY KEY", CountUpdates: countUpdates, NoPartialIndexes: true}
}

// countUpdates counts the updated rows of table with a row trigger.
func countUpdates(t *testing.T, conn *sql.Conn, table string) func() int64 {
	t.Helper()
	f := &drivertest.Fx{T: t, Ctx: t.Context(), Conn: conn, Env: drivertest.Env{Driver: Driver{}}}
	f.Exec(`CREATE TABLE IF NOT EXISTS updates (tbl VARCHAR(64) PRIMARY KEY, n BIGINT NOT NULL)`)
	f.Exec(`INSERT INTO updates VALUES (?, 0)`, table)
	f.Exec(`CREATE TRIGGER ` + q(table+"_count_updates") + ` AFTER UPDATE ON ` + Driver{}.QuoteTable(table) +
		` FOR EACH ROW UPDATE updates SET n = n + 1 WHERE tbl = '` + table + `'`)
	return func() int64 { return f.Int(`SELECT n FROM updates WHERE tbl = ?`, table) }
}

func TestTarget(t *testing.T) {
	serverDSN(t) // skip once, not in every case
	drivertest.RunTarget(t, openEnv)
}
