package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/remotetest"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/reader/remote"
)

// store is one kind of server under test with the URL of a key in it.
type store struct {
	name string
	srv  *remotetest.Server
	url  func(key string) string
	put  func(t *testing.T, key string, data []byte)
}

func stores(t *testing.T) []store {
	s3 := remotetest.NewS3(t, "bkt")
	s3.SetEnv(t)
	h := remotetest.NewHTTP(t)
	return []store{
		{name: "s3", srv: s3, url: func(k string) string { return "s3://bkt/" + k },
			put: func(t *testing.T, k string, d []byte) { s3.Put(t, "bkt", k, d, time.Time{}) }},
		{name: "http", srv: h, url: func(k string) string { return h.URL + "/" + k },
			put: func(t *testing.T, k string, d []byte) { h.Put(t, "", k, d, time.Time{}) }},
	}
}

func client(s store) *remote.Client {
	return remote.New(remote.Options{Endpoint: s.srv.URL, PathStyle: true, Retry: remote.Retry{Base: time.Millisecond, Max: 5 * time.Millisecond}})
}

func data(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%d,row %d\n", i, i)
	}
	return b.Bytes()[:n]
}

func TestReadWhole(t *testing.T) {
	for _, s := range stores(t) {
		t.Run(s.name, func(t *testing.T) {
			want := data(300_000)
			s.put(t, "dir/a.csv", want)
			s.srv.Reset()
			ctx := context.Background()
			obj, err := client(s).Open(ctx, s.url("dir/a.csv"))
			if err != nil {
				t.Fatal(err)
			}
			if obj.Size() != int64(len(want)) || obj.Info().ETag == "" || obj.ModTime().IsZero() {
				t.Fatalf("info %+v", obj.Info())
			}
			rc, err := obj.Open(ctx, 1000)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(got, want[1000:]) {
				t.Fatalf("read from 1000: %d bytes, err %v", len(got), err)
			}
			p := make([]byte, 500)
			if n, err := obj.ReadAt(p, 7000); err != nil || n != 500 || !bytes.Equal(p, want[7000:7500]) {
				t.Fatalf("ReadAt: %d %v", n, err)
			}
			if n, err := obj.ReadAt(p, int64(len(want))-100); err != io.EOF || n != 100 || !bytes.Equal(p[:n], want[len(want)-100:]) {
				t.Fatalf("ReadAt at the end: %d %v", n, err)
			}
			c := s.srv.Counts()
			// The stream is three windows of 64, 128 and 256 KiB; then two ReadAts.
			if c.Head != 1 || c.Get != 5 || c.Bytes != int64(len(want)-1000+500+100) {
				t.Fatalf("counts %+v", c)
			}
			if err := obj.Check(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestStopEarly: a reader that stops early has not made the server send
// the rest of the object, only the rest of a window.
func TestStopEarly(t *testing.T) {
	for _, s := range stores(t) {
		t.Run(s.name, func(t *testing.T) {
			s.put(t, "big.csv", data(8<<20))
			ctx := context.Background()
			obj, err := client(s).Open(ctx, s.url("big.csv"))
			if err != nil {
				t.Fatal(err)
			}
			s.srv.Reset()
			rc, _ := obj.Open(ctx, 1<<20)
			if _, err := io.ReadFull(rc, make([]byte, 300<<10)); err != nil {
				t.Fatal(err)
			}
			rc.Close()
			if c := s.srv.Counts(); c.Get != 3 || c.Bytes > (64+128+256)<<10 {
				t.Fatalf("read 300 KiB, fetched %+v", c)
			}
		})
	}
}

// TestFaults: every retryable failure ends with exactly the object's bytes.
func TestFaults(t *testing.T) {
	faults := []struct {
		name string
		f    []remotetest.Fault
	}{
		{"500", []remotetest.Fault{{Status: 500}, {Status: 500}}},
		{"slowdown", []remotetest.Fault{{Status: 503, Code: "SlowDown"}}},
		{"429", []remotetest.Fault{{Status: 429, Code: "TooManyRequests"}}},
		{"cut mid-body", []remotetest.Fault{{CutAfter: 30_000}, {CutAfter: 10}}},
		{"everything", []remotetest.Fault{{Status: 500}, {CutAfter: 1}, {Status: 503, Code: "SlowDown"}, {CutAfter: 50_000}}},
	}
	for _, s := range stores(t) {
		want := data(250_000)
		s.put(t, "f.csv", want)
		for _, tc := range faults {
			t.Run(s.name+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				c := client(s)
				obj, err := c.Open(ctx, s.url("f.csv"))
				if err != nil {
					t.Fatal(err)
				}
				s.srv.Reset()
				s.srv.Fail(tc.f...)
				rc, _ := obj.Open(ctx, 0)
				got, err := io.ReadAll(rc)
				rc.Close()
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("got %d bytes, want %d; err %v", len(got), len(want), err)
				}
				if n := c.Stats.Retries.Load(); n != int64(len(tc.f)) {
					t.Fatalf("%d retries, want one per fault (%d)", n, len(tc.f))
				}
			})
		}
	}
}

func TestGivesUp(t *testing.T) {
	for _, s := range stores(t) {
		t.Run(s.name, func(t *testing.T) {
			s.put(t, "g.csv", data(1000))
			ctx := context.Background()
			c := remote.New(remote.Options{Endpoint: s.srv.URL, PathStyle: true, Retry: remote.Retry{Attempts: 3, Base: time.Millisecond}})
			obj, err := c.Open(ctx, s.url("g.csv"))
			if err != nil {
				t.Fatal(err)
			}
			s.srv.Fail(remotetest.Fault{Status: 500}, remotetest.Fault{Status: 500}, remotetest.Fault{Status: 500})
			_, err = obj.ReadAt(make([]byte, 10), 0)
			var se *remote.StatusError
			if !errors.As(err, &se) || se.Status != 500 || !strings.Contains(err.Error(), "gave up after 3 attempts") {
				t.Fatalf("err %v", err)
			}
		})
	}
}

func TestNotFoundAndDenied(t *testing.T) {
	for _, s := range stores(t) {
		t.Run(s.name, func(t *testing.T) {
			ctx := context.Background()
			_, err := client(s).Open(ctx, s.url("missing.csv"))
			var se *remote.StatusError
			if !errors.As(err, &se) || !se.NotFound() || !strings.Contains(err.Error(), s.url("missing.csv")) {
				t.Fatalf("err %v", err)
			}
			s.put(t, "d.csv", data(1000))
			obj, err := client(s).Open(ctx, s.url("d.csv"))
			if err != nil {
				t.Fatal(err)
			}
			s.srv.Reset()
			s.srv.Fail(remotetest.Fault{Status: 403, Code: "AccessDenied"})
			_, err = obj.ReadAt(make([]byte, 10), 0)
			if !errors.As(err, &se) || se.Status != 403 || !strings.Contains(err.Error(), "access denied") {
				t.Fatalf("err %v", err)
			}
			if c := s.srv.Counts(); c.Get != 1 {
				t.Fatalf("a 403 was retried: %+v", c)
			}
		})
	}
}

// TestReplaced: an object replaced between ranged reads fails the next one
// with ErrSourceChanged rather than handing over the new version's bytes.
func TestReplaced(t *testing.T) {
	for _, s := range stores(t) {
		t.Run(s.name, func(t *testing.T) {
			ctx := context.Background()
			old := data(200_000)
			s.put(t, "r.csv", old)
			obj, err := client(s).Open(ctx, s.url("r.csv"))
			if err != nil {
				t.Fatal(err)
			}
			p := make([]byte, 1000)
			if _, err := obj.ReadAt(p, 0); err != nil {
				t.Fatal(err)
			}
			newer := bytes.ToUpper(old) // same size, other bytes
			s.put(t, "r.csv", newer)
			if _, err := obj.ReadAt(p, 1000); !errors.Is(err, reader.ErrSourceChanged) {
				t.Fatalf("ReadAt after replace: %v", err)
			}
			if err := obj.Check(ctx); !errors.Is(err, reader.ErrSourceChanged) {
				t.Fatalf("Check after replace: %v", err)
			}

			// Replaced while a stream is broken: the resumed request must not
			// splice the new version's bytes onto the old ones.
			s.put(t, "r.csv", old)
			obj, err = client(s).Open(ctx, s.url("r.csv"))
			if err != nil {
				t.Fatal(err)
			}
			var gets atomic.Int64
			s.srv.OnGet(func(*http.Request) {
				if gets.Add(1) == 2 {
					s.put(t, "r.csv", newer)
				}
			})
			defer s.srv.OnGet(nil)
			s.srv.Fail(remotetest.Fault{CutAfter: 50_000})
			rc, _ := obj.Open(ctx, 0)
			got, err := io.ReadAll(rc)
			rc.Close()
			if !errors.Is(err, reader.ErrSourceChanged) || !bytes.Equal(got, old[:len(got)]) {
				t.Fatalf("stream across a replace: %d bytes, err %v", len(got), err)
			}
		})
	}
}

func TestList(t *testing.T) {
	s := stores(t)[0]
	for _, k := range []string{"in/b.csv", "in/a.csv.gz", "in/sub/c.jsonl", "in/z.txt", "in/dir/", "other/x.csv", "in.csv"} {
		s.put(t, k, []byte("x"))
	}
	ctx := context.Background()
	got, err := client(s).List(ctx, "s3://bkt/in/", "")
	if err != nil {
		t.Fatal(err)
	}
	want := "s3://bkt/in/a.csv.gz s3://bkt/in/b.csv s3://bkt/in/sub/c.jsonl s3://bkt/in/z.txt"
	if strings.Join(got, " ") != want {
		t.Fatalf("list\n got %v\nwant %v", got, want)
	}
	got, err = client(s).List(ctx, "s3://bkt/in/", "*.csv*")
	if err != nil || strings.Join(got, " ") != "s3://bkt/in/a.csv.gz s3://bkt/in/b.csv" {
		t.Fatalf("glob: %v %v", got, err)
	}
	if _, err := client(s).List(ctx, "s3://nobucket/", ""); err == nil || !strings.Contains(err.Error(), "s3://nobucket/") {
		t.Fatalf("missing bucket: %v", err)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:secret@example.com/a.csv":                               "https://user:xxxxx@example.com/a.csv",
		"https://token@example.com/a.csv":                                     "https://xxxxx@example.com/a.csv",
		"https://h/a.csv?X-Amz-Signature=abc&X-Amz-Date=1&X-Amz-Credential=k": "https://h/a.csv?X-Amz-Signature=xxxxx&X-Amz-Date=xxxxx&X-Amz-Credential=xxxxx",
		"https://h/a.csv?code=c0de&day=2":                                     "https://h/a.csv?code=xxxxx&day=xxxxx",
		"https://u:pw@h/a%zz.csv?code=c0de":                                   "https://u:xxxxx@h/a%zz.csv?code=xxxxx",
		"s3://b/k.csv":                                                        "s3://b/k.csv",
		"/tmp/a.csv":                                                          "/tmp/a.csv",
	} {
		if got := remote.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestHTTPWithoutRangesOrETag: a server that ignores Range still gives the
// right bytes (the prefix is skipped); one that sends no ETag is guarded by
// Last-Modified (If-Unmodified-Since), so a newer version is refused.
func TestHTTPWithoutRangesOrETag(t *testing.T) {
	want := data(100_000)
	var body atomic.Pointer[[]byte]
	body.Store(&want)
	mod := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	var modAt atomic.Pointer[time.Time]
	modAt.Store(&mod)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, m := *body.Load(), *modAt.Load()
		w.Header().Set("Last-Modified", m.Format(http.TimeFormat))
		if s := r.Header.Get("If-Unmodified-Since"); s != "" {
			if t, err := http.ParseTime(s); err == nil && m.After(t) {
				w.WriteHeader(http.StatusPreconditionFailed)
				return
			}
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		if r.Method == http.MethodGet {
			w.Write(b) // the whole body, whatever the Range
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	obj, err := remote.New(remote.Options{Retry: remote.Retry{Base: time.Millisecond}}).Open(ctx, srv.URL+"/x.csv")
	if err != nil {
		t.Fatal(err)
	}
	if obj.Version() != "" || !obj.ModTime().Equal(mod) {
		t.Fatalf("version %q, modified %v", obj.Version(), obj.ModTime())
	}
	p := make([]byte, 100)
	if n, err := obj.ReadAt(p, 5000); err != nil || n != 100 || !bytes.Equal(p, want[5000:5100]) {
		t.Fatalf("ReadAt through a server without ranges: %d %v", n, err)
	}
	later := mod.Add(time.Hour)
	modAt.Store(&later)
	if _, err := obj.ReadAt(p, 0); !errors.Is(err, reader.ErrSourceChanged) {
		t.Fatalf("a newer version without ETag: %v", err)
	}
}
