package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The drivers' import paths, and the only files outside them allowed to
// name a driver: the registry and the command's wiring.
const (
	sqliteDriver   = "github.com/idemport/idemport/sink/sqlite"
	postgresDriver = "github.com/idemport/idemport/sink/postgres"
	mysqlDriver    = "github.com/idemport/idemport/sink/mysql"
)

// perDatabase matches names that say which database code is on.
var perDatabase = regexp.MustCompile(`(?i)sqlite|postgres|pgx|mysql|maria`)

// branchesOnDatabase returns where the Go source src (file name) names a
// database in a condition (if, for, switch, case, == or !=), or imports a
// driver although it is not the registry or the command (wiring).
func branchesOnDatabase(name string, src []byte, wiring bool) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	var found []string
	seen := map[token.Pos]bool{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if (p == sqliteDriver || p == postgresDriver || p == mysqlDriver) && !wiring {
			found = append(found, fmt.Sprintf("%s: imports %s", fset.Position(imp.Pos()), p))
		}
	}
	check := func(e ast.Node) {
		if e == nil || reflect.ValueOf(e).IsNil() {
			return
		}
		ast.Inspect(e, func(n ast.Node) bool {
			var word string
			switch n := n.(type) {
			case *ast.Ident:
				word = n.Name
			case *ast.BasicLit:
				if n.Kind == token.STRING {
					word = n.Value
				}
			case *ast.FuncLit:
				return false // a function's body is checked on its own
			}
			if word != "" && perDatabase.MatchString(word) && !seen[n.Pos()] {
				seen[n.Pos()] = true
				found = append(found, fmt.Sprintf("%s: a condition names a database: %s", fset.Position(n.Pos()), word))
			}
			return true
		})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt:
			check(n.Cond)
		case *ast.ForStmt:
			check(n.Cond)
		case *ast.SwitchStmt:
			check(n.Tag)
		case *ast.TypeSwitchStmt:
			check(n.Assign)
		case *ast.CaseClause:
			for _, e := range n.List {
				check(e)
			}
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				check(n)
			}
		case *ast.TypeAssertExpr:
			check(n.Type)
		}
		return true
	})
	return found, nil
}

// TestNoDatabaseBranches guards the drivers' boundary: no non-test Go file
// outside the drivers (sink/sqlite, sink/postgres, sink/mysql) branches on
// which database it is, or imports a driver, except the registry
// (pipeline/drivers.go) and the command. Test support (internal/testkit, internal/pgtest, internal/testenv)
// and the benchmarks, which compare the databases by name, are left out.
func TestNoDatabaseBranches(t *testing.T) {
	root := filepath.Join("..", "..")
	skip := map[string]bool{"sink/sqlite": true, "sink/postgres": true, "sink/mysql": true, "internal/testkit": true, "internal/pgtest": true, "internal/testenv": true, "bench": true, "testdata": true, ".git": true}
	files := 0
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
		found, err := branchesOnDatabase(rel, src, rel == "pipeline/drivers.go" || strings.HasPrefix(rel, "cmd/"))
		if err != nil {
			return err
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
}

// TestBranchesOnDatabaseFinds proves the scan above finds what it guards
// against, and lets capability checks pass.
func TestBranchesOnDatabaseFinds(t *testing.T) {
	for _, c := range []struct {
		src    string
		wiring bool
		want   int
	}{
		{`package p; func f(d int) { if d == dialect.Postgres { } }`, false, 1},
		{`package p; func f(d int) { switch d { case SQLite: } }`, false, 1},
		{`package p; func f(s string) bool { return s != "postgres" }`, false, 1},
		{`package p; func f(d any) { if _, ok := d.(postgres.Driver); ok { } }`, false, 1},
		{`package p; import _ "github.com/idemport/idemport/sink/sqlite"`, false, 1},
		{`package p; import _ "github.com/idemport/idemport/sink/sqlite"`, true, 0},
		{`package p; func f(d Driver) { if d.Limits().QualifiedNames { } }`, false, 0},
		{`package p; func f(d Driver) { if _, ok := d.SkipLocked(""); !ok { } }`, false, 0},
	} {
		found, err := branchesOnDatabase("x.go", []byte(c.src), c.wiring)
		if err != nil {
			t.Fatal(err)
		}
		if len(found) != c.want {
			t.Errorf("%s: found %q, want %d", c.src, found, c.want)
		}
	}
}
