package main

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/sink/mysql"
)

// TestMariaDBMigrationsStoppedPartWay stops the migrations of a fresh
// MariaDB state part-way, where each DDL statement has committed on its
// own and the migrations' records have not: refused by the server, as a
// user without INSERT, after the ledger's first migration created its
// tables and before its record (the run exits 2 with the GRANT to run);
// and killed (SIGKILL) between the two statements of the ledger's 14th
// migration, the first column added, the second statement waiting for
// a table that another transaction reads, no migration recorded (a fresh
// state's migrations are sent together, their records last). After the printed GRANT, or
// as it is, a rerun applies the rest and imports the file exactly, and
// idemport's tables, their columns, indexes and checks and the recorded
// migrations are those of a state migrated in one run; another rerun is
// a duplicate.
func TestMariaDBMigrationsStoppedPartWay(t *testing.T) {
	t.Parallel()
	onMariaDB(t, func(t *testing.T, dir string, ref *testkit.Target) {
		// The state a run that nothing stops leaves.
		testkit.Orders(t, filepath.Join(dir, "orders.csv"), 10, 97)
		if res := importTo(t, ref, dir, nil, 0, "orders.csv"); res.Outcome != "imported" {
			t.Fatalf("an import into a fresh database: %+v", res)
		}
		want := mariaState(t, ref)
		if !strings.Contains(want, "idemport_operations_past replaced_by") || !strings.Contains(want, "ledger 15") {
			t.Fatalf("the state of a fresh import lacks the 14th and 15th migrations' work:\n%s", want)
		}
		// resumed reruns the import that was stopped, as the user dsn,
		// and checks what it leaves.
		resumed := func(t *testing.T, tg *testkit.Target, dir, dsn string, rows [][]string) {
			t.Helper()
			if res := importJSON(t, dir, nil, 0, "--into", dsn, "orders.csv"); res.Outcome != "imported" {
				t.Fatalf("rerun: %+v", res)
			}
			checkExact(t, tg, "ordinal", rows)
			if got := mariaState(t, tg); got != want {
				t.Fatalf("after the rerun idemport's tables are\n%s\nwant those of a state migrated in one run\n%s", got, want)
			}
			if res := importJSON(t, dir, nil, 0, "--into", dsn, "orders.csv"); res.Outcome != "duplicate" {
				t.Fatalf("second rerun: %+v", res)
			}
		}

		t.Run("refused", func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 50, 89)
			tg := testkit.NewTarget(t, testkit.MariaDB, dir)
			conn, do, u, _ := mariadbClient(t, tg)
			database, user := strings.TrimPrefix(u.Path, "/"), pgtest.Name()
			account, on := `'`+user+`'@'%'`, " ON `"+strings.ReplaceAll(database, "_", `\_`)+"`.* TO '"+user+"'@'%'"
			do(`CREATE USER ` + account)
			t.Cleanup(func() { conn.ExecContext(context.Background(), `DROP USER IF EXISTS `+account) })
			do(`GRANT SELECT, UPDATE, DELETE, CREATE, ALTER, INDEX, DROP, CREATE TEMPORARY TABLES` + on)
			u.User = url.User(user)
			dsn := u.String()

			grant := "GRANT INSERT" + on
			r := testkit.Exec(t, dir, nil, "import", "--into", dsn, "orders.csv")
			stateRefused(t, "import without INSERT", r, "orders.csv", []string{"INSERT command denied to user '" + user + "'@",
				"`idemport_migrations` (error 1142): grant it (" + grant + "), or name in --into a database where " + user + " has them"})
			if !tg.TableExists(t, "idemport_operations") || testkit.Int(t, tg.DB, `SELECT count(*) FROM idemport_migrations`) != 0 {
				t.Fatalf("the refusal was to come after the ledger's first migration created its tables, before its record: tables %q, migrations %v",
					tg.Tables(t), testkit.Query(t, tg.DB, `SELECT component, version FROM idemport_migrations`))
			}
			if got := userTables(t, tg); len(got) != 0 {
				t.Fatalf("an import whose state could not be migrated left tables %q", got)
			}
			do(grant)
			resumed(t, tg, dir, dsn, rows)
		})

		t.Run("killed", func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), crashRows, 91)
			tg := testkit.NewTarget(t, testkit.MariaDB, dir)
			// operations_past as the ledger's first migration creates it
			// (which then finds it there), read by a transaction held
			// open: the 14th migration's ALTER of it waits for that
			// transaction, after its ALTER of operations committed.
			fsys, err := mysql.Driver{}.Migrations("ledger")
			if err != nil {
				t.Fatal(err)
			}
			body, err := fs.ReadFile(fsys, "0001_ledger.up.sql")
			if err != nil {
				t.Fatal(err)
			}
			_, create, ok := strings.Cut(string(body), "CREATE TABLE IF NOT EXISTS {{prefix}}operations_past")
			if !ok {
				t.Fatal("the ledger's first migration creates no operations_past")
			}
			create, _, _ = strings.Cut(create, ";")
			if _, err := tg.DB.Exec(`CREATE TABLE idemport_operations_past` + create); err != nil {
				t.Fatal(err)
			}
			hold, err := tg.DB.Begin()
			if err != nil {
				t.Fatal(err)
			}
			defer hold.Rollback()
			if _, err := hold.Exec(`SELECT count(*) FROM idemport_operations_past`); err != nil {
				t.Fatal(err)
			}
			run := launch(t, tg.Cmd(t, dir, nil, "import", "--partition-rows", "100", "orders.csv"))
			var id int64
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				err := tg.DB.QueryRow(`SELECT ID FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND STATE = 'Waiting for table metadata lock' AND INFO LIKE 'ALTER TABLE idemport_operations_past %'`).Scan(&id)
				if err == nil {
					break
				}
				if err != sql.ErrNoRows {
					t.Fatal(err)
				}
				if time.Now().After(deadline) {
					t.Fatalf("the import never waited for operations_past in its migrations\nstdout: %s\nstderr: %s", run.stdout.String(), run.stderr.String())
				}
			}
			run.cmd.Process.Signal(syscall.SIGKILL)
			if r := testkit.Wait(t, run.cmd); r.Signal != syscall.SIGKILL {
				t.Fatalf("not killed: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			// The server ends the statement of a client gone; if it has
			// not yet, it is ended here, before the holder lets it run.
			tg.DB.Exec(fmt.Sprintf(`KILL CONNECTION %d`, id))
			if err := hold.Rollback(); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(30 * time.Second); testkit.Int(t, tg.DB, `SELECT count(*) FROM information_schema.PROCESSLIST WHERE ID = ?`, id) > 0; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the killed import's session did not end")
				}
			}
			columns := func(table string) string {
				t.Helper()
				got := testkit.Query(t, tg.DB, `SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY COLUMN_NAME) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME LIKE 'replace%'`, table)
				s, _ := got[0][0].(string)
				return s
			}
			if got := testkit.Query(t, tg.DB, `SELECT component, version FROM idemport_migrations ORDER BY 1, 2`); len(got) != 0 ||
				columns("idemport_operations") != "replaces" || columns("idemport_operations_past") != "replaced_at" {
				t.Fatalf("the kill was to come between the 14th migration's two statements: migrations %v, operations' %q, operations_past's %q",
					got, columns("idemport_operations"), columns("idemport_operations_past"))
			}
			if tg.TableExists(t, "orders") {
				t.Fatal("an import killed during its state's migrations created its table")
			}
			resumed(t, tg, dir, tg.Args[1], rows)
		})
	})
}

// mariaState describes idemport's tables in tg's database, one line each:
// every column (its place, type, nullability, default, generation and
// collation), every index's columns, every check, and the migrations
// recorded.
func mariaState(t *testing.T, tg *testkit.Target) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT TABLE_NAME, COLUMN_NAME, ORDINAL_POSITION, COLUMN_TYPE, IS_NULLABLE, COALESCE(COLUMN_DEFAULT, 'no default'), EXTRA, COALESCE(GENERATION_EXPRESSION, ''), COALESCE(COLLATION_NAME, '')
			FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND LEFT(TABLE_NAME, 9) = 'idemport_' ORDER BY 1, 3`,
		`SELECT TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NON_UNIQUE
			FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND LEFT(TABLE_NAME, 9) = 'idemport_' ORDER BY 1, 2, 3`,
		`SELECT TABLE_NAME, CONSTRAINT_NAME, CHECK_CLAUSE
			FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = DATABASE() AND LEFT(TABLE_NAME, 9) = 'idemport_' ORDER BY 1, 2`,
		`SELECT component, version FROM idemport_migrations ORDER BY 1, 2`,
	} {
		for _, row := range testkit.Query(t, tg.DB, q) {
			fmt.Fprintln(&b, row...)
		}
	}
	return b.String()
}
