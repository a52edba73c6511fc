package remote

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/windows"
)

// private accepts the spool directory: on Windows a directory in the
// user's profile (the default, under the local cache directory) is
// private by its ACL, which this check does not read.
func private(fs.FileInfo) error { return nil }

// ownFile accepts a spool file: see private.
func ownFile(fs.FileInfo) error { return nil }

// lockFile takes an exclusive lock on f, waiting while another process
// holds it, and returns its release.
func lockFile(ctx context.Context, f *os.File) (func(), error) {
	return lockByte(ctx, f, windows.LOCKFILE_EXCLUSIVE_LOCK, 0)
}

// useByte is the byte of a copy its use lock locks: far past the end of
// any copy, as a shared lock denies writes to the bytes it locks, to its
// holder too.
const useByte = 1 << 62

// lockUse takes the use lock on f, a copy: shared, as a spool holds it for
// as long as it has the copy open, or exclusive, as Remove takes it to
// learn that no other spool has; waiting while another holder's lock
// conflicts, and returns its release.
func lockUse(ctx context.Context, f *os.File, shared bool) (func(), error) {
	var flags uint32 = windows.LOCKFILE_EXCLUSIVE_LOCK
	if shared {
		flags = 0
	}
	return lockByte(ctx, f, flags, useByte)
}

func lockByte(ctx context.Context, f *os.File, flags uint32, off uint64) (func(), error) {
	h := windows.Handle(f.Fd())
	at := func() *windows.Overlapped {
		return &windows.Overlapped{Offset: uint32(off), OffsetHigh: uint32(off >> 32)}
	}
	for {
		err := windows.LockFileEx(h, flags|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, at())
		if err == nil {
			return func() { windows.UnlockFileEx(h, 0, 1, 0, at()) }, nil
		}
		if !errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
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
