//go:build cgo

package sqlite

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/idemport/idemport/sink/sinktest"
)

// BenchmarkWrite runs sinktest.BenchWrite on a new SQLite file per case,
// opened as the pipeline opens its targets, in batches of 1024 rows (the
// pipeline's default).
//
//	go test ./sink/sqlite -run '^$' -bench Write
func BenchmarkWrite(b *testing.B) {
	n := 0
	sinktest.BenchWrite(b, Dialect{}, 1024, func(b *testing.B) *sql.DB {
		n++
		db, err := sql.Open("sqlite3", "file:"+filepath.Join(b.TempDir(), fmt.Sprintf("b%d.db", n))+
			"?_journal_mode=WAL&_synchronous=NORMAL&_cache_size=-65536&_txlock=immediate")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		return db
	})
}
