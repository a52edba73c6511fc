//go:build cgo && !windows

package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/sqlite/internal/syncvfs"
)

// TestCommitsPastTheThresholdSyncTheLog: every commit that leaves the
// log at or above the checkpoint threshold has synced the log when its
// COMMIT returns, counted by a VFS that sees every write and sync of the
// log: whether the thread is handed the checkpoint or the writer
// checkpoints itself at the bound, and while another connection's read
// leaves the checkpoint nothing to copy, so that SQLite's checkpoint syncs
// nothing (it syncs the log only before it copies). The thread's
// checkpoints are held back, so that no sync of theirs is counted.
func TestCommitsPastTheThresholdSyncTheLog(t *testing.T) {
	for _, c := range []struct {
		name   string
		limit  int  // the writer checkpoints itself once the log held this many frames
		reader bool // another connection reads through the commits
	}{
		{"thread", 16384, false},
		{"thread with a reader", 16384, true},
		{"writer", 100, false},
		{"writer with a reader", 100, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			old := walLimit
			walLimit = c.limit
			defer func() { walLimit = old }()
			path := filepath.Join(t.TempDir(), "syncs.db")
			if err := syncvfs.Watch("/syncs.db-wal"); err != nil {
				t.Fatal(err)
			}
			f := newCkptFixture(t, path)
			defer f.close()
			k := f.w.(*writer).ckpt
			if k == nil {
				t.Fatal("the writer runs no checkpointer")
			}
			k.hold(true)
			defer k.hold(false)
			if c.reader {
				// The log emptied, then a read begun: every checkpoint
				// from now on has nothing it may copy.
				f.exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
				r, err := sql.Open("sqlite3", ConnString(path, sink.Settings{BusyTimeout: time.Second, ReadOnly: true}))
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				tx, err := r.BeginTx(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				var n int64
				if err := tx.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil {
					t.Fatal(err)
				}
			}
			for range 4 {
				before := syncvfs.Read()
				f.commit()
				after := syncvfs.Read()
				if after.Written == before.Written {
					t.Fatal("the commit wrote nothing to the log the VFS watches")
				}
				if frames := walFrames(t, path); frames < 100 {
					t.Fatalf("the log holds %d frames, below the threshold: nothing to sync", frames)
				}
				if after.Unsynced != 0 {
					t.Errorf("transaction %d: COMMIT returned with %d bytes of the log unsynced (%d syncs during it)", f.txs, after.Unsynced, after.Syncs-before.Syncs)
				}
			}
			bg, fg, _ := k.stats()
			t.Logf("checkpoints by the thread %d, by the writer %d; syncs of the log %d", bg, fg, syncvfs.Read().Syncs)
			// A transaction is some 150 frames: past a limit of 100 the
			// writer checkpoints itself at every other commit.
			if c.limit < 150 && fg < 2 || c.limit > 150 && fg != 0 {
				t.Errorf("checkpoints by the writer %d of 4 commits with a limit of %d frames", fg, c.limit)
			}
		})
	}
}
