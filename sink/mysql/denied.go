package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/idemport/idemport/sink"
)

var _ sink.Denier = Driver{}

// The server's error numbers of a privilege or a login refused.
const (
	erDBAccessDenied     = 1044 // ER_DBACCESS_DENIED_ERROR
	erAccessDenied       = 1045 // ER_ACCESS_DENIED_ERROR: the password (or the account) refused
	erTableAccessDenied  = 1142 // ER_TABLEACCESS_DENIED_ERROR: "CREATE command denied …"
	erColumnAccessDenied = 1143 // ER_COLUMNACCESS_DENIED_ERROR
)

// needed are the privileges on the DSN's database an import needs:
// idemport's tables created (CREATE), altered by their migrations
// (ALTER), read and written; a target table created, altered by
// --evolve, indexed for a snapshot (INDEX), dropped by undo or --atomic
// (DROP); the writer's stage, a temporary table.
var needed = [...]string{"SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "ALTER", "INDEX", "DROP", "CREATE TEMPORARY TABLES"}

// Denied implements sink.Denier: err, met creating idemport's tables in
// the DSN's database (schema is not used), as one line naming the GRANT of
// the privileges of needed that the user has neither on every database
// nor on this one (information_schema's USER_PRIVILEGES and
// SCHEMA_PRIVILEGES), when err is a privilege refused (errors 1044, 1142,
// 1143): a rerun would meet it again. nil when err is not, or the user
// lacks none of them. A user refused the database itself is refused it
// at connect, before a query can be made: connectError tells that one.
func (Driver) Denied(ctx context.Context, db *sql.DB, _ string, err error) error {
	var me *mysql.MySQLError
	if !errors.As(err, &me) || (me.Number != erDBAccessDenied && me.Number != erTableAccessDenied && me.Number != erColumnAccessDenied) {
		return nil
	}
	var database, current string
	if qerr := db.QueryRowContext(ctx, `SELECT DATABASE(), CURRENT_USER()`).Scan(&database, &current); qerr != nil {
		return nil
	}
	at := strings.LastIndexByte(current, '@')
	if at < 0 {
		return nil
	}
	user, host := current[:at], current[at+1:]
	// information_schema spells the grantee 'user'@'host' as it is, a
	// quote in the name not doubled.
	grantee := "'" + user + "'@'" + host + "'"
	rows, qerr := db.QueryContext(ctx, `SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = ?
		UNION SELECT PRIVILEGE_TYPE FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = ? AND ? LIKE TABLE_SCHEMA`, grantee, grantee, database)
	if qerr != nil {
		return nil
	}
	held := map[string]bool{}
	for rows.Next() {
		var p string
		if rows.Scan(&p) != nil {
			rows.Close()
			return nil
		}
		held[p] = true
	}
	if rows.Close() != nil || rows.Err() != nil {
		return nil
	}
	var missing []string
	for _, p := range needed {
		if !held[p] {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("create idemport's tables in database %s: %s (error %d): %s", database, me.Message, me.Number, grant(database, user, host, missing))
}

// connectError is the error of a connection to the database named name
// (cfg) that failed with err, as one line naming the cause and what to
// do; a *sink.ConfigError when a rerun would meet it again. A user the
// server refuses the database (error 1044) holds no privilege on it, and
// is told the GRANT of every privilege of needed, the account's host read
// from the server's message; a password refused (1045), to check the
// user and password of --into.
func connectError(name string, cfg *mysql.Config, err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case erDBAccessDenied:
			return &sink.ConfigError{Err: fmt.Errorf("connect to %s: %s (error %d): %s",
				name, me.Message, me.Number, grant(cfg.DBName, cfg.User, deniedHost(me.Message, cfg), needed[:]))}
		case erAccessDenied:
			return &sink.ConfigError{Err: fmt.Errorf("connect to %s: %s (error %d): check the user and password of --into", name, me.Message, me.Number)}
		}
	}
	return fmt.Errorf("connect to %s: %w", name, err)
}

// deniedHost is the host of the account that message, the server's of
// error 1044 ("Access denied for user 'u'@'h' to database 'd'", the
// names as they are), says was refused cfg's database: the account's
// host pattern, as GRANT names it. "%" when message is not so spelled.
func deniedHost(message string, cfg *mysql.Config) string {
	rest, ok := strings.CutPrefix(message, "Access denied for user '"+cfg.User+"'@'")
	if !ok {
		return "%"
	}
	if host, ok := strings.CutSuffix(rest, "' to database '"+cfg.DBName+"'"); ok {
		return host
	}
	return "%"
}

// grant is what a user who lacks missing, of needed, on database is to
// do: the GRANT that gives them to the account user@host, or --into
// naming a database where the user has them.
func grant(database, user, host string, missing []string) string {
	what := "it"
	if len(missing) > 1 {
		what = "them"
	}
	return fmt.Sprintf("grant %s (GRANT %s ON %s.* TO %s), or name in --into a database where %s has them",
		what, strings.Join(missing, ", "), "`"+strings.ReplaceAll(database, "`", "``")+"`", account(user, host), user)
}

// account is a MariaDB account as GRANT takes it: 'user'@'host', each a
// string literal, its quotes doubled and, as the default sql_mode reads a
// backslash as an escape, its backslashes too.
func account(user, host string) string {
	lit := strings.NewReplacer(`'`, `''`, `\`, `\\`)
	return "'" + lit.Replace(user) + "'@'" + lit.Replace(host) + "'"
}
