package mysql

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemport/idemport/sink/drivertest"
)

// lockWaitDeadline is how long awaitLockWait waits for a statement to
// reach a lock, and receive for one to end: far longer than either takes
// on a loaded machine. It keeps a test from hanging; it times nothing. lockWaitBound is the busy timeout
// of the stores of the tests that stage a lock wait, longer, so that every
// wait of theirs ends by itself, while the deadline is the first to pass.
const (
	lockWaitDeadline = 2 * time.Minute
	lockWaitBound    = 3 * time.Minute
)

// connection returns a connection of db of its own, closed when t ends,
// and its id on the server.
func connection(t *testing.T, db *sql.DB) (*sql.Conn, int64) {
	t.Helper()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var id int64
	if err := conn.QueryRowContext(t.Context(), `SELECT CONNECTION_ID()`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return conn, id
}

// awaitLockWait returns once the statement that what names, running on
// the connection whose id is conn, waits for a row lock. It fails t when
// done receives first (the statement ended without waiting), or after
// lockWaitDeadline, showing the transactions and connections of the
// test's database.
//
// It reads the wait from SHOW ENGINE INNODB STATUS, which InnoDB writes
// from its lock system at each call. information_schema.INNODB_TRX (and
// INNODB_LOCKS and INNODB_LOCK_WAITS) come from a copy that InnoDB makes
// again only when nobody has read it for 0.1 s: polled every 10 ms, or
// read by other tests meanwhile, it kept showing the transactions as they
// were before the statement began to wait, and the poll ran on, 40
// minutes in CI, until the package's timeout.
func awaitLockWait[T any](t *testing.T, db *sql.DB, conn int64, what string, done <-chan T) {
	t.Helper()
	thread := fmt.Sprintf(" thread id %d,", conn)
	for deadline := time.Now().Add(lockWaitDeadline); ; {
		select {
		case r := <-done:
			t.Fatalf("%s ended (%+v) before waiting for a lock", what, r)
		case <-time.After(10 * time.Millisecond):
		}
		// One block per transaction: "---TRANSACTION 3028, ACTIVE 1 sec",
		// "LOCK WAIT 2 lock struct(s), …", "MariaDB thread id 3645, …".
		for _, trx := range strings.Split(innodbStatus(t, db), "---TRANSACTION ")[1:] {
			if strings.Contains(trx, "\nLOCK WAIT ") && strings.Contains(trx, thread) {
				return
			}
		}
		if time.Now().After(deadline) {
			status := innodbStatus(t, db)
			if i := strings.Index(status, "\nTRANSACTIONS\n"); i >= 0 {
				status = status[i+1:]
			}
			if i := strings.Index(status, "\nFILE I/O\n"); i >= 0 {
				status = status[:i]
			}
			t.Fatalf("%s (connection %d) did not wait for a lock in %v; the database's transactions (information_schema, perhaps stale):\n%s\nits connections:\n%s\nInnoDB's status:\n%s",
				what, conn, lockWaitDeadline,
				strings.Join(drivertest.Strings(t, db, `SELECT concat_ws(' ', trx_mysql_thread_id, trx_id, trx_state, trx_started, trx_wait_started, trx_rows_locked, trx_query)
					FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id IN (SELECT ID FROM information_schema.PROCESSLIST WHERE DB = DATABASE())`), "\n"),
				strings.Join(drivertest.Strings(t, db, `SELECT concat_ws(' ', ID, COMMAND, TIME, STATE, INFO)
					FROM information_schema.PROCESSLIST WHERE DB = DATABASE()`), "\n"),
				status)
		}
	}
}

// awaitMetadataLockWait returns once the statement running on the
// connection whose id is conn waits for a table's metadata lock
// (information_schema.processlist's state). It fails t when done
// receives first (the statement ended without waiting), or after
// lockWaitDeadline.
func awaitMetadataLockWait[T any](t *testing.T, db *sql.DB, conn int64, done <-chan T) {
	t.Helper()
	for deadline := time.Now().Add(lockWaitDeadline); ; {
		select {
		case r := <-done:
			t.Fatalf("the statement of connection %d ended (%+v) before waiting for a metadata lock", conn, r)
		case <-time.After(10 * time.Millisecond):
		}
		var n int
		if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM information_schema.processlist WHERE id = ? AND state LIKE '%metadata lock%'`, conn).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("connection %d did not wait for a metadata lock in %v", conn, lockWaitDeadline)
		}
	}
}

// innodbStatus returns SHOW ENGINE INNODB STATUS's text.
func innodbStatus(t *testing.T, db *sql.DB) string {
	t.Helper()
	var typ, name, status string
	if err := db.QueryRowContext(t.Context(), `SHOW ENGINE INNODB STATUS`).Scan(&typ, &name, &status); err != nil {
		t.Fatal(err)
	}
	return status
}

// receive returns what done receives, failing t when nothing comes within
// lockWaitDeadline: what, a statement running in another goroutine, did
// not end.
func receive[T any](t *testing.T, done <-chan T, what string) T {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(lockWaitDeadline):
	}
	t.Fatalf("%s did not end in %v", what, lockWaitDeadline)
	var none T
	return none
}
