package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every run of the command pays, before main, for the package
// initialisation of every package linked into it, whether the run uses
// them or not: a rerun of a completed file, which costs a stat and one
// query, must not also compile regular expressions it never uses.

// compiledAtStart returns where the Go source src (file name) compiles a
// regular expression in the initialiser of a package-level variable,
// outside a function literal (which sync.OnceValue defers to first use).
func compiledAtStart(name string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	var found []string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		ast.Inspect(gd, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "regexp" && strings.Contains(sel.Sel.Name, "Compile") {
					found = append(found, fmt.Sprintf("%s: regexp.%s in a package-level variable: compile it on first use (sync.OnceValue)", fset.Position(n.Pos()), sel.Sel.Name))
				}
			}
			return true
		})
	}
	return found, nil
}

// TestNoRegexpCompiledAtStart checks that no package of the command
// compiles a regular expression before main: each costs every run,
// which seldom needs it. Left out: tests, and bench/, which is not the
// command.
func TestNoRegexpCompiledAtStart(t *testing.T) {
	root := filepath.Join("..", "..")
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "bench" || rel == "testdata" || (rel != "." && strings.HasPrefix(d.Name(), ".")) {
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
		found, err := compiledAtStart(rel, src)
		for _, f := range found {
			t.Error(f)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("scanned only %d files: is the module root %s?", files, root)
	}
}

// TestCompiledAtStartFinds proves the scan above finds a regular
// expression compiled in a package-level variable, alone or in a group,
// and passes one compiled on first use or inside a function.
func TestCompiledAtStartFinds(t *testing.T) {
	for _, c := range []struct {
		src  string
		want int
	}{
		{"var re = regexp.MustCompile(`a+`)", 1},
		{"var (\n\tx = 1\n\tre, re2 = regexp.MustCompile(`a`), regexp.MustCompilePOSIX(`b`)\n)", 2},
		{"var re = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`a+`) })", 0},
		{"func f() { re := regexp.MustCompile(`a+`); _ = re }", 0},
		{"var s = strings.Compile(`a`)", 0},
	} {
		found, err := compiledAtStart("x.go", []byte("package x\n\n"+c.src+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if len(found) != c.want {
			t.Errorf("%s: found %q, want %d", c.src, found, c.want)
		}
	}
}
