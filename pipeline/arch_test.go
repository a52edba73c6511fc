package pipeline

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestImportDirection guards the architecture: the leaf packages (reader,
// sink, ledger, checkpoint) do not import each other or anything above
// them (ledger and checkpoint take the target database's driver through
// interfaces of their own, which every sink.Driver satisfies), nor does the
// event sink package (internal/notify); the drivers import only package
// sink among the leaves, and nothing but the command imports pipeline.
func TestImportDirection(t *testing.T) {
	const mod = "github.com/idemport/idemport/"
	forbidden := map[string][]string{
		"reader":           {"sink", "ledger", "checkpoint", "pipeline", "cmd/idemport"},
		"sink":             {"reader", "ledger", "checkpoint", "pipeline", "cmd/idemport", "sink/sqlite", "sink/postgres"},
		"sink/sqlite":      {"reader", "ledger", "checkpoint", "pipeline", "cmd/idemport"},
		"sink/postgres":    {"reader", "ledger", "checkpoint", "pipeline", "cmd/idemport"},
		"ledger":           {"reader", "sink", "sink/sqlite", "sink/postgres", "checkpoint", "pipeline", "cmd/idemport"},
		"checkpoint":       {"reader", "sink", "sink/sqlite", "sink/postgres", "ledger", "pipeline", "cmd/idemport"},
		"internal/migrate": {"sink", "sink/sqlite", "sink/postgres", "ledger", "checkpoint", "pipeline"},
		"pipeline":         {"cmd/idemport"},
		"internal/notify":  {"reader", "sink", "ledger", "checkpoint", "pipeline", "cmd/idemport"},
		"internal/secret":  {"idemtype", "reader", "sink", "ledger", "checkpoint", "pipeline", "cmd/idemport", "internal/notify"},
	}
	for pkg, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		deps := map[string]bool{}
		for _, d := range strings.Fields(string(out)) {
			deps[strings.TrimPrefix(d, mod)] = true
		}
		for _, b := range bad {
			if deps[b] {
				t.Errorf("%s imports %s", pkg, b)
			}
		}
	}
}

// TestReaderWings guards the reader's shape: the facade (reader) imports
// its two wings, each wing imports only the shared core
// (reader/internal/core) of the reader, never the facade or the other
// wing, and the core imports neither the facade nor a wing.
func TestReaderWings(t *testing.T) {
	const mod = "github.com/idemport/idemport/"
	forbidden := map[string][]string{
		"reader/text":          {"reader", "reader/columnar", "reader/remote"},
		"reader/columnar":      {"reader", "reader/text", "reader/remote"},
		"reader/internal/core": {"reader", "reader/text", "reader/columnar", "reader/remote"},
	}
	for pkg, bad := range forbidden {
		deps := goDeps(t, mod+pkg)
		for _, b := range bad {
			if deps[mod+b] {
				t.Errorf("%s imports %s", pkg, b)
			}
		}
	}
	facade := goDeps(t, mod+"reader")
	for _, wing := range []string{"reader/text", "reader/columnar", "reader/internal/core"} {
		if !facade[mod+wing] {
			t.Errorf("reader does not import %s", wing)
		}
	}
}

// goDeps returns the packages pkg depends on, itself excluded, tests
// included (a wing's test may not import the facade either).
func goDeps(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-test", "-f", "{{.ImportPath}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	deps := map[string]bool{}
	for _, d := range strings.Fields(string(out)) {
		// -test lists the test variants as "p [p.test]" and "p.test".
		d, _, _ = strings.Cut(d, " ")
		if d != pkg && d != pkg+".test" {
			deps[d] = true
		}
	}
	return deps
}

// The drivers' import paths, and the only files outside them allowed to
// name a driver: the registry and the command's wiring.
const (
	sqliteDriver   = "github.com/idemport/idemport/sink/sqlite"
	postgresDriver = "github.com/idemport/idemport/sink/postgres"
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
		if (p == sqliteDriver || p == postgresDriver) && !wiring {
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
// outside sink/sqlite and sink/postgres branches on which database it is,
// or imports a driver, except the registry (pipeline/drivers.go) and the
// command. Test support (internal/testkit, internal/pgtest) and the
// benchmarks, which compare the databases by name, are left out.
func TestNoDatabaseBranches(t *testing.T) {
	root := ".."
	skip := map[string]bool{"sink/sqlite": true, "sink/postgres": true, "internal/testkit": true, "internal/pgtest": true, "bench": true, "testdata": true, ".git": true}
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
