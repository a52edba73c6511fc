package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"testing"
	"time"
)

// fakeConnector makes connections whose statements succeed and whose
// transactions end as commit and rollback say, given the context the
// transaction began with.
type fakeConnector struct{ commit, rollback func(context.Context) error }

func (c fakeConnector) Connect(context.Context) (driver.Conn, error) { return fakeConn(c), nil }
func (c fakeConnector) Driver() driver.Driver                        { return nil }

type fakeConn fakeConnector

func (fakeConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("not supported") }
func (fakeConn) Close() error                        { return nil }
func (fakeConn) Begin() (driver.Tx, error)           { return nil, errors.New("use BeginTx") }
func (c fakeConn) BeginTx(ctx context.Context, _ driver.TxOptions) (driver.Tx, error) {
	return fakeTx{ctx: ctx, c: fakeConnector(c)}, nil
}
func (fakeConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	return driver.RowsAffected(0), nil
}

type fakeTx struct {
	ctx context.Context
	c   fakeConnector
}

func (t fakeTx) Commit() error   { return t.c.commit(t.ctx) }
func (t fakeTx) Rollback() error { return t.c.rollback(t.ctx) }

// stalled makes connections whose transactions' COMMIT and ROLLBACK wait
// for a reply that never comes, as on a network that stalled without
// closing: they end only when the context the transaction began with
// ends, as pgx's do. committing is told when a COMMIT is sent.
func stalled(committing chan<- struct{}) fakeConnector {
	return fakeConnector{
		commit: func(ctx context.Context) error {
			committing <- struct{}{}
			<-ctx.Done()
			return driver.ErrBadConn
		},
		rollback: func(ctx context.Context) error {
			<-ctx.Done()
			return driver.ErrBadConn
		},
	}
}

// TestCommitEndsWhenUnanswered sends a Txn's COMMIT into a stalled
// connection: the cancel of its work (another worker's failure, an
// interrupt) does not end it, as a COMMIT must not be cut short by a
// cancel; the database found not answering (Unanswered) does, and the
// contexts Detached from the work end with it.
func TestCommitEndsWhenUnanswered(t *testing.T) {
	t.Parallel()
	committing := make(chan struct{}, 1)
	db := sql.OpenDB(stalled(committing))
	defer db.Close()
	work, silent := Unanswered(context.Background())
	work, stop := context.WithCancelCause(work)
	tx, err := BeginTx(work, db)
	if err != nil {
		t.Fatal(err)
	}
	detached, cancelDetached := Detached(context.WithoutCancel(work))
	defer cancelDetached()
	committed := make(chan error, 1)
	go func() { committed <- tx.Commit() }()
	<-committing
	stop(errors.New("the other worker failed"))
	select {
	case err := <-committed:
		t.Fatalf("the COMMIT ended with the work's cancel (%v); it must wait for its reply", err)
	case <-detached.Done():
		t.Fatal("a detached context ended with the work's cancel")
	case <-time.After(200 * time.Millisecond):
	}
	cause := errors.New("the database stopped answering")
	silent(cause)
	select {
	case err := <-committed:
		if err == nil {
			t.Fatal("the COMMIT cut short by the silence succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the COMMIT still waits for its reply once the database was found not answering")
	}
	<-detached.Done()
	if !errors.Is(context.Cause(detached), cause) {
		t.Fatalf("the detached context ended with %v, want %v", context.Cause(detached), cause)
	}
	later, cancelLater := Detached(work)
	defer cancelLater()
	select {
	case <-later.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a context detached once the database was found not answering does not end")
	}
}

// held makes connections whose ROLLBACK is held until release is
// closed, telling rollingBack when one begins.
func held(rollingBack chan<- struct{}, release <-chan struct{}) fakeConnector {
	return fakeConnector{
		commit: func(context.Context) error { return nil },
		rollback: func(context.Context) error {
			rollingBack <- struct{}{}
			<-release
			return nil
		},
	}
}

// TestTxnEndedByItsContextClosesItsConn cancels the work of a Txn begun on
// a *sql.Conn. database/sql then rolls the transaction back on a goroutine
// of its own and discards the connection; Commit or Rollback must not
// return before that is over, or a statement sent next on the Conn (a
// writer dropping its staging table) races the discard and can panic
// inside database/sql. Once they return the Conn refuses statements. A
// transaction that committed leaves its Conn open.
func TestTxnEndedByItsContextClosesItsConn(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"Commit", "Rollback"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			rollingBack, release := make(chan struct{}, 1), make(chan struct{})
			conn := openConn(t, held(rollingBack, release))
			work, stop := context.WithCancel(context.Background())
			tx, err := BeginTx(work, conn)
			if err != nil {
				t.Fatal(err)
			}
			stop()
			<-rollingBack // database/sql's own rollback is under way
			ended := make(chan error, 1)
			go func() {
				if end == "Commit" {
					ended <- tx.Commit()
				} else {
					ended <- tx.Rollback()
				}
			}()
			select {
			case err := <-ended:
				close(release)
				t.Fatalf("%s returned (%v) while database/sql still rolled back on the connection", end, err)
			case <-time.After(200 * time.Millisecond):
			}
			close(release)
			select {
			case <-ended:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s does not return once the rollback is over", end)
			}
			if _, err := conn.ExecContext(context.Background(), "SELECT 1"); !errors.Is(err, sql.ErrConnDone) {
				t.Fatalf("a statement on the Conn after %s: %v, want %v", end, err, sql.ErrConnDone)
			}
		})
	}
	t.Run("committed", func(t *testing.T) {
		t.Parallel()
		rollingBack, release := make(chan struct{}, 1), make(chan struct{})
		close(release)
		conn := openConn(t, held(rollingBack, release))
		tx, err := BeginTx(context.Background(), conn)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		tx.Rollback() // as a deferred Rollback does
		if _, err := conn.ExecContext(context.Background(), "SELECT 1"); err != nil {
			t.Fatalf("a statement on the Conn after a committed Txn: %v", err)
		}
	})
}

// openConn returns a connection of c's, closed with its database when t
// ends.
func openConn(t *testing.T, c fakeConnector) *sql.Conn {
	t.Helper()
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
