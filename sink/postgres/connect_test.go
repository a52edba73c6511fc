package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink"
)

// TestFull tells a full disk (SQLSTATE 53100), wrapped or not, from other
// errors.
func TestFull(t *testing.T) {
	full := &pgconn.PgError{Code: "53100", Message: "could not extend file: No space left on device"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{full, true},
		{fmt.Errorf("commit partition 3: %w", full), true},
		{&pgconn.PgError{Code: "53200"}, false}, // out of memory
		{errors.New("no space"), false},
		{nil, false},
	} {
		if got := (Driver{}).Full(tc.err); got != tc.want {
			t.Errorf("Full(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestReadOnlyOpenWritesNothing: every transaction of a read-only Open is
// read-only, explicit or implicit, so a command that only reads cannot
// write by mistake (SQLSTATE 25006).
func TestReadOnlyOpenWritesNothing(t *testing.T) {
	_, schema := pgtest.Open(t)
	ctx := context.Background()
	db, err := Driver{}.Open(ctx, pgtest.URL(t, schema), sink.Settings{ReadOnly: true, StateSchema: schema, BusyTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.DB.Close()
	var pg *pgconn.PgError
	if _, err := db.DB.ExecContext(ctx, `CREATE TABLE t (id int)`); !errors.As(err, &pg) || pg.Code != "25006" {
		t.Fatalf("CREATE TABLE on a read-only open: %v", err)
	}
	tx, err := db.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE t (id int)`); !errors.As(err, &pg) || pg.Code != "25006" {
		t.Fatalf("CREATE TABLE in a transaction of a read-only open: %v", err)
	}
}

// TestDeniedNamesWhatIsMissing runs idemport's migrations, as a role
// that lacks on the state schema USAGE, CREATE or both, or whose state
// schema went missing when it may not create one in the database, and
// checks that Denied names exactly the GRANT of what is missing, as the
// server's privilege functions say; then runs that GRANT, and the
// migrations pass. A refusal of something else (a table another role
// owns in the schema) and a missing schema the role may create again are
// not denials.
func TestDeniedNamesWhatIsMissing(t *testing.T) {
	ctx := t.Context()
	admin, _ := pgtest.Open(t)
	var database string
	if err := admin.QueryRowContext(ctx, `SELECT current_database()`).Scan(&database); err != nil {
		t.Fatal(err)
	}
	do := func(t *testing.T, q string) {
		t.Helper()
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, c := range []struct {
		name   string
		grants string // on the state schema
		before string // run as the superuser once Open has returned: {{schema}}, {{role}}
		code   string // the migrations' SQLSTATE
		grant  string // Denied's GRANT, without " TO role"; "" for no denial
		what   string // "it" or "them"
	}{
		{"no CREATE", "USAGE", "", "42501", `CREATE ON SCHEMA "{{schema}}"`, "it"},
		{"no USAGE", "CREATE", "", "42501", `USAGE ON SCHEMA "{{schema}}"`, "it"},
		{"neither", "", "", "42501", `USAGE, CREATE ON SCHEMA "{{schema}}"`, "them"},
		{"schema gone, no CREATE on the database", "USAGE, CREATE", `DROP SCHEMA "{{schema}}"`, "3F000", `CREATE ON DATABASE "` + database + `"`, "it"},
		{"schema gone, CREATE on the database", "USAGE, CREATE", `DROP SCHEMA "{{schema}}"; GRANT CREATE ON DATABASE "` + database + `" TO "{{role}}"`, "3F000", "", ""},
		{"a table another role owns", "USAGE, CREATE", `CREATE TABLE "{{schema}}".migrations (component TEXT NOT NULL, version INTEGER NOT NULL, applied_at TEXT NOT NULL, PRIMARY KEY (component, version))`, "42501", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			role, schema := pgtest.Name(), pgtest.Name()
			fill := func(s string) string {
				return strings.NewReplacer("{{schema}}", schema, "{{role}}", role).Replace(s)
			}
			do(t, `CREATE ROLE `+role+` LOGIN`)
			do(t, `CREATE SCHEMA `+schema)
			if c.grants != "" {
				do(t, `GRANT `+c.grants+` ON SCHEMA `+schema+` TO `+role)
			}
			t.Cleanup(func() {
				admin.ExecContext(context.Background(), `DROP SCHEMA IF EXISTS `+schema+` CASCADE`)
				admin.ExecContext(context.Background(), `DROP OWNED BY `+role+` CASCADE`)
				admin.ExecContext(context.Background(), `DROP ROLE `+role)
			})
			u, err := url.Parse(pgtest.DSN(t))
			if err != nil {
				t.Fatal(err)
			}
			u.User = url.User(role)
			open := func() *sink.Database {
				t.Helper()
				db, err := Driver{}.Open(ctx, u.String(), sink.Settings{StateSchema: schema, BusyTimeout: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.DB.Close() })
				return db
			}
			db := open()
			if c.before != "" {
				do(t, fill(c.before))
			}
			err = ledger.New(db.DB, Driver{}, db.Prefix).MigrateWith(ctx, "checkpoint")
			var pg *pgconn.PgError
			if !errors.As(err, &pg) || pg.Code != c.code {
				t.Fatalf("migrations: %v, want SQLSTATE %s", err, c.code)
			}
			derr := Driver{}.Denied(ctx, db.DB, schema, err)
			if c.grant == "" {
				if derr != nil {
					t.Fatalf("Denied(%v) = %v, want nil", err, derr)
				}
				return
			}
			grant := fill(`GRANT ` + c.grant + ` TO "{{role}}"`)
			want := fmt.Sprintf(`create idemport's tables in schema %s: %s (SQLSTATE %s): grant %s (%s), or keep them in a schema %s may write (--state-schema)`,
				schema, pg.Message, pg.Code, c.what, grant, role)
			if derr == nil || derr.Error() != want {
				t.Fatalf("Denied(%v):\n%v\nwant:\n%s", err, derr, want)
			}
			do(t, grant)
			db = open()
			if err := ledger.New(db.DB, Driver{}, db.Prefix).MigrateWith(ctx, "checkpoint"); err != nil {
				t.Fatalf("migrations after %s: %v", grant, err)
			}
		})
	}
}
