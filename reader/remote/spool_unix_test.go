//go:build unix

package remote_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/reader/remote"
)

// TestSpoolDirectoryMustBePrivate: a spool directory that others may write
// in, or that another user owns, is refused before anything is read or
// written in it, with an error wrapping ErrSpoolDir.
func TestSpoolDirectoryMustBePrivate(t *testing.T) {
	s := stores(t)[1]
	s.put(t, "p.csv.gz", data(1000))
	obj, err := client(s).Open(context.Background(), s.url("p.csv.gz"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"world-writable", func(t *testing.T, dir string) { os.Chmod(dir, 0o777) }},
		{"group-writable", func(t *testing.T, dir string) { os.Chmod(dir, 0o770) }},
		{"owned by nobody", func(t *testing.T, dir string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a directory to nobody")
			}
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
		{"a link to a directory nobody owns", func(t *testing.T, dir string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a directory to nobody")
			}
			other := dir + ".other"
			os.Mkdir(other, 0o700)
			os.Chown(other, 65534, 65534)
			os.Remove(dir)
			os.Symlink(other, dir)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "spool")
			os.Mkdir(dir, 0o700)
			tc.setup(t, dir)
			before, _ := filepath.Glob(filepath.Join(dir, "*"))
			sp, err := remote.NewSpool(obj, dir)
			if !errors.Is(err, remote.ErrSpoolDir) {
				if sp != nil {
					sp.Close()
				}
				t.Fatalf("NewSpool in a %s directory: %v, want ErrSpoolDir", tc.name, err)
			}
			if after, _ := filepath.Glob(filepath.Join(dir, "*")); len(after) != len(before) {
				t.Fatalf("the refused directory holds %v, held %v", after, before)
			}
		})
	}
	// A private directory of this user's, even 0755, is accepted.
	dir := filepath.Join(t.TempDir(), "spool")
	os.Mkdir(dir, 0o755)
	sp, err := remote.NewSpool(obj, dir)
	if err != nil {
		t.Fatalf("a 0755 directory of the user's own: %v", err)
	}
	sp.Close()
}

// TestSpoolPlantedEntries: whatever is found at the copy's name or its
// sums file's (a symbolic link to a file of the user's, a second hard link
// to one, a file of the right size with other bytes, a sums file that
// vouches for other bytes, a copy changed after it was written) is never
// written through nor trusted: the linked files are unchanged, and the
// spool serves exactly the object's bytes, fetching what it cannot verify.
func TestSpoolPlantedEntries(t *testing.T) {
	s := stores(t)[1]
	want := data(300_000)
	s.put(t, "q.csv.gz", want)
	ctx := context.Background()
	obj, err := client(s).Open(ctx, s.url("q.csv.gz"))
	if err != nil {
		t.Fatal(err)
	}
	victimText := []byte("a file of the user's that must not change\n")
	other := bytes.Repeat([]byte("P"), len(want)) // the object's size, other bytes
	cases := []struct {
		name  string
		plant func(t *testing.T, copyPath, victim string)
		fetch int64 // bytes the spool must fetch
	}{
		{"symlink at the copy", func(t *testing.T, copyPath, victim string) {
			os.Symlink(victim, copyPath)
		}, 300_000},
		{"symlink at the sums", func(t *testing.T, copyPath, victim string) {
			os.Symlink(victim, copyPath+".sums")
		}, 300_000},
		{"dangling symlink at the copy", func(t *testing.T, copyPath, victim string) {
			os.Symlink(victim+".new", copyPath)
		}, 300_000},
		{"hard link at the copy", func(t *testing.T, copyPath, victim string) {
			if err := os.Link(victim, copyPath); err != nil {
				t.Fatal(err)
			}
		}, 300_000},
		{"a file of the right size", func(t *testing.T, copyPath, victim string) {
			os.WriteFile(copyPath, other, 0o600)
		}, 300_000},
		{"a file others may write", func(t *testing.T, copyPath, victim string) {
			os.WriteFile(copyPath, want, 0o666)
			os.Chmod(copyPath, 0o666)
		}, 300_000},
		{"a copy changed after it was written", func(t *testing.T, copyPath, victim string) {
			f, err := os.OpenFile(copyPath, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte("X"), 100_000) // in the second range, of 128 KiB after 64 KiB
			f.Close()
		}, 300_000 - 64<<10},
		{"sums of other bytes", func(t *testing.T, copyPath, victim string) {
			os.WriteFile(copyPath, other, 0o600)
		}, 300_000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			victim := filepath.Join(base, "victim.txt")
			os.WriteFile(victim, victimText, 0o600)
			dir := filepath.Join(base, "spool")
			sp := newSpool(t, obj, dir)
			if tc.name == "a copy changed after it was written" || tc.name == "sums of other bytes" {
				if got, err := readAll(t, sp); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("first copy: %d bytes, %v", len(got), err)
				}
				sp.Close()
			}
			tc.plant(t, sp.Path(), victim)
			s.srv.Reset()
			sp = newSpool(t, obj, dir)
			got, err := readAll(t, sp)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("read %d bytes (the object's: %v), err %v", len(got), bytes.Equal(got, want), err)
			}
			if c := s.srv.Counts(); c.Bytes != tc.fetch {
				t.Fatalf("fetched %d bytes, want %d", c.Bytes, tc.fetch)
			}
			if b, _ := os.ReadFile(victim); !bytes.Equal(b, victimText) {
				t.Fatalf("the linked file now holds %d bytes", len(b))
			}
			if _, err := os.Lstat(victim + ".new"); err == nil {
				t.Fatal("a dangling link's target was created")
			}
			for _, p := range []string{sp.Path(), sp.Path() + ".sums"} {
				st, err := os.Lstat(p)
				if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 || st.Sys().(*syscall.Stat_t).Nlink != 1 {
					t.Fatalf("%s: %v %v, want a regular file 0600 with one link", p, st.Mode(), err)
				}
			}
		})
	}
}

// TestSpoolSweepsStaleCopies: a new spool removes the copies of other
// objects that nothing has written for SpoolKeep, with their sums files,
// and leaves its own object's copy however old, a recent copy, a stale
// copy whose sums file another process holds locked (it is filling it),
// and files of another name.
func TestSpoolSweepsStaleCopies(t *testing.T) {
	s := stores(t)[1]
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "spool")
	copyOf := func(key string) (*remote.Object, string) {
		t.Helper()
		s.put(t, key, data(3000))
		obj, err := client(s).Open(ctx, s.url(key))
		if err != nil {
			t.Fatal(err)
		}
		sp := newSpool(t, obj, dir)
		if got, err := readAll(t, sp); err != nil || !bytes.Equal(got, data(3000)) {
			t.Fatalf("copy of %s: %v", key, err)
		}
		sp.Close()
		return obj, sp.Path()
	}
	age := func(path string, by time.Duration) {
		t.Helper()
		at := time.Now().Add(-by)
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	own, ownPath := copyOf("own.csv")
	_, stale := copyOf("stale.csv")
	_, recent := copyOf("recent.csv")
	_, locked := copyOf("locked.csv")
	_, halfRecent := copyOf("half.csv")
	_, noSums := copyOf("nosums.csv")
	if err := os.Remove(noSums + ".sums"); err != nil {
		t.Fatal(err)
	}
	age(noSums, remote.SpoolKeep+time.Hour)
	for _, p := range []string{ownPath, stale, locked, halfRecent} {
		age(p, remote.SpoolKeep+time.Hour)
		age(p+".sums", remote.SpoolKeep+time.Hour)
	}
	age(recent, remote.SpoolKeep-time.Hour)
	age(recent+".sums", remote.SpoolKeep-time.Hour)
	age(halfRecent+".sums", time.Minute) // its sums file was written a minute ago
	orphan := filepath.Join(dir, "idemport-0123456789abcdef01234567.spool.sums")
	other := filepath.Join(dir, "notes.spool")
	for _, p := range []string{orphan, other} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		age(p, remote.SpoolKeep+time.Hour)
	}
	f, err := os.OpenFile(locked+".sums", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}

	sp := newSpool(t, own, dir) // the sweep runs here
	for path, want := range map[string]bool{
		ownPath: true, ownPath + ".sums": true,
		stale: false, stale + ".sums": false,
		recent: true, recent + ".sums": true,
		locked: true, locked + ".sums": true,
		halfRecent: true, halfRecent + ".sums": true,
		noSums: false, orphan: false, other: true,
	} {
		_, err := os.Lstat(path)
		if got := err == nil; got != want {
			t.Errorf("%s: exists %v after the sweep, want %v (%v)", filepath.Base(path), got, want, err)
		}
	}
	// The old copy of its own object is still read from, not fetched again.
	s.srv.Reset()
	if got, err := readAll(t, sp); err != nil || !bytes.Equal(got, data(3000)) {
		t.Fatalf("own copy: %v", err)
	}
	if c := s.srv.Counts(); c.Bytes != 0 {
		t.Fatalf("the spool's own old copy was fetched again (%d bytes)", c.Bytes)
	}
}

// TestSpoolUnprovenCopyIsItsOwn: the copy of an object whose server sends
// neither an ETag nor a Last-Modified, complete or cut short as a killed
// attempt leaves it, is not read by a later spool of the object, which
// reads the object as it is now (replaced by other bytes of the same
// size); that spool removes the copy left, but not one another spool has
// open, which reads on from it.
func TestSpoolUnprovenCopyIsItsOwn(t *testing.T) {
	for _, how := range []string{"complete", "partial"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			v1 := data(300_000)
			v2 := bytes.Clone(v1)
			v2[10]++
			v2[len(v2)-10]++
			var current atomic.Pointer[[]byte]
			current.Store(&v1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(*current.Load()))
			}))
			t.Cleanup(srv.Close)
			c := remote.New(remote.Options{})
			open := func() *remote.Object {
				t.Helper()
				obj, err := c.Open(ctx, srv.URL+"/daily.csv")
				if err != nil {
					t.Fatal(err)
				}
				return obj
			}
			copying := func(sp *remote.Spool, n int64) []byte {
				t.Helper()
				rc, err := sp.Copying().Open(ctx, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer rc.Close()
				got, err := io.ReadAll(io.LimitReader(rc, n))
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			dir := filepath.Join(t.TempDir(), "spool")
			copies := func() []string {
				names, _ := filepath.Glob(filepath.Join(dir, "*.spool"))
				return names
			}

			live := newSpool(t, open(), dir) // another live import of v1, its copy open
			if got := copying(live, int64(len(v1))); !bytes.Equal(got, v1) {
				t.Fatal("the live spool read other bytes than the object's")
			}
			left := newSpool(t, open(), dir) // an attempt killed with its copy so far
			n := int64(len(v1))
			if how == "partial" {
				n = 100_000 // the first range, of 64 KiB, is recorded
			}
			if got := copying(left, n); !bytes.Equal(got, v1[:n]) {
				t.Fatal("the killed attempt read other bytes than the object's")
			}
			left.Close()
			if names := copies(); len(names) != 2 {
				t.Fatalf("spool before the rerun: %v, want two copies", names)
			}

			current.Store(&v2)
			sp := newSpool(t, open(), dir)
			if got := copying(sp, int64(len(v2))); !bytes.Equal(got, v2) {
				i := 0
				for i < len(got) && i < len(v2) && got[i] == v2[i] {
					i++
				}
				t.Fatalf("the rerun read %d bytes that differ from the object's at byte %d (the copy left has %d bytes)", len(got), i, n)
			}
			buf := make([]byte, 20)
			if _, err := sp.ReadAt(buf, int64(len(v2))-20); err != nil || !bytes.Equal(buf, v2[len(v2)-20:]) {
				t.Fatalf("the rerun's copy reads %q, %v; want the object's last bytes", buf, err)
			}
			if _, err := os.Stat(left.Path()); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the copy the killed attempt left is still there: %v", err)
			}
			if _, err := live.ReadAt(buf, int64(len(v1))-20); err != nil || !bytes.Equal(buf, v1[len(v1)-20:]) {
				t.Fatalf("the live spool's copy reads %q, %v; want the bytes it read", buf, err)
			}
			for _, s := range []*remote.Spool{sp, live} {
				if err := s.Remove(); err != nil {
					t.Fatal(err)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
				t.Fatalf("the spool holds %v once every import settled", left)
			}
		})
	}
}

// TestSpoolReusedWhileFilled: a spool that reuses the copy while another
// spool of the object in the same directory fills it (a worker joining an
// import, a rerun started while another import of the object hashes it),
// which holds the copy's fill lock for as long as it fills, neither waits
// for that lock nor leaves the copy to the filler: it reads the ranges the
// filler has recorded from the copy at once, the rest from the object,
// through OpenRange and through ReadAt alike; and the filler then
// completes the copy. The fill lock is found held (the test meets the
// spool there), and the bytes fetched are exactly those the copy did not
// hold yet.
func TestSpoolReusedWhileFilled(t *testing.T) {
	ctx := context.Background()
	for _, s := range stores(t) {
		t.Run(s.name, func(t *testing.T) {
			for _, how := range []string{"OpenRange", "ReadAt"} {
				want := data(500_000)
				s.put(t, "r.csv", want)
				dir := filepath.Join(t.TempDir(), "spool")
				open := func() *remote.Spool {
					t.Helper()
					obj, err := client(s).Open(ctx, s.url("r.csv"))
					if err != nil {
						t.Fatal(err)
					}
					sp := newSpool(t, obj, dir)
					sp.ReadThrough()
					return sp
				}
				// An attempt stopped after 100,000 bytes: the first
				// range, 65,536 bytes, is recorded.
				first := open()
				rc, err := first.Copying().Open(ctx, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(rc, make([]byte, 100_000)); err != nil {
					t.Fatal(err)
				}
				rc.Close()
				first.Close()

				// The filler: its stream has checked the copy and holds
				// the fill lock, and has fetched nothing more yet.
				filler := open()
				fill, err := filler.Copying().Open(ctx, 0)
				if err != nil {
					t.Fatal(err)
				}

				sp := open()
				met := 0
				remote.MeetBusy(sp, func() { met++ })
				s.srv.Reset()
				if how == "OpenRange" {
					err = readParts(sp, want, 4)
				} else {
					b := make([]byte, len(want))
					var n int
					n, err = sp.ReadAt(b, 0)
					if err == nil && (n != len(want) || !bytes.Equal(b, want)) {
						err = errors.New("ReadAt: not the object's bytes")
					}
				}
				if err != nil {
					t.Fatalf("%s while another spool fills the copy: %v", how, err)
				}
				if c := s.srv.Settled(); met != 1 || c.Bytes != int64(len(want)-65_536) {
					t.Fatalf("%s while another spool fills the copy: found its lock held %d times (want 1), fetched %d bytes, want %d: the 65,536 the copy holds are read from it (%+v)",
						how, met, c.Bytes, len(want)-65_536, c)
				}

				if got, err := io.ReadAll(fill); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%s: the filler read %d bytes, %v", how, len(got), err)
				}
				fill.Close()
				sp.Close()
				again := open()
				s.srv.Reset()
				if err := readParts(again, want, 4); err != nil {
					t.Fatal(err)
				}
				if c := s.srv.Settled(); c.Bytes != 0 {
					t.Fatalf("%s: a spool after the filler fetched %d bytes, want none (%+v)", how, c.Bytes, c)
				}
			}
		})
	}
}

// TestSpoolReusedCutByFiller: a spool that reuses a copy whose second
// range was changed on disk, and whose reads reach that range only after
// another spool of the object in the same directory began filling the
// copy (that spool's stream checked it, cut it at the changed range, and
// holds its fill lock for as long as it fills), reads every range past
// the cut from the object without waiting for the lock to mend it: the
// test meets the spool wherever it finds that lock held, and meets it
// nowhere.
func TestSpoolReusedCutByFiller(t *testing.T) {
	ctx := context.Background()
	for _, s := range stores(t) {
		t.Run(s.name, func(t *testing.T) {
			want, open := reusedCopy(t, s)
			sp := open()
			met := 0
			remote.MeetBusy(sp, func() { met++ })
			head := make([]byte, 1_000)
			if _, err := sp.ReadAt(head, 0); err != nil || !bytes.Equal(head, want[:1_000]) {
				t.Fatalf("first read: %v", err)
			}
			filler := open()
			fill, err := filler.Copying().Open(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer fill.Close()
			s.srv.Reset()
			if err := readParts(sp, want, 4); err != nil {
				t.Fatal(err)
			}
			if c := s.srv.Settled(); met != 0 || c.Bytes != int64(len(want)-65_536) {
				t.Fatalf("reads past the filler's cut found its lock held %d times (want none) and fetched %d bytes, want %d: the copy's first 65,536 (%+v)",
					met, c.Bytes, len(want)-65_536, c)
			}
		})
	}
}
