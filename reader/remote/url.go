package remote

import (
	"fmt"
	"net/url"
	"strings"
)

// IsURL reports whether name is an input this package reads: an s3://,
// http:// or https:// URL.
func IsURL(name string) bool {
	i := strings.Index(name, "://")
	if i <= 0 {
		return false
	}
	switch strings.ToLower(name[:i]) {
	case "s3", "http", "https":
		return true
	}
	return false
}

// IsPrefix reports whether an s3:// URL names every object below a prefix
// (it ends in "/" or names a bucket alone) rather than one object.
func IsPrefix(name string) bool {
	u, err := url.Parse(name)
	if err != nil || !strings.EqualFold(u.Scheme, "s3") {
		return false
	}
	return u.Path == "" || strings.HasSuffix(u.Path, "/")
}

// parseS3 splits s3://BUCKET/KEY into its bucket and key.
func parseS3(name string) (bucket, key string, err error) {
	u, err := url.Parse(name)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", Redact(name), err)
	}
	if u.Host == "" {
		return "", "", fmt.Errorf("%s: no bucket: want s3://BUCKET/KEY", Redact(name))
	}
	return u.Host, strings.TrimPrefix(u.Path, "/"), nil
}

// secretParams are query parameter names (lowercased, matched as
// substrings) whose values are masked: presigned URL signatures, tokens and
// keys.
var secretParams = []string{"signature", "credential", "token", "secret", "password", "passwd", "key", "sig", "auth"}

// Redact returns name with its user information and credential-like query
// values replaced by "xxxxx", for showing in output, logs and the ledger.
// A name that is not a URL is returned unchanged.
func Redact(name string) string {
	if !IsURL(name) {
		return name
	}
	u, err := url.Parse(name)
	if err != nil {
		return name
	}
	if u.User != nil {
		u.User = url.User("xxxxx")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			lk := strings.ToLower(k)
			for _, s := range secretParams {
				if strings.Contains(lk, s) {
					q[k] = []string{"xxxxx"}
					break
				}
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}
