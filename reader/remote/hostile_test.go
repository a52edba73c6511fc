package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/reader/remote"
)

// liar is an HTTP server whose HEAD and GET answers disagree with each
// other or with the range asked for, in the ways servers and proxies get
// wrong.
type liar struct {
	body     []byte
	headSize int64  // Content-Length of HEAD
	mode     string // how a GET is answered
}

func (l *liar) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("ETag", `"v1"`)
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Length", strconv.FormatInt(l.headSize, 10))
		return
	}
	var first, last int64 = 0, int64(len(l.body)) - 1
	if rng := r.Header.Get("Range"); rng != "" {
		fmt.Sscanf(rng, "bytes=%d-%d", &first, &last)
	}
	flush := func() { w.(http.Flusher).Flush() } // no Content-Length: chunked
	switch l.mode {
	case "200 chunked": // ignores Range, sends everything without a length
		w.WriteHeader(http.StatusOK)
		flush()
		w.Write(l.body)
	case "200 sized": // ignores Range, sends everything with its length
		w.Header().Set("Content-Length", strconv.Itoa(len(l.body)))
		w.WriteHeader(http.StatusOK)
		w.Write(l.body)
	case "206 chunked, longer": // the range asked for, then 20 more bytes
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, l.headSize))
		w.WriteHeader(http.StatusPartialContent)
		flush()
		w.Write(l.body[first:min(last+21, int64(len(l.body)))])
	case "206 chunked, shorter": // the range asked for, less its last 20 bytes
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, l.headSize))
		w.WriteHeader(http.StatusPartialContent)
		flush()
		w.Write(l.body[first:max(first, last+1-20)])
	case "206 chunked": // honest, without a length
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, l.headSize))
		w.WriteHeader(http.StatusPartialContent)
		flush()
		w.Write(l.body[first : last+1])
	default:
		panic(l.mode)
	}
}

// TestLyingServers: whatever the framing of a response, a body that holds
// more or fewer bytes than the range asked for, or than the size the HEAD
// request pinned, is an error wrapping ErrSourceChanged after the retries,
// never a prefix or an object cut short; an honest server that ignores
// Range or sends no length still gives exactly the object's bytes.
func TestLyingServers(t *testing.T) {
	const n = 300_000
	body := data(n)
	for _, tc := range []struct {
		mode     string
		headSize int64
		ok       bool
	}{
		{"200 chunked", n - 20, false}, // HEAD short: the last 20 bytes would be lost
		{"200 chunked", n + 20, false}, // HEAD long
		{"200 sized", n - 20, false},
		{"206 chunked, longer", n, false},
		{"206 chunked, shorter", n, false},
		{"200 chunked", n, true},
		{"200 sized", n, true},
		{"206 chunked", n, true},
	} {
		t.Run(fmt.Sprintf("%s, HEAD %+d", tc.mode, tc.headSize-n), func(t *testing.T) {
			srv := httptest.NewServer(&liar{body: body, headSize: tc.headSize, mode: tc.mode})
			defer srv.Close()
			ctx := context.Background()
			c := remote.New(remote.Options{Retry: remote.Retry{Attempts: 3, Base: time.Millisecond, Max: time.Millisecond}})
			obj, err := c.Open(ctx, srv.URL+"/x.csv")
			if err != nil {
				t.Fatal(err)
			}
			rc, _ := obj.Open(ctx, 0)
			got, err := io.ReadAll(rc)
			rc.Close()
			if gets := c.Stats.Requests.Load() - 1; tc.ok && strings.HasPrefix(tc.mode, "200") && gets != 1 {
				// The first response holds the whole object: the stream
				// reads on rather than asking for the next window.
				t.Fatalf("%d GET requests for an object sent whole by the first", gets)
			}
			p := make([]byte, 1000)
			_, atErr := obj.ReadAt(p, 150_000)
			if tc.ok {
				if err != nil || !bytes.Equal(got, body) {
					t.Fatalf("read %d bytes of %d, err %v", len(got), n, err)
				}
				if atErr != nil || !bytes.Equal(p, body[150_000:151_000]) {
					t.Fatalf("ReadAt: %v", atErr)
				}
				return
			}
			if !errors.Is(err, reader.ErrSourceChanged) {
				t.Fatalf("read %d bytes (the object has %d, HEAD said %d), err %v; want source changed", len(got), n, tc.headSize, err)
			}
			if !strings.Contains(err.Error(), "gave up after 3 attempts") {
				t.Fatalf("not retried: %v", err)
			}
			if !errors.Is(atErr, reader.ErrSourceChanged) {
				t.Fatalf("ReadAt: %v; want source changed", atErr)
			}
		})
	}
}
