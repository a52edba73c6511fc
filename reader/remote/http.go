package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idemport/idemport/internal/secret"
	"github.com/idemport/idemport/reader"
)

// httpObject reads an http:// or https:// URL.
type httpObject struct {
	raw     string // as given: it may carry credentials the request needs
	shown   string
	secrets []string // of raw, scrubbed from errors that might quote them
	client  *http.Client
}

var _ backend = (*httpObject)(nil)

func (h *httpObject) request(ctx context.Context, method string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, h.raw, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.shown, secret.ParseError(err))
	}
	// The bytes as stored: a transparently decoded response would not
	// match the size or the ranges.
	req.Header.Set("Accept-Encoding", "identity")
	return req, nil
}

func (h *httpObject) do(req *http.Request) (*http.Response, error) {
	resp, err := h.client.Do(req)
	if err != nil {
		if req.Context().Err() != nil {
			return nil, req.Context().Err()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL, query and all
		}
		return nil, retryable{fmt.Errorf("%s: %s", h.shown, secret.Scrub(err.Error(), h.secrets))}
	}
	return resp, nil
}

func (h *httpObject) stat(ctx context.Context) (Info, error) {
	req, err := h.request(ctx, http.MethodHead)
	if err != nil {
		return Info{}, err
	}
	resp, err := h.do(req)
	if err != nil {
		return Info{}, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Info{}, h.statusError(resp)
	}
	if resp.ContentLength < 0 {
		return Info{}, fmt.Errorf("%s: the server does not say the size (no Content-Length on HEAD)", h.shown)
	}
	info := Info{Size: resp.ContentLength, ETag: resp.Header.Get("ETag")}
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		info.ModTime = t
	}
	return info, nil
}

// strongETag reports whether an entity tag may guard a ranged request:
// If-Match and If-Range compare strongly, so a weak tag never matches.
func strongETag(etag string) bool { return etag != "" && !strings.HasPrefix(etag, "W/") }

func (h *httpObject) get(ctx context.Context, info Info, off, end int64) (io.ReadCloser, error) {
	req, err := h.request(ctx, http.MethodGet)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, end-1))
	switch {
	case strongETag(info.ETag):
		req.Header.Set("If-Match", info.ETag)
	case !info.ModTime.IsZero():
		req.Header.Set("If-Unmodified-Since", info.ModTime.UTC().Format(http.TimeFormat))
	}
	resp, err := h.do(req)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (io.ReadCloser, error) {
		resp.Body.Close()
		return nil, err
	}
	if resp.StatusCode == http.StatusPreconditionFailed {
		return fail(fmt.Errorf("%w: %s was replaced since it was opened (412 on ETag %s)", reader.ErrSourceChanged, h.shown, info.ETag))
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
		return fail(h.statusError(resp))
	}
	if err := h.sameVersion(resp, info); err != nil {
		return fail(err)
	}
	if resp.StatusCode == http.StatusPartialContent {
		first, last, total, ok := contentRange(resp.Header.Get("Content-Range"))
		if !ok || first != off || (total >= 0 && total != info.Size) {
			return fail(fmt.Errorf("%w: %s answered range %d-%d with %q (object of %d bytes)",
				reader.ErrSourceChanged, h.shown, off, end-1, resp.Header.Get("Content-Range"), info.Size))
		}
		return frame(resp.Body, h.shown, off, end, first, last+1, resp.ContentLength, info.Size)
	}
	// 200: the server ignored the range and sends the whole object.
	return frame(resp.Body, h.shown, off, end, 0, info.Size, resp.ContentLength, info.Size)
}

// sameVersion checks a response's validators against the version opened,
// for servers that ignore If-Match.
func (h *httpObject) sameVersion(resp *http.Response, info Info) error {
	if etag := resp.Header.Get("ETag"); etag != "" && info.ETag != "" && etag != info.ETag {
		return fmt.Errorf("%w: %s was replaced since it was opened (ETag %s, now %s)", reader.ErrSourceChanged, h.shown, info.ETag, etag)
	}
	if !strongETag(info.ETag) && !info.ModTime.IsZero() {
		if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil && !t.Equal(info.ModTime) {
			return fmt.Errorf("%w: %s was modified since it was opened (%s, now %s)", reader.ErrSourceChanged, h.shown,
				info.ModTime.UTC().Format(time.RFC3339), t.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

func (h *httpObject) statusError(resp *http.Response) error {
	err := &StatusError{URL: h.shown, Status: resp.StatusCode}
	if isRetryableStatus(resp.StatusCode) {
		return retryable{err}
	}
	return err
}

// isRetryableStatus reports whether a response status is worth a retry:
// a server error, a timeout or throttling.
func isRetryableStatus(code int) bool {
	return code >= 500 || code == http.StatusTooManyRequests || code == http.StatusRequestTimeout
}
