package mysql

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemport/idemport/sink"
)

// stallingProxy relays connections to upstream until stall is called:
// from then on it forwards nothing more in either direction, without
// closing anything, as a network that silently drops everything does.
// The connections close when the test ends.
type stallingProxy struct {
	ln      net.Listener
	stalled atomic.Bool
	mu      sync.Mutex
	conns   []net.Conn
}

func newStallingProxy(t *testing.T, upstream string) *stallingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallingProxy{ln: ln}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
	})
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", upstream)
			if err != nil {
				client.Close()
				return
			}
			p.mu.Lock()
			p.conns = append(p.conns, client, server)
			p.mu.Unlock()
			go p.copy(server, client)
			go p.copy(client, server)
		}
	}()
	return p
}

// copy forwards from src to dst until the proxy stalls or either ends.
func (p *stallingProxy) copy(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if p.stalled.Load() || err != nil {
			return
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			return
		}
	}
}

// TestCommitEndsWithItsContext sends a transaction's COMMIT (and another's
// ROLLBACK) into a network that stalled: the driver waits for the reply
// without a deadline, and it ends once the context the transaction began
// with ends, with an error, as pgx's does (store.Txn relies on it to end a
// COMMIT when the database stops answering).
func TestCommitEndsWithItsContext(t *testing.T) {
	dsn := freshDSN(t)
	for _, end := range []string{"commit", "rollback"} {
		t.Run(end, func(t *testing.T) {
			u, err := url.Parse(dsn)
			if err != nil {
				t.Fatal(err)
			}
			proxy := newStallingProxy(t, u.Host)
			u.Host = proxy.ln.Addr().String()
			db, err := Driver{}.Open(t.Context(), u.String(), sink.Settings{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.DB.Close()
			table := q("stalled_" + end)
			if _, err := db.DB.ExecContext(t.Context(), `CREATE TABLE `+table+` (k INT PRIMARY KEY)`); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			tx, err := db.DB.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO `+table+` VALUES (1)`); err != nil {
				t.Fatal(err)
			}
			proxy.stalled.Store(true)
			ended := make(chan error, 1)
			go func() {
				if end == "commit" {
					ended <- tx.Commit()
				} else {
					ended <- tx.Rollback()
				}
			}()
			select {
			case err := <-ended:
				t.Fatalf("the %s ended (%v) with no reply from the server", end, err)
			case <-time.After(300 * time.Millisecond):
			}
			cause := errors.New("the database stopped answering")
			cancel(cause)
			select {
			case err := <-ended:
				if err == nil || errors.Is(err, sql.ErrTxDone) {
					t.Fatalf("the %s cut short by its context's end returned %v", end, err)
				}
				if !errors.Is(err, cause) {
					t.Errorf("the %s ended with %v, which does not say why (%v)", end, err, cause)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the %s still waits for its reply once its transaction's context ended", end)
			}
		})
	}
}
