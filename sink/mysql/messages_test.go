package mysql

import (
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// messageProxy returns the URL of dsn's database through a proxy on a
// local port that forwards each connection to dsn's server, and a
// function that tells how many messages the clients have sent the server
// through it: the client's reads of its socket, one for each message of
// the protocol, which waits for the server's reply before it sends the
// next (a message's packet is one write, read whole on the loopback).
func messageProxy(t *testing.T, dsn string) (string, func() int64) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	server := u.Host
	if u.Port() == "" {
		server = net.JoinHostPort(u.Hostname(), defaultPort)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int64
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	var conns sync.Map
	t.Cleanup(func() {
		conns.Range(func(c, _ any) bool { c.(net.Conn).Close(); return true })
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			client, err := l.Accept()
			if err != nil {
				return
			}
			srv, err := net.Dial("tcp", server)
			if err != nil {
				client.Close()
				continue
			}
			conns.Store(client, true)
			conns.Store(srv, true)
			wg.Add(2)
			go func() {
				defer wg.Done()
				defer client.Close()
				io.Copy(client, srv)
			}()
			go func() {
				defer wg.Done()
				defer srv.Close()
				buf := make([]byte, 1<<20)
				for {
					n, err := client.Read(buf)
					if n > 0 {
						sent.Add(1)
						if _, werr := srv.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
							t.Logf("proxy: %v", err)
						}
						return
					}
				}
			}()
		}
	}()
	u.Host = l.Addr().String()
	return u.String(), sent.Load
}
