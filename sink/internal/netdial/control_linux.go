package netdial

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// controlUserTimeout sets TCP_USER_TIMEOUT (UserTimeout) on a TCP socket
// before it connects; other sockets (Unix sockets) are left alone. A
// kernel that refuses the option only loses it: keepalives still apply.
func controlUserTimeout(network, _ string, c syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil
	}
	return c.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(UserTimeout.Milliseconds()))
	})
}
