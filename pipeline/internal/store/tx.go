package store

import (
	"context"
	"database/sql"
)

// Txn is a transaction that a cancel of its context stops up to its
// COMMIT but not during it. A cancel that arrives during a COMMIT's round
// trip (pgx cancels the statement in flight) would leave the client not
// knowing whether it committed, and an interrupted run would report fewer
// partitions than it committed. So Commit decides once: if the context
// was cancelled first, the transaction is rolled back and Commit returns
// the context's error; otherwise the COMMIT is sent and waited for,
// whatever happens to the context meanwhile, unless the database stops
// answering (see Unanswered): no reply would ever come, and the COMMIT,
// like the ROLLBACK, then ends with the connection, its outcome for the
// checkpoint of a later run to tell.
//
// A Txn begun on a *sql.Conn whose context ended before it did closes
// that Conn as Commit or Rollback returns: database/sql rolls such a
// transaction back on a goroutine of its own, and closes the Conn from
// there when the driver calls the connection bad, so a statement sent on
// the Conn meanwhile (a writer dropping its staging table) can find it
// half closed, which panics inside database/sql. Conn.Close waits for
// that rollback; closed by the Txn, the Conn is closed before any later
// use, which then fails with sql.ErrConnDone, and the pool checks the
// connection it gets back (a driver's IsValid) before reusing it.
type Txn struct {
	*sql.Tx
	ctx    context.Context
	txCtx  context.Context // what the transaction began with
	conn   *sql.Conn       // what it began on, if a Conn
	detach func() bool     // stops forwarding ctx's cancel; false if it already happened
	cancel context.CancelFunc
	ended  bool
}

// BeginTx begins a Txn on db (a *sql.DB or *sql.Conn). The caller must
// end it with Commit or Rollback (a deferred Rollback after Commit is a
// no-op).
func BeginTx(ctx context.Context, db interface {
	BeginTx(context.Context, *sql.TxOptions) (*sql.Tx, error)
}) (*Txn, error) {
	txCtx, cancel := Detached(ctx)
	detach := context.AfterFunc(ctx, cancel)
	tx, err := db.BeginTx(txCtx, nil)
	if err != nil {
		detach()
		cancel()
		return nil, err
	}
	conn, _ := db.(*sql.Conn)
	return &Txn{Tx: tx, ctx: ctx, txCtx: txCtx, conn: conn, detach: detach, cancel: cancel}, nil
}

// Commit commits t unless its context was cancelled before; see Txn.
func (t *Txn) Commit() error {
	defer t.end()
	if !t.detach() {
		t.Tx.Rollback()
		return t.ctx.Err()
	}
	return t.Tx.Commit()
}

// Rollback rolls t back; after Commit it returns sql.ErrTxDone.
func (t *Txn) Rollback() error {
	t.detach()
	defer t.end()
	return t.Tx.Rollback()
}

// end releases t's context, first closing its Conn if that context ended
// while t was open (see Txn). Only the first call does anything.
func (t *Txn) end() {
	if t.ended {
		return
	}
	t.ended = true
	if t.conn != nil && t.txCtx.Err() != nil {
		t.conn.Close()
	}
	t.cancel()
}

// unansweredKey is the context key of the context Unanswered returns
// the end of.
type unansweredKey struct{}

// Unanswered returns a copy of ctx, and a function that says, with its
// cause, that the database stopped answering (no reply, no error: a
// network that stalled without closing). It ends whatever runs under the
// copy and would otherwise outlive the copy's cancel: a Txn's COMMIT or
// ROLLBACK in flight, and the contexts Detached from it. The function does
// not cancel the copy itself; the caller cancels its work as it does for
// any other failure. Calling it again does nothing.
func Unanswered(ctx context.Context) (context.Context, context.CancelCauseFunc) {
	silent, stop := context.WithCancelCause(context.Background())
	return context.WithValue(ctx, unansweredKey{}, silent), stop
}

// Detached returns a context that ctx's cancel does not reach, as
// context.WithoutCancel(ctx) does (for a rollback, a COMMIT, a record of
// the attempt's end that must not be cut short by an interrupt), except
// when the database stopped answering (Unanswered, in ctx or a parent):
// then it ends with that cause, since no reply is coming to wait for.
// The caller must call the returned cancel when done.
func Detached(ctx context.Context) (context.Context, context.CancelFunc) {
	d, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	silent, ok := ctx.Value(unansweredKey{}).(context.Context)
	if !ok {
		return d, func() { cancel(context.Canceled) }
	}
	stop := context.AfterFunc(silent, func() { cancel(context.Cause(silent)) })
	return d, func() {
		stop()
		cancel(context.Canceled)
	}
}
