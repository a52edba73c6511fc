package mysql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"

	"github.com/idemport/idemport/sink/internal/netdial"
)

// A transaction's COMMIT and ROLLBACK end when the context the transaction
// began with ends, as pgx's do: go-sql-driver/mysql sends them with no
// context and waits for the reply without a deadline, so a COMMIT sent into
// a network that stalled without closing (no reply, no error) waited for
// ever, whatever the caller knew of the database's silence. The connection
// is then abandoned (its socket closed under the driver, which fails the
// statement and discards the connection); the server rolls back a
// transaction whose connection it lost, and one whose COMMIT it received
// may have committed: the caller cannot tell which from the error. A
// caller that must not cut a COMMIT short begins its transaction with a
// context that ends only when no reply can come (see
// pipeline/internal/store's Txn). The statements themselves already end
// with the context they run under (the driver closes the connection).

// dialedKey is the key of the context value through which dial hands the
// connection it made to the Connect that asked for it.
type dialedKey struct{}

// dial makes a connection to the server (netdial's keepalives and user
// timeout on TCP) that can be abandoned, and hands it to the Connect whose
// context it got (connector.Connect).
func dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := netdial.Dialer(0).DialContext(ctx, network, addr) // the driver's timeout is ctx's
	if err != nil {
		return nil, err
	}
	nc := &netConn{Conn: c}
	if p, ok := ctx.Value(dialedKey{}).(**netConn); ok {
		*p = nc
	}
	return nc, nil
}

// errAbandoned is what a read or write of an abandoned connection returns.
var errAbandoned = errors.New("connection abandoned: its transaction's context ended while it waited for the server")

// netConn is a connection to the server that abandon closes under the
// driver's reads and writes.
type netConn struct {
	net.Conn
	closed    atomic.Bool
	abandoned atomic.Bool
	discard   atomic.Bool // writes are dropped: see conn.Close
}

// abandon closes c, so that a read waiting for a reply returns
// errAbandoned.
func (c *netConn) abandon() {
	c.abandoned.Store(true)
	c.Close()
}

// Close closes c once; later calls do nothing.
func (c *netConn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return c.Conn.Close()
}

func (c *netConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil && c.abandoned.Load() {
		err = errAbandoned
	}
	return n, err
}

func (c *netConn) Write(b []byte) (int, error) {
	if c.discard.Load() {
		return len(b), nil
	}
	n, err := c.Conn.Write(b)
	if err != nil && c.abandoned.Load() {
		err = errAbandoned
	}
	return n, err
}

// SyscallConn is the socket's, for the driver's check of an idle
// connection the server closed (CheckConnLiveness).
func (c *netConn) SyscallConn() (syscall.RawConn, error) {
	if s, ok := c.Conn.(syscall.Conn); ok {
		return s.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

// driverConn is what a connection of go-sql-driver/mysql implements and
// database/sql uses.
type driverConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	driver.NamedValueChecker
}

// conn is a connection of the driver whose transactions' COMMIT and
// ROLLBACK end with the context the transaction began with.
type conn struct {
	driverConn
	net *netConn
}

// IsValid implements driver.Validator: a connection abandoned by its
// transaction's end (txn.end) is not put back in the pool, though the
// driver, which did not see a statement fail, may think it fine.
func (c conn) IsValid() bool {
	return !c.net.abandoned.Load() && c.driverConn.IsValid()
}

// ResetSession implements driver.SessionResetter; see IsValid.
func (c conn) ResetSession(ctx context.Context) error {
	if c.net.abandoned.Load() {
		return driver.ErrBadConn
	}
	return c.driverConn.ResetSession(ctx)
}

// Close implements driver.Conn. The driver says goodbye to the server
// (COM_QUIT) on a connection it has not seen fail; on one abandoned, whose
// socket is closed, the write would fail and the driver log the failure,
// so the goodbye is dropped instead.
func (c conn) Close() error {
	if c.net.abandoned.Load() {
		c.net.discard.Store(true)
	}
	return c.driverConn.Close()
}

// BeginTx implements driver.ConnBeginTx.
func (c conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.driverConn.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return txn{Tx: tx, ctx: ctx, net: c.net}, nil
}

// txn is a transaction of conn.
type txn struct {
	driver.Tx
	ctx context.Context
	net *netConn
}

// Commit implements driver.Tx.
func (t txn) Commit() error { return t.end(t.Tx.Commit) }

// Rollback implements driver.Tx.
func (t txn) Rollback() error { return t.end(t.Tx.Rollback) }

// end runs COMMIT or ROLLBACK (f), abandoning the connection if the
// transaction's context ends (or ended) before it returns. It returns
// only once the abandon, if one began, has closed the socket: the abandon
// runs on a goroutine of its own, which may run after f returned (a
// COMMIT or ROLLBACK that got its reply first), and database/sql, which
// keeps a transaction's connection after its rollback, would otherwise
// take the connection back as valid (the driver did not see it fail) and
// hand it to the next statement, for the late close to cut.
func (t txn) end(f func() error) error {
	abandoned := make(chan struct{})
	stop := context.AfterFunc(t.ctx, func() {
		defer close(abandoned)
		t.net.abandon()
	})
	err := f()
	if !stop() {
		<-abandoned
		if err != nil {
			err = fmt.Errorf("%w (%w)", err, context.Cause(t.ctx))
		}
	}
	return err
}
