//go:build cgo

package sqlite

import (
	"path/filepath"
	"testing"
)

// TestWriterCloseTwice: a writer that wrote rows (its C batch and
// statements allocated) may be closed again, as a caller's deferred Close
// after an explicit one does: the second Close frees nothing twice and
// returns nil, and the connection still serves, the rows there as written.
func TestWriterCloseTwice(t *testing.T) {
	f := newCkptFixture(t, filepath.Join(t.TempDir(), "close.db"))
	defer func() {
		f.conn.Close()
		f.db.Close()
	}()
	f.commit()
	w := f.w.(*writer)
	if w.batch.c == nil {
		t.Fatal("the writer wrote rows without its batch")
	}
	for i := range 3 {
		if err := f.w.Close(); err != nil {
			t.Fatalf("Close %d: %v", i+1, err)
		}
		if w.batch.c != nil {
			t.Fatalf("Close %d left the writer's batch to be freed again", i+1)
		}
	}
	var n int64
	var s string
	if err := f.conn.QueryRowContext(f.ctx, `SELECT count(*), min(s) FROM t`).Scan(&n, &s); err != nil {
		t.Fatal(err)
	}
	if n != ckptRows || len(s) != 400 {
		t.Fatalf("t holds %d rows (min s of %d bytes), want %d of 400", n, len(s), ckptRows)
	}
}
