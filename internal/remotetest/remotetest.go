// Package remotetest starts object stores for tests: an S3 protocol server
// (gofakes3 in memory) and a plain HTTP server with Range support, both
// under httptest, behind a wrapper that enforces If-Match, counts requests
// and body bytes, and injects faults at the network boundary.
package remotetest

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Fault is what the wrapper does to one request instead of, or to, its
// normal response.
type Fault struct {
	// Status, when non-zero, answers with this status (and Code as the S3
	// error code, e.g. "SlowDown") without serving the request.
	Status int
	Code   string
	// CutAfter, when positive, serves the request but breaks the connection
	// after this many body bytes.
	CutAfter int64
}

// Counts is what the wrapper saw.
type Counts struct {
	Head, Get, List, Other int64
	Bytes                  int64 // response body bytes written for object GETs
}

// Requests is every request counted.
func (c Counts) Requests() int64 { return c.Head + c.Get + c.List + c.Other }

// Server is a running store. Its methods are safe for concurrent use.
type Server struct {
	URL string
	srv *httptest.Server

	mu     sync.Mutex
	idle   *sync.Cond // signalled when active drops to 0; uses mu
	active int        // requests being served
	counts Counts
	faults []Fault // applied to the next GETs of an object, in order
	// OnGet, if set, is called before each object GET is served; a test
	// replaces an object from it.
	onGet func(r *http.Request)

	// s3
	backend *s3mem.Backend
	// http
	files map[string]httpFile
}

type httpFile struct {
	data    []byte
	etag    string
	modTime time.Time
}

// NewS3 starts an S3 server with bucket created; it stops when the test
// ends. Point a client at URL with path-style addressing and any
// credentials (signatures are not checked).
func NewS3(t testing.TB, bucket string) *Server {
	t.Helper()
	s := &Server{backend: s3mem.New()}
	if err := s.backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	faker := gofakes3.New(s.backend, gofakes3.WithLogger(gofakes3.DiscardLog()))
	s.start(t, s.s3Handler(faker.Server()))
	return s
}

// NewHTTP starts an HTTP server serving the files Put into it under their
// paths, with ETag, Last-Modified, Range, If-Match and If-Range; it stops
// when the test ends.
func NewHTTP(t testing.TB) *Server {
	t.Helper()
	s := &Server{files: map[string]httpFile{}}
	s.start(t, http.HandlerFunc(s.serveFile))
	return s
}

func (s *Server) start(t testing.TB, h http.Handler) {
	s.idle = sync.NewCond(&s.mu)
	s.srv = httptest.NewUnstartedServer(s.wrap(h))
	// A client that stops reading a body early makes gofakes3 log a
	// superfluous WriteHeader: noise, not a finding.
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.srv.Start()
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
}

// Env returns the environment an S3 client needs to reach this server with
// no other AWS configuration on the machine interfering.
func (s *Server) Env(dir string) []string {
	return []string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1",
		"AWS_CONFIG_FILE=" + dir + "/no-aws-config", "AWS_SHARED_CREDENTIALS_FILE=" + dir + "/no-aws-credentials",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_ENDPOINT_URL=", "AWS_PROFILE="}
}

// SetEnv sets Env for the test's own process.
func (s *Server) SetEnv(t *testing.T) {
	for _, kv := range s.Env(t.TempDir()) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// Put stores data at key (an S3 key, or an HTTP path without the leading
// slash), replacing what was there, modified at modTime (zero: now).
func (s *Server) Put(t testing.TB, bucket, key string, data []byte, modTime time.Time) {
	t.Helper()
	if modTime.IsZero() {
		modTime = time.Now()
	}
	if s.backend != nil {
		meta := map[string]string{"Last-Modified": modTime.UTC().Format(http.TimeFormat)}
		if _, err := s.backend.PutObject(bucket, key, meta, bytes.NewReader(data), int64(len(data)), nil); err != nil {
			t.Fatal(err)
		}
		return
	}
	sum := md5.Sum(data)
	s.mu.Lock()
	s.files["/"+key] = httpFile{data: bytes.Clone(data), etag: `"` + hex.EncodeToString(sum[:]) + `"`, modTime: modTime.UTC().Truncate(time.Second)}
	s.mu.Unlock()
}

// Counts returns what the server saw since it started or was last Reset.
func (s *Server) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// Settled returns the counts as Counts does, once the requests being
// served are done: a client may have read a response's last bytes before
// the server counted them.
func (s *Server) Settled() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.active > 0 {
		s.idle.Wait()
	}
	return s.counts
}

// Reset zeroes the counts, once the requests being served are done: a
// response still being written to a client that was killed is counted
// before the reset, not after it.
func (s *Server) Reset() {
	s.mu.Lock()
	for s.active > 0 {
		s.idle.Wait()
	}
	s.counts = Counts{}
	s.mu.Unlock()
}

// Fail queues faults for the next object GETs, one each, in order.
func (s *Server) Fail(faults ...Fault) {
	s.mu.Lock()
	s.faults = append(s.faults, faults...)
	s.mu.Unlock()
}

// OnGet sets a function called before each object GET is served.
func (s *Server) OnGet(f func(r *http.Request)) {
	s.mu.Lock()
	s.onGet = f
	s.mu.Unlock()
}

// isList reports whether an S3 request lists a bucket: a GET of the bucket
// itself (path style).
func isList(r *http.Request) bool {
	p := strings.Trim(r.URL.Path, "/")
	return r.Method == http.MethodGet && !strings.Contains(p, "/")
}

func (s *Server) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.active++
		defer func() {
			s.mu.Lock()
			if s.active--; s.active == 0 {
				s.idle.Broadcast()
			}
			s.mu.Unlock()
		}()
		var fault *Fault
		onGet := s.onGet
		objectGet := r.Method == http.MethodGet && (s.backend == nil || !isList(r))
		switch {
		case r.Method == http.MethodHead:
			s.counts.Head++
		case s.backend != nil && isList(r):
			s.counts.List++
		case r.Method == http.MethodGet:
			s.counts.Get++
			if len(s.faults) > 0 {
				fault = &s.faults[0]
				s.faults = s.faults[1:]
			}
		default:
			s.counts.Other++
		}
		s.mu.Unlock()
		if objectGet && onGet != nil {
			onGet(r)
		}
		if fault != nil && fault.Status != 0 {
			writeError(w, fault.Status, fault.Code)
			return
		}
		cw := &countingWriter{ResponseWriter: w, s: s, count: objectGet, limit: -1}
		if fault != nil && fault.CutAfter > 0 {
			cw.limit = fault.CutAfter
		}
		h.ServeHTTP(cw, r)
	})
}

func writeError(w http.ResponseWriter, status int, code string) {
	if code == "" {
		code = "InternalError"
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected</Message><RequestId>1</RequestId></Error>`, code)
}

// countingWriter counts body bytes and breaks the connection after limit
// of them (limit < 0: never).
type countingWriter struct {
	http.ResponseWriter
	s     *Server
	count bool
	limit int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	cut := false
	if c.limit >= 0 && int64(len(p)) >= c.limit {
		p, cut = p[:c.limit], true
	}
	n, err := c.ResponseWriter.Write(p)
	if c.count {
		c.s.mu.Lock()
		c.s.counts.Bytes += int64(n)
		c.s.mu.Unlock()
	}
	if c.limit >= 0 {
		c.limit -= int64(n)
	}
	if cut {
		if f, ok := c.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler) // the server drops the connection mid-body
	}
	return n, err
}

func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// s3Handler enforces If-Match on object GETs and HEADs, which gofakes3
// checks only on PUT.
func (s *Server) s3Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m := r.Header.Get("If-Match"); m != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
			obj, err := s.backend.HeadObject(bucket, key)
			if err == nil {
				obj.Contents.Close()
				if etag := `"` + hex.EncodeToString(obj.Hash) + `"`; etag != m && m != "*" {
					writeError(w, http.StatusPreconditionFailed, "PreconditionFailed")
					return
				}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// serveFile serves a file Put into an HTTP server; http.ServeContent does
// Range, If-Match, If-Range and If-Unmodified-Since against the ETag and
// Last-Modified set here.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f, ok := s.files[r.URL.Path]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", f.etag)
	http.ServeContent(w, r, "", f.modTime, bytes.NewReader(f.data))
}
