//go:build cgo

package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/idemport/idemport/sink"
)

// TestConnectionsWithoutMutex: the connections Open makes, for writing and
// read-only, are opened without SQLite's per-connection mutex
// (SQLITE_OPEN_NOMUTEX), as SQLite itself reports of the handle:
// database/sql and the writer's raw calls (inside conn.Raw) never use one
// connection from two goroutines at once, and the mutex cost the writer
// several percent of its CPU time.
func TestConnectionsWithoutMutex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "target.db")
	for _, s := range []sink.Settings{{BusyTimeout: 5 * time.Second}, {BusyTimeout: 5 * time.Second, ReadOnly: true}} {
		db, err := Driver{}.Open(t.Context(), "sqlite://"+path, s)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := db.DB.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		mutexed, err := serialized(conn)
		if err != nil {
			t.Fatal(err)
		}
		if mutexed {
			t.Errorf("read-only %v: the connection has a mutex of its own (serialized mode)", s.ReadOnly)
		}
		conn.Close()
		db.DB.Close()
	}
}
