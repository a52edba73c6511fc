package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/remotetest"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/reader/remote"
)

// readAll reads the whole of a spool.
func readAll(t *testing.T, sp *remote.Spool) ([]byte, error) {
	t.Helper()
	rc, err := sp.Open(context.Background(), 0)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// newSpool returns a spool of obj in dir, closed when the test ends.
func newSpool(t *testing.T, obj *remote.Object, dir string) *remote.Spool {
	t.Helper()
	sp, err := remote.NewSpool(obj, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	return sp
}

// TestSpool: a spool downloads the object once, serves every read from
// the local copy, resumes a copy cut short by range, and refuses a
// replaced object.
func TestSpool(t *testing.T) {
	for _, s := range stores(t) {
		t.Run(s.name, func(t *testing.T) {
			want := data(500_000)
			s.put(t, "z.csv.gz", want)
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), "spool")
			// A first copy breaks off in its second range (64 KiB, then
			// 128 KiB), with no retry left.
			once := remote.New(remote.Options{Endpoint: s.srv.URL, PathStyle: true, Retry: remote.Retry{Attempts: 1}})
			obj, err := once.Open(ctx, s.url("z.csv.gz"))
			if err != nil {
				t.Fatal(err)
			}
			s.srv.Fail(remotetest.Fault{}, remotetest.Fault{CutAfter: 50_000})
			first := newSpool(t, obj, dir)
			if _, err := readAll(t, first); err == nil {
				t.Fatal("a copy cut short with no retry left did not fail")
			}
			first.Close() // as its attempt settles failed: the copy stays for the next
			if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
				t.Fatalf("spool directory: %v, mode %v; want 0700", err, st.Mode())
			}

			obj, err = client(s).Open(ctx, s.url("z.csv.gz"))
			if err != nil {
				t.Fatal(err)
			}
			sp := newSpool(t, obj, dir)
			s.srv.Reset()
			for i := 0; i < 3; i++ {
				rc, err := sp.Open(ctx, int64(i)*1000)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(rc)
				rc.Close()
				if !bytes.Equal(got, want[i*1000:]) {
					t.Fatalf("read %d: %d bytes", i, len(got))
				}
			}
			p := make([]byte, 10)
			if _, err := sp.ReadAt(p, 499_990); err != nil || !bytes.Equal(p, want[499_990:]) {
				t.Fatalf("ReadAt: %v", err)
			}
			// The first range, 64 KiB, was recorded; the 50,000 bytes of
			// the second that were written were not, and are fetched again.
			if c := s.srv.Counts(); c.Bytes != 500_000-64<<10 {
				t.Fatalf("fetched %d bytes, want the %d the copy lacked (%+v)", c.Bytes, 500_000-64<<10, c)
			}
			if runtime.GOOS != "windows" {
				st, err := os.Stat(sp.Path())
				if err != nil || st.Mode().Perm() != 0o600 {
					t.Fatalf("the copy: %v, mode %v; want 0600", err, st.Mode())
				}
			}
			if err := sp.Remove(); err != nil {
				t.Fatal(err)
			}
			if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 0 {
				t.Fatalf("the spool holds %v after Remove", names)
			}

			// Replaced before the copy is complete: source changed.
			sp = newSpool(t, obj, dir)
			s.put(t, "z.csv.gz", bytes.ToUpper(want))
			if _, err := sp.Open(ctx, 0); !errors.Is(err, reader.ErrSourceChanged) {
				t.Fatalf("replaced object: %v", err)
			}
			sp.Remove()
		})
	}
}

// TestSpoolFillersTakeTurns: spools of one object filled at once (by
// several processes, or as here by one) take turns: one downloads, the
// others find its copy complete and verified, and the object is fetched
// once.
func TestSpoolFillersTakeTurns(t *testing.T) {
	s := stores(t)[0]
	want := data(1 << 20)
	s.put(t, "t.csv.gz", want)
	ctx := context.Background()
	obj, err := client(s).Open(ctx, s.url("t.csv.gz"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "spool")
	s.srv.Reset()
	errs := make(chan error, 4)
	for range 4 {
		sp := newSpool(t, obj, dir)
		go func() {
			got, err := readAll(t, sp)
			if err == nil && !bytes.Equal(got, want) {
				err = errors.New("other bytes")
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if c := s.srv.Counts(); c.Bytes != int64(len(want)) {
		t.Fatalf("fetched %d bytes of a %d-byte object", c.Bytes, len(want))
	}
}

// TestSpoolCopying: a read-through spool fetches ranges of the object
// until a Copying stream fills it; the stream fills the copy as it is read
// (a reader of the spool meanwhile waits for its bytes, fetching none), a
// stream broken off leaves what it recorded for the next to resume, and a
// complete copy serves every read without a request.
func TestSpoolCopying(t *testing.T) {
	for _, s := range stores(t) {
		t.Run(s.name, func(t *testing.T) {
			want := data(500_000)
			s.put(t, "z.csv", want)
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), "spool")
			obj, err := client(s).Open(ctx, s.url("z.csv"))
			if err != nil {
				t.Fatal(err)
			}
			sp := newSpool(t, obj, dir)
			sp.ReadThrough()
			s.srv.Reset()
			p := make([]byte, 1000)
			if _, err := sp.ReadAt(p, 200_000); err != nil || !bytes.Equal(p, want[200_000:201_000]) {
				t.Fatalf("ReadAt: %v", err)
			}
			if c := s.srv.Counts(); c.Bytes != 1000 {
				t.Fatalf("a read-through ReadAt of 1000 bytes fetched %d", c.Bytes)
			}

			// Broken off after 100,000 bytes: 64 KiB were recorded.
			src := sp.Copying()
			rc, err := src.Open(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			head, err := sp.Open(ctx, 0) // follows the stream
			if err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 100_000)
			if _, err := io.ReadFull(rc, got); err != nil || !bytes.Equal(got, want[:100_000]) {
				t.Fatalf("copying stream: %v", err)
			}
			h := make([]byte, 50_000)
			if _, err := io.ReadFull(head, h); err != nil || !bytes.Equal(h, want[:50_000]) {
				t.Fatalf("a reader following the stream: %v", err)
			}
			head.Close()
			rc.Close()
			sp.Close()

			obj, err = client(s).Open(ctx, s.url("z.csv"))
			if err != nil {
				t.Fatal(err)
			}
			sp = newSpool(t, obj, dir)
			sp.ReadThrough()
			s.srv.Reset()
			rc, err = sp.Copying().Open(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			all, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(all, want) {
				t.Fatalf("resumed copying stream: %d bytes, %v", len(all), err)
			}
			if c := s.srv.Counts(); c.Bytes != 500_000-64<<10 {
				t.Fatalf("the resumed stream fetched %d bytes, want the %d the copy lacked (%+v)", c.Bytes, 500_000-64<<10, c)
			}
			s.srv.Reset()
			part := sp.OpenRange(ctx, 300_000, 400_000)
			b, err := io.ReadAll(part)
			part.Close()
			if err != nil || !bytes.Equal(b, want[300_000:400_000]) {
				t.Fatalf("OpenRange: %v", err)
			}
			if _, err := sp.ReadAt(p, 499_000); err != nil || !bytes.Equal(p, want[499_000:]) {
				t.Fatalf("ReadAt: %v", err)
			}
			if c := s.srv.Counts(); c.Requests() != 0 {
				t.Fatalf("reads of a complete copy made %+v", c)
			}
		})
	}
}

// TestSpoolQueryNamedCopyIsOfItsVersion: an object whose URL names it by
// its query (so its copy is named after the whole URL) and whose ETag
// proves its version is replaced by other bytes of the same size in the
// same second of Last-Modified: a later spool reads the new version, not
// the copy of the old one.
func TestSpoolQueryNamedCopyIsOfItsVersion(t *testing.T) {
	ctx := context.Background()
	srv := remotetest.NewHTTP(t)
	at := time.Now().Add(-time.Hour)
	v1 := data(200_000)
	v2 := bytes.Clone(v1)
	v2[100]++
	dir := filepath.Join(t.TempDir(), "spool")
	for i, v := range [][]byte{v1, v2} {
		srv.Put(t, "", "d.csv", v, at)
		obj, err := remote.New(remote.Options{}).Open(ctx, srv.URL+"/d.csv?day=2")
		if err != nil {
			t.Fatal(err)
		}
		sp := newSpool(t, obj, dir)
		if got, err := readAll(t, sp); err != nil || !bytes.Equal(got, v) {
			t.Fatalf("version %d: the spool read %d bytes, %v; not the object's", i+1, len(got), err)
		}
		sp.Close() // the copy stays, as after a failed attempt
	}
}

// TestSpoolReusesAroundABadRange: a read-through spool of an object whose
// version is proven reads the copy an earlier spool left range by range,
// as its sums file recorded them (64 KiB, 128 KiB, 256 KiB, the rest): a
// range whose bytes were changed on disk is fetched from the object, whole,
// when a read first meets it, and written back into the copy, the ranges
// before and after it are read from the copy, by OpenRange and by ReadAt,
// and a copy cut short is read as far as it holds whole ranges.
func TestSpoolReusesAroundABadRange(t *testing.T) {
	for _, s := range stores(t) {
		t.Run(s.name, func(t *testing.T) {
			want, open := reusedCopy(t, s)
			ctx := context.Background()
			sp := open()
			path := sp.Path()
			s.srv.Reset()
			p := make([]byte, 10_000)
			if _, err := sp.ReadAt(p, 60_000); err != nil || !bytes.Equal(p, want[60_000:70_000]) {
				t.Fatalf("ReadAt across the bad range's start: %v", err)
			}
			if c := s.srv.Settled(); c.Bytes != 128<<10 {
				t.Fatalf("ReadAt fetched %d bytes, want the bad range's %d (%+v)", c.Bytes, 128<<10, c)
			}
			s.srv.Reset()
			part := sp.OpenRange(ctx, 0, int64(len(want)))
			got, err := io.ReadAll(part)
			part.Close()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("OpenRange: %d bytes, %v; not the object's", len(got), err)
			}
			if c := s.srv.Settled(); c.Bytes != 0 {
				t.Fatalf("the whole object read fetched %d bytes, want none: the bad range was written back (%+v)", c.Bytes, c)
			}
			if _, err := sp.ReadAt(p, 490_000); err != nil || !bytes.Equal(p, want[490_000:]) {
				t.Fatalf("ReadAt of the last range: %v", err)
			}
			sp.Close()

			// Partitions read at once, each checking the ranges it meets.
			b := bytes.Clone(want)
			b[100_000]++
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			sp = open()
			s.srv.Reset()
			if err := readParts(sp, want, 4); err != nil {
				t.Fatalf("partitions read at once: %v", err)
			}
			if c := s.srv.Settled(); c.Bytes != 128<<10 {
				t.Fatalf("partitions read at once fetched %d bytes, want the bad range's %d (%+v)", c.Bytes, 128<<10, c)
			}
			sp.Close()

			// The copy cut inside its third range (192 KiB to 448 KiB).
			if err := os.Truncate(path, 300_000); err != nil {
				t.Fatal(err)
			}
			sp = open()
			s.srv.Reset()
			part = sp.OpenRange(ctx, 0, int64(len(want)))
			got, err = io.ReadAll(part)
			part.Close()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("OpenRange of a copy cut short: %d bytes, %v; not the object's", len(got), err)
			}
			if c, wantBytes := s.srv.Settled(), int64(len(want)-192<<10); c.Bytes != wantBytes {
				t.Fatalf("the whole object read fetched %d bytes, want %d: all past the second range (%+v)", c.Bytes, wantBytes, c)
			}
		})
	}
}

// TestSpoolMendsABadRange: a range of a reused copy that fails its check
// is fetched once and written back, so that the next spool of the object
// (the next rerun) fetches nothing: whether the range's bytes were changed
// on disk, or its recorded digest (which is then recorded again). A write
// back stopped after its first 64 KiB, before the byte changed, as a kill
// would stop it, leaves a range that the next spool fetches and mends
// again; every read is the object's bytes, and the copy ends up holding
// them.
func TestSpoolMendsABadRange(t *testing.T) {
	for _, s := range stores(t) {
		for _, how := range []string{"bytes", "digest", "stopped"} {
			t.Run(s.name+"/"+how, func(t *testing.T) {
				want, open, path := leftCopy(t, s)
				switch how {
				case "bytes", "stopped": // byte 150,000, of the second range (64 KiB to 192 KiB), past its first 64 KiB
					b := bytes.Clone(want)
					b[150_000]++
					if err := os.WriteFile(path, b, 0o600); err != nil {
						t.Fatal(err)
					}
				case "digest": // a byte of the second range's recorded digest
					sums, err := os.ReadFile(path + ".sums")
					if err != nil {
						t.Fatal(err)
					}
					sums[len("idemport spool sums v1\n")+8+48+16+5]++
					if err := os.WriteFile(path+".sums", sums, 0o600); err != nil {
						t.Fatal(err)
					}
				}
				fetched := []int64{128 << 10, 0}
				if how == "stopped" {
					// The stopped write back's fetch, the reads' own, then
					// the next spool's mend.
					fetched = []int64{2 * 128 << 10, 128 << 10, 0}
				}
				for run, wantBytes := range fetched {
					sp := open()
					if how == "stopped" && run == 0 {
						sp.Failpoints(func(name string) error {
							if name != "inside-mend" {
								t.Errorf("failpoint %s", name)
							}
							return errors.New("stopped")
						})
					}
					s.srv.Reset()
					if err := readParts(sp, want, 4); err != nil {
						t.Fatalf("run %d: %v", run, err)
					}
					if c := s.srv.Settled(); c.Bytes != wantBytes {
						t.Fatalf("run %d fetched %d bytes, want %d (%+v)", run, c.Bytes, wantBytes, c)
					}
					sp.Close()
				}
				if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("the copy: %d bytes, %v; not the object's", len(got), err)
				}
			})
		}
	}
}

// reusedCopy leaves in a new spool directory a complete copy of a 500,000
// byte object whose byte 100,000 (in the second range, 64 KiB to 192 KiB)
// was changed on disk since, and returns the object's bytes and a function
// that opens a read-through spool of the object there, as a resuming
// attempt does: that spool reuses the copy.
func reusedCopy(t *testing.T, s store) ([]byte, func() *remote.Spool) {
	t.Helper()
	want, open, path := leftCopy(t, s)
	b := bytes.Clone(want)
	b[100_000]++
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return want, open
}

// leftCopy leaves in a new spool directory a complete copy of a 500,000
// byte object, as an attempt killed after its hash does, and returns the
// object's bytes, a function that opens a read-through spool of the object
// there, as a resuming attempt does (that spool reuses the copy), and the
// copy's path.
func leftCopy(t *testing.T, s store) ([]byte, func() *remote.Spool, string) {
	t.Helper()
	want := data(500_000)
	s.put(t, "r.csv", want)
	ctx := context.Background()
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
	sp := open()
	rc, err := sp.Copying().Open(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(rc); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("copying stream: %d bytes, %v", len(got), err)
	}
	rc.Close()
	path := sp.Path()
	sp.Close()
	return want, open, path
}

// readParts reads [0, len(want)) of sp as parts partitions at once, each
// by OpenRange, and returns an error unless every byte is want's.
func readParts(sp *remote.Spool, want []byte, parts int) error {
	var wg sync.WaitGroup
	errs := make([]error, parts)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off, end := int64(i*len(want)/parts), int64((i+1)*len(want)/parts)
			b, err := io.ReadAll(sp.OpenRange(context.Background(), off, end))
			if err == nil && !bytes.Equal(b, want[off:end]) {
				err = fmt.Errorf("bytes %d-%d are not the object's", off, end)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// TestSpoolReusersContend: spools of one object that reuse the copy an
// earlier attempt left at the same time (a rerun and the worker that
// joins it) take the copy's locks in turn, each for a moment, to read its
// sums file: a spool that finds them held waits for them, and neither
// fetches a byte of the object. First the locks are held until the
// second spool has found them held; then two spools read the copy at once,
// ten times over.
func TestSpoolReusersContend(t *testing.T) {
	for _, s := range stores(t) {
		t.Run(s.name, func(t *testing.T) {
			want, open, path := leftCopy(t, s)
			release, err := remote.HoldCopyLock(path)
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			sp := open()
			met := false
			remote.MeetBusy(sp, func() { met = true; release() })
			s.srv.Reset()
			if err := readParts(sp, want, 1); err != nil {
				t.Fatalf("a read that found the copy's locks held: %v", err)
			}
			if c := s.srv.Settled(); c.Bytes != 0 || !met {
				t.Fatalf("a read that found the copy's locks held (found: %v) fetched %d bytes, want none: the copy holds them (%+v)", met, c.Bytes, c)
			}
			sp.Close()

			for round := range 10 {
				a, b := open(), open()
				s.srv.Reset()
				var wg sync.WaitGroup
				errs := make([]error, 2)
				for i, sp := range []*remote.Spool{a, b} {
					wg.Add(1)
					go func() {
						defer wg.Done()
						errs[i] = readParts(sp, want, 4)
					}()
				}
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if c := s.srv.Settled(); c.Bytes != 0 {
					t.Fatalf("round %d: two spools reading the copy at once fetched %d bytes, want none (%+v)", round, c.Bytes, c)
				}
				a.Close()
				b.Close()
			}
		})
	}
}

// TestSpoolReusedReadOfNothing: a read of no bytes from a range of a
// reused copy returns at once.
func TestSpoolReusedReadOfNothing(t *testing.T) {
	for _, s := range stores(t) {
		t.Run(s.name, func(t *testing.T) {
			_, open := reusedCopy(t, s)
			sp := open()
			part := sp.OpenRange(context.Background(), 300_000, 400_000)
			defer part.Close()
			done := make(chan error, 1)
			go func() {
				_, err := part.Read(nil)
				done <- err
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Read(nil): %v", err)
				}
			case <-time.After(10 * time.Second): // a hang, not a timing
				t.Fatal("Read(nil) did not return")
			}
		})
	}
}

// TestSpoolReusedReadsSurviveACut: a range of a reused copy that checked
// good is still read whole when a copying stream, of the same spool or of
// another spool of the object, checks the copy and cuts it at its bad
// range meanwhile: the bytes past the cut are the object's.
func TestSpoolReusedReadsSurviveACut(t *testing.T) {
	ctx := context.Background()
	for _, s := range stores(t) {
		t.Run(s.name, func(t *testing.T) {
			for _, by := range []string{"same spool", "another spool"} {
				want, open := reusedCopy(t, s)
				sp := open()
				part := sp.OpenRange(ctx, 300_000, 400_000)
				head := make([]byte, 1_000)
				if _, err := io.ReadFull(part, head); err != nil || !bytes.Equal(head, want[300_000:301_000]) {
					t.Fatalf("%s: first 1,000 bytes: %v", by, err)
				}
				p := make([]byte, 1_000)
				if _, err := sp.ReadAt(p, 350_000); err != nil || !bytes.Equal(p, want[350_000:351_000]) {
					t.Fatalf("%s: ReadAt before the cut: %v", by, err)
				}
				filler := sp
				if by == "another spool" {
					filler = open()
				}
				rc, err := filler.Copying().Open(ctx, 0)
				if err != nil {
					t.Fatalf("%s: copying stream: %v", by, err)
				}
				rest, err := io.ReadAll(part)
				part.Close()
				if err != nil || !bytes.Equal(rest, want[301_000:400_000]) {
					t.Fatalf("%s: rest of the range after the cut: %d bytes, %v", by, len(rest), err)
				}
				if filler != sp { // the same spool's ReadAt waits for the stream
					if _, err := sp.ReadAt(p, 380_000); err != nil || !bytes.Equal(p, want[380_000:381_000]) {
						t.Fatalf("%s: ReadAt after the cut: %v", by, err)
					}
				}
				if got, err := io.ReadAll(rc); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%s: copying stream: %d bytes, %v", by, len(got), err)
				}
				rc.Close()
			}
		})
	}
}
