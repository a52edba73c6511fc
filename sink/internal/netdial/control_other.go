//go:build !linux

package netdial

import "syscall"

// controlUserTimeout does nothing where TCP_USER_TIMEOUT is Linux's alone:
// keepalives still find a dead network.
func controlUserTimeout(string, string, syscall.RawConn) error { return nil }
