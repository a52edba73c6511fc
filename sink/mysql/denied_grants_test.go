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
