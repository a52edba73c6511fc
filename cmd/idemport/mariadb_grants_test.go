package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/internal/testkit"
)

// TestDeniedGrantMariaDB imports, as MariaDB users whose grants the
// server applies in ways a plain reading of information_schema misses,
// into a fresh database whose name holds _ (a wildcard in a GRANT's
// database): the run exits 2 with one line naming the GRANT of what the
// user lacks, on the database alone (its _ escaped). Run as root in the
// server's sql_mode, that GRANT lets the file import exactly. The cases:
// a grant on a pattern that matches the database, which the more
// specific grant on the database itself overrides; a grant on the name
// in another case, which is another database's; privileges held through
// a default role; a user whose name holds a quote and a backslash, whose
// GRANT gives nothing on a database whose name differs where the _ are.
func TestDeniedGrantMariaDB(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.MariaDB)
	escape := strings.NewReplacer(`\`, `\\`, `_`, `\_`, `%`, `\%`)
	for _, c := range []struct {
		name, user string
		// setup grants, each %[1]s the database as a GRANT names it alone,
		// %[2]s the account, %[3]s a role of the test's
		setup   []string
		missing string
	}{
		{"a pattern overridden by the database's own grant", "", []string{
			"GRANT ALL ON `%[4]s%%`.* TO %[2]s",
			"GRANT SELECT ON `%[1]s`.* TO %[2]s",
		}, "INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX, DROP, CREATE TEMPORARY TABLES"},
		{"a grant on the name in capitals", "", []string{
			"GRANT ALL ON `%[5]s`.* TO %[2]s",
			"GRANT SELECT, INSERT, UPDATE, DELETE ON `%[1]s`.* TO %[2]s",
		}, "CREATE, ALTER, INDEX, DROP, CREATE TEMPORARY TABLES"},
		{"the rows' privileges through a default role", "", []string{
			"CREATE ROLE %[3]s",
			"GRANT SELECT, INSERT, UPDATE, DELETE ON `%[1]s`.* TO %[3]s",
			"GRANT %[3]s TO %[2]s",
			"SET DEFAULT ROLE %[3]s FOR %[2]s",
		}, "CREATE, ALTER, INDEX, DROP, CREATE TEMPORARY TABLES"},
		{"a user named with a quote and a backslash", `_q'x\n`, []string{
			"GRANT SELECT, INSERT, UPDATE, DELETE ON `%[1]s`.* TO %[2]s",
		}, "CREATE, ALTER, INDEX, DROP, CREATE TEMPORARY TABLES"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 40, 83)
			tg := testkit.NewTarget(t, testkit.MariaDB, dir)
			conn, do, u, addr := mariadbClient(t, tg)
			database, user, role := strings.TrimPrefix(u.Path, "/"), pgtest.Name()+c.user, pgtest.Name()
			if !strings.Contains(database, "_") {
				t.Fatalf("database %s has no _", database)
			}
			account := "'" + strings.NewReplacer(`'`, `''`, `\`, `\\`).Replace(user) + "'@'%'"
			do(`CREATE USER ` + account)
			t.Cleanup(func() { conn.ExecContext(context.Background(), `DROP USER IF EXISTS `+account) })
			t.Cleanup(func() { conn.ExecContext(context.Background(), `DROP ROLE IF EXISTS `+role) })
			lookalike := strings.ReplaceAll(database, "_", "x")
			do("CREATE DATABASE `" + lookalike + "`")
			t.Cleanup(func() { conn.ExecContext(context.Background(), "DROP DATABASE IF EXISTS `"+lookalike+"`") })
			do("CREATE TABLE `" + lookalike + "`.t (a INT)")
			for _, s := range c.setup {
				do(fmt.Sprintf(s, escape.Replace(database), account, role, escape.Replace(database[:len(database)-4]), strings.ToUpper(escape.Replace(database))))
			}
			var client string // the user's host as the server sees this machine
			if err := conn.QueryRowContext(context.Background(), `SELECT SUBSTRING_INDEX(USER(), '@', -1)`).Scan(&client); err != nil {
				t.Fatal(err)
			}
			u.User = url.User(user)
			dsn := u.String()
			before := tg.Tables(t)

			grant := "GRANT " + c.missing + " ON `" + escape.Replace(database) + "`.* TO " + account
			what := "them"
			if !strings.Contains(c.missing, ",") {
				what = "it"
			}
			name := fmt.Sprintf("MariaDB/MySQL database %q on %s as %s", database, addr, user)
			want := "idemport: in " + name + ": create idemport's tables in database " + database + ": CREATE command denied to user '" + user + "'@'" + client +
				"' for table `" + database + "`.`idemport_locks` (error 1142): grant " + what + " (" + grant + "), or name in --into a database where " + user + " has them\n"
			r := testkit.Exec(t, dir, nil, "import", "--into", dsn, "orders.csv")
			if r.Code != exitUsage || r.Stdout != "" || r.Stderr != want {
				t.Fatalf("exit %d\nstdout: %q\nstderr: %q\nwant exit 2, no stdout, stderr %q", r.Code, r.Stdout, r.Stderr, want)
			}
			if got := tg.Tables(t); strings.Join(got, ",") != strings.Join(before, ",") {
				t.Fatalf("a refused import left tables %q, had %q", got, before)
			}

			do(grant)
			if res := importJSON(t, dir, nil, 0, "--into", dsn, "orders.csv"); res.Outcome != "imported" {
				t.Fatalf("after %s: %+v", grant, res)
			}
			checkOrders(t, tg, "orders", rows)

			// The GRANT gave nothing on a database that matches the
			// database's name with its _ as wildcards.
			if c.setup[0] == "GRANT ALL ON `%[4]s%%`.* TO %[2]s" {
				return // the user's own pattern matches it
			}
			asUser, err := sql.Open("mysql", (&mysql.Config{User: user, Net: "tcp", Addr: addr, DBName: lookalike, AllowNativePasswords: true}).FormatDSN())
			if err != nil {
				t.Fatal(err)
			}
			defer asUser.Close()
			var me *mysql.MySQLError
			_, err = asUser.ExecContext(context.Background(), "ALTER TABLE `"+lookalike+"`.t ADD COLUMN b INT")
			if !errors.As(err, &me) || (me.Number != 1142 && me.Number != 1044) {
				t.Fatalf("after %s, ALTER TABLE in %s: %v, want it refused", grant, lookalike, err)
			}
		})
	}
}

// mariadbClient returns a connection to tg's database as its
// administrator, set up as a user's client is (the server's sql_mode, not
// idemport's session's), so that the statements a hint names run there as
// a user would run them; do runs one, failing the test on an error. u is
// tg's DSN and addr its host:port as idemport names it.
func mariadbClient(t *testing.T, tg *testkit.Target) (conn *sql.Conn, do func(q string), u *url.URL, addr string) {
	t.Helper()
	conn, err := tg.DB.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	do = func(q string) {
		t.Helper()
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	do(`SET SESSION sql_mode = @@GLOBAL.sql_mode`)
	if u, err = url.Parse(tg.Args[1]); err != nil {
		t.Fatal(err)
	}
	addr = u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "3306")
	}
	return conn, do, u, addr
}
