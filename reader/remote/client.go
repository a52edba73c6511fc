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
	b, err := c.backend(ctx, name)
	if err != nil {
		return nil, err
	}
	key := sha256.Sum256([]byte(name))
	o := &Object{url: Redact(name), rawKey: hex.EncodeToString(key[:]), byPath: namedByPath(name), b: b, retry: c.opts.Retry, stats: Stats{parent: &c.Stats}, ctx: ctx}
	if o.info, err = statRetrying(ctx, b, c.opts.Retry, &o.stats); err != nil {
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
	keys, err := listS3(ctx, client, bucket, prefix, glob, Redact(name), c.opts.Retry, &c.Stats)
	if err != nil {
		return nil, err
	}
	urls := make([]string, len(keys))
	for i, k := range keys {
		urls[i] = "s3://" + bucket + "/" + k
	}
	return urls, nil
}
