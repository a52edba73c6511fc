// Package netdial makes the network connections of the drivers that
// reach their server over TCP (PostgreSQL, MariaDB), so that a connection
// whose network is gone, in both directions, is found dead in about a
// minute instead of the system's default of two hours.
package netdial

import (
	"net"
	"time"
)

// How a connection finds out that the network to the server is gone. The
// client's socket sends keepalive probes once the connection is idle
// (waiting for a reply counts) for KeepAliveIdle, every KeepAliveInterval,
// and gives up after KeepAliveCount unanswered ones; data it sent that is
// not acknowledged for UserTimeout ends the connection too
// (TCP_USER_TIMEOUT, on Linux). A server that can be asked for the same on
// a session (PostgreSQL) is asked with these.
const (
	KeepAliveIdle     = 15 * time.Second
	KeepAliveInterval = 5 * time.Second
	KeepAliveCount    = 3
	UserTimeout       = 30 * time.Second
)

// Dialer returns a dialer whose TCP connections have the keepalives and
// the user timeout above, and that gives up connecting after timeout
// (none when 0). Other sockets (Unix sockets) are made as by net.Dialer.
func Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{
		Timeout: timeout,
		KeepAliveConfig: net.KeepAliveConfig{
			Enable: true, Idle: KeepAliveIdle, Interval: KeepAliveInterval, Count: KeepAliveCount,
		},
		Control: controlUserTimeout,
	}
}
