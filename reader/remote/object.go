package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader"
)

// Both are a reader source: pipeline hands them to reader.Open.
var (
	_ idemtype.Source = (*Object)(nil)
	_ idemtype.Source = (*Spool)(nil)
)

// Info is an object's identity as a HEAD request reports it.
type Info struct {
	Size    int64
	ETag    string    // the entity tag as the server sends it, quotes included; "" when it sends none
	Version string    // the S3 version id; "" when the bucket is not versioned
	ModTime time.Time // Last-Modified; zero when the server sends none
}

// Proves reports whether the identity pins the object's bytes: a version
// id, or a strong ETag. A weak ETag (W/"…") says only that two versions are
// equivalent for the server's purposes, not that their bytes are equal, and
// a size and a modification time prove nothing either: an object without a
// proof is known by the digest of its bytes alone, so a rerun must read and
// hash it.
func (i Info) Proves() bool { return i.Version != "" || strongETag(i.ETag) }

// backend is what an object store offers an Object: the identity of the
// object now, and a ranged read of the version it was opened at.
type backend interface {
	stat(ctx context.Context) (Info, error)
	// get returns the bytes [off, end) of the object as it was when info
	// was taken; a newer version fails with an error wrapping
	// reader.ErrSourceChanged.
	get(ctx context.Context, info Info, off, end int64) (io.ReadCloser, error)
}

// StatusError is a response that is not a retryable failure: the object is
// missing (404), access is denied (401, 403), or the server refused the
// request. It names the URL (credentials masked).
type StatusError struct {
	URL    string
	Status int
	Code   string // the S3 error code, "" for HTTP
}

func (e *StatusError) Error() string {
	what := http.StatusText(e.Status)
	switch e.Status {
	case http.StatusNotFound:
		what = "not found"
	case http.StatusForbidden, http.StatusUnauthorized:
		what = "access denied: check the credentials and the bucket policy"
	}
	if e.Code != "" {
		return fmt.Sprintf("%s: %s (%d %s)", e.URL, what, e.Status, e.Code)
	}
	return fmt.Sprintf("%s: %s (%d)", e.URL, what, e.Status)
}

// NotFound reports whether the object does not exist.
func (e *StatusError) NotFound() bool { return e.Status == http.StatusNotFound }

// retryable is a failure worth another request: a 5xx or throttling
// response, or a connection that broke.
type retryable struct{ err error }

func (e retryable) Error() string { return e.err.Error() }
func (e retryable) Unwrap() error { return e.err }

// Retry says how reads retry. The zero value means the defaults.
type Retry struct {
	// Attempts is how many requests a read makes without progress before
	// it gives up (default 8).
	Attempts int
	// Base is the first backoff (default 200ms); each later one doubles, up
	// to Max (default 10s), with jitter.
	Base, Max time.Duration
}

func (r Retry) withDefaults() Retry {
	if r.Attempts <= 0 {
		r.Attempts = 8
	}
	if r.Base <= 0 {
		r.Base = 200 * time.Millisecond
	}
	if r.Max <= 0 {
		r.Max = 10 * time.Second
	}
	return r
}

// wait sleeps before retry n (1-based), or returns ctx's error.
func (r Retry) wait(ctx context.Context, n int) error {
	d := r.Base << min(n-1, 20)
	if d > r.Max || d <= 0 {
		d = r.Max
	}
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Stats counts what reads fetched: a Client's, of every object opened
// through it; an Object's, of that object since it was opened. It is safe
// for concurrent use.
type Stats struct {
	Requests atomic.Int64 // HEAD, GET and LIST requests made, retries included
	Bytes    atomic.Int64 // body bytes received
	Retries  atomic.Int64 // requests repeated after a retryable failure
	parent   *Stats       // the client's, counted too
}

func (s *Stats) add(requests, bytes, retries int64) {
	for ; s != nil; s = s.parent {
		s.Requests.Add(requests)
		s.Bytes.Add(bytes)
		s.Retries.Add(retries)
	}
}

// Object is one remote object pinned at the version it had when opened. It
// is safe for concurrent use: each read is its own request.
type Object struct {
	url    string // redacted
	rawKey string // a digest of the URL as given, query and all
	byPath bool   // the URL names the object without its query (namedByPath)
	info   Info
	b      backend
	retry  Retry
	stats  Stats
	ctx    context.Context // for ReadAt, which takes none
}

// Name returns the object's URL with credentials masked and without its
// query (a presigned URL's signature), so that it ends in the object's name
// and extensions.
func (o *Object) Name() string {
	if u, err := url.Parse(o.url); err == nil && (u.RawQuery != "" || u.Fragment != "") {
		u.RawQuery, u.Fragment = "", ""
		return u.String()
	}
	return o.url
}

// Size returns the object's size in bytes.
func (o *Object) Size() int64 { return o.info.Size }

// Info returns the identity the object was opened at.
func (o *Object) Info() Info { return o.info }

// NamedByPath reports whether the object's URL names it by scheme, host
// and path alone, so that its masked URL (Name, and the name results and
// the ledger show) tells it from any other object: its query is empty, or
// only signs the request, as a presigned URL's. A URL whose query says
// which object it is (?day=2) is masked to the same name as its siblings.
func (o *Object) NamedByPath() bool { return o.byPath }

// Version returns the S3 version id the object was opened at, else its
// ETag, else "" when the server gave neither.
func (o *Object) Version() string {
	if o.info.Version != "" {
		return o.info.Version
	}
	return o.info.ETag
}

// Fetched returns what reads of the object made and received since it was
// opened: requests (its HEAD included), body bytes and retries.
func (o *Object) Fetched() (requests, bytes, retries int64) {
	return o.stats.Requests.Load(), o.stats.Bytes.Load(), o.stats.Retries.Load()
}

// ModTime returns the object's Last-Modified time (zero when unknown).
func (o *Object) ModTime() time.Time { return o.info.ModTime }

// ReadsAreRequests marks an Object as a reader.RequestSource: every read is
// a request, so the one-pass hash hands its bytes to the plan pass
// losslessly rather than have it fetch a dropped chunk again.
func (o *Object) ReadsAreRequests() {}

var _ reader.RequestSource = (*Object)(nil)

// Close releases nothing: an Object holds no connection between reads.
func (o *Object) Close() error { return nil }

// Check makes a HEAD request and fails with an error wrapping
// reader.ErrSourceChanged when the object is no longer the version it was
// opened at.
func (o *Object) Check(ctx context.Context) error {
	now, err := statRetrying(ctx, o.b, o.retry, &o.stats)
	if err != nil {
		var se *StatusError
		if errors.As(err, &se) && se.NotFound() {
			return fmt.Errorf("%w: %s was deleted", reader.ErrSourceChanged, o.url)
		}
		return err
	}
	// An object pinned from a listing knows no version id: its ETag and
	// size say which version it is.
	if now.Size != o.info.Size || now.ETag != o.info.ETag || (o.info.Version != "" && now.Version != o.info.Version) ||
		(!o.info.Proves() && !now.ModTime.Equal(o.info.ModTime)) {
		return fmt.Errorf("%w: %s was replaced (ETag %s, size %d; now %s, size %d)",
			reader.ErrSourceChanged, o.url, o.info.ETag, o.info.Size, now.ETag, now.Size)
	}
	return nil
}

// ReadAt reads len(p) bytes at off with one ranged GET (more on retries),
// under the context the object was opened with. It returns io.EOF with the
// bytes there are when the range passes the end.
func (o *Object) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset %d", o.url, off)
	}
	if off >= o.info.Size {
		return 0, io.EOF
	}
	end := min(off+int64(len(p)), o.info.Size)
	rc := o.OpenRange(o.ctx, off, end)
	defer rc.Close()
	n, err := io.ReadFull(rc, p[:end-off])
	if err != nil {
		return n, err
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Open returns the object's bytes from off to its end. The reader resumes
// at the next byte after a broken or short response; the caller must Close
// it.
func (o *Object) Open(ctx context.Context, off int64) (io.ReadCloser, error) {
	if off < 0 || off > o.info.Size {
		return nil, fmt.Errorf("%s: offset %d outside the object's %d bytes", o.url, off, o.info.Size)
	}
	return o.OpenRange(ctx, off, o.info.Size), nil
}

// OpenRange returns the object's bytes [off, end), fetched by ranged GETs
// as they are read. The caller must Close it. A ctx that is never done (as
// context.Background) means the context the object was opened with.
func (o *Object) OpenRange(ctx context.Context, off, end int64) io.ReadCloser {
	if ctx.Done() == nil && o.ctx != nil {
		ctx = o.ctx
	}
	return &body{o: o, ctx: ctx, off: off, end: end}
}

// Windows of a stream: each GET asks for at most window bytes, starting at
// firstWindow and doubling up to maxWindow, so a reader that stops early (a
// partition read to its last row, a header) has not made the server send
// the rest of the object.
const (
	firstWindow = 64 << 10
	maxWindow   = 16 << 20
)

// body streams a byte range, reopening the request at the next undelivered
// byte when a response breaks or ends early.
type body struct {
	o        *Object
	ctx      context.Context
	off, end int64
	reqEnd   int64 // end of the range the open response covers
	window   int64
	rc       io.ReadCloser
	failures int // consecutive failures without a byte of progress
	lies     int // responses that disagreed with the object, progress or not
	err      error
}

func (b *body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	for {
		if b.off >= b.end {
			b.closeBody()
			return 0, io.EOF
		}
		if len(p) == 0 {
			return 0, nil
		}
		if b.rc != nil && b.off >= b.reqEnd { // this window is done: ask for the next
			b.closeBody()
		}
		if b.rc == nil {
			switch {
			case b.window == 0:
				b.window = firstWindow
			case b.failures == 0:
				b.window = min(2*b.window, maxWindow)
			}
			b.reqEnd = min(b.end, b.off+b.window)
			rc, err := b.o.b.get(b.ctx, b.o.info, b.off, b.reqEnd)
			b.o.stats.add(1, 0, 0)
			if err != nil {
				if err := b.fail(err); err != nil {
					return 0, err
				}
				continue
			}
			b.rc = rc
			if x, ok := rc.(interface{ extend(int64) int64 }); ok {
				b.reqEnd = x.extend(b.end) // a whole object: read on, ask no more
			}
		}
		if rest := b.reqEnd - b.off; int64(len(p)) > rest {
			p = p[:rest]
		}
		n, err := b.rc.Read(p)
		b.off += int64(n)
		b.o.stats.add(0, int64(n), 0)
		if n > 0 {
			b.failures = 0
		}
		switch {
		case err == nil:
			return n, nil
		case err == io.EOF && b.off >= b.reqEnd:
			b.closeBody()
			if n > 0 {
				return n, nil
			}
			continue
		case err == io.EOF: // the response ended before the range did
			err = retryable{fmt.Errorf("%s: response ended at byte %d of %d: %w", b.o.url, b.off, b.end, io.ErrUnexpectedEOF)}
		case errors.As(err, new(retryable)): // said where already
		case b.ctx.Err() == nil:
			err = retryable{fmt.Errorf("%s: read at byte %d: %w", b.o.url, b.off, err)}
		}
		b.closeBody()
		if n > 0 { // deliver what came; the failure is retried on the next call
			return n, nil
		}
		if err := b.fail(err); err != nil {
			return 0, err
		}
	}
}

// fail decides whether a failed request is retried: it returns nil after
// waiting out the backoff, or the error that ends the read.
func (b *body) fail(err error) error {
	if ctxErr := b.ctx.Err(); ctxErr != nil {
		b.err = ctxErr
		return ctxErr
	}
	var r retryable
	if !errors.As(err, &r) {
		b.err = err
		return err
	}
	b.failures++
	n := b.failures
	if errors.Is(r.err, reader.ErrSourceChanged) {
		// A body at odds with the object may still bring bytes: such
		// responses are counted whether or not they made progress.
		b.lies++
		n = max(n, b.lies)
	}
	if n >= b.o.retry.Attempts {
		b.err = fmt.Errorf("%w (gave up after %d attempts)", r.err, n)
		return b.err
	}
	b.o.stats.add(0, 0, 1)
	if werr := b.o.retry.wait(b.ctx, b.failures); werr != nil {
		b.err = werr
		return werr
	}
	return nil
}

func (b *body) closeBody() {
	if b.rc != nil {
		b.rc.Close()
		b.rc = nil
	}
}

func (b *body) Close() error {
	b.closeBody()
	if b.err == nil {
		b.err = errors.New("read after close")
	}
	return nil
}

// statRetrying makes HEAD requests until one answers or a failure is not
// retryable.
func statRetrying(ctx context.Context, b backend, r Retry, stats *Stats) (Info, error) {
	for n := 1; ; n++ {
		info, err := b.stat(ctx)
		stats.add(1, 0, 0)
		var rt retryable
		if err == nil || !errors.As(err, &rt) || n >= r.Attempts || ctx.Err() != nil {
			if rt.err != nil && err != nil && errors.As(err, &rt) {
				err = fmt.Errorf("%w (gave up after %d attempts)", rt.err, n)
			}
			return info, err
		}
		stats.add(0, 0, 1)
		if werr := r.wait(ctx, n); werr != nil {
			return Info{}, werr
		}
	}
}
