package main

// A stalled connection: a proxy between the binary and PostgreSQL stops
// forwarding, in both directions and on every connection, new ones too,
// without closing anything, as a network that silently drops everything
// does. The kernel still acknowledges what is sent to the proxy, so TCP
// keepalives cannot tell: only the attempt's own heartbeat can.

import (
	"bufio"
	"encoding/binary"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// stallProxy relays PostgreSQL connections to upstream until the client
// sends its stallAt-th COPY statement: it forwards that one and then
// stalls, forwarding nothing more on any connection. cut closes every
// connection, as the network's end finally reaching both sides does.
type stallProxy struct {
	ln       net.Listener
	upstream string
	stallAt  int32
	copies   atomic.Int32
	stalled  chan struct{} // closed when the proxy stalls
	once     sync.Once
	mu       sync.Mutex
	conns    []net.Conn
}

// newStallProxy starts a stallProxy on a free local port; it is cut when t
// ends.
func newStallProxy(t *testing.T, upstream string, stallAt int32) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, upstream: upstream, stallAt: stallAt, stalled: make(chan struct{})}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !p.track(c) {
				return
			}
			go p.relay(c)
		}
	}()
	t.Cleanup(p.cut)
	return p
}

// track remembers c, to be closed by cut; false if cut already closed all.
func (p *stallProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil && p.ln == nil {
		c.Close()
		return false
	}
	p.conns = append(p.conns, c)
	return true
}

// cut closes the listener and every connection, both sides.
func (p *stallProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// isStalled reports whether the proxy stalled.
func (p *stallProxy) isStalled() bool {
	select {
	case <-p.stalled:
		return true
	default:
		return false
	}
}

// hold blocks for good once the proxy has stalled: the connection's
// bytes stay where they are until cut closes it.
func (p *stallProxy) hold() {
	if p.isStalled() {
		select {} // cut ends the connection; its reads and writes then fail
	}
}

func (p *stallProxy) relay(client net.Conn) {
	defer client.Close()
	p.hold()
	server, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return
	}
	if !p.track(server) {
		return
	}
	defer server.Close()
	go func() { // server → client
		buf := make([]byte, 32<<10)
		for {
			n, err := server.Read(buf)
			p.hold()
			if n > 0 {
				if _, err := client.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				client.Close()
				return
			}
		}
	}()
	r := bufio.NewReader(client)
	for { // the untyped startup messages, as cutProxy reads them
		msg, err := readMessage(r, false)
		p.hold()
		if err != nil {
			return
		}
		if _, err := server.Write(msg); err != nil {
			return
		}
		if code := binary.BigEndian.Uint32(msg[4:8]); code != 80877103 && code != 80877104 {
			break
		}
	}
	for {
		msg, err := readMessage(r, true)
		p.hold()
		if err != nil {
			server.(*net.TCPConn).CloseWrite()
			return
		}
		if _, err := server.Write(msg); err != nil {
			return
		}
		if (msg[0] == 'Q' || msg[0] == 'P') && strings.Contains(string(msg[5:]), "COPY ") && p.copies.Add(1) == p.stallAt {
			p.once.Do(func() { close(p.stalled) })
		}
	}
}

// TestStalledConnectionEndsTheAttempt stalls the network to PostgreSQL
// while an import sends its third partition's COPY: the statement, and
// every later one (heartbeats, new connections), gets no answer and no
// error. The import must not wait for ever: once its leases have run out
// without the database answering, it stops its work and exits 1 (a rerun
// resumes). Once the network's end reaches the server (the proxy closes),
// the server rolls the stalled transaction back; a rerun resumes the file
// and the table holds it exactly, every partition committed once.
func TestStalledConnectionEndsTheAttempt(t *testing.T) {
	testkit.Available(t, testkit.Postgres)
	t.Parallel()
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.Postgres, dir)
	rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), crashRows, 53)
	target := slices.Clone(tg.Args)
	u, err := url.Parse(target[1])
	if err != nil {
		t.Fatal(err)
	}
	proxy := newStallProxy(t, u.Host, 3)
	u.Host = proxy.ln.Addr().String()
	target[1] = u.String()
	args := []string{"--partition-rows", "100", "orders.csv"}

	cmd := testkit.Cmd(t, dir, nil, append(append([]string{"import", "--output", "json", "--lease", "3s"}, target...), args...)...)
	begun := time.Now()
	run := launch(t, cmd)
	r := finishWithin(t, run, 2*time.Minute, "the import whose connection stalled")
	t.Logf("the import ended %v after it began, with a lease of 3s", time.Since(begun).Round(100*time.Millisecond))
	if !proxy.isStalled() {
		t.Fatalf("the proxy never stalled (exit %d)\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	res := parsed(t, r, "the import whose connection stalled", 1)
	if res.Outcome != "failed" || !strings.Contains(res.Error, "the database stopped answering") {
		t.Fatalf("outcome %s, error %q; want failed because the database stopped answering", res.Outcome, res.Error)
	}

	proxy.cut()
	waitFor(t, time.Minute, "the server to end the stalled session", func() bool {
		return testkit.Int(t, tg.DB, `SELECT count(*) FROM (SELECT 1 FROM `+tg.Ledger("partitions")+` FOR UPDATE SKIP LOCKED) p`) == crashPartitions
	})
	again := importTo(t, tg, dir, nil, 0, args...)
	if again.Outcome != "resumed" || again.Partitions.Skipped != 2 || again.Partitions.Committed != 8 {
		t.Fatalf("rerun: %s, %+v partitions", again.Outcome, again.Partitions)
	}
	checkExact(t, tg, "ordinal", rows)
	checkCommittedOnce(t, tg, crashPartitions)
}
