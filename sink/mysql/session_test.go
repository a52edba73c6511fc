package mysql

import (
	"strings"
	"testing"
	"time"

	"github.com/idemport/idemport/sink"
)

// TestSession: every connection of an Open has the session settings the
// driver's statements rely on, whichever connection of the pool runs them.
func TestSession(t *testing.T) {
	dsn := freshDSN(t)
	for _, c := range []struct {
		s        sink.Settings
		wait     int64
		readOnly int64
	}{
		{sink.Settings{BusyTimeout: 1500 * time.Millisecond}, 2, 0},
		{sink.Settings{}, maxLockWait, 0},
		{sink.Settings{ReadOnly: true, BusyTimeout: time.Second}, 1, 1},
	} {
		db, err := Driver{}.Open(t.Context(), dsn, c.s)
		if err != nil {
			t.Fatal(err)
		}
		defer db.DB.Close()
		db.DB.SetMaxIdleConns(4)
		conns := 3
		for range conns { // several connections at once: each is set up
			conn, err := db.DB.Conn(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var mode, zone, iso, charset string
			var rowWait, tableWait, ro int64
			if err := conn.QueryRowContext(t.Context(), `SELECT @@SESSION.sql_mode, @@SESSION.time_zone, @@SESSION.tx_isolation,
				@@SESSION.character_set_connection, @@SESSION.innodb_lock_wait_timeout, @@SESSION.lock_wait_timeout, @@SESSION.tx_read_only`).
				Scan(&mode, &zone, &iso, &charset, &rowWait, &tableWait, &ro); err != nil {
				t.Fatal(err)
			}
			for _, m := range []string{"STRICT_ALL_TABLES", "ANSI_QUOTES", "PIPES_AS_CONCAT", "NO_BACKSLASH_ESCAPES"} {
				if !strings.Contains(","+mode+",", ","+m+",") {
					t.Errorf("sql_mode %s lacks %s", mode, m)
				}
			}
			if zone != "+00:00" || iso != "READ-COMMITTED" || charset != "utf8mb4" || rowWait != c.wait || tableWait != c.wait || ro != c.readOnly {
				t.Errorf("%+v: time_zone %s, isolation %s, charset %s, lock waits %d and %d, read-only %d; want +00:00, READ-COMMITTED, utf8mb4, lock waits %d, read-only %d",
					c.s, zone, iso, charset, rowWait, tableWait, ro, c.wait, c.readOnly)
			}
		}
	}
}
