package postgres

import (
	"testing"

	"github.com/idemport/idemport/internal/pgtest"
)

// TestCommitLazilyOnlyThatTransaction: CommitLazily turns
// synchronous_commit off for its transaction alone; the next transaction
// on the same connection (the pool may give it to the completion of an
// operation) commits as the session did before.
func TestCommitLazilyOnlyThatTransaction(t *testing.T) {
	db, _ := pgtest.Open(t)
	ctx := t.Context()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	setting := func() string {
		var v string
		if err := conn.QueryRowContext(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := setting()
	if before == "off" {
		t.Fatalf("the session's synchronous_commit is already off")
	}
	for _, end := range []string{"commit", "rollback"} {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := (Driver{}).CommitLazily(ctx, tx); err != nil {
			t.Fatal(err)
		}
		var in string
		if err := tx.QueryRowContext(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&in); err != nil {
			t.Fatal(err)
		}
		if in != "off" {
			t.Fatalf("inside the transaction: synchronous_commit %s, want off", in)
		}
		if end == "commit" {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		if after := setting(); after != before {
			t.Fatalf("after the transaction's %s: synchronous_commit %s, want the session's %s", end, after, before)
		}
	}
}
