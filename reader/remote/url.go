package remote

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/idemport/idemport/internal/secret"
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
		return "", "", fmt.Errorf("%s: %w", Redact(name), secret.ParseError(err))
	}
	if u.Host == "" {
		return "", "", fmt.Errorf("%s: no bucket: want s3://BUCKET/KEY", Redact(name))
	}
	return u.Host, strings.TrimPrefix(u.Path, "/"), nil
}

// signingParams are the query parameters, lowercased, that sign a
// request rather than name what it asks for: those of presigned URLs of
// S3 (and CloudFront), Google Cloud Storage and Azure shared access
// signatures. An X-Amz- or X-Goog- prefix signs too.
var signingParams = []string{"signature", "expires", "awsaccesskeyid", "key-pair-id", "policy",
	"sv", "ss", "srt", "sp", "se", "st", "spr", "sig", "sr", "si", "skoid", "sktid", "skt", "ske", "sks", "skv"}

// namedByPath reports whether a URL names its object by scheme, host and
// path alone: it has no query, or one that only signs the request. Such
// an object's masked URL is its name; one whose query says which object
// (?day=2, ?versionId=…) is not told apart from another by its masked URL.
func namedByPath(name string) bool {
	u, err := url.Parse(name)
	if err != nil {
		return false
	}
	for k := range u.Query() {
		lk := strings.ToLower(k)
		if !strings.HasPrefix(lk, "x-amz-") && !strings.HasPrefix(lk, "x-goog-") && !slices.Contains(signingParams, lk) {
			return false
		}
	}
	return true
}

// Redact returns name with its credentials masked (secret.URL: the
// password of its user information, a user given alone, every query
// value), for showing in output, logs and the ledger. A name that is not
// a URL is returned unchanged.
func Redact(name string) string {
	if !IsURL(name) {
		return name
	}
	return secret.URL(name)
}
