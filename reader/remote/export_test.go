package remote

import (
	"context"
	"os"
	"sync"
	"time"
)

// SweepSpool sweeps dir as a new spool named keep does at now, calling
// meet with each copy it found old before it takes that copy's lock.
func SweepSpool(dir, keep string, now time.Time, meet func(name string)) error {
	root, err := openPrivateDir(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	sweepSpool(root, keep, now, nil, meet)
	return nil
}

// MeetBusy makes sp call meet, from the read that reuses the copy an
// earlier attempt left, when that read finds the copy's fill lock held.
func MeetBusy(sp *Spool, meet func()) { sp.busy = meet }

// HoldCopyLock takes the fill lock of the copy at path, as a spool does
// that fills the copy or reads its sums file, and returns its release.
func HoldCopyLock(path string) (func(), error) {
	sums, err := os.OpenFile(path+".sums", os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	unlock, err := lockFile(context.Background(), sums)
	if err != nil {
		sums.Close()
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { unlock(); sums.Close() }) }, nil
}
