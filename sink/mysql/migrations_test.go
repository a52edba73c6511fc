package mysql

import (
	"io/fs"
	"strings"
	"testing"
)

// TestMigrationsRunAgain checks that every statement of every migration
// file may run again where it has run: each commits by itself, before the
// row that records its migration, so the migrations of a state stopped
// part-way (a privilege refused, a process killed) run the whole file
// again. A table or an index is created IF NOT EXISTS, a column added IF
// NOT EXISTS, anything dropped IF EXISTS; other statements are refused
// here. TestMariaDBMigrationsStoppedPartWay (cmd/idemport) runs them again
// on the server.
func TestMigrationsRunAgain(t *testing.T) {
	forms := []string{"CREATE TABLE IF NOT EXISTS ", "CREATE INDEX IF NOT EXISTS ", "CREATE UNIQUE INDEX IF NOT EXISTS ", "DROP TABLE IF EXISTS ", "DROP INDEX IF EXISTS "}
	clauses := []string{"ADD COLUMN IF NOT EXISTS ", "ADD INDEX IF NOT EXISTS ", "ADD UNIQUE INDEX IF NOT EXISTS ", "DROP COLUMN IF EXISTS ", "DROP INDEX IF EXISTS ", "MODIFY COLUMN IF EXISTS "}
	n := 0
	for _, component := range []string{"ledger", "checkpoint"} {
		fsys, err := Driver{}.Migrations(component)
		if err != nil {
			t.Fatal(err)
		}
		files, err := fs.Glob(fsys, "*.up.sql")
		if err != nil || len(files) == 0 {
			t.Fatalf("%s migrations: %q, %v", component, files, err)
		}
		for _, file := range files {
			body, err := fs.ReadFile(fsys, file)
			if err != nil {
				t.Fatal(err)
			}
			var code []string
			for _, line := range strings.Split(string(body), "\n") {
				line, _, _ = strings.Cut(line, "--")
				code = append(code, line)
			}
			for _, stmt := range strings.Split(strings.Join(code, "\n"), ";") {
				stmt = strings.Join(strings.Fields(stmt), " ")
				if stmt == "" {
					continue
				}
				n++
				if !idempotent(stmt, forms, clauses) {
					t.Errorf("%s migration %s: %q does not run again where it ran: a rerun after the migrations stopped part-way would fail", component, file, stmt)
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("%d statements found in the migrations: too few, the files were misread", n)
	}
}

// idempotent reports whether stmt, one statement on one line, begins with
// one of forms, or is an ALTER TABLE whose every clause begins with one of
// clauses.
func idempotent(stmt string, forms, clauses []string) bool {
	upper := strings.ToUpper(stmt)
	for _, f := range forms {
		if strings.HasPrefix(upper, f) {
			return true
		}
	}
	rest, ok := strings.CutPrefix(upper, "ALTER TABLE ")
	if !ok {
		return false
	}
	_, rest, ok = strings.Cut(rest, " ") // the table's name
	if !ok {
		return false
	}
	// The clauses, split at the commas outside parentheses.
	depth, start := 0, 0
	for i := 0; i <= len(rest); i++ {
		if i < len(rest) {
			switch rest[i] {
			case '(':
				depth++
				continue
			case ')':
				depth--
				continue
			case ',':
				if depth > 0 {
					continue
				}
			default:
				continue
			}
		}
		clause, found := strings.TrimSpace(rest[start:i]), false
		for _, c := range clauses {
			found = found || strings.HasPrefix(clause, c)
		}
		if !found {
			return false
		}
		start = i + 1
	}
	return true
}
