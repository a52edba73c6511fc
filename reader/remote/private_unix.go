//go:build unix

package remote

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// private checks that the spool directory st describes is this user's and
// that no one else may write in it.
func private(st fs.FileInfo) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Geteuid(); int(sys.Uid) != uid {
		return fmt.Errorf("%w: it is owned by uid %d, not by this user (uid %d), who could read or replace its copies; remove it, or choose another with --spool-dir",
			ErrSpoolDir, sys.Uid, uid)
	}
	if perm := st.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%w: others may write in it (mode %04o) and plant or replace its copies; make it 0700 (chmod go-w), or choose another with --spool-dir",
			ErrSpoolDir, perm)
	}
	return nil
}

// ownFile checks that a spool file is this user's, that only they can
// read or write it, and that it has no other name.
func ownFile(st fs.FileInfo) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return nil
	case int(sys.Uid) != os.Geteuid():
		return errors.New("owned by another user")
	case st.Mode().Perm()&0o077 != 0:
		return errors.New("others may read or write it")
	case sys.Nlink != 1:
		return errors.New("it has other hard links")
	}
	return nil
}

// lockFile takes an exclusive lock on f, waiting while another process
// holds it, and returns its release.
func lockFile(ctx context.Context, f *os.File) (func(), error) {
	return flock(ctx, f, syscall.LOCK_EX)
}

// lockUse takes the use lock on f, a copy: shared, as a spool holds it for
// as long as it has the copy open, or exclusive, as Remove takes it to
// learn that no other spool has; waiting while another holder's lock
// conflicts, and returns its release.
func lockUse(ctx context.Context, f *os.File, shared bool) (func(), error) {
	if shared {
		return flock(ctx, f, syscall.LOCK_SH)
	}
	return flock(ctx, f, syscall.LOCK_EX)
}

func flock(ctx context.Context, f *os.File, how int) (func(), error) {
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}
