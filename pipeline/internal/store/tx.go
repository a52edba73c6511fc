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
// whatever happens to the context meanwhile.
type Txn struct {
	*sql.Tx
	ctx    context.Context
	detach func() bool // stops forwarding ctx's cancel; false if it already happened
	cancel context.CancelFunc
}

// BeginTx begins a Txn on db (a *sql.DB or *sql.Conn). The caller must
// end it with Commit or Rollback (a deferred Rollback after Commit is a
// no-op).
func BeginTx(ctx context.Context, db interface {
	BeginTx(context.Context, *sql.TxOptions) (*sql.Tx, error)
}) (*Txn, error) {
	txCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	detach := context.AfterFunc(ctx, cancel)
	tx, err := db.BeginTx(txCtx, nil)
	if err != nil {
		detach()
		cancel()
		return nil, err
	}
	return &Txn{Tx: tx, ctx: ctx, detach: detach, cancel: cancel}, nil
}

// Commit commits t unless its context was cancelled before; see Txn.
func (t *Txn) Commit() error {
	defer t.cancel()
	if !t.detach() {
		t.Tx.Rollback()
		return t.ctx.Err()
	}
	return t.Tx.Commit()
}

// Rollback rolls t back; after Commit it returns sql.ErrTxDone.
func (t *Txn) Rollback() error {
	t.detach()
	defer t.cancel()
	return t.Tx.Rollback()
}
