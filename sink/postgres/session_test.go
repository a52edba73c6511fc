package postgres

import (
	"testing"
	"time"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/sink"
)

// TestSessionSettings opens the database through the driver and reads the
// settings of its sessions: lock_timeout is the busy timeout, and on a TCP
// connection the server keeps the connection alive as configured. A
// statement that waits for a lock another transaction holds past the busy
// timeout fails, and Locked says so.
func TestSessionSettings(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx := t.Context()
	db, err := Driver{}.Open(ctx, dsn, sink.Settings{ReadOnly: true, BusyTimeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.DB.Close()
	var lock, idle, user string
	var tcp bool
	if err := db.DB.QueryRowContext(ctx, `SELECT current_setting('lock_timeout'), current_setting('tcp_keepalives_idle'),
		current_setting('tcp_user_timeout'), inet_client_addr() IS NOT NULL`).Scan(&lock, &idle, &user, &tcp); err != nil {
		t.Fatal(err)
	}
	if lock != "1500ms" {
		t.Errorf("lock_timeout %s, want 1500ms", lock)
	}
	if tcp && (idle != "15" || user != "30000") {
		t.Errorf("tcp_keepalives_idle %s, tcp_user_timeout %s; want 15 and 30000 (ms)", idle, user)
	}

	other, _ := pgtest.Open(t)
	if _, err := other.ExecContext(ctx, `CREATE TABLE held (id int)`); err != nil {
		t.Fatal(err)
	}
	schema := ""
	if err := other.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	holder, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.ExecContext(ctx, `LOCK TABLE held IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	_, err = db.DB.ExecContext(ctx, `SELECT count(*) FROM `+q(schema)+`.held`)
	if !(Driver{}).Locked(err) {
		t.Fatalf("a read of a table locked past the busy timeout: %v; want an error Locked recognises", err)
	}
}
