package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemport/idemport/internal/secret"
	"github.com/idemport/idemport/sink"
)

// SQLSTATEs of errors that are the user's to fix, not a rerun's.
const (
	codeInsufficientPrivilege = "42501"
	codeInvalidCatalog        = "3D000" // the database does not exist
	codeInvalidSchema         = "3F000" // the schema does not exist
	codeInvalidPassword       = "28P01"
	codeInvalidAuthorization  = "28000" // no pg_hba.conf entry, role cannot log in, …
	codeDiskFull              = "53100"
)

// connectError is the error of a connection to the database named name
// (cfg, as the DSN resolved) that failed with err: one line naming the
// cause, without pgx's repetition of the address, and with what to do.
// It is a *sink.ConfigError when a rerun would meet it again: a host that
// does not answer, a password or role refused, a missing database.
func connectError(name string, cfg *pgx.ConnConfig, err error) error {
	var pg *pgconn.PgError
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.As(err, &pg) && pg.Code == codeInvalidCatalog:
		return &sink.ConfigError{Err: fmt.Errorf("connect to %s: %s (SQLSTATE %s): create it (createdb %s) or name another database in --into",
			name, pg.Message, pg.Code, createdb(cfg))}
	case errors.As(err, &pg) && (pg.Code == codeInvalidPassword || pg.Code == codeInvalidAuthorization):
		return &sink.ConfigError{Err: fmt.Errorf("connect to %s: %s (SQLSTATE %s): check the user and password of --into, or PGPASSWORD, or the password file (PGPASSFILE, else ~/.pgpass)",
			name, pg.Message, pg.Code)}
	case errors.As(err, &pg):
		return fmt.Errorf("connect to %s: %s (SQLSTATE %s)", name, pg.Message, pg.Code)
	case errors.As(err, &dns):
		return &sink.ConfigError{Err: fmt.Errorf("connect to %s: no such host %q: check the host of --into (or PGHOST)", name, dns.Name)}
	case errors.As(err, &op):
		cause := op.Err.Error()
		var se *os.SyscallError
		if errors.As(op.Err, &se) {
			cause = se.Err.Error()
		}
		return &sink.ConfigError{Err: fmt.Errorf("connect to %s: %s: is the server running there and accepting connections? check the host and port of --into (or PGHOST, PGPORT)",
			name, cause)}
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return &sink.ConfigError{Err: fmt.Errorf("connect to %s: no answer within the connect timeout: check the host and port of --into (or PGHOST, PGPORT)", name)}
	}
	return fmt.Errorf("connect to %s: %w", name, err)
}

// scrub masks parts (the DSN's secrets) in err's message, keeping a
// *sink.ConfigError one.
func scrub(err error, parts []string) error {
	var ce *sink.ConfigError
	if errors.As(err, &ce) {
		return &sink.ConfigError{Err: secret.ScrubError(ce.Err, parts)}
	}
	return secret.ScrubError(err, parts)
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// createdb is the createdb command line that creates cfg's database.
func createdb(cfg *pgx.ConnConfig) string {
	var args []string
	if cfg.Host != "" {
		args = append(args, "-h", cfg.Host)
	}
	if cfg.Port != 0 && cfg.Port != 5432 {
		args = append(args, "-p", fmt.Sprint(cfg.Port))
	}
	if cfg.User != "" {
		args = append(args, "-U", cfg.User)
	}
	return strings.Join(append(args, cfg.Database), " ")
}

// schemaError is the error of creating the state schema in the database
// named name, which failed with err. A missing privilege is a
// *sink.ConfigError saying how to give it, or where else the ledger can go.
func schemaError(ctx context.Context, db *sql.DB, name, schema string, cfg *pgx.ConnConfig, err error) error {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) || pg.Code != codeInsufficientPrivilege {
		return fmt.Errorf("in %s: create schema %s: %w", name, schema, err)
	}
	hint := fmt.Sprintf("grant it (GRANT CREATE ON DATABASE %s TO %s)", q(cfg.Database), q(cfg.User))
	// A schema the user may already create tables in can hold the ledger.
	var current string
	var can bool
	if qerr := db.QueryRowContext(ctx, `SELECT current_schema(), has_schema_privilege(current_schema(), 'CREATE')`).Scan(&current, &can); qerr == nil && can && current != "" {
		hint = fmt.Sprintf("keep idemport's tables in a schema %s may write (--state-schema %s), or %s", cfg.User, current, hint)
	}
	return &sink.ConfigError{Err: fmt.Errorf("in %s: create schema %s: %s (SQLSTATE %s): %s", name, schema, pg.Message, pg.Code, hint)}
}

// Denied implements sink.Denier: the error of idemport's migrations in
// schema, which failed with err, as one line naming the GRANT that gives
// the user what the server's privilege functions say it lacks to create
// idemport's tables there: USAGE on the schema, CREATE on it, or both;
// CREATE on the database when the schema is missing (a refusal, SQLSTATE
// 42501, or the schema gone, 3F000), so that idemport creates it. A rerun
// would meet it again. nil when err is neither, or the user lacks none of
// these (another privilege refused, as on a table another role owns,
// stays the error it is).
func (Driver) Denied(ctx context.Context, db *sql.DB, schema string, err error) error {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) || (pg.Code != codeInsufficientPrivilege && pg.Code != codeInvalidSchema) {
		return nil
	}
	var user, database string
	var exists, usage, create, createSchema bool
	qerr := db.QueryRowContext(ctx, `SELECT current_user, current_database(), n.oid IS NOT NULL,
		coalesce(has_schema_privilege(n.oid, 'USAGE'), false), coalesce(has_schema_privilege(n.oid, 'CREATE'), false),
		has_database_privilege(current_database(), 'CREATE')
		FROM (SELECT 1) one LEFT JOIN pg_namespace n ON n.nspname = $1`, schema).Scan(&user, &database, &exists, &usage, &create, &createSchema)
	if qerr != nil {
		return nil
	}
	grant, what := "", "it"
	switch {
	case !exists && !createSchema:
		grant = "CREATE ON DATABASE " + q(database)
	case !exists || pg.Code != codeInsufficientPrivilege:
		return nil // a schema that went missing, which a rerun creates
	case !usage && !create:
		grant, what = "USAGE, CREATE ON SCHEMA "+q(schema), "them"
	case !usage:
		grant = "USAGE ON SCHEMA " + q(schema)
	case !create:
		grant = "CREATE ON SCHEMA " + q(schema)
	default:
		return nil
	}
	return fmt.Errorf("create idemport's tables in schema %s: %s (SQLSTATE %s): grant %s (GRANT %s TO %s), or keep them in a schema %s may write (--state-schema)",
		schema, pg.Message, pg.Code, what, grant, q(user), user)
}

// Full implements sink.Driver: SQLSTATE 53100 (disk_full).
func (Driver) Full(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == codeDiskFull
}
