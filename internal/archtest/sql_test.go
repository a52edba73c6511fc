package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sqlStatement matches the start of SQL statement text: a statement's
// keyword followed by what that statement takes. The keyword alone, in
// capitals and followed by a space, a parenthesis or nothing, is SQL too
// ("SAVEPOINT "+name, "SELECT "+cols): idemport writes its SQL in capitals,
// and its messages begin in lower case, so "update operation: %w" and
// "select a feed" are not statements while "UPDATE " is.
var sqlStatement = regexp.MustCompile(`^(?:` +
	`(?:SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|TRUNCATE|SAVEPOINT|RELEASE|ROLLBACK|BEGIN|COMMIT|PRAGMA|WITH|LOCK|SET|SHOW|VACUUM|ANALYZE|MERGE|REPLACE|EXPLAIN|GRANT|COPY)(?:[\s(;]|$)` +
	`|(?i:select\s[\s\S]*\bfrom\s|insert\s+(?:or\s+\w+\s+)?into\s|update\s+\S+\s+set\s|delete\s+from\s` +
	`|create\s+(?:unique\s+|temp\s+|temporary\s+|or\s+replace\s+)*(?:table|index|schema|view|trigger|sequence|function)\s` +
	`|alter\s+table\s|drop\s+(?:table|index|schema|view|trigger|sequence|function)\s` +
	`|savepoint\s+\w+\s*$|release\s+savepoint\s|rollback\s+to\s)` +
	`)`)

// sqlText returns where the Go source src (file name) holds SQL statement
// text: a string literal, or a part of a concatenation, beginning (after
// white space and opening parentheses) with a statement.
func sqlText(name string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return true
		}
		s = strings.TrimLeft(s, " \t\r\n(")
		if sqlStatement.MatchString(s) {
			first, _, _ := strings.Cut(s, "\n")
			if len(first) > 40 {
				first = first[:40] + "…"
			}
			found = append(found, fmt.Sprintf("%s: SQL statement text %q", fset.Position(lit.Pos()), first))
		}
		return true
	})
	return found, nil
}

// sqlAllowed lists the files outside the drivers that still hold SQL text
// because its move into the drivers' operations is not done. It is empty:
// every statement has moved. It only shrinks: a file listed here that no
// longer holds SQL text fails the test, so that it leaves the list.
var sqlAllowed = []string{}

// TestNoSQLOutsideDrivers guards the drivers' contract: the database's
// operations, not its spelling. No non-test Go file outside the drivers
// (sink/*/: sink/sqlite, sink/postgres, their shared sink/internal/...
// and the conformance suite) holds SQL statement text; the migrations are
// .sql files inside the drivers. Left out: test support
// (internal/testkit, internal/pgtest, internal/testenv, internal/remotetest),
// which checks what an import wrote with queries of its own, and bench/,
// which drives the databases' own tools (sqlite3, psql) as anchors to
// compare idemport with.
func TestNoSQLOutsideDrivers(t *testing.T) {
	root := filepath.Join("..", "..")
	skip := map[string]bool{"internal/testkit": true, "internal/pgtest": true, "internal/testenv": true, "internal/remotetest": true,
		"bench": true, "testdata": true, ".git": true}
	files := 0
	holding := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skip[rel] || (rel != "." && strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if dir, ok := strings.CutPrefix(rel, "sink/"); ok && dir != "" {
				return filepath.SkipDir // sink/*/: the drivers
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		found, err := sqlText(rel, src)
		if err != nil {
			return err
		}
		if len(found) > 0 {
			holding[rel] = true
		}
		if slices.Contains(sqlAllowed, rel) {
			return nil
		}
		for _, f := range found {
			t.Error(f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("scanned only %d files: is the module root %s?", files, root)
	}
	for _, f := range sqlAllowed {
		if !holding[f] {
			t.Errorf("%s holds no SQL text any more: take it off sqlAllowed", f)
		}
	}
}

// TestSQLTextFinds proves the scan above finds statements however they
// are written, and passes messages that begin with a statement's word.
func TestSQLTextFinds(t *testing.T) {
	for _, c := range []struct {
		lit  string
		want bool
	}{
		{"`SELECT body FROM plans WHERE id = ?`", true},
		{"`\n\t\tselect count(*) from t`", true},
		{`"(SELECT 1 FROM t)"`, true},
		{`"SELECT "`, true},
		{"`INSERT INTO `", true},
		{`"insert or ignore into t values (1)"`, true},
		{"`UPDATE `", true},
		{`"update t set a = 1"`, true},
		{`"DELETE FROM "`, true},
		{`"CREATE TABLE IF NOT EXISTS t (a int)"`, true},
		{`"create unique index i on t (a)"`, true},
		{`"ALTER TABLE "`, true},
		{`"DROP TABLE IF EXISTS "`, true},
		{`"SAVEPOINT "`, true},
		{`"savepoint idemport_row"`, true},
		{`"RELEASE "`, true},
		{`"ROLLBACK TO "`, true},
		{`"PRAGMA busy_timeout"`, true},
		{`"update operation: %w"`, false},
		{`"delete the rows of a file"`, false},
		{`"select a feed with --feed"`, false},
		{`"create schema: %w"`, false},
		{`"drop partitions: %w"`, false},
		{`"savepoint: %w"`, false},
		{`"release partitions: %w"`, false},
		{`"Selected 3 rows from the plan"`, false},
		{`"with --atomic"`, false},
	} {
		found, err := sqlText("x.go", []byte("package p\nvar s = "+c.lit+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got := len(found) > 0; got != c.want {
			t.Errorf("%s: found %q, want SQL %v", c.lit, found, c.want)
		}
	}
}
