package main

import (
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/idemport/idemport/reader/remote"
)

// remoteFlags configure how s3:// and http(s):// inputs are read.
type remoteFlags struct {
	endpoint  string
	pathStyle bool
	glob      string
	spoolDir  string
	c         *remote.Client
}

// register registers how s3:// inputs are reached (import, plan, verify).
func (f *remoteFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&f.endpoint, "s3-endpoint", "", "S3 endpoint URL for MinIO, R2, Ceph and friends (default $AWS_ENDPOINT_URL, else AWS)")
	fl.BoolVar(&f.pathStyle, "s3-path-style", false, "address S3 buckets as ENDPOINT/BUCKET/KEY (MinIO and most self-hosted stores need it)")
	fl.StringVar(&f.spoolDir, "spool-dir", "", "where a remote input is copied while it is imported (read once, its partitions then read from the copy), resumed by range and removed when done; a directory of the user's own that no one else may write (default: idemport/spool in the user's cache directory)")
}

// spool returns the directory remote inputs are copied to: in
// the user's cache directory, else one of the user's own (by uid) in the
// temporary directory, which the spool refuses when another user made it.
func (f *remoteFlags) spool() string {
	if f.spoolDir != "" {
		return f.spoolDir
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "idemport", "spool")
	}
	if uid := os.Getuid(); uid >= 0 {
		return filepath.Join(os.TempDir(), "idemport-spool-"+strconv.Itoa(uid))
	}
	return filepath.Join(os.TempDir(), "idemport-spool")
}

// registerGlob registers --glob, which filters the objects of a prefix
// (import).
func (f *remoteFlags) registerGlob(c *cobra.Command) {
	c.Flags().StringVar(&f.glob, "glob", "", "with s3://BUCKET/PREFIX/: import only objects whose base name matches this pattern (e.g. '*.csv.gz')")
}

// client returns the command's client for remote inputs, the same on every
// call. It reads no AWS configuration until an s3:// input needs it.
func (f *remoteFlags) client() *remote.Client {
	if f.c == nil {
		f.c = remote.New(remote.Options{Endpoint: f.endpoint, PathStyle: f.pathStyle})
	}
	return f.c
}
