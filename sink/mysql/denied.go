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

// The server's error numbers of a privilege refused.
const (
	erDBAccessDenied     = 1044 // ER_DBACCESS_DENIED_ERROR
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
// lacks none of them.
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
	grantee := account(user, host)
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
	what := "it"
	if len(missing) > 1 {
		what = "them"
	}
	return fmt.Errorf("create idemport's tables in database %s: %s (error %d): grant %s (GRANT %s ON %s.* TO %s), or name in --into a database where %s has them",
		database, me.Message, me.Number, what, strings.Join(missing, ", "), "`"+strings.ReplaceAll(database, "`", "``")+"`", grantee, user)
}

// account is a MariaDB account as GRANT and information_schema spell it:
// 'user'@'host'.
func account(user, host string) string {
	return "'" + strings.ReplaceAll(user, "'", "''") + "'@'" + strings.ReplaceAll(host, "'", "''") + "'"
}
