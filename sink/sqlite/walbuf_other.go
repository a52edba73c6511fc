//go:build !cgo || windows

package sqlite

// walVFS returns "": on Windows, and without SQLite, the connections use
// the default VFS.
func walVFS() string { return "" }
