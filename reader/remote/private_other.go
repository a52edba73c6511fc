//go:build !unix && !windows

package remote

import (
	"context"
	"io/fs"
	"os"
)

// private accepts the spool directory: this system has no owner or mode
// to check.
func private(fs.FileInfo) error { return nil }

// ownFile accepts a spool file: see private.
func ownFile(fs.FileInfo) error { return nil }

// lockFile does not lock: this system has no file locks.
func lockFile(context.Context, *os.File) (func(), error) { return func() {}, nil }

// lockUse does not lock: this system has no file locks.
func lockUse(context.Context, *os.File, bool) (func(), error) { return func() {}, nil }
