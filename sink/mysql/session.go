package mysql

import (
	"context"
	"database/sql/driver"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idemport/idemport/sink"
)

// sqlMode is every session's sql_mode. Strict mode makes a value that does
// not fit its column an error instead of a warning and a truncated value;
// ANSI_QUOTES makes "name" a name and PIPES_AS_CONCAT makes || concatenate,
// as in standard SQL, which the statements shared with the other databases
// are written in; NO_BACKSLASH_ESCAPES makes a backslash in a string an
// ordinary character, as there.
const sqlMode = "STRICT_ALL_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ZERO_DATE,NO_ZERO_IN_DATE," +
	"NO_ENGINE_SUBSTITUTION,ANSI_QUOTES,PIPES_AS_CONCAT,NO_BACKSLASH_ESCAPES"

// maxLockWait is the longest lock wait the server takes, in seconds: the
// wait of a Settings.BusyTimeout of 0.
const maxLockWait = 31536000

// session returns the statements that give a new connection its settings:
// sql_mode; the time zone UTC, so that NOW() and DATETIME values mean the
// same on every host; READ COMMITTED, so that a statement reads what
// others committed before it, and a claim's scan does not keep locks on
// rows it passed over, as REPEATABLE READ's gap locks would (a claimer
// then waited on another's finished partition); lock waits of at most
// s.BusyTimeout, for rows (innodb_lock_wait_timeout) and for tables
// (lock_wait_timeout), in whole seconds, the server's unit, rounded up;
// InnoDB's strict mode off, so that a table of as many columns as Limits
// admits can be made and widened: with it on, CREATE TABLE counts each
// text column's worst case inline and refuses more than 383 LONGTEXT
// columns (row size too large), where a row of short values fits (a row
// that does not still fails its write); and a read-only session for a
// read-only Open.
func session(s sink.Settings) []string {
	wait := int64(maxLockWait)
	if s.BusyTimeout > 0 {
		wait = min(int64(math.Ceil(s.BusyTimeout.Seconds())), maxLockWait)
	}
	tx := "ISOLATION LEVEL READ COMMITTED"
	if s.ReadOnly {
		tx += ", READ ONLY"
	}
	return []string{
		fmt.Sprintf(`SET SESSION sql_mode = '%s', time_zone = '+00:00', innodb_lock_wait_timeout = %d, lock_wait_timeout = %d, innodb_strict_mode = OFF`,
			sqlMode, wait, wait),
		"SET SESSION TRANSACTION " + tx,
	}
}

// connector opens connections of go-sql-driver/mysql (conn), each set up
// with the session's statements before database/sql hands it out.
type connector struct {
	driver.Connector
	setup string // session's statements, in one message
}

// newConnector returns the connector of cfg's connections for s: utf8mb4
// (4-byte characters round-trip), times in UTC and DATETIME values read
// as time.Time, as the other drivers read timestamps; the server's
// max_allowed_packet, read on connecting, so that the driver sends a
// value too long for one packet in pieces the server takes; several
// statements in one Exec (the migration files); a statement's arguments
// written into its text by the driver, escaped as the session's
// NO_BACKSLASH_ESCAPES reads it (the server's status flag tells the
// driver), rather than bound to a statement prepared on the server, which
// cost a round trip to prepare and a packet to close for each statement
// with arguments (TestArgumentsGoInTheStatement); UPDATEs counting the
// rows they found, as on the other databases, not only those they changed
// (a lease renewed twice in one millisecond is still held: see
// TestFenceRightAfterClaim); connections made by dial (TCP keepalives and
// a user timeout), whose transactions' COMMIT and ROLLBACK end with the
// context the transaction began with (conn); and the session's settings.
func newConnector(cfg *mysql.Config, s sink.Settings) (driver.Connector, error) {
	cfg = cfg.Clone()
	cfg.Collation = "utf8mb4_bin"
	cfg.Loc = time.UTC
	cfg.ParseTime = true
	cfg.MaxAllowedPacket = 0
	cfg.MultiStatements = true
	cfg.InterpolateParams = true
	cfg.ClientFoundRows = true
	cfg.DialFunc = dial
	cfg.Logger = driverLog{}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return connector{Connector: c, setup: strings.Join(session(s), "; ")}, nil
}

// driverLog takes the driver's own log lines ("closing bad idle
// connection", a connection this package abandoned), which repeat what
// the driver's errors already say, off stderr, where the driver's default
// logger writes them beside a run's own messages, and gives them to
// slog's default logger at debug level.
type driverLog struct{}

func (driverLog) Print(v ...any) { slog.Debug("mysql driver: " + fmt.Sprint(v...)) }

// Connect implements driver.Connector.
func (c connector) Connect(ctx context.Context) (driver.Conn, error) {
	var nc *netConn
	dc, err := c.Connector.Connect(context.WithValue(ctx, dialedKey{}, &nc))
	if err != nil {
		return nil, err
	}
	d, ok := dc.(driverConn)
	if !ok || nc == nil {
		dc.Close()
		return nil, fmt.Errorf("connect: the driver's connection is not one this driver made")
	}
	conn := conn{driverConn: d, net: nc}
	// The session's statements in one message (one round trip, not one
	// each): the server runs them in order and stops at the first that
	// fails.
	if _, err := conn.ExecContext(ctx, c.setup, nil); err != nil {
		conn.Close()
		return nil, fmt.Errorf("set up the session: %w", err)
	}
	return conn, nil
}
