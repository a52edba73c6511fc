package sqlite

import "errors"

// ErrNoSQLite is what a build without cgo reports when asked for SQLite:
// the SQLite engine is C code, compiled in through cgo.
var ErrNoSQLite = errors.New("this build has no SQLite: build with cgo and a C compiler")
