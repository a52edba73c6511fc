//go:build !cgo

package store

import "errors"

// sqliteBusy stands for SQLite's busy answer in a build without SQLite,
// where no test opens a SQLite target.
var sqliteBusy = errors.New("database is locked")
