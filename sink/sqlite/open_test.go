package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/idemport/idemport/sink"
)

// TestConcurrentOpensOfANewFile opens a database that does not exist yet
// from several connections at once, as the processes of one import
// started together do: each turns the new file to WAL, which needs the
// file's exclusive lock, and SQLite answers one of two connections
// upgrading at once "database is locked" at once, without waiting out
// the busy timeout. Every Open must succeed all the same.
func TestConcurrentOpensOfANewFile(t *testing.T) {
	const rounds, openers = 40, 6
	var failed []string
	for r := range rounds {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("r%d.db", r))
		var wg sync.WaitGroup
		var mu sync.Mutex
		start := make(chan struct{})
		for range openers {
			wg.Go(func() {
				<-start
				db, err := Driver{}.Open(context.Background(), "sqlite://"+path, sink.Settings{BusyTimeout: 10 * time.Second})
				if err == nil {
					_, err = db.DB.Exec(`CREATE TABLE IF NOT EXISTS t (x INTEGER)`)
					db.DB.Close()
				}
				if err != nil {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("round %d: %v", r, err))
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
	}
	if len(failed) > 0 {
		t.Fatalf("%d of %d opens failed, first: %s", len(failed), rounds*openers, failed[0])
	}
}
