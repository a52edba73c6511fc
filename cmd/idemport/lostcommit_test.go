package main

// A lost COMMIT reply: a proxy between the binary and PostgreSQL forwards a
// transaction's COMMIT and then cuts the connection before the server's
// reply can come back. The server commits; the client cannot know it did.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// cutProxy relays PostgreSQL connections to upstream. On the first
// connection whose transaction sends a statement containing cut, it
// forwards that transaction's COMMIT (unless it is to lose the COMMIT
// itself) and then closes the connection to the client at once, without
// forwarding what the server replies: the server reads the COMMIT and
// commits, or reads the end of the connection and rolls back, and the
// client sees its connection end with no reply either way. Every other
// connection, and everything else, is relayed as it is. It speaks the
// protocol only as far as finding message boundaries: the startup
// message, then typed messages.
type cutProxy struct {
	ln         net.Listener
	upstream   string
	cut        string
	loseCommit bool // the COMMIT itself is lost, not only its reply
	fired      atomic.Bool
}

// newCutProxy starts a cutProxy on a free local port; it stops when t ends.
func newCutProxy(t *testing.T, upstream, cut string, loseCommit bool) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, upstream: upstream, cut: cut, loseCommit: loseCommit}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.relay(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return p
}

// addr returns the proxy's host:port.
func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) relay(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return
	}
	defer server.Close()
	var mu sync.Mutex
	cut := false
	done := make(chan struct{})
	go func() { // server → client, until the cut; after it, drained
		defer close(done)
		buf := make([]byte, 32<<10)
		for {
			n, err := server.Read(buf)
			mu.Lock()
			if n > 0 && !cut {
				client.Write(buf[:n])
			}
			mu.Unlock()
			if err != nil {
				client.Close()
				return
			}
		}
	}()
	defer func() { <-done }()
	r := bufio.NewReader(client)
	forward := func(msg []byte) bool {
		_, err := server.Write(msg)
		return err == nil
	}
	// The untyped startup messages: an SSL or GSS encryption request (the
	// server answers one byte, then the real startup follows) and the
	// startup message itself, or a cancel request.
	for {
		msg, err := readMessage(r, false)
		if err != nil || !forward(msg) {
			return
		}
		code := binary.BigEndian.Uint32(msg[4:8])
		if code != 80877103 && code != 80877104 {
			break
		}
	}
	armed := false
	for {
		msg, err := readMessage(r, true)
		if err != nil {
			server.(*net.TCPConn).CloseWrite()
			return
		}
		body := string(msg[5:])
		switch msg[0] {
		case 'P', 'Q': // Parse (name, query, …), simple Query
			if strings.Contains(body, p.cut) {
				armed = true
			}
		}
		if armed && msg[0] == 'Q' && strings.EqualFold(strings.TrimSpace(strings.TrimRight(body, "\x00")), "commit") && p.fired.CompareAndSwap(false, true) {
			mu.Lock()
			cut = true
			mu.Unlock()
			if !p.loseCommit {
				forward(msg)
			}
			client.Close()
			server.(*net.TCPConn).CloseWrite() // the server reads the COMMIT (or not), then the end
			return
		}
		if !forward(msg) {
			return
		}
	}
}

// readMessage reads one protocol message, with its type byte when typed.
func readMessage(r *bufio.Reader, typed bool) ([]byte, error) {
	var head []byte
	if typed {
		b, err := r.ReadByte()
		if err != nil {
			return nil, err
		}
		head = append(head, b)
	}
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 1<<30 {
		return nil, fmt.Errorf("bad message length %d", n)
	}
	msg := make([]byte, len(head)+int(n))
	copy(msg, head)
	copy(msg[len(head):], size[:])
	_, err := io.ReadFull(r, msg[len(head)+4:])
	return msg, err
}

// throughProxy returns tg's flags for the binary with its connections made
// through a new cutProxy that cuts at the COMMIT of the first transaction
// sending a statement containing cut.
func throughProxy(t *testing.T, tg *testkit.Target, cut string, loseCommit bool) ([]string, *cutProxy) {
	t.Helper()
	args := slices.Clone(tg.Args)
	u, err := url.Parse(args[1])
	if err != nil {
		t.Fatal(err)
	}
	p := newCutProxy(t, u.Host, cut, loseCommit)
	u.Host = p.addr()
	args[1] = u.String()
	return args, p
}

// TestLostCommitReply cuts the connection right after the COMMIT of the
// transaction that completes an import, and of a partition's transaction,
// has been forwarded to PostgreSQL: the server commits, the reply is lost.
// The run must find out what happened from the database and report it:
// exit 0, every partition committed once and counted for this attempt, the
// operation completed by it, and the attempt recorded as imported, never
// failed; the table holds the file exactly. When the COMMIT itself is lost
// (the server rolls back), a partition is applied again on a new
// connection and the run still exits 0; a completing transaction is not
// retried: the run exits 1 with the operation failed, and the rerun
// completes it.
func TestLostCommitReply(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.Postgres)
	for _, c := range []struct{ name, cut string }{
		{"completing transaction", "SET state = 'completed'"},
		{"partition transaction", "SET done = 1"},
	} {
		for _, lost := range []string{"reply", "commit"} {
			for _, mode := range []string{"plain", "atomic"} {
				t.Run(c.name+"/"+lost+"/"+mode, func(t *testing.T) {
					t.Parallel()
					dir := t.TempDir()
					tg := testkit.NewTarget(t, testkit.Postgres, dir)
					rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), crashRows, 51)
					target, proxy := throughProxy(t, tg, c.cut, lost == "commit")
					args := []string{"--workers", "2", "--partition-rows", fmt.Sprint(crashRows / crashPartitions), "orders.csv"}
					if mode == "atomic" {
						args = append([]string{"--atomic"}, args...)
					}
					run := testkit.Exec(t, dir, nil, append(append([]string{"import", "--output", "json"}, target...), args...)...)
					if !proxy.fired.Load() {
						t.Fatalf("the proxy never cut a COMMIT (exit %d)\n%s%s", run.Code, run.Stdout, run.Stderr)
					}
					if c.name == "completing transaction" && lost == "commit" {
						res := parsed(t, run, "the run whose COMMIT was lost", 1)
						if res.Outcome != "failed" || !strings.Contains(res.Error, "finalize") {
							t.Fatalf("result: %s, error %q", res.Outcome, res.Error)
						}
						if op := testkit.Query(t, tg.DB, `SELECT state FROM `+tg.Ledger("operations")); !reflect.DeepEqual(op, [][]any{{"failed"}}) {
							t.Fatalf("operation %v, want failed", op)
						}
						again := importTo(t, tg, dir, nil, 0, args...)
						if again.Outcome != "resumed" || again.Partitions.Committed != 0 || again.Partitions.Skipped != crashPartitions {
							t.Fatalf("rerun: %s, %+v partitions", again.Outcome, again.Partitions)
						}
						checkExact(t, tg, "ordinal", rows)
						return
					}
					attempts := testkit.Query(t, tg.DB, `SELECT outcome, partitions_committed, coalesce(error, '') FROM `+tg.Ledger("attempts"))
					if want := [][]any{{"imported", int64(crashPartitions), ""}}; !reflect.DeepEqual(attempts, want) {
						t.Errorf("attempts (outcome, partitions committed, error) %v, want %v", attempts, want)
					}
					res := parsed(t, run, "the run whose COMMIT reply was lost", 0)
					if res.Outcome != "imported" || res.Partitions.Committed != crashPartitions || res.Partitions.Skipped != 0 || res.Rows.Inserted != crashRows || res.Error != "" {
						t.Fatalf("result: %s, %+v partitions, %+v rows, error %q", res.Outcome, res.Partitions, res.Rows, res.Error)
					}
					if by := testkit.Query(t, tg.DB, `SELECT state, completed_by FROM `+tg.Ledger("operations")); !reflect.DeepEqual(by, [][]any{{"completed", res.AttemptID}}) {
						t.Fatalf("operation (state, completed by) %v, want completed by %s", by, res.AttemptID)
					}
					checkExact(t, tg, "ordinal", rows)
					if again := importTo(t, tg, dir, nil, 0, args...); again.Outcome != "duplicate" {
						t.Fatalf("rerun: %s, want duplicate", again.Outcome)
					}
				})
			}
		}
	}
}
