package mysql

import (
	"database/sql"
	"testing"
	"time"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
)

// alterInFlight sets up, in a new database, the table t (id, n BIGINT)
// and an ALTER of it under way in a session of its own: Widen of n to
// text, which has copied the table and waits for the exclusive lock of
// its last step while another transaction reads t. That session is what a
// process killed during its --evolve ALTER leaves on the server: the ALTER
// ends there after the process, and its evolve lock (a row lock of
// another session of the dead process), are gone. finish lets the reader
// go, and waits for the ALTER to end.
func alterInFlight(t *testing.T) (db *sql.DB, finish func()) {
	t.Helper()
	db, _ = openTarget(t, sink.Settings{})
	exec(t, db, `CREATE TABLE t (id BIGINT PRIMARY KEY, n BIGINT)`, `INSERT INTO t VALUES (1, 5), (2, 7)`)
	reader, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Exec(`SELECT * FROM t`); err != nil {
		t.Fatal(err)
	}
	altered := make(chan error, 1)
	go func() {
		tx, err := db.BeginTx(t.Context(), nil)
		if err == nil {
			if err = (Driver{}).Widen(t.Context(), tx, "t", "n", idemtype.String); err == nil {
				err = tx.Commit()
			} else {
				tx.Rollback()
			}
		}
		altered <- err
	}()
	waitWaiting(t, db, 1, nil)
	return db, func() {
		t.Helper()
		if err := reader.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := <-altered; err != nil {
			t.Fatalf("the ALTER under way: %v", err)
		}
	}
}

// waitWaiting waits until n statements of the test's sessions wait for a
// lock (a table's metadata lock, or a session lock), or done is closed.
func waitWaiting(t *testing.T, db *sql.DB, n int, done <-chan struct{}) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		var waiting int
		if err := db.QueryRow(`SELECT count(*) FROM information_schema.processlist
			WHERE db = DATABASE() AND id <> CONNECTION_ID() AND (state LIKE 'Waiting for%lock' OR state = 'User lock')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
		select {
		case <-done:
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d statements wait for a lock after a minute, want %d", waiting, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWidenAfterAnotherSession: a Widen of n to a decimal that begins
// while another session's ALTER makes n text (alterInFlight) leaves n
// text: it waits for that ALTER to end and then finds nothing to widen,
// rather than queueing its own ALTER behind it and narrowing the column
// back to a decimal, which a file of text no longer fitted (and the
// import that had read n as text failed: "column "n" is mediumtext, the
// file's is string").
func TestWidenAfterAnotherSession(t *testing.T) {
	db, finish := alterInFlight(t)
	widened := make(chan error, 1)
	go func() {
		tx, err := db.BeginTx(t.Context(), nil)
		if err == nil {
			if err = (Driver{}).Widen(t.Context(), tx, "t", "n", idemtype.Decimal); err == nil {
				err = tx.Commit()
			} else {
				tx.Rollback()
			}
		}
		widened <- err
	}()
	waitWaiting(t, db, 2, nil) // the second Widen waits, behind the first
	finish()
	if err := <-widened; err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(t, db, "t"), "id:bigint(20):int64 n:longtext:string keys=[[id]]"; got != want {
		t.Errorf("table:\n%s\nwant\n%s", got, want)
	}
}

// TestLockTableAfterAnotherSession: LockTable, the lock under which
// --evolve looks at a table and changes it, is granted only once an
// ALTER another session has under way on the table's columns has ended
// (alterInFlight), so that what is looked at under it is the table as
// that ALTER left it: the ALTER of a killed process outlives its lock.
func TestLockTableAfterAnotherSession(t *testing.T) {
	db, finish := alterInFlight(t)
	seen := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tx, err := db.BeginTx(t.Context(), nil)
		if err != nil {
			seen <- err.Error()
			return
		}
		defer tx.Rollback()
		if err := (Driver{}).LockTable(t.Context(), tx, "evolve", "t"); err != nil {
			seen <- err.Error()
			return
		}
		tbl, err := Driver{}.Describe(t.Context(), db, "t")
		if err != nil {
			seen <- err.Error()
			return
		}
		seen <- signature(tbl)
	}()
	waitWaiting(t, db, 2, done) // LockTable waits, or has returned
	finish()
	if got, want := <-seen, "id bigint(20) int64, n longtext string keys [[id]]"; got != want {
		t.Errorf("under the lock, t is\n%s\nwant\n%s", got, want)
	}
}
