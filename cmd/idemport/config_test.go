package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/mysql"
)

// configError checks that r is a configuration error as a user meets it:
// exit 2, one line on stderr holding each of want, nothing on stdout but
// what the import printed of the file, and none of unwanted.
func configError(t *testing.T, what string, r testkit.Run, want []string, unwanted ...string) {
	t.Helper()
	msg := strings.TrimSpace(r.Stderr)
	ok := r.Code == exitUsage && msg != "" && !strings.Contains(msg, "\n")
	for _, w := range want {
		ok = ok && strings.Contains(msg, w)
	}
	for _, u := range append(unwanted, "--help") {
		ok = ok && !strings.Contains(msg, u)
	}
	if !ok {
		t.Fatalf("%s: exit %d, want 2 and one line with %q\nstdout: %s\nstderr: %s", what, r.Code, want, r.Stdout, r.Stderr)
	}
}

// stateRefused checks that run r exited 2 (exitUsage) for a state that
// could not be migrated while the import began (a fresh state's migrations
// run beside the hash: store.Options.Early): file's one line on stdout,
// holding every string of want, and nothing on stderr.
func stateRefused(t *testing.T, what string, r testkit.Run, file string, want []string) {
	t.Helper()
	msg := strings.TrimSuffix(r.Stdout, "\n")
	ok := r.Code == exitUsage && r.Stderr == "" && strings.HasPrefix(msg, file+": ") && !strings.Contains(msg, "\n")
	for _, w := range want {
		ok = ok && strings.Contains(msg, w)
	}
	if !ok {
		t.Fatalf("%s: exit %d, want 2 and one line of %s with %q\nstdout: %s\nstderr: %s", what, r.Code, file, want, r.Stdout, r.Stderr)
	}
}

// TestConfigurationErrorsExit2 meets each configuration error of a target
// as a user would, with a file to import: a directory that does not exist
// or that the user may not write (SQLite), a server that does not answer,
// a database that does not exist, a user without the privilege to create
// idemport's schema, a password refused (PostgreSQL). Each exits 2, not 1
// (a rerun does not fix it), in one line naming the real cause and what to
// do; the test then does what the line says and reruns, which imports the
// file exactly.
func TestConfigurationErrorsExit2(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 50, 71)

		r := testkit.Exec(t, dir, nil, "import", "--into", "nodir/x.db", "orders.csv")
		configError(t, "missing directory", r, []string{"directory nodir does not exist"})

		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		r = testkit.Wait(t, launch(t, modesBind(t, testkit.Cmd(t, dir, nil, "import", "--into", "ro/idemport.db", "orders.csv"))).cmd)
		configError(t, "unwritable directory", r, []string{"cannot create files in ro: permission denied", "writable"}, "no such file")
		if err := os.Chmod(ro, 0o755); err != nil {
			t.Fatal(err)
		}
		tg := testkit.NewTarget(t, testkit.SQLite, ro)
		if res := importTo(t, tg, dir, nil, 0, "orders.csv"); res.Outcome != "imported" {
			t.Fatalf("after making the directory writable: %+v", res)
		}
		checkExact(t, tg, "ordinal", rows)
	})
	t.Run("postgres", func(t *testing.T) {
		testkit.Available(t, testkit.Postgres)
		dir := t.TempDir()
		rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 50, 72)
		tg := testkit.NewTarget(t, testkit.Postgres, dir)
		base, err := url.Parse(pgtest.URL(t, tg.Schema))
		if err != nil {
			t.Fatal(err)
		}
		admin := tg.DB
		do := func(q string) {
			t.Helper()
			if _, err := admin.ExecContext(context.Background(), q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}

		// A port nothing listens on.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := *base
		closed.Host = l.Addr().String()
		l.Close()
		r := testkit.Exec(t, dir, nil, "import", "--into", closed.String(), "orders.csv")
		configError(t, "unreachable server", r, []string{"connection refused", "is the server running"}, "dial")

		// A database that does not exist; createdb as proposed makes it.
		missing := *base
		dbName := pgtest.Name()
		missing.Path = "/" + dbName
		t.Cleanup(func() { admin.Exec(`DROP DATABASE IF EXISTS ` + testkit.QuoteOne(dbName) + ` WITH (FORCE)`) })
		r = testkit.Exec(t, dir, nil, "import", "--into", missing.String(), "--state-schema", tg.Schema, "orders.csv")
		configError(t, "missing database", r, []string{`database "` + dbName + `" does not exist (SQLSTATE 3D000)`, "createdb"})
		m := regexp.MustCompile(`\(createdb ([^)]*)\)`).FindStringSubmatch(r.Stderr)
		if m == nil {
			t.Fatalf("no createdb command line in %s", r.Stderr)
		}
		if _, err := exec.LookPath("createdb"); err == nil {
			if out, err := exec.Command("createdb", strings.Fields(m[1])...).CombinedOutput(); err != nil {
				t.Fatalf("createdb %s: %v\n%s", m[1], err, out)
			}
		} else {
			do(`CREATE DATABASE ` + testkit.QuoteOne(dbName))
		}
		if res := importJSON(t, dir, nil, 0, "--into", missing.String(), "--state-schema", tg.Schema, "orders.csv"); res.Outcome != "imported" {
			t.Fatalf("after createdb: %+v", res)
		}

		// A user who may not create idemport's schema; the GRANT proposed
		// lets it.
		role := pgtest.Name()
		state := pgtest.Name()
		do(`CREATE ROLE ` + role + ` LOGIN`)
		do(`GRANT USAGE, CREATE ON SCHEMA ` + testkit.QuoteOne(tg.Schema) + ` TO ` + role)
		t.Cleanup(func() {
			admin.Exec(`DROP SCHEMA IF EXISTS ` + state + ` CASCADE`)
			admin.Exec(`DROP OWNED BY ` + role + ` CASCADE`)
			admin.Exec(`DROP ROLE ` + role)
		})
		as := *base
		as.User = url.User(role)
		r = testkit.Exec(t, dir, nil, "import", "--into", as.String(), "--state-schema", state, "orders.csv")
		configError(t, "missing privilege", r, []string{"permission denied for database", "(SQLSTATE 42501)", "GRANT CREATE ON DATABASE"})
		grant := regexp.MustCompile(`GRANT CREATE ON DATABASE "[^"]+" TO "[^"]+"`).FindString(r.Stderr)
		if grant == "" {
			t.Fatalf("no GRANT in %s", r.Stderr)
		}
		do(grant)
		if res := importJSON(t, dir, nil, 0, "--into", as.String(), "--state-schema", state, "orders.csv"); res.Outcome != "imported" {
			t.Fatalf("after %s: %+v", grant, res)
		}
		checkOrders(t, tg, "orders", rows)

		// A password the server refuses: a server that asks for one and
		// answers 28P01, as PostgreSQL does.
		fake := refusingServer(t)
		r = testkit.Exec(t, dir, nil, "import", "--into", "postgres://alice:s3cret@"+fake+"/shop?sslmode=disable", "orders.csv")
		configError(t, "bad password", r, []string{`password authentication failed for user "alice" (SQLSTATE 28P01)`, "PGPASSFILE"}, "s3cret")
	})
}

// refusingServer starts a server that speaks enough of PostgreSQL's
// protocol to ask each client for a password and refuse it, and returns
// its address.
func refusingServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				be := pgproto3.NewBackend(conn, conn)
				msg, err := be.ReceiveStartupMessage()
				if _, ok := msg.(*pgproto3.SSLRequest); ok {
					conn.Write([]byte("N"))
					msg, err = be.ReceiveStartupMessage()
				}
				start, ok := msg.(*pgproto3.StartupMessage)
				if err != nil || !ok {
					return
				}
				be.Send(&pgproto3.AuthenticationCleartextPassword{})
				if be.Flush() != nil {
					return
				}
				be.SetAuthType(pgproto3.AuthTypeCleartextPassword)
				if _, err := be.Receive(); err != nil {
					return
				}
				be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "28P01",
					Message: `password authentication failed for user "` + start.Parameters["user"] + `"`})
				be.Flush()
			}()
		}
	}()
	return l.Addr().String()
}

// stateRole is a role of the target's database that may create tables in
// the target's schema and has on a state schema of its own only the
// privileges grants names ("USAGE", "" for none), with a file orders.csv
// of 50 rows in dir to import as it: a fresh state it may not create.
type stateRole struct {
	dir, role, state string
	tg               *testkit.Target
	rows             [][]string
	dsn              string // the target, as the role
}

func newStateRole(t *testing.T, grants string) *stateRole {
	t.Helper()
	testkit.Available(t, testkit.Postgres)
	sr := &stateRole{dir: t.TempDir(), role: pgtest.Name(), state: pgtest.Name()}
	sr.rows = testkit.Orders(t, filepath.Join(sr.dir, "orders.csv"), 50, 73)
	sr.tg = testkit.NewTarget(t, testkit.Postgres, sr.dir)
	sr.do(t, `CREATE ROLE `+sr.role+` LOGIN`)
	sr.do(t, `CREATE SCHEMA `+sr.state)
	if grants != "" {
		sr.do(t, `GRANT `+grants+` ON SCHEMA `+sr.state+` TO `+sr.role)
	}
	sr.do(t, `GRANT USAGE, CREATE ON SCHEMA `+testkit.QuoteOne(sr.tg.Schema)+` TO `+sr.role)
	t.Cleanup(func() {
		sr.tg.DB.Exec(`DROP SCHEMA IF EXISTS ` + sr.state + ` CASCADE`)
		sr.tg.DB.Exec(`DROP OWNED BY ` + sr.role + ` CASCADE`)
		sr.tg.DB.Exec(`DROP ROLE ` + sr.role)
	})
	u, err := url.Parse(pgtest.URL(t, sr.tg.Schema))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(sr.role)
	sr.dsn = u.String()
	return sr
}

// do runs q as the superuser.
func (sr *stateRole) do(t *testing.T, q string) {
	t.Helper()
	if _, err := sr.tg.DB.ExecContext(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// unwritten fails t when the target's schema holds table orders or the
// state schema a table.
func (sr *stateRole) unwritten(t *testing.T) {
	t.Helper()
	if sr.tg.TableExists(t, "orders") || testkit.Int(t, sr.tg.DB, `SELECT count(*) FROM pg_tables WHERE schemaname = '`+sr.state+`'`) != 0 {
		t.Fatal("a run whose state could not be created wrote tables")
	}
}

// TestUncreatableStateReported runs, as a user who may use the state
// schema but not create tables in it, runs that reach no import: an
// import whose every file is skipped (--min-age), and a run of a feed
// whose every file is. The state is fresh, so its migrations run beside
// the run and fail; each run exits 2 with the GRANT to run, as an import
// of the file does, and writes nothing. After the GRANT the file imports.
func TestUncreatableStateReported(t *testing.T) {
	t.Parallel()
	sr := newStateRole(t, "USAGE")
	dir, role, state := sr.dir, sr.role, sr.state
	feeds := "defaults:\n  into: ${FEEDS_DSN}\n  state-schema: " + state + "\nfeeds:\n  orders:\n    source: orders.csv\n    min-age: 1h\n"
	if err := os.WriteFile(filepath.Join(dir, "idemport.yaml"), []byte(feeds), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"FEEDS_DSN=" + sr.dsn, "IDEMPORT_CONFIG=idemport.yaml"}
	grant := `GRANT CREATE ON SCHEMA "` + state + `" TO "` + role + `"`
	for _, c := range []struct {
		name string
		args []string
	}{
		{"import, every file skipped", []string{"import", "--into", sr.dsn, "--state-schema", state, "--min-age", "1h", "orders.csv"}},
		{"run, every file skipped", []string{"run"}},
		{"import", []string{"import", "--into", sr.dsn, "--state-schema", state, "orders.csv"}},
	} {
		r := testkit.Exec(t, dir, env, c.args...)
		out := r.Stdout + r.Stderr
		if r.Code != exitUsage || !strings.Contains(out, "permission denied for schema") || !strings.Contains(out, grant) {
			t.Fatalf("%s where the state cannot be created: exit %d, want 2 and %s\nstdout: %s\nstderr: %s", c.name, r.Code, grant, r.Stdout, r.Stderr)
		}
	}
	sr.unwritten(t)
	sr.do(t, grant)
	if res := importJSON(t, dir, nil, 0, "--into", sr.dsn, "--state-schema", state, "orders.csv"); res.Outcome != "imported" {
		t.Fatalf("after %s: %+v", grant, res)
	}
	checkOrders(t, sr.tg, "orders", sr.rows)
}

// TestUncreatableStateBesideFileFailures runs, as a user who may use the
// state schema but not create tables in it, imports whose every file
// fails for its own reason before it reaches idemport's tables: a file
// that is missing, one whose format its name does not tell. Each file
// says its own error and, on the next line, the state's with the GRANT,
// and the run exits 2: the user learns both at once, not the state's
// only once the files are fixed. A file with a bad row, which the plan
// finds only once the state is there, says the state's. Nothing is
// written; after the GRANT, with the files fixed, each imports exactly.
func TestUncreatableStateBesideFileFailures(t *testing.T) {
	t.Parallel()
	sr := newStateRole(t, "USAGE")
	dir, role, state := sr.dir, sr.role, sr.state
	if err := os.WriteFile(filepath.Join(dir, "orders.data"), []byte("id\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.csv"), []byte("id,name\n1,a\n2,\"b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(sr.dsn)
	if err != nil {
		t.Fatal(err)
	}
	grant := `GRANT CREATE ON SCHEMA "` + state + `" TO "` + role + `"`
	stateErr := fmt.Sprintf(`in PostgreSQL database %q on %s as %s: create idemport's tables in schema %s: permission denied for schema %s (SQLSTATE 42501): grant it (%s), or keep them in a schema %s may write (--state-schema)`,
		strings.TrimPrefix(u.Path, "/"), u.Host, role, state, state, grant, role)
	args := []string{"import", "--into", sr.dsn, "--state-schema", state}
	for _, c := range []struct {
		files []string
		want  string
	}{
		{[]string{"missing.csv"}, "missing.csv: failed: no such file or directory\n  also: " + stateErr + "\n"},
		{[]string{"missing.csv", "orders.data"}, "missing.csv: failed: no such file or directory\n  also: " + stateErr + "\n" +
			"orders.data: unsupported or unrecognised format: cannot tell the format of orders.data from its name; use --format\n  also: " + stateErr + "\n" +
			"2 files: 2 failed\n"},
		{[]string{"missing.csv", "bad.csv"}, "missing.csv: failed: no such file or directory\n  also: " + stateErr + "\n" +
			"bad.csv: " + stateErr + "\n2 files: 2 failed\n"},
	} {
		r := testkit.Exec(t, dir, nil, append(args, c.files...)...)
		if r.Code != exitUsage || r.Stdout != c.want || r.Stderr != "" {
			t.Fatalf("import %s where the state cannot be created: exit %d, want 2\nstdout:\n%s\nwant:\n%s\nstderr: %s", c.files, r.Code, r.Stdout, c.want, r.Stderr)
		}
	}
	r := testkit.Exec(t, dir, nil, append(args, "--output", "json", "missing.csv")...)
	var res struct {
		Outcome  string `json:"outcome"`
		ExitCode int    `json:"exit_code"`
		Error    string `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil || r.Code != exitUsage || res.Outcome != "failed" || res.ExitCode != exitUsage || res.Error != "no such file or directory\n"+stateErr {
		t.Fatalf("--output json of a missing file where the state cannot be created: exit %d, %+v (%v)\nstdout: %s\nstderr: %s", r.Code, res, err, r.Stdout, r.Stderr)
	}
	sr.unwritten(t)
	sr.do(t, grant)
	if err := os.Rename(filepath.Join(dir, "orders.csv"), filepath.Join(dir, "missing.csv")); err != nil {
		t.Fatal(err)
	}
	if res := importJSON(t, dir, nil, 0, "--into", sr.dsn, "--state-schema", state, "missing.csv"); res.Outcome != "imported" {
		t.Fatalf("after %s, with the file in place: %+v", grant, res)
	}
	checkOrders(t, sr.tg, "missing", sr.rows)
}

// TestStateGrantNamesWhatIsMissing imports, as a user who lacks on the
// state schema USAGE, or USAGE and CREATE, a file into a fresh state: the
// run exits 2 with one line naming the GRANT of exactly what is missing,
// and writes nothing; after that GRANT the file imports exactly.
func TestStateGrantNamesWhatIsMissing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ has, missing string }{{"CREATE", "USAGE"}, {"", "USAGE, CREATE"}} {
		t.Run("missing "+c.missing, func(t *testing.T) {
			t.Parallel()
			sr := newStateRole(t, c.has)
			grant := `GRANT ` + c.missing + ` ON SCHEMA "` + sr.state + `" TO "` + sr.role + `"`
			r := testkit.Exec(t, sr.dir, nil, "import", "--into", sr.dsn, "--state-schema", sr.state, "orders.csv")
			configError(t, "import without "+c.missing+" on the state schema", r, []string{"permission denied for schema " + sr.state, "(" + grant + "), or keep them in a schema " + sr.role + " may write (--state-schema)"})
			sr.unwritten(t)
			sr.do(t, grant)
			if res := importJSON(t, sr.dir, nil, 0, "--into", sr.dsn, "--state-schema", sr.state, "orders.csv"); res.Outcome != "imported" {
				t.Fatalf("after %s: %+v", grant, res)
			}
			checkOrders(t, sr.tg, "orders", sr.rows)
		})
	}
}

// TestUncreatableStateMariaDB imports, as a MariaDB user who may read and
// write the database's rows but not create tables in it, a file into a
// fresh database: the run exits 2 with one line naming the GRANT of
// every privilege the user lacks, and the database holds the tables it
// held. With
// all but ALTER granted, the migrations' refusal names ALTER alone, and
// no table of the file and no operation is left. After that GRANT the
// file imports exactly.
func TestUncreatableStateMariaDB(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.MariaDB)
	dir := t.TempDir()
	rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 50, 73)
	tg := testkit.NewTarget(t, testkit.MariaDB, dir)
	u, err := url.Parse(tg.Args[1])
	if err != nil {
		t.Fatal(err)
	}
	database, user := strings.TrimPrefix(u.Path, "/"), pgtest.Name()
	do := func(q string) {
		t.Helper()
		if _, err := tg.DB.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// The grants on the database alone, its _ not wildcards.
	account, on := `'`+user+`'@'%'`, " ON `"+strings.ReplaceAll(database, "_", `\_`)+"`.* TO '"+user+"'@'%'"
	do(`CREATE USER ` + account)
	t.Cleanup(func() { tg.DB.Exec(`DROP USER IF EXISTS ` + account) })
	do(`GRANT SELECT, INSERT, UPDATE, DELETE` + on)
	u.User = url.User(user)
	dsn := u.String()

	grant := "GRANT CREATE, ALTER, INDEX, DROP, CREATE TEMPORARY TABLES" + on
	before := tg.Tables(t) // idemport_locks, which the target's own pool made
	r := testkit.Exec(t, dir, nil, "import", "--into", dsn, "orders.csv")
	configError(t, "import without CREATE", r, []string{"create idemport's tables in database " + database + ": CREATE command denied to user '" + user + "'@",
		"(error 1142): grant them (" + grant + "), or name in --into a database where " + user + " has them"})
	if got := tg.Tables(t); !slices.Equal(got, before) {
		t.Fatalf("an import whose state could not be created left tables %q, had %q", got, before)
	}

	do("GRANT CREATE, INDEX, DROP, CREATE TEMPORARY TABLES" + on)
	grant = "GRANT ALTER" + on
	r = testkit.Exec(t, dir, nil, "import", "--into", dsn, "orders.csv")
	stateRefused(t, "import without ALTER", r, "orders.csv", []string{"ALTER command denied to user '" + user + "'@", "(error 1142): grant it (" + grant + "), or name in --into a database where " + user + " has them"})
	if got := userTables(t, tg); len(got) != 0 || testkit.Int(t, tg.DB, `SELECT count(*) FROM idemport_operations`) != 0 {
		t.Fatalf("an import whose state could not be migrated left tables %q or an operation", got)
	}

	do(grant)
	if res := importJSON(t, dir, nil, 0, "--into", dsn, "orders.csv"); res.Outcome != "imported" {
		t.Fatalf("after %s: %+v", grant, res)
	}
	checkOrders(t, tg, "orders", rows)
}

// TestDeniedDatabaseMariaDB imports as a MariaDB user the server refuses
// at connect, into a database and as a user whose names hold a quote, a
// backtick and a backslash: with a wrong password, exit 2 and one line
// saying to check the user and password; with the right one but no
// privilege on the database, exit 2 and one line naming the database,
// the user and the GRANT of all an import needs, its names quoted as
// MariaDB reads them; with the rows' privileges alone, the GRANT of the
// rest. Each leaves the database without a table. The GRANT the line
// names, run as it is, lets the file import exactly.
func TestDeniedDatabaseMariaDB(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.MariaDB)
	dir := t.TempDir()
	rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 50, 79)
	admin := testkit.NewTarget(t, testkit.MariaDB, dir)
	conn, do, u, addr := mariadbClient(t, admin)
	base, ubase := pgtest.Name(), pgtest.Name()
	database, user := base+"_q'b`", ubase+`_q'b\`
	// As MariaDB reads them in a statement (the server's sql_mode, whose
	// strings take a backslash as an escape): the name in backticks, the
	// account's strings in quotes.
	quoted, account := "`"+base+"_q'b```", "'"+ubase+`_q''b\\'@'%'`
	// The database alone, as a GRANT names it: its _ escaped, not
	// wildcards.
	granted := "`" + strings.ReplaceAll(base, "_", `\_`) + "\\_q'b```"
	do(`CREATE USER ` + account + ` IDENTIFIED BY 'right'`)
	t.Cleanup(func() { conn.ExecContext(context.Background(), `DROP USER IF EXISTS `+account) })
	// A database that does not exist: the CREATE DATABASE that makes it,
	// run as printed.
	u.Path = "/" + database
	r := testkit.Exec(t, dir, nil, "import", "--into", u.String(), "orders.csv")
	missing := fmt.Sprintf("idemport: connect to MariaDB/MySQL database %q on %s as %s: ", database, addr, u.User.Username()) + "Unknown database '" + database + "' (error 1049): create it (CREATE DATABASE " + quoted + ") or name another database in --into\n"
	if r.Code != exitUsage || r.Stdout != "" || r.Stderr != missing {
		t.Fatalf("a database that does not exist: exit %d\nstdout: %q\nstderr: %q\nwant exit 2, no stdout, stderr %q", r.Code, r.Stdout, r.Stderr, missing)
	}
	do(`CREATE DATABASE ` + quoted)
	t.Cleanup(func() { conn.ExecContext(context.Background(), `DROP DATABASE IF EXISTS `+quoted) })
	var client string // the user's host as the server sees this machine
	if err := conn.QueryRowContext(context.Background(), `SELECT SUBSTRING_INDEX(USER(), '@', -1)`).Scan(&client); err != nil {
		t.Fatal(err)
	}
	db, err := mysql.Driver{}.Open(context.Background(), u.String(), sink.Settings{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.DB.Close() })
	tg := &testkit.Target{Name: testkit.MariaDB, DB: db.DB}
	name := fmt.Sprintf("MariaDB/MySQL database %q on %s as %s", database, addr, user)
	refused := func(what, password, want string) {
		t.Helper()
		u.User = url.UserPassword(user, password)
		r := testkit.Exec(t, dir, nil, "import", "--into", u.String(), "orders.csv")
		if r.Code != exitUsage || r.Stdout != "" || r.Stderr != want+"\n" {
			t.Fatalf("%s: exit %d\nstdout: %q\nstderr: %q\nwant exit 2, no stdout, stderr %q", what, r.Code, r.Stdout, r.Stderr, want+"\n")
		}
		if got := tg.Tables(t); len(got) != 0 {
			t.Fatalf("%s: the database has tables %q, had none", what, got)
		}
	}

	refused("a wrong password", "wrong", "idemport: connect to "+name+": Access denied for user '"+user+"'@'"+client+"' (using password: YES) (error 1045): check the user and password of --into")
	all := "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX, DROP, CREATE TEMPORARY TABLES ON " + granted + ".* TO " + account
	refused("no privilege on the database", "right", "idemport: connect to "+name+": Access denied for user '"+user+"'@'%' to database '"+database+"' (error 1044): grant them ("+all+"), or name in --into a database where "+user+" has them")
	do(`GRANT SELECT, INSERT, UPDATE, DELETE ON ` + granted + `.* TO ` + account)
	refused("the rows' privileges alone", "right", "idemport: in "+name+": create idemport's tables in database "+database+": CREATE command denied to user '"+user+"'@'"+client+"' for table "+quoted+".`idemport_locks` (error 1142): grant them (GRANT CREATE, ALTER, INDEX, DROP, CREATE TEMPORARY TABLES ON "+granted+".* TO "+account+"), or name in --into a database where "+user+" has them")

	do(all)
	if res := importJSON(t, dir, nil, 0, "--into", u.String(), "orders.csv"); res.Outcome != "imported" {
		t.Fatalf("after %s: %+v", all, res)
	}
	checkOrders(t, tg, "orders", rows)
}
