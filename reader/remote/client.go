package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/idemport/idemport/internal/secret"
)

// Options configure a Client. The zero value reads S3 at AWS with the
// standard configuration chain and HTTP with http.DefaultClient.
type Options struct {
	// Endpoint is the S3 endpoint URL for MinIO, R2, Ceph and friends
	// (--s3-endpoint); empty means AWS_ENDPOINT_URL or AWS itself.
	Endpoint string
	// PathStyle addresses buckets as endpoint/BUCKET/KEY rather than
	// BUCKET.endpoint/KEY (--s3-path-style).
	PathStyle bool
	// Region overrides the configured AWS region.
	Region string
	// HTTPClient makes every request; nil means the default transport with
	// a one-minute response header timeout for HTTP(S), and the SDK's
	// default for S3.
	HTTPClient *http.Client
	// Retry is how reads retry; the zero value means the defaults.
	Retry Retry
}

// Client opens remote objects. It is safe for concurrent use; the S3
// client is built on first use, so a run without s3:// inputs needs no AWS
// configuration.
type Client struct {
	opts  Options
	once  sync.Once
	s3    *s3.Client
	s3Err error
	http  *http.Client // for HTTP(S) when Options.HTTPClient is nil
	Stats Stats        // what every object opened through the client fetched

	mu     sync.Mutex
	listed map[string]Info // what List found, by URL
}

// New returns a Client with opts.
func New(opts Options) *Client {
	opts.Retry = opts.Retry.withDefaults()
	// The default transport (proxies from the environment), with a server
	// that sends no response headers for a minute taken as a failed,
	// retryable request rather than waited for forever.
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = time.Minute
	return &Client{opts: opts, http: &http.Client{Transport: t}}
}

func (c *Client) s3Client(ctx context.Context) (*s3.Client, error) {
	c.once.Do(func() { c.s3, c.s3Err = newS3(ctx, c.opts) })
	return c.s3, c.s3Err
}

// Open makes a HEAD request for the object at name (an s3://BUCKET/KEY or
// http(s):// URL) and returns it pinned at the version found. ctx is kept
// for the object's ReadAt calls. A missing object or denied access is a
// *StatusError naming the URL.
func (c *Client) Open(ctx context.Context, name string) (*Object, error) {
	o, err := c.Pin(ctx, name, Info{})
	if err != nil {
		return nil, err
	}
	if o.info, err = statRetrying(ctx, o.b, c.opts.Retry, &o.stats); err != nil {
		return nil, err
	}
	return o, nil
}

func (c *Client) backend(ctx context.Context, name string) (backend, error) {
	u, err := url.Parse(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Redact(name), secret.ParseError(err))
	}
	switch strings.ToLower(u.Scheme) {
	case "s3":
		bucket, key, err := parseS3(name)
		if err != nil {
			return nil, err
		}
		if key == "" || strings.HasSuffix(key, "/") {
			return nil, fmt.Errorf("%s names a prefix, not an object", Redact(name))
		}
		client, err := c.s3Client(ctx)
		if err != nil {
			return nil, err
		}
		return &s3Object{client: client, bucket: bucket, key: key, shown: Redact(name)}, nil
	case "http", "https":
		hc := c.opts.HTTPClient
		if hc == nil {
			hc = c.http
		}
		return &httpObject{raw: name, shown: Redact(name), secrets: secret.Parts(name, false), client: hc}, nil
	}
	return nil, fmt.Errorf("%s: not an s3://, http:// or https:// URL", Redact(name))
}

// List returns the s3:// URLs of the objects below the prefix URL name, in
// key order, whose base names match glob (path.Match syntax; "" matches
// all). An empty result is not an error.
func (c *Client) List(ctx context.Context, name, glob string) ([]string, error) {
	if glob != "" {
		if _, err := path.Match(glob, ""); err != nil {
			return nil, fmt.Errorf("--glob %q: %w", glob, err)
		}
	}
	bucket, prefix, err := parseS3(name)
	if err != nil {
		return nil, err
	}
	client, err := c.s3Client(ctx)
	if err != nil {
		return nil, err
	}
	objs, err := listS3(ctx, client, bucket, prefix, glob, Redact(name), c.opts.Retry, &c.Stats)
	if err != nil {
		return nil, err
	}
	urls := make([]string, len(objs))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.listed == nil {
		c.listed = map[string]Info{}
	}
	for i, o := range objs {
		urls[i] = "s3://" + bucket + "/" + o.key
		if o.info.Size >= 0 {
			c.listed[urls[i]] = o.info
		}
	}
	return urls, nil
}

// Listed returns the identity the last List that named the object at name
// (an s3:// URL it returned) found: its size, ETag and modification time
// as the LIST page gave them, never a version id. ok is false for an
// object no List named.
func (c *Client) Listed(name string) (info Info, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	info, ok = c.listed[name]
	return info, ok
}

// Pin returns the object at name pinned at info without a request, as Open
// does after its HEAD request: every read is guarded by info's ETag, so a
// version other than the one info describes fails the read with
// reader.ErrSourceChanged. It is for an identity a listing gave (Listed).
func (c *Client) Pin(ctx context.Context, name string, info Info) (*Object, error) {
	b, err := c.backend(ctx, name)
	if err != nil {
		return nil, err
	}
	key := sha256.Sum256([]byte(name))
	return &Object{url: Redact(name), rawKey: hex.EncodeToString(key[:]), byPath: namedByPath(name), info: info, b: b,
		retry: c.opts.Retry, stats: Stats{parent: &c.Stats}, ctx: ctx}, nil
}
