//go:build unix

package remote_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemport/idemport/reader/remote"
)

// TestSpoolSweepKeepsACopyInUse: a spool that reads a copy left long ago
// (nothing has written it for longer than SpoolKeep) marks it used, so
// that another object's new spool in the same directory leaves it; once
// it has aged past SpoolKeep again, as if its reader had been stopped
// that long, the sweep removes it, and the reader reads on, every byte
// right, from the copy it holds open.
func TestSpoolSweepKeepsACopyInUse(t *testing.T) {
	s := stores(t)[1]
	open, read := sweepSpools(t, s, t.TempDir()+"/spool")
	left := open("used.csv")
	read(left)
	left.Close() // an attempt that ended, leaving its copy
	age(t, left.Path())

	used := open("used.csv")
	s.srv.Reset()
	read(used)
	if c := s.srv.Counts(); c.Bytes != 0 {
		t.Fatalf("the copy left was fetched again (%d bytes)", c.Bytes)
	}
	open("other.csv") // sweeps
	if !kept(used.Path()) {
		t.Fatal("a new spool swept a copy another spool reads")
	}
	age(t, used.Path())
	open("third.csv")
	if kept(used.Path()) {
		t.Fatal("a copy unused for longer than SpoolKeep, which no one fills, stayed")
	}
	read(used)
}

// TestSpoolSweepMeetsAnOpener: a spool that opens a copy the sweep has
// just found old (left by an attempt more than SpoolKeep before), before
// the sweep takes its lock, keeps it: the sweep decides again under the
// lock, which the spool holds while it marks the copy used, and a worker
// joining it reads the copy without fetching the object. (Unix: Windows
// refuses to remove a file another handle has open, whatever the sweep
// decides.)
func TestSpoolSweepMeetsAnOpener(t *testing.T) {
	s := stores(t)[1]
	dir := t.TempDir() + "/spool"
	open, read := sweepSpools(t, s, dir)
	left := open("used.csv")
	read(left)
	left.Close() // an attempt that ended, leaving its copy
	age(t, left.Path())

	met := false
	err := remote.SweepSpool(dir, "", time.Now(), func(name string) {
		if name != filepath.Base(left.Path()) {
			return
		}
		met = true
		read(open("used.csv")) // its rerun opens the copy, in the sweep's window
	})
	if err != nil || !met {
		t.Fatalf("the sweep did not find the copy old (%v)", err)
	}
	for _, p := range []string{left.Path(), left.Path() + ".sums"} {
		if _, err := os.Lstat(p); err != nil {
			t.Fatalf("the sweep removed a copy a spool opened after it found it old: %v", err)
		}
	}
	joined := open("used.csv")
	s.srv.Reset()
	read(joined)
	if c := s.srv.Counts(); c.Bytes != 0 {
		t.Fatalf("a worker joining the rerun fetched the object again (%d bytes)", c.Bytes)
	}
}

// TestSpoolRemoveLeavesAnothersCopy: a spool's Remove (an import that
// settles) deletes its copy only when no other spool has it open and it is
// still the file the spool had open; a spool that never read removes the
// copy an attempt left. (Unix: Windows refuses to remove a file another
// handle has open, whatever Remove decides.)
func TestSpoolRemoveLeavesAnothersCopy(t *testing.T) {
	s := stores(t)[1]
	for _, tc := range []string{"in use", "made anew", "left"} {
		t.Run(tc, func(t *testing.T) {
			open, read := sweepSpools(t, s, t.TempDir()+"/spool")
			settled := open("x.csv")
			switch tc {
			case "in use": // another import of the object reads the copy
				read(settled)
				read(open("x.csv"))
			case "made anew": // its copy swept while it was stopped, then made again by another import, which failed
				read(settled)
				age(t, settled.Path())
				open("other.csv") // sweeps
				if kept(settled.Path()) {
					t.Fatal("the old copy was not swept")
				}
				other := open("x.csv")
				read(other)
				other.Close()
			case "left": // an earlier attempt's copy; this spool never reads
				left := open("x.csv")
				read(left)
				left.Close()
			}
			if err := settled.Remove(); err != nil {
				t.Fatal(err)
			}
			if tc == "left" {
				if kept(settled.Path()) {
					t.Fatal("the copy an attempt left stayed once its import settled")
				}
				return
			}
			if !kept(settled.Path()) {
				t.Fatal("a settled import removed another import's copy")
			}
			sp := open("x.csv")
			s.srv.Reset()
			read(sp)
			if c := s.srv.Counts(); c.Bytes != 0 {
				t.Fatalf("the other import's copy was fetched again (%d bytes)", c.Bytes)
			}
			if err := sp.Remove(); err != nil {
				t.Fatal(err)
			}
			if tc == "made anew" && kept(sp.Path()) {
				t.Fatal("the last import of the object to settle left its copy")
			}
		})
	}
}

// sweepSpools returns the spools the sweep's tests use, all in dir: open
// puts key in s, 3,000 bytes of data, and returns a new spool of it,
// closed when t ends; read reads a spool whole and fails t unless it reads
// those bytes.
func sweepSpools(t *testing.T, s store, dir string) (open func(key string) *remote.Spool, read func(sp *remote.Spool)) {
	open = func(key string) *remote.Spool {
		t.Helper()
		s.put(t, key, data(3000))
		obj, err := client(s).Open(context.Background(), s.url(key))
		if err != nil {
			t.Fatal(err)
		}
		return newSpool(t, obj, dir)
	}
	read = func(sp *remote.Spool) {
		t.Helper()
		got := make([]byte, 3000)
		if n, err := sp.ReadAt(got, 0); err != nil || n != 3000 || !bytes.Equal(got, data(3000)) {
			t.Fatalf("read %d bytes of the copy: %v", n, err)
		}
	}
	return open, read
}

// age makes the copy at path and its sums file look unused for longer
// than SpoolKeep.
func age(t *testing.T, path string) {
	t.Helper()
	at := time.Now().Add(-remote.SpoolKeep - time.Hour)
	for _, p := range []string{path, path + ".sums"} {
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
}

// kept reports whether the copy at path and its sums file are both there.
func kept(path string) bool {
	_, err := os.Lstat(path)
	_, serr := os.Lstat(path + ".sums")
	return err == nil && serr == nil
}
