package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

// internalPackage reports whether path is one of the module's internal
// packages, which code outside the module cannot import.
func internalPackage(path string) bool {
	return path == modulePath+"/internal" || strings.HasPrefix(path, modulePath+"/internal/")
}

// internalMentions returns, one line each, the exported identifiers of pkg
// whose declaration mentions a type of one of the module's internal
// packages: package-level functions, variables and constants, type
// definitions, exported struct fields, interface methods and the methods of
// exported types. A type of another public package is not entered (it is
// checked as its own package).
func internalMentions(pkg *types.Package) []string {
	var found []string
	// mentions returns the internal types t names, in the order met.
	var mentions func(t types.Type, seen map[types.Type]bool) []string
	mentions = func(t types.Type, seen map[types.Type]bool) []string {
		if t == nil || seen[t] {
			return nil
		}
		seen[t] = true
		var out []string
		switch t := t.(type) {
		case *types.Named:
			obj := t.Obj()
			if obj.Pkg() != nil && internalPackage(obj.Pkg().Path()) {
				out = append(out, strings.TrimPrefix(obj.Pkg().Path(), modulePath+"/")+"."+obj.Name())
			}
			for a := range t.TypeArgs().Types() {
				out = append(out, mentions(a, seen)...)
			}
		case *types.Alias:
			obj := t.Obj()
			if obj.Pkg() != nil && internalPackage(obj.Pkg().Path()) {
				out = append(out, strings.TrimPrefix(obj.Pkg().Path(), modulePath+"/")+"."+obj.Name())
			}
			out = append(out, mentions(types.Unalias(t), seen)...)
		case *types.Pointer:
			out = mentions(t.Elem(), seen)
		case *types.Slice:
			out = mentions(t.Elem(), seen)
		case *types.Array:
			out = mentions(t.Elem(), seen)
		case *types.Chan:
			out = mentions(t.Elem(), seen)
		case *types.Map:
			out = append(mentions(t.Key(), seen), mentions(t.Elem(), seen)...)
		case *types.Signature:
			for v := range t.Params().Variables() {
				out = append(out, mentions(v.Type(), seen)...)
			}
			for v := range t.Results().Variables() {
				out = append(out, mentions(v.Type(), seen)...)
			}
			for tp := range t.TypeParams().TypeParams() {
				out = append(out, mentions(tp.Constraint(), seen)...)
			}
		case *types.Struct:
			// Only what code outside the package sees: exported fields,
			// and embedded ones whose promoted members are visible.
			for f := range t.Fields() {
				if f.Exported() || f.Embedded() {
					out = append(out, mentions(f.Type(), seen)...)
				}
			}
		case *types.Interface:
			for m := range t.ExplicitMethods() {
				out = append(out, mentions(m.Type(), seen)...)
			}
			for e := range t.EmbeddedTypes() {
				out = append(out, mentions(e, seen)...)
			}
		case *types.Union:
			for term := range t.Terms() {
				out = append(out, mentions(term.Type(), seen)...)
			}
		case *types.TypeParam:
			out = mentions(t.Constraint(), seen)
		}
		return out
	}
	report := func(name string, t types.Type) {
		if ms := mentions(t, map[types.Type]bool{}); len(ms) > 0 {
			found = append(found, fmt.Sprintf("%s.%s mentions %s", pkg.Name(), name, strings.Join(ms, ", ")))
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.TypeName:
			t := obj.Type()
			if alias, ok := t.(*types.Alias); ok {
				report(name, alias)
				continue
			}
			named, ok := t.(*types.Named)
			if !ok {
				continue
			}
			for tp := range named.TypeParams().TypeParams() {
				report(name, tp.Constraint())
			}
			switch u := named.Underlying().(type) {
			case *types.Struct:
				for f := range u.Fields() {
					if f.Exported() || f.Embedded() {
						report(name+"."+f.Name(), f.Type())
					}
				}
			case *types.Interface:
				for m := range u.ExplicitMethods() {
					if m.Exported() {
						report(name+"."+m.Name(), m.Type())
					}
				}
				for e := range u.EmbeddedTypes() {
					report(name, e)
				}
			default:
				report(name, u)
			}
			for m := range named.Methods() {
				if m.Exported() {
					report(name+"."+m.Name(), m.Type())
				}
			}
		default: // functions, variables, constants
			report(name, obj.Type())
		}
	}
	return found
}

// publicPackages loads, from the compiler's export data, every package of
// the module that code outside it can import: not internal, not a command,
// and not under bench (the benchmarks' own programs and fixtures).
func publicPackages(t *testing.T) []*types.Package {
	t.Helper()
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Name,Export,Module,Standard", modulePath+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.String())
	}
	type listed struct {
		ImportPath, Name, Export string
		Module                   *struct{ Path string }
	}
	exports := map[string]string{}
	var public []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		if p.Module != nil && p.Module.Path == modulePath && p.Name != "main" &&
			!internalPackage(p.ImportPath) && !strings.HasPrefix(p.ImportPath, modulePath+"/bench/") {
			public = append(public, p.ImportPath)
		}
	}
	sort.Strings(public)
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	var pkgs []*types.Package
	for _, path := range public {
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		pkgs = append(pkgs, pkg)
	}
	return pkgs
}

// TestNoInternalTypesExported guards the public API: no exported
// identifier of a package outside internal/ names a type of an internal
// package in its declaration, since code outside the module could not
// write that type and so could not call or fill in the identifier.
func TestNoInternalTypesExported(t *testing.T) {
	pkgs := publicPackages(t)
	if len(pkgs) < 10 {
		t.Fatalf("loaded only %d public packages", len(pkgs))
	}
	for _, pkg := range pkgs {
		for _, f := range internalMentions(pkg) {
			t.Error(f)
		}
	}
}

// importerFunc lets a function serve as a types.Importer.
type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// TestInternalMentionsFinds proves the check above finds an internal type
// wherever an exported declaration can name it, and leaves alone what code
// outside the package cannot see.
func TestInternalMentionsFinds(t *testing.T) {
	check := func(path, src string, imp types.Importer) *types.Package {
		t.Helper()
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		pkg, err := (&types.Config{Importer: imp}).Check(path, fset, []*ast.File{f}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return pkg
	}
	hidden := check(modulePath+"/internal/x", `package x; type T int; type I interface{ M() }`, nil)
	imp := importerFunc(func(path string) (*types.Package, error) {
		if path == hidden.Path() {
			return hidden, nil
		}
		return nil, fmt.Errorf("no package %s", path)
	})
	for _, c := range []struct {
		decl string
		want []string // the findings, "" for none
	}{
		{`func F(x.T) {}`, []string{"p.F mentions internal/x.T"}},
		{`func F() (int, *x.T) { return 0, nil }`, []string{"p.F mentions internal/x.T"}},
		{`func F(...func(map[string][]x.I)) {}`, []string{"p.F mentions internal/x.I"}},
		{`var V chan [2]x.T`, []string{"p.V mentions internal/x.T"}},
		{`type S struct{ A int; B x.T }`, []string{"p.S.B mentions internal/x.T"}},
		{`type S struct{ x.T }`, []string{"p.S.T mentions internal/x.T"}},
		{`type S struct{}; func (S) M(x.I) {}`, []string{"p.S.M mentions internal/x.I"}},
		{`type I interface{ M() x.T }`, []string{"p.I.M mentions internal/x.T"}},
		{`type I interface{ x.I }`, []string{"p.I mentions internal/x.I"}},
		{`type F func(x.T)`, []string{"p.F mentions internal/x.T"}},
		{`type A = x.T`, []string{"p.A mentions internal/x.T"}},
		{`type G[P interface{ ~string | x.T }] struct{}`, []string{"p.G mentions internal/x.T"}},
		{`func F[P x.I]() {}`, []string{"p.F mentions internal/x.I"}},
		{`type S struct{ b x.T }`, nil},
		{`func f(x.T) {}`, nil},
		{`type S struct{}; func (S) m(x.I) {}`, nil},
		{`var _ x.T`, nil},
	} {
		pkg := check("example.com/p", `package p; import "`+hidden.Path()+`"; var _ x.T; `+c.decl, imp)
		if got := internalMentions(pkg); !slices.Equal(got, c.want) {
			t.Errorf("%s: found %q, want %q", c.decl, got, c.want)
		}
	}
}
