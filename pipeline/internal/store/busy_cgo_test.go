//go:build cgo

package store

import sqlite3 "github.com/mattn/go-sqlite3"

// sqliteBusy is SQLite's answer to a write another connection's
// transaction kept out past the busy timeout.
var sqliteBusy error = sqlite3.Error{Code: sqlite3.ErrBusy}
