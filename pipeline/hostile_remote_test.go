package pipeline

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/reader/remote"
)

// object is an HTTP server of one object whose bytes, ETag and answers a
// test sets, and that counts the GET requests it serves.
type object struct {
	mu       sync.Mutex
	body     []byte
	etag     string
	headSize int64 // -1: the body's size
	whole    bool  // GET ignores Range and sends the whole body, chunked
	gets     int
}

func (o *object) set(body []byte, etag string) {
	o.mu.Lock()
	o.body, o.etag = bytes.Clone(body), etag
	o.mu.Unlock()
}

func (o *object) getCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.gets
}

func (o *object) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	body, etag, headSize, whole := o.body, o.etag, o.headSize, o.whole
	if r.Method == http.MethodGet {
		o.gets++
	}
	o.mu.Unlock()
	w.Header().Set("ETag", etag)
	mod := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	switch {
	case r.Method == http.MethodHead && headSize >= 0:
		w.Header().Set("Content-Length", strconv.FormatInt(headSize, 10))
	case r.Method == http.MethodGet && whole:
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush() // no Content-Length: chunked
		w.Write(body)
	default:
		http.ServeContent(w, r, "", mod, bytes.NewReader(body))
	}
}

// fastRetries is a client for remote inputs whose retries do not wait.
func fastRetries() *remote.Client {
	return remote.New(remote.Options{Retry: remote.Retry{Attempts: 3, Base: time.Millisecond, Max: time.Millisecond}})
}

// TestRemoteShortHeadChunkedGet: a server whose HEAD says 20 bytes fewer
// than the object has, and whose GET ignores Range and sends all of it
// chunked, makes the import fail with "source changed": before, the first
// N-20 bytes were imported (the last row lost, the one before cut short)
// and the run exited 0.
func TestRemoteShortHeadChunkedGet(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		f := newFx(t, name)
		body := []byte(items(200, 1))
		o := &object{headSize: int64(len(body)) - 20, whole: true}
		o.set(body, `"v1"`)
		srv := httptest.NewServer(o)
		defer srv.Close()
		res := f.e.Import(context.Background(), Request{Path: srv.URL + "/items.csv", Mapping: Mapping{Table: "items"}, Remote: fastRetries()})
		if res.Outcome != Failed || !errors.Is(res.Err, reader.ErrSourceChanged) {
			t.Fatalf("%s, %d rows inserted, err %v; want failed: source changed", res.Outcome, res.Rows.Inserted, res.Err)
		}
		if f.tg.TableExists(t, "items") {
			if n := f.rows(t, `SELECT count(*) FROM items`)[0][0].(int64); n != 0 {
				t.Fatalf("items holds %d rows of a body longer than the object's pinned size", n)
			}
		}
	})
}

// TestRemoteWeakETag: a weak ETag (W/"1") that stays the same while the
// bytes change proves nothing. A rerun reads and hashes the object: its new
// content is imported as a new file, not reported "already imported";
// unchanged content is a duplicate found by its digest, not by the ETag.
// A strong ETag still lets a rerun stop at the HEAD request.
func TestRemoteWeakETag(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		f := newFx(t, name)
		ctx := context.Background()
		o := &object{headSize: -1}
		v1 := []byte(items(100, 1))
		v2 := bytes.Replace(v1, []byte("item 7-1"), []byte("item 7-X"), 1) // same size
		o.set(v1, `W/"1"`)
		srv := httptest.NewServer(o)
		defer srv.Close()
		req := Request{Path: srv.URL + "/items.csv", Mapping: Mapping{Table: "items"}, Remote: fastRetries()}
		first := f.e.Import(ctx, req)
		f.wantOutcome(t, first, Imported)

		o.set(v2, `W/"1"`) // same size, same weak ETag, same Last-Modified
		gets := o.getCount()
		second := f.e.Import(ctx, req)
		if second.Outcome != Imported || second.QuickCheck || second.ContentDigest == first.ContentDigest {
			t.Fatalf("new bytes under the same weak ETag: %s (quick check %v, digest %s, first %s): %v",
				second.Outcome, second.QuickCheck, second.ContentDigest, first.ContentDigest, second.Err)
		}
		if o.getCount() == gets {
			t.Fatal("the new version was not read")
		}
		gets = o.getCount()
		third := f.e.Import(ctx, req)
		if third.Outcome != Duplicate || third.QuickCheck || third.ContentDigest != second.ContentDigest || o.getCount() == gets {
			t.Fatalf("unchanged under a weak ETag: %s (quick check %v, %d GETs): %v", third.Outcome, third.QuickCheck, o.getCount()-gets, third.Err)
		}
		if n := f.rows(t, `SELECT count(*) FROM items`)[0][0].(int64); n != 200 {
			t.Fatalf("items holds %d rows, want both versions' 200", n)
		}

		o.set(v2, `"2"`) // a strong ETag: the quick check may trust it
		f.wantOutcome(t, f.e.Import(ctx, req), Duplicate)
		gets = o.getCount()
		strong := f.e.Import(ctx, req)
		if strong.Outcome != Duplicate || !strong.QuickCheck || o.getCount() != gets {
			t.Fatalf("unchanged under a strong ETag: %s (quick check %v, %d GETs)", strong.Outcome, strong.QuickCheck, o.getCount()-gets)
		}
	})
}

// TestRemoteQueryNamesTheObject: URLs told apart only by their query
// (?day=1, ?day=2) are shown and recorded with their query values masked,
// so under one name; a server that tags both with the same ETag must not
// make the second a duplicate of the first. The quick check trusts only
// an object its URL names without the query (or with a presigned URL's
// signature only): these are read and hashed each time.
func TestRemoteQueryNamesTheObject(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		f := newFx(t, name)
		ctx := context.Background()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body := []byte(items(10, 1))
			if r.URL.Query().Get("day") == "2" {
				body = bytes.Replace(body, []byte("item 7-1"), []byte("item 7-2"), 1) // the same size
			}
			w.Header().Set("ETag", `"1"`)
			http.ServeContent(w, r, "", time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC), bytes.NewReader(body))
		}))
		defer srv.Close()
		var results []*Result
		for _, day := range []string{"1", "2", "1"} {
			res := f.e.Import(ctx, Request{Path: srv.URL + "/export.csv?day=" + day, Mapping: Mapping{Table: "items"}, Remote: fastRetries()})
			if res.File != srv.URL+"/export.csv?day=xxxxx" {
				t.Fatalf("shown as %q", res.File)
			}
			results = append(results, res)
		}
		if results[0].Outcome != Imported || results[1].Outcome != Imported || results[2].Outcome != Duplicate || results[1].QuickCheck || results[2].QuickCheck {
			t.Fatalf("day 1, 2, 1: %s %s %s (quick check %v %v)", results[0].Outcome, results[1].Outcome, results[2].Outcome, results[1].QuickCheck, results[2].QuickCheck)
		}
		if n := f.rows(t, `SELECT count(*) FROM items`)[0][0].(int64); n != 20 {
			t.Fatalf("items holds %d rows, want both days' 20", n)
		}
	})
}
