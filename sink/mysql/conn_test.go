package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/sink"
)

// TestCommitEndsWithItsContext sends a transaction's COMMIT (and another's
// ROLLBACK) into a network that stalled: the driver waits for the reply
// without a deadline, and it ends once the context the transaction began
// with ends, with an error, as pgx's does (store.Txn relies on it to end a
// COMMIT when the database stops answering).
func TestCommitEndsWithItsContext(t *testing.T) {
	dsn := freshDSN(t)
	for _, end := range []string{"commit", "rollback"} {
		t.Run(end, func(t *testing.T) {
			proxy := newProxy(t, dsn)
			db, err := Driver{}.Open(t.Context(), proxy.dsn, sink.Settings{})
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
			proxy.stall()
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

// lateCloser is a connector whose first connection's socket closes only
// once gate is closed, as an abandon's close does when the goroutine
// that makes it runs late (a loaded machine). A COMMIT written on that
// connection calls onCommit, if set, once it is sent.
type lateCloser struct {
	driver.Connector
	gate     chan struct{}
	onCommit func()
	made     atomic.Bool
}

func (l *lateCloser) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := l.Connector.Connect(ctx)
	if err != nil || l.made.Swap(true) {
		return dc, err
	}
	c := dc.(conn)
	c.net.Conn = &lateConn{Conn: c.net.Conn, l: l}
	return c, nil
}

// lateConn is the socket of lateCloser's first connection.
type lateConn struct {
	net.Conn
	l *lateCloser
}

func (c *lateConn) Close() error {
	<-c.l.gate
	return c.Conn.Close()
}

// SyscallConn is the socket's, for the driver's check of an idle
// connection.
func (c *lateConn) SyscallConn() (syscall.RawConn, error) {
	return c.Conn.(syscall.Conn).SyscallConn()
}

func (c *lateConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	// A packet: a 4-byte header, then COM_QUERY (3) and the statement.
	if err == nil && c.l.onCommit != nil && len(b) > 5 && b[4] == 3 && string(b[5:]) == "COMMIT" {
		c.l.onCommit()
	}
	return n, err
}

// TestAbandonedConnectionLeavesThePool ends a transaction's context
// before its ROLLBACK (an ordinary cancel: database/sql rolls back on a
// goroutine of its own), and another's while its COMMIT is in flight,
// which then commits: each connection is abandoned, its socket closed,
// and the close comes late. The transaction must not end, and its
// connection go back to the pool, before the close: database/sql hands a
// connection the driver still thinks open to the next statement, which
// the close then cuts (an abandoned import's DROP of the table it made,
// left with a warning).
func TestAbandonedConnectionLeavesThePool(t *testing.T) {
	c := testConnector(t, freshDSN(t))
	for _, end := range []string{"rollback", "commit"} {
		t.Run(end, func(t *testing.T) {
			l := &lateCloser{Connector: c, gate: make(chan struct{})}
			var once sync.Once
			open := func() { once.Do(func() { close(l.gate) }) }
			defer open()
			db := sql.OpenDB(l)
			defer db.Close()
			db.SetMaxOpenConns(1)
			table := q("late_" + end)
			if _, err := db.ExecContext(t.Context(), `CREATE TABLE `+table+` (k INT PRIMARY KEY)`); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO `+table+` VALUES (1)`); err != nil {
				t.Fatal(err)
			}
			committed := make(chan error, 1)
			if end == "rollback" {
				cancel()
			} else {
				l.onCommit = cancel
				go func() { committed <- tx.Commit() }()
			}
			// While the socket is open, the transaction must not end nor
			// its connection go back to the pool.
			for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				select {
				case err := <-committed:
					t.Fatalf("the COMMIT returned (%v) before its abandoned socket closed", err)
				default:
				}
				if st := db.Stats(); st.OpenConnections == 0 {
					t.Fatalf("the %s let its connection go before its abandoned socket closed", end)
				}
				if db.Stats().Idle == 0 {
					continue
				}
				cut := make(chan error, 1)
				go func() {
					_, err := db.ExecContext(context.Background(), `DO SLEEP(1)`)
					cut <- err
				}()
				time.Sleep(200 * time.Millisecond)
				open()
				t.Fatalf("the %s returned the connection to the pool before its abandoned socket closed; the next statement then failed: %v", end, <-cut)
			}
			open()
			if end == "commit" {
				if err := <-committed; err != nil {
					t.Fatalf("the COMMIT that got its reply returned %v", err)
				}
			}
			for deadline := time.Now().Add(5 * time.Second); db.Stats().OpenConnections > 0; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the abandoned connection is still open (%+v)", db.Stats())
				}
			}
			want := map[string]int64{"rollback": 0, "commit": 1}[end]
			var n int64
			if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM `+table).Scan(&n); err != nil || n != want {
				t.Fatalf("after the %s: %d rows (%v), want %d", end, n, err, want)
			}
		})
	}
}
