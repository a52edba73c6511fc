package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
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
// the privileges of needed that the user lacks, when err is a privilege
// refused (errors 1044, 1142, 1143): a rerun would meet it again. nil when
// err is not.
//
// The GRANT names the database alone (its _ and % escaped, not
// wildcards), and so is of every privilege of needed the user would lack
// after it: the server applies to a database only the most specific of
// an account's grants on databases that match it, and the GRANT makes
// (or adds to) the grant on this one, which then is the most specific.
// The user keeps what its grants on every database (USER_PRIVILEGES),
// its grant on this database alone (SCHEMA_PRIVILEGES) and its enabled
// roles' give (a role's most specific grant, read from SHOW GRANTS). The
// command the server refused is named in any case.
func (Driver) Denied(ctx context.Context, db *sql.DB, _ string, err error) error {
	var me *mysql.MySQLError
	if !errors.As(err, &me) || (me.Number != erDBAccessDenied && me.Number != erTableAccessDenied && me.Number != erColumnAccessDenied) {
		return nil
	}
	var database, current, mode string
	var lower int
	if qerr := db.QueryRowContext(ctx, `SELECT DATABASE(), CURRENT_USER(), @@GLOBAL.sql_mode, @@lower_case_table_names`).Scan(&database, &current, &mode, &lower); qerr != nil {
		return nil
	}
	at := strings.LastIndexByte(current, '@')
	if at < 0 {
		return nil
	}
	user, host := current[:at], current[at+1:]
	fold, exact := lower != 0, wildEscape(database)
	held := map[string]bool{}
	// information_schema spells the grantee as it is, a quote in the name
	// not doubled.
	grantee := "'" + user + "'@'" + host + "'"
	rows, qerr := db.QueryContext(ctx, `SELECT '', PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = ?
		UNION ALL SELECT TABLE_SCHEMA, PRIVILEGE_TYPE FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = ?`, grantee, grantee)
	if qerr != nil {
		return nil
	}
	for rows.Next() {
		var on, p string
		if rows.Scan(&on, &p) != nil {
			rows.Close()
			return nil
		}
		if on == "" || samePattern(on, exact, fold) {
			held[p] = true
		}
	}
	if rows.Close() != nil || rows.Err() != nil {
		return nil
	}
	for p := range rolesHold(ctx, db, database, fold) {
		held[p] = true
	}
	var missing []string
	for _, p := range needed {
		if !held[p] {
			missing = append(missing, p)
		}
	}
	// The server's refusal is the last word: what it refused is missing,
	// whatever the grants seem to give.
	if cmd, _, ok := strings.Cut(me.Message, " command denied"); ok && me.Number != erDBAccessDenied && !slices.Contains(missing, cmd) {
		missing = append(missing, cmd)
		slices.SortStableFunc(missing, func(a, b string) int { return order(a) - order(b) })
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("create idemport's tables in database %s: %s (error %d): %s", database, me.Message, me.Number,
		grant(database, user, host, !strings.Contains(mode, "NO_BACKSLASH_ESCAPES"), missing))
}

// connectError is the error of a connection to the database named name
// (cfg) that failed with err, as one line naming the cause and what to
// do; a *sink.ConfigError when a rerun would meet it again. A user the
// server refuses the database (error 1044) holds no privilege on it, and
// is told the GRANT of every privilege of needed, the account's host read
// from the server's message; a password refused (1045), to check the
// user and password of --into; a database that does not exist (1049), the
// CREATE DATABASE that creates it (idemport's tables name their character
// set and collation, so the database's defaults do not matter).
func connectError(name string, cfg *mysql.Config, err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case erDBAccessDenied:
			return &sink.ConfigError{Err: fmt.Errorf("connect to %s: %s (error %d): %s",
				name, me.Message, me.Number, grant(cfg.DBName, cfg.User, deniedHost(me.Message, cfg), true, needed[:]))}
		case erAccessDenied:
			return &sink.ConfigError{Err: fmt.Errorf("connect to %s: %s (error %d): check the user and password of --into", name, me.Message, me.Number)}
		case erBadDB:
			return &sink.ConfigError{Err: fmt.Errorf("connect to %s: %s (error %d): create it (CREATE DATABASE %s) or name another database in --into",
				name, me.Message, me.Number, "`"+strings.ReplaceAll(cfg.DBName, "`", "``")+"`")}
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
// do: the GRANT that gives them to the account user@host on database
// alone (wildEscape), or --into naming a database where the user has
// them. backslashes is account's.
func grant(database, user, host string, backslashes bool, missing []string) string {
	what := "it"
	if len(missing) > 1 {
		what = "them"
	}
	return fmt.Sprintf("grant %s (GRANT %s ON %s.* TO %s), or name in --into a database where %s has them",
		what, strings.Join(missing, ", "), "`"+strings.ReplaceAll(wildEscape(database), "`", "``")+"`", account(user, host, backslashes), user)
}

// order is p's place in needed; after them all when it is not one.
func order(p string) int {
	if i := slices.Index(needed[:], p); i >= 0 {
		return i
	}
	return len(needed)
}

// rolesHold are the privileges on database the user's enabled roles
// hold: each role's grants on every database and its most specific grant
// on databases that match database. information_schema does not show a
// role's grants to its users; SHOW GRANTS FOR the role does. A role whose
// grants cannot be read adds nothing.
func rolesHold(ctx context.Context, db *sql.DB, database string, fold bool) map[string]bool {
	held := map[string]bool{}
	rows, err := db.QueryContext(ctx, `SELECT ROLE_NAME FROM information_schema.ENABLED_ROLES`)
	if err != nil {
		return held
	}
	var roles []string
	for rows.Next() {
		var r string
		if rows.Scan(&r) == nil {
			roles = append(roles, r)
		}
	}
	rows.Close()
	for _, role := range roles {
		rows, err := db.QueryContext(ctx, "SHOW GRANTS FOR `"+strings.ReplaceAll(role, "`", "``")+"`")
		if err != nil {
			continue
		}
		var lines []string
		for rows.Next() {
			var l string
			if rows.Scan(&l) == nil {
				lines = append(lines, l)
			}
		}
		rows.Close()
		var dbs []dbGrant
		for _, l := range lines {
			on, privs, ok := parseGrant(l)
			switch {
			case !ok:
			case on == "*":
				for _, p := range privs {
					held[p] = true
				}
			default:
				dbs = append(dbs, dbGrant{on, privs})
			}
		}
		for _, p := range mostSpecific(dbs, database, fold) {
			held[p] = true
		}
	}
	return held
}

// A dbGrant is an account's grant on the databases that match a pattern.
type dbGrant struct {
	pattern string
	privs   []string
}

// parseGrant reads a line of SHOW GRANTS: "GRANT SELECT, INSERT ON
// `db`.* TO …" (or "db".*) is on "db" (the pattern as stored), "GRANT … ON *.* TO …"
// on "*". ok is false for a grant on anything else (a table, a routine, a
// role). ALL PRIVILEGES is every privilege of needed.
func parseGrant(line string) (on string, privs []string, ok bool) {
	rest, ok := strings.CutPrefix(line, "GRANT ")
	if !ok {
		return "", nil, false
	}
	list, rest, ok := strings.Cut(rest, " ON ")
	if !ok || strings.Contains(list, "(") {
		// a grant of columns, whose quoted names may hold " ON ": never a
		// database's
		return "", nil, false
	}
	switch {
	case strings.HasPrefix(rest, "*.* TO "):
		on = "*"
	case rest != "" && (rest[0] == '`' || rest[0] == '"'):
		// `name`.*, a backtick in the name doubled; "name".* in a session
		// of ANSI_QUOTES, as idemport's are
		quote := rest[0]
		var b strings.Builder
		i := 1
		for ; i < len(rest); i++ {
			if rest[i] == quote {
				if i+1 < len(rest) && rest[i+1] == quote {
					b.WriteByte(quote)
					i++
					continue
				}
				break
			}
			b.WriteByte(rest[i])
		}
		if !strings.HasPrefix(rest[i:], string(quote)+".* TO ") {
			return "", nil, false
		}
		on = b.String()
	default:
		return "", nil, false
	}
	if list == "ALL PRIVILEGES" {
		return on, needed[:], true
	}
	return on, strings.Split(list, ", "), true
}

// mostSpecific are the privileges of the grant of dbs the server applies
// to database: the most specific of those whose pattern matches it
// (MariaDB's order of grants: a pattern without a wildcard first, then by
// the place of the first wildcard, later first). Of grants as specific,
// those all of them give.
func mostSpecific(dbs []dbGrant, database string, fold bool) []string {
	best, out := -1, []string(nil)
	for _, g := range dbs {
		if !wildMatch(g.pattern, database, fold) {
			continue
		}
		switch s := specificity(g.pattern); {
		case s > best:
			best, out = s, slices.Clone(g.privs)
		case s == best:
			out = slices.DeleteFunc(out, func(p string) bool { return !slices.Contains(g.privs, p) })
		}
	}
	return out
}

// specificity is the server's sort value of a database pattern: 128 for
// a name without a wildcard, else the (1-based) place of the first
// wildcard, at most 127; 0 for an empty one.
func specificity(pattern string) int {
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '\\':
			if i+1 < len(pattern) {
				i++
			}
		case '%', '_':
			return min(i+1, 127)
		}
	}
	if pattern == "" {
		return 0
	}
	return 128
}

// wildMatch reports whether database matches pattern as a grant's
// database does: % any run of characters, _ any one, \ the next
// character itself; case matters unless fold (lower_case_table_names).
func wildMatch(pattern, database string, fold bool) bool {
	if fold {
		pattern, database = strings.ToLower(pattern), strings.ToLower(database)
	}
	p, s := []rune(pattern), []rune(database)
	// tried[i*(len(s)+1)+j] marks a match of p[i:] against s[j:] already
	// begun: a true one ends the whole match, so a second try is of a false
	// one, and each pair is matched once (patterns of many % otherwise
	// take time exponential in their number).
	tried := make([]bool, (len(p)+1)*(len(s)+1))
	var match func(i, j int) bool
	match = func(i, j int) bool {
		if tried[i*(len(s)+1)+j] {
			return false
		}
		tried[i*(len(s)+1)+j] = true
		for i < len(p) {
			switch c := p[i]; {
			case c == '%':
				for k := j; k <= len(s); k++ {
					if match(i+1, k) {
						return true
					}
				}
				return false
			case c == '_':
				if j == len(s) {
					return false
				}
			default:
				if c == '\\' && i+1 < len(p) {
					i++
					c = p[i]
				}
				if j == len(s) || s[j] != c {
					return false
				}
			}
			i++
			j++
		}
		return j == len(s)
	}
	return match(0, 0)
}

// samePattern reports whether two grants' database patterns are the
// same grant's: equal, in any case when fold.
func samePattern(a, b string, fold bool) bool {
	if fold {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// wildEscape is database as a GRANT's pattern that matches it alone: its
// \, _ and % escaped.
func wildEscape(database string) string {
	return strings.NewReplacer(`\`, `\\`, `_`, `\_`, `%`, `\%`).Replace(database)
}

// account is a MariaDB account as GRANT takes it: 'user'@'host', each a
// string literal, its quotes doubled and, when backslashes (the sql_mode
// a client runs it in lacks NO_BACKSLASH_ESCAPES), its backslashes too.
func account(user, host string, backslashes bool) string {
	lit := strings.NewReplacer(`'`, `''`)
	if backslashes {
		lit = strings.NewReplacer(`'`, `''`, `\`, `\\`)
	}
	return "'" + lit.Replace(user) + "'@'" + lit.Replace(host) + "'"
}
