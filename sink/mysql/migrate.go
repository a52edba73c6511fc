package mysql

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/idemport/idemport/sink/internal/stdsql"
)

// ApplyTogether implements internal/migrate's Together: it creates the
// versions table table unless it exists, runs the migrations bodies
// (bodies[i] the text of version versions[i] of components[i]) in order,
// and then records each in table, in one message of statements, which
// the server runs in order and stops at the first that fails: one round
// trip where a fresh ledger and its checkpoints took five per migration
// and two to read what was applied. MariaDB's DDL commits by itself, so
// this is not one transaction: a failure or a crash part-way leaves the
// statements that ran committed and records no version (the INSERT comes
// last); every statement of the migration files runs again where it ran
// (TestMigrationsRunAgain), so internal/migrate's fallback, one migration
// at a time, and the next run apply them again. Two callers at once both
// run the statements, each a no-op where the other's ran first, and the
// second INSERT fails on the versions' primary key: internal/migrate then
// re-reads the versions and finds them recorded, as with one migration at
// a time, which took no lock either.
func (Driver) ApplyTogether(ctx context.Context, db *sql.DB, table string, components []string, versions []int, bodies []string, at time.Time) error {
	var b strings.Builder
	b.WriteString(createVersions(table))
	b.WriteString(";\n")
	for _, body := range bodies {
		b.WriteString(ended(body))
		b.WriteString("\n")
	}
	b.WriteString(stdsql.RecordVersionsSQL(table, components, versions, at, literal))
	_, err := db.ExecContext(ctx, b.String())
	return err
}

// ended returns body, statements of a migration file, ending with the
// semicolon that ends its last statement, adding it unless there: the
// statements that follow it in one message must be apart from it, and an
// empty statement (a second semicolon) is an error here.
func ended(body string) string {
	var code []string
	for _, line := range strings.Split(body, "\n") {
		line, _, _ = strings.Cut(line, "--")
		code = append(code, line)
	}
	if strings.HasSuffix(strings.TrimSpace(strings.Join(code, "\n")), ";") {
		return body
	}
	return body + "\n;"
}

// literal quotes s as a string literal of the sessions this driver
// opens, whose sql_mode has NO_BACKSLASH_ESCAPES: only a quote is
// doubled.
func literal(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }
