//go:build cgo

package sqlite

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// BenchmarkWrite runs drivertest.BenchWrite on a new SQLite file per case,
// opened as the pipeline opens its targets, in batches of batchRows rows (the
// pipeline's default).
//
//	go test ./sink/sqlite -run '^$' -bench Write
func BenchmarkWrite(b *testing.B) {
	n := 0
	drivertest.BenchWrite(b, Driver{}, batchRows, func(b *testing.B) *sql.DB {
		n++
		db, err := sql.Open("sqlite3", ConnString(filepath.Join(b.TempDir(), fmt.Sprintf("b%d.db", n)), sink.Settings{BusyTimeout: 30 * time.Second}))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		return db
	})
}
