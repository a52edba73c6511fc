package main

// A stalled connection: a proxy between the binary and the database stops
// forwarding, in both directions and on every connection, new ones too,
// without closing anything, as a network that silently drops everything
// does. The kernel still acknowledges what is sent to the proxy, so TCP
// keepalives cannot tell: only the attempt's own heartbeat can.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"flag"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// stallProxy relays connections to upstream, whose client messages wire
// reads, until the client sends its stallAt-th statement that at matches:
// it forwards that one and then stalls, forwarding nothing more on any
// connection. cut closes every connection, as the network's end finally
// reaching both sides does.
type stallProxy struct {
	ln       net.Listener
	upstream string
	wire     func() wire
	at       func(statement string) bool
	stallAt  int32
	seen     atomic.Int32
	trace    func(statement string)
	stalled  chan struct{} // closed when the proxy stalls
	once     sync.Once
	mu       sync.Mutex
	conns    []net.Conn
}

// newStallProxy starts a stallProxy on a free local port; it is cut when t
// ends.
func newStallProxy(t *testing.T, upstream string, w func() wire, at func(statement string) bool, stallAt int32) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, upstream: upstream, wire: w, at: at, stallAt: stallAt, stalled: make(chan struct{})}
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
	next := p.wire()
	for {
		msg, sql, err := next(r)
		p.hold()
		if err != nil {
			server.(*net.TCPConn).CloseWrite()
			return
		}
		if _, err := server.Write(msg); err != nil {
			return
		}
		if sql == "" {
			continue
		}
		if p.trace != nil {
			p.trace(sql)
		}
		if p.at(sql) && p.seen.Add(1) == p.stallAt {
			p.once.Do(func() { close(p.stalled) })
		}
	}
}

// A wire reads a client's messages on one connection, one at a time:
// each message's bytes, and the SQL text it runs ("" for a message that
// runs none).
type wire func(r *bufio.Reader) (msg []byte, sql string, err error)

// postgresWire reads PostgreSQL's messages: the untyped startup messages
// first (as cutProxy reads them), then typed ones (statement).
func postgresWire() wire {
	started := false
	prepared := map[string]string{}
	return func(r *bufio.Reader) ([]byte, string, error) {
		msg, err := readMessage(r, started)
		if err != nil {
			return nil, "", err
		}
		if !started {
			code := binary.BigEndian.Uint32(msg[4:8])
			started = code != 80877103 && code != 80877104 // not SSLRequest, GSSENCRequest
			return msg, "", nil
		}
		return msg, statement(msg, prepared), nil
	}
}

// mariadbWire reads MariaDB's packets: a 3-byte little-endian length and
// a sequence number, then the payload. A command starts its sequence at
// 0; COM_QUERY (3) runs the text after it. The client's other packets
// (its handshake, a LOAD DATA LOCAL file's contents, a long command's
// continuations) follow within a sequence.
func mariadbWire() wire {
	return func(r *bufio.Reader) ([]byte, string, error) {
		var head [4]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return nil, "", err
		}
		n := int(head[0]) | int(head[1])<<8 | int(head[2])<<16
		msg := make([]byte, 4+n)
		copy(msg, head[:])
		if _, err := io.ReadFull(r, msg[4:]); err != nil {
			return nil, "", err
		}
		if head[3] == 0 && n > 0 && msg[4] == 3 {
			return msg, strings.TrimSpace(string(msg[5:])), nil
		}
		return msg, "", nil
	}
}

var stallTrace = flag.Bool("stall-trace", false, "log each statement TestStalledConnectionEndsTheAttempt's proxy relays")

// statement returns the SQL text msg runs: a simple Query's, or a Bind's
// of the statement prepared (a Parse, which statement records in prepared,
// by name, and returns "" for), or "" for any other message. A statement
// prepared once on a connection is counted at each Bind of it.
func statement(msg []byte, prepared map[string]string) string {
	var f []string // the message's strings, each ended by a zero byte
	for b := msg[5:]; len(f) < 2; {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			break
		}
		f, b = append(f, string(b[:i])), b[i+1:]
	}
	switch {
	case msg[0] == 'Q' && len(f) > 0:
		return strings.TrimSpace(f[0])
	case msg[0] == 'P' && len(f) > 1: // name, query
		prepared[f[0]] = strings.TrimSpace(f[1])
	case msg[0] == 'B' && len(f) > 1: // portal, statement
		return prepared[f[1]]
	}
	return ""
}

// TestStalledConnectionEndsTheAttempt stalls the network to PostgreSQL
// (or MariaDB) while an import sends a statement: the statement, and every later one
// (heartbeats, new connections), gets no answer and no error. The import
// must not wait for ever, whatever its workers were doing: once its leases
// have run out without the database answering, it stops its work and
// exits 1 (a rerun resumes). Once the network's end reaches the server
// (the proxy closes), the server rolls the stalled transactions back; a
// rerun resumes the file and the table holds it exactly, every partition
// committed once. The stall hits a partition's COPY, its merge (of a file
// by key over the rows of another), or its COMMIT, which the server
// receives and commits, its reply lost in the stall (then the partition is
// kept; when it is the completion's, the rerun finds the file imported),
// with one worker and with two, whose other worker is then anywhere in its
// own partition, its COMMIT too. With one worker the partitions before the
// stalled one are those kept. On MariaDB (subtests mariadb/…), whose
// driver sends a COMMIT with no context, the stall hits a COMMIT, the
// load of a partition's rows (LOAD DATA, counted as a COPY is), the
// statement that moves a keyed partition's staged rows into the table
// (INSERT … SELECT … ON DUPLICATE KEY UPDATE) and the completion's.
func TestStalledConnectionEndsTheAttempt(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		db      string
		workers string
		at      string // the start of the statement counted
		n       int32  // the stall follows the n-th, counted from the first COPY
		key     bool   // by key, over the rows of another file: a merge per partition
		kept    int64  // with one worker: the partitions the rerun finds done
		again   string // the rerun's outcome
	}{
		{"1/copy", testkit.Postgres, "1", "COPY ", 3, false, 2, "resumed"},
		{"2/copy", testkit.Postgres, "2", "COPY ", 3, false, -1, "resumed"},
		{"1/merge", testkit.Postgres, "1", "WITH m AS (INSERT", 3, true, 2, "resumed"},
		{"2/merge", testkit.Postgres, "2", "WITH m AS (INSERT", 3, true, -1, "resumed"},
		{"1/commit", testkit.Postgres, "1", "commit", 2, false, 2, "resumed"},
		{"2/commit", testkit.Postgres, "2", "commit", 2, false, -1, "resumed"},
		{"1/completion", testkit.Postgres, "1", "commit", crashPartitions + 1, false, 0, "duplicate"},
		{"mariadb/1/copy", testkit.MariaDB, "1", "COPY ", 3, false, 2, "resumed"},
		{"mariadb/1/merge", testkit.MariaDB, "1", `INSERT INTO "orders"`, 3, true, 2, "resumed"},
		{"mariadb/1/commit", testkit.MariaDB, "1", "commit", 2, false, 2, "resumed"},
		{"mariadb/2/commit", testkit.MariaDB, "2", "commit", 2, false, -1, "resumed"},
		{"mariadb/1/completion", testkit.MariaDB, "1", "commit", crashPartitions + 1, false, 0, "duplicate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			testkit.Available(t, c.db)
			t.Parallel()
			dir := t.TempDir()
			tg := testkit.NewTarget(t, c.db, dir)
			w, load := postgresWire, "COPY "
			if c.db == testkit.MariaDB {
				w, load = mariadbWire, "LOAD DATA "
			}
			at := c.at
			if at == "COPY " {
				at = load
			}
			args := []string{"--workers", c.workers, "--partition-rows", "100"}
			parts := crashPartitions
			if c.key {
				args = append(args, "--key", "order_id")
				testkit.Orders(t, filepath.Join(dir, "before.csv"), crashRows, 17)
				args = append(args, "--table", "orders")
				importTo(t, tg, dir, nil, 0, append(args, "before.csv")...)
				parts *= 2
			}
			args = append(args, "orders.csv")
			rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), crashRows, 53)
			target := slices.Clone(tg.Args)
			u, err := url.Parse(target[1])
			if err != nil {
				t.Fatal(err)
			}
			var copied atomic.Bool
			proxy := newStallProxy(t, u.Host, w, func(s string) bool {
				// On MariaDB a load straight into the table follows the
				// batch's savepoint and look-up in its message ("SAVEPOINT
				// …; SELECT … INTO @idemport_stored; LOAD DATA …").
				if _, after, ok := strings.Cut(s, " INTO @idemport_stored; "); ok {
					s = after
				}
				// A staging COPY's message begins with the statements that
				// make the stage ready ("…; COPY …").
				if strings.HasPrefix(s, load) || strings.Contains(s, "; "+load) {
					copied.Store(true)
				}
				return copied.Load() && len(s) >= len(at) && strings.EqualFold(s[:len(at)], at)
			}, c.n)
			if *stallTrace {
				proxy.trace = func(s string) { t.Logf("%s %.100s", time.Now().Format("05.000"), s) }
			}
			u.Host = proxy.ln.Addr().String()
			target[1] = u.String()

			cmd := testkit.Cmd(t, dir, nil, append(append([]string{"import", "--output", "json", "--lease", "3s"}, target...), args...)...)
			begun := time.Now()
			run := launch(t, cmd)
			r := endWithin(t, run, time.Minute, "the import whose connection stalled")
			t.Logf("the import ended %v after it began, with a lease of 3s", time.Since(begun).Round(100*time.Millisecond))
			if !proxy.isStalled() {
				t.Fatalf("the proxy never stalled (exit %d)\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			res := parsed(t, r, "the import whose connection stalled", 1)
			if strings.Contains(r.Stderr, "[mysql]") {
				t.Fatalf("the database driver wrote its own log on stderr, beside the run's:\n%s", r.Stderr)
			}
			if res.Outcome != "failed" || !strings.Contains(res.Error, "the database stopped answering") {
				t.Fatalf("outcome %s, error %q; want failed because the database stopped answering", res.Outcome, res.Error)
			}

			proxy.cut()
			waitFor(t, time.Minute, "the server to end the stalled sessions", func() bool {
				return testkit.Int(t, tg.DB, `SELECT count(*) FROM (SELECT 1 FROM `+tg.Ledger("partitions")+` FOR UPDATE SKIP LOCKED) p`) == int64(parts)
			})
			again := importTo(t, tg, dir, nil, 0, args...)
			kept := again.Partitions.Skipped
			if again.Outcome != c.again || c.again == "resumed" && (kept+again.Partitions.Committed != crashPartitions || c.workers == "1" && kept != c.kept) {
				t.Fatalf("rerun: %s, %+v partitions; want %s", again.Outcome, again.Partitions, c.again)
			}
			if c.key {
				checkByKey(t, tg, rows)
			} else {
				checkExact(t, tg, "ordinal", rows)
			}
			checkCommittedOnce(t, tg, parts)
		})
	}
}

// endWithin waits for s to end, as finishWithin does; one still running
// after limit is sent SIGQUIT, so that its stderr shows where each of its
// goroutines waits, and t fails with it.
func endWithin(t *testing.T, s *started, limit time.Duration, who string) testkit.Run {
	t.Helper()
	done := make(chan testkit.Run, 1)
	go func() { done <- testkit.Wait(t, s.cmd) }()
	select {
	case r := <-done:
		return r
	case <-time.After(limit):
		s.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-done
		}
		t.Fatalf("%s was still running after %v: it waits without limit\n%s%s", who, limit, s.stdout.String(), s.stderr.String())
	}
	return testkit.Run{}
}
