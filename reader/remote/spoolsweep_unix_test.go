//go:build unix

package remote_test

import (
	"bytes"
	"context"
	"os"
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
	ctx := context.Background()
	dir := t.TempDir() + "/spool"
	open := func(key string) *remote.Spool {
		t.Helper()
		s.put(t, key, data(3000))
		obj, err := client(s).Open(ctx, s.url(key))
		if err != nil {
			t.Fatal(err)
		}
		return newSpool(t, obj, dir)
	}
	age := func(path string) {
		t.Helper()
		at := time.Now().Add(-remote.SpoolKeep - time.Hour)
		for _, p := range []string{path, path + ".sums"} {
			if err := os.Chtimes(p, at, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	kept := func(path string) bool {
		_, err := os.Lstat(path)
		_, serr := os.Lstat(path + ".sums")
		return err == nil && serr == nil
	}
	read := func(sp *remote.Spool) {
		t.Helper()
		got := make([]byte, 3000)
		if n, err := sp.ReadAt(got, 0); err != nil || n != 3000 || !bytes.Equal(got, data(3000)) {
			t.Fatalf("read %d bytes of the copy: %v", n, err)
		}
	}
	left := open("used.csv")
	read(left)
	left.Close() // an attempt that ended, leaving its copy
	age(left.Path())

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
	age(used.Path())
	open("third.csv")
	if kept(used.Path()) {
		t.Fatal("a copy unused for longer than SpoolKeep, which no one fills, stayed")
	}
	read(used)
}
