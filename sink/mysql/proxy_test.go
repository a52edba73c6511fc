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

// proxy relays each connection made to it to the server of the DSN it
// was made for, and counts the messages the clients send the server: the
// client's reads of its socket, one for each message of the protocol,
// which waits for the server's reply before it sends the next (a
// message's packet is one write, read whole on the loopback). Once
// stalled it forwards nothing more in either direction, without closing
// anything, as a network that silently drops everything does. Its
// connections close when the test ends.
type proxy struct {
	t    *testing.T
	ln   net.Listener
	dsn  string // the DSN through the proxy
	sent atomic.Int64
	// commands counts the commands the clients send: the packets that
	// begin one (sequence number 0), not the packets of a file a LOAD
	// DATA LOCAL sends, however the reads cut them.
	commands atomic.Int64
	stalled  atomic.Bool
	mu       sync.Mutex
	conns    []net.Conn
	closed   bool // the test ended: a connection accepted after is closed
	wg       sync.WaitGroup
}

// newProxy starts a proxy to dsn's server.
func newProxy(t *testing.T, dsn string) *proxy {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	server := u.Host
	if u.Port() == "" {
		server = net.JoinHostPort(u.Hostname(), defaultPort)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.Host = ln.Addr().String()
	p := &proxy{t: t, ln: ln, dsn: u.String()}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		p.closed = true
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			srv, err := net.Dial("tcp", server)
			if err != nil {
				client.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, client, srv)
			if p.closed {
				client.Close()
				srv.Close()
			}
			p.mu.Unlock()
			p.wg.Add(2)
			go p.copy(srv, client, &p.sent, &packets{n: &p.commands})
			go p.copy(client, srv, nil, nil)
		}
	}()
	return p
}

// messageProxy returns dsn through a new proxy, and the count of the
// messages sent through it.
func messageProxy(t *testing.T, dsn string) (string, func() int64) {
	t.Helper()
	p := newProxy(t, dsn)
	return p.dsn, p.sent.Load
}

// stall makes the proxy forward nothing more.
func (p *proxy) stall() { p.stalled.Store(true) }

// copy forwards from src to dst, counting each read in reads and the
// commands in cmds (each if not nil), until the proxy stalls or src ends,
// which then closes dst.
func (p *proxy) copy(dst, src net.Conn, reads *atomic.Int64, cmds *packets) {
	defer p.wg.Done()
	buf := make([]byte, 1<<20)
	for {
		n, err := src.Read(buf)
		if p.stalled.Load() {
			return
		}
		if n > 0 {
			if reads != nil {
				reads.Add(1)
			}
			if cmds != nil {
				cmds.add(buf[:n])
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				p.t.Logf("proxy: %v", err)
			}
			dst.Close()
			return
		}
	}
}

// packets reads the packets of the protocol in a stream of one direction,
// counting in n those that begin a command (sequence number 0).
type packets struct {
	n    *atomic.Int64
	head []byte // the header read so far: 3 bytes of length, the sequence
	left int    // the bytes of the packet's payload still to come
}

// add reads b, the stream's next bytes.
func (c *packets) add(b []byte) {
	for len(b) > 0 {
		if c.left > 0 {
			k := min(c.left, len(b))
			c.left, b = c.left-k, b[k:]
			continue
		}
		k := min(4-len(c.head), len(b))
		c.head, b = append(c.head, b[:k]...), b[k:]
		if len(c.head) == 4 {
			c.left = int(c.head[0]) | int(c.head[1])<<8 | int(c.head[2])<<16
			if c.head[3] == 0 {
				c.n.Add(1)
			}
			c.head = c.head[:0]
		}
	}
}

// commandProxy returns dsn through a new proxy, and the count of the
// commands sent through it.
func commandProxy(t *testing.T, dsn string) (string, func() int64) {
	t.Helper()
	p := newProxy(t, dsn)
	return p.dsn, p.commands.Load
}
