package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// notLinked are packages the command must not link, with why: each is
// initialised by every run and has no part in one. A package named here
// that a new import links again shows in TestCommandLinksNone with the
// chain of imports that brings it.
var notLinked = map[string]string{
	"github.com/prometheus/common/expfmt":   "the metrics file is written by internal/promtext; expfmt links Prometheus's protobuf model and Go's source tools",
	"github.com/prometheus/client_model/go": "the metrics file is written by internal/promtext, without Prometheus's protobuf model",
	"github.com/prometheus/common/model":    "the metrics file is written by internal/promtext (model compiles regular expressions at start)",
	"go/ast":                                "Go's source tools: a run parses no Go",
	"go/parser":                             "Go's source tools: a run parses no Go",
	"go/printer":                            "Go's source tools: a run prints no Go",
	"go/format":                             "Go's source tools: a run formats no Go",
	"expvar":                                "publishes the process's variables over HTTP, which the command never serves",
	"net/http/pprof":                        "serves profiles over HTTP, which the command never serves",
}

// linksNone returns, for each package of notLinked in deps (a package's
// imports by import path, as go list -deps gives them, from root), the
// shortest chain of imports from root that links it.
func linksNone(deps map[string][]string, root string, notLinked map[string]string) []string {
	from := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, q := range deps[p] {
			if _, seen := from[q]; !seen {
				from[q] = p
				queue = append(queue, q)
			}
		}
	}
	var found []string
	for p, why := range notLinked {
		if _, ok := from[p]; !ok {
			continue
		}
		chain := []string{p}
		for q := from[p]; q != ""; q = from[q] {
			chain = append(chain, q)
		}
		slices.Reverse(chain)
		found = append(found, fmt.Sprintf("the command links %s (%s): %s", p, why, strings.Join(chain, " → ")))
	}
	slices.Sort(found)
	return found
}

// TestCommandLinksNone checks that the command links none of notLinked.
func TestCommandLinksNone(t *testing.T) {
	root := modulePath + "/cmd/idemport"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", root).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			err = &listError{err, string(ee.Stderr)}
		}
		t.Fatalf("go list: %v", err)
	}
	deps := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) > 0 {
			deps[f[0]] = f[1:]
		}
	}
	if len(deps[root]) == 0 || len(deps) < 100 {
		t.Fatalf("go list found %d packages, and %d imports of %s", len(deps), len(deps[root]), root)
	}
	for _, f := range linksNone(deps, root, notLinked) {
		t.Error(f)
	}
}

// TestLinksNoneFinds proves the check above finds a package linked
// directly or through others, with the chain that links it, and passes one
// that is not linked or is only imported by a package that is not.
func TestLinksNoneFinds(t *testing.T) {
	deps := map[string][]string{
		"cmd":     {"a", "b"},
		"a":       {"b", "fmt"},
		"b":       {"bad"},
		"bad":     nil,
		"other":   {"unused"},
		"unused":  nil,
		"direct":  nil,
		"fmt":     nil,
		"cmd2":    {"direct"},
		"missing": nil,
	}
	found := linksNone(deps, "cmd", map[string]string{"bad": "why", "unused": "why", "direct": "why"})
	if want := []string{"the command links bad (why): cmd → b → bad"}; !slices.Equal(found, want) {
		t.Errorf("found %q, want %q", found, want)
	}
	found = linksNone(deps, "cmd2", map[string]string{"direct": "why"})
	if want := []string{"the command links direct (why): cmd2 → direct"}; !slices.Equal(found, want) {
		t.Errorf("found %q, want %q", found, want)
	}
}
