package mysql

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/idemport/idemport/sink"
)

// TestDeniedNamesTheRefusedCommand asks Denied about a refusal of ALTER
// met by a user whose grants on the database give every privilege an
// import needs: what the server refused is the last word, and the line
// names the GRANT of ALTER on the database alone, where a reading of the
// grants alone finds nothing missing.
func TestDeniedNamesTheRefusedCommand(t *testing.T) {
	t.Parallel()
	dsn := freshDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	database := strings.TrimPrefix(u.Path, "/")
	b := make([]byte, 6)
	rand.Read(b)
	user := "idemport_test_" + hex.EncodeToString(b)
	admin := sql.OpenDB(testConnector(t, dsn))
	t.Cleanup(func() { admin.Close() })
	account := "'" + user + "'@'%'"
	exact := "`" + strings.ReplaceAll(database, "_", `\_`) + "`"
	for _, s := range []string{`CREATE USER ` + account, `GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX, DROP, CREATE TEMPORARY TABLES ON ` + exact + `.* TO ` + account} {
		if _, err := admin.ExecContext(t.Context(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	t.Cleanup(func() { admin.ExecContext(context.Background(), `DROP USER IF EXISTS `+account) })
	u.User = url.User(user)
	db, err := Driver{}.Open(t.Context(), u.String(), sink.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.DB.Close() })

	refused := &mysql.MySQLError{Number: erTableAccessDenied, Message: "ALTER command denied to user '" + user + "'@'127.0.0.1' for table `" + database + "`.`idemport_operations`"}
	want := "create idemport's tables in database " + database + ": " + refused.Message + " (error 1142): grant it (GRANT ALTER ON " + exact + ".* TO " + account + "), or name in --into a database where " + user + " has them"
	got := Driver{}.Denied(t.Context(), db.DB, "", refused)
	if got == nil || got.Error() != want {
		t.Fatalf("Denied of a refused ALTER the grants seem to give:\n got %v\nwant %s", got, want)
	}
}

// TestGrantRunsInTheServersMode runs the GRANT Denied names for a user
// whose name holds a backslash as a client runs it: in a session of the
// server's default sql_mode, where a backslash in a string escapes, and
// in one of NO_BACKSLASH_ESCAPES, each spelled for its mode. Each gives
// that user, and no other, the privilege on the database alone.
func TestGrantRunsInTheServersMode(t *testing.T) {
	t.Parallel()
	dsn := freshDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	database := strings.TrimPrefix(u.Path, "/")
	admin := sql.OpenDB(testConnector(t, dsn))
	t.Cleanup(func() { admin.Close() })
	for _, mode := range []string{"STRICT_TRANS_TABLES,NO_AUTO_CREATE_USER", "STRICT_TRANS_TABLES,NO_AUTO_CREATE_USER,NO_BACKSLASH_ESCAPES"} {
		b := make([]byte, 6)
		rand.Read(b)
		user := "idemport_test_" + hex.EncodeToString(b) + `\n`
		// idemport's session has NO_BACKSLASH_ESCAPES: the name as it is
		account := "'" + user + "'@'%'"
		if _, err := admin.ExecContext(t.Context(), `CREATE USER `+account); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { admin.ExecContext(context.Background(), `DROP USER IF EXISTS `+account) })
		hint := grant(database, user, "%", !strings.Contains(mode, "NO_BACKSLASH_ESCAPES"), []string{"SELECT"})
		_, stmt, _ := strings.Cut(hint, "(")
		stmt, _, _ = strings.Cut(stmt, "), or ")
		// A pool of its own, so that no connection of this sql_mode is
		// left to admin's statements.
		client := sql.OpenDB(testConnector(t, dsn))
		conn, err := client.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(t.Context(), `SET SESSION sql_mode = '`+mode+`'`); err != nil {
			t.Fatal(err)
		}
		_, err = conn.ExecContext(t.Context(), stmt)
		conn.Close()
		client.Close()
		if err != nil {
			t.Fatalf("sql_mode %s: %s: %v", mode, stmt, err)
		}
		got := query(t, admin, `SELECT TABLE_SCHEMA, PRIVILEGE_TYPE FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = ?`, account)
		if want := strings.ReplaceAll(database, "_", `\_`) + " SELECT\n"; got != want {
			t.Fatalf("sql_mode %s: after %s, %s holds\n%s\nwant\n%s", mode, stmt, account, got, want)
		}
	}
}

// query is the rows of q as text, a line each, values apart by a space.
func query(t *testing.T, db *sql.DB, q string, args ...any) string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out strings.Builder
	for rows.Next() {
		var a, b string
		if err := rows.Scan(&a, &b); err != nil {
			t.Fatal(err)
		}
		out.WriteString(a + " " + b + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
