package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/internal/netdial"
)

// configure sets how cfg's connections are made: TCP keepalives and
// user timeout on every socket (netdial.Dialer). setUp asks the server
// for the same, so that a session whose client vanished ends, and its
// transaction's locks are released, within about as long instead of the
// system's default of two hours.
//
// A statement is sent as parse, bind and execute in one round trip, its
// parameters' types the server's to infer as they are for a prepared
// statement (pgx's exec mode), rather than prepared on the server in a
// round trip of its own on its first use on the connection: nearly all
// of an import's statements run once (the ledger's, the checkpoints'),
// and the ones each batch runs ask to be prepared (perBatch). Arguments
// go as text: a []byte argument is bytea's text, so text columns are
// given strings.
func configure(cfg *pgx.ConnConfig) {
	cfg.DialFunc = netdial.Dialer(cfg.ConnectTimeout).DialContext
	cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
}

// setUp gives a new connection its session settings: lock_timeout is
// s.BusyTimeout (when set), so that no statement waits longer than that
// for a lock another transaction holds, and fails with SQLSTATE 55P03
// instead (see Locked); and the server's keepalives and user timeout,
// which servers before PostgreSQL 12 and some poolers do not take: those
// are asked for, not required. All are asked for in one statement, one
// round trip; when it fails, lock_timeout is asked for alone.
func setUp(ctx context.Context, c *pgx.Conn, s sink.Settings) error {
	// The values are numbers: written into the statement, which then
	// needs no parameters and goes as one simple query.
	keep := fmt.Sprintf(`set_config('tcp_keepalives_idle', '%d', false), set_config('tcp_keepalives_interval', '%d', false),
		set_config('tcp_keepalives_count', '%d', false), set_config('tcp_user_timeout', '%d', false)`,
		int(netdial.KeepAliveIdle/time.Second), int(netdial.KeepAliveInterval/time.Second),
		netdial.KeepAliveCount, netdial.UserTimeout.Milliseconds())
	if s.BusyTimeout <= 0 {
		_, _ = c.Exec(ctx, `SELECT `+keep)
		return nil
	}
	lock := fmt.Sprintf(`set_config('lock_timeout', '%dms', false)`, s.BusyTimeout.Milliseconds())
	if _, err := c.Exec(ctx, `SELECT `+lock+`, `+keep); err == nil {
		return nil
	}
	if _, err := c.Exec(ctx, `SELECT `+lock); err != nil {
		return fmt.Errorf("set lock_timeout: %w", err)
	}
	return nil
}

// lockNotAvailable reports whether err is PostgreSQL's lock_not_available
// (SQLSTATE 55P03): a statement waited for a lock past lock_timeout.
func lockNotAvailable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03"
}
