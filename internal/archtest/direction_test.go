package archtest

import (
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

// modulePath is the module every package here belongs to.
const modulePath = "github.com/idemport/idemport"

// A rule says which of the module's packages pkg may depend on, directly
// or not. Packages are named relative to the module.
type rule struct {
	pkg   string
	tests bool     // what pkg's tests import counts too
	not   []string // packages pkg must not depend on
	only  []string // when not nil, the only module packages pkg may depend on
	must  []string // packages pkg must import
}

// rules are the directions of the architecture (docs/internals.md: "Layout"):
//   - idemtype, the shared primitives, depends on nothing of idemport;
//   - the leaf packages (reader, sink, ledger, checkpoint) do not import
//     each other or anything above them (ledger and checkpoint take the
//     target database's driver through interfaces of their own, which
//     every sink.Driver satisfies), nor does the event sink package
//     (internal/notify), with one exception: the driver contract (sink)
//     and the drivers import checkpoint and ledger, whose operations
//     (checkpoint.Ops, ledger.Ops) and their record types the drivers
//     implement, never the other way;
//     the drivers' shared SQL (sink/internal/stdsql) imports the contract
//     but no driver; nothing imports the command;
//   - the operator's commands (pipeline/ops) sit above import (pipeline):
//     ops imports pipeline, never the other way, and both are built on
//     pipeline/internal/store, which imports neither;
//   - internal/secret, the masking of secrets, imports none of them, nor
//     idemtype;
//   - the reader's facade imports its two wings; a wing never imports the
//     facade or the other wing, nor do their tests; the packages the wings
//     share (reader/internal/...) import neither, and among themselves
//     only downwards: value and charset import none of the others, input
//     imports those two, and partition, keys and reject what is below
//     them (keys also internal/proc, a leaf, to name its spill files for
//     the process that makes them).
var rules = []rule{
	{pkg: "idemtype", only: []string{}},
	{pkg: "reader", not: []string{"sink", "ledger", "checkpoint", "pipeline", "cmd/idemport"},
		must: []string{"reader/text", "reader/columnar"}},
	{pkg: "sink", not: []string{"reader", "pipeline", "cmd/idemport", "sink/sqlite", "sink/postgres", "sink/mysql"}},
	{pkg: "sink/internal/stdsql", not: []string{"reader", "pipeline", "cmd/idemport", "sink/sqlite", "sink/postgres", "sink/mysql"}},
	{pkg: "sink/sqlite", not: []string{"reader", "pipeline", "cmd/idemport"}},
	{pkg: "sink/postgres", not: []string{"reader", "pipeline", "cmd/idemport"}},
	{pkg: "sink/mysql", not: []string{"reader", "pipeline", "cmd/idemport"}},
	{pkg: "ledger", not: []string{"reader", "sink", "sink/sqlite", "sink/postgres", "sink/mysql", "checkpoint", "pipeline", "cmd/idemport"}},
	{pkg: "checkpoint", not: []string{"reader", "sink", "sink/sqlite", "sink/postgres", "sink/mysql", "ledger", "pipeline", "cmd/idemport"}},
	{pkg: "internal/migrate", not: []string{"sink", "sink/sqlite", "sink/postgres", "sink/mysql", "ledger", "checkpoint", "pipeline"}},
	{pkg: "pipeline", tests: true, not: []string{"cmd/idemport", "pipeline/ops"}},
	{pkg: "pipeline/internal/store", tests: true, not: []string{"pipeline", "pipeline/ops", "cmd/idemport"}},
	{pkg: "pipeline/ops", not: []string{"cmd/idemport"}, must: []string{"pipeline/internal/store"}},
	{pkg: "internal/notify", not: []string{"reader", "sink", "ledger", "checkpoint", "pipeline", "cmd/idemport"}},
	{pkg: "internal/secret", not: []string{"idemtype", "reader", "sink", "ledger", "checkpoint", "pipeline", "cmd/idemport", "internal/notify"}},
	{pkg: "reader/text", tests: true, not: []string{"reader", "reader/columnar", "reader/remote"}},
	{pkg: "reader/columnar", tests: true, not: []string{"reader", "reader/text", "reader/remote"}},
	{pkg: "reader/internal/value", tests: true, only: []string{"idemtype"}},
	{pkg: "reader/internal/charset", tests: true, only: []string{}},
	{pkg: "reader/internal/input", tests: true, only: []string{"idemtype", "reader/internal/value", "reader/internal/charset"}},
	{pkg: "reader/internal/partition", tests: true, only: []string{"idemtype", "reader/internal/value", "reader/internal/charset", "reader/internal/input"}},
	{pkg: "reader/internal/keys", tests: true, only: []string{"idemtype", "reader/internal/value", "internal/proc"}},
	{pkg: "reader/internal/reject", tests: true, only: []string{"idemtype", "reader/internal/value", "reader/internal/charset", "reader/internal/input"}},
}

// graph holds, for each package of the module, the module's packages it
// depends on, directly or not (deps), the same with its tests' imports
// (withTests), and those it imports itself (imports). Packages are named
// relative to the module.
type graph struct {
	deps, withTests, imports map[string][]string
}

// check returns every way g breaks rules.
func check(g graph, rules []rule) []string {
	var found []string
	for _, r := range rules {
		deps, ok := g.deps[r.pkg]
		if !ok {
			found = append(found, "there is no package "+r.pkg+" (a rule names it)")
			continue
		}
		by := "imports"
		if r.tests {
			deps, by = g.withTests[r.pkg], "or its tests import"
		}
		for _, d := range deps {
			if slices.Contains(r.not, d) || (r.only != nil && !slices.Contains(r.only, d)) {
				found = append(found, r.pkg+" "+by+" "+d)
			}
		}
		for _, m := range r.must {
			if !slices.Contains(g.imports[r.pkg], m) {
				found = append(found, r.pkg+" does not import "+m)
			}
		}
	}
	return found
}

var (
	moduleOnce  sync.Once
	moduleGraph graph
	moduleErr   error
)

// loadGraph returns the module's graph, as the go command sees it, from
// one go list of every package and its tests.
func loadGraph(t *testing.T) graph {
	t.Helper()
	moduleOnce.Do(func() {
		out, err := exec.Command("go", "list", "-test", "-f", "{{.ImportPath}}|{{join .Deps \",\"}}|{{join .Imports \",\"}}", modulePath+"/...").Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				err = &listError{err, string(ee.Stderr)}
			}
			moduleErr = err
			return
		}
		moduleGraph = parseList(string(out))
	})
	if moduleErr != nil {
		t.Fatalf("go list: %v", moduleErr)
	}
	return moduleGraph
}

type listError struct {
	err    error
	stderr string
}

func (e *listError) Error() string { return e.err.Error() + "\n" + e.stderr }

// parseList reads the lines of go list -test with the format
// "ImportPath|Deps|Imports", lists joined by commas. A package's own line
// gives deps and imports; the line of its test binary (p.test) gives
// withTests; the test variants ("p [p.test]") add nothing.
func parseList(out string) graph {
	g := graph{deps: map[string][]string{}, withTests: map[string][]string{}, imports: map[string][]string{}}
	// module returns the module's packages among list, relative, without
	// skip and its test variants.
	module := func(list, skip string) []string {
		var ps []string
		for _, d := range strings.Split(list, ",") {
			d, _, _ = strings.Cut(d, " ") // "p [q.test]": p as compiled for q's tests
			rel, ok := strings.CutPrefix(d, modulePath+"/")
			if !ok || rel == skip || rel == skip+"_test" || slices.Contains(ps, rel) {
				continue
			}
			ps = append(ps, rel)
		}
		return ps
	}
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "|")
		if len(f) != 3 || strings.Contains(f[0], " ") {
			continue
		}
		rel, ok := strings.CutPrefix(f[0], modulePath+"/")
		if !ok {
			continue
		}
		if p, ok := strings.CutSuffix(rel, ".test"); ok {
			g.withTests[p] = module(f[1], p)
			continue
		}
		g.deps[rel], g.imports[rel] = module(f[1], rel), module(f[2], rel)
	}
	for p, deps := range g.deps {
		if _, ok := g.withTests[p]; !ok {
			g.withTests[p] = deps // no tests
		}
	}
	return g
}

// TestDirection checks the module against rules.
func TestDirection(t *testing.T) {
	g := loadGraph(t)
	if len(g.deps) < 20 {
		t.Fatalf("go list found only %d packages of the module", len(g.deps))
	}
	for _, f := range check(g, rules) {
		t.Error(f)
	}
}

// TestDirectionFinds proves the check above finds what each kind of rule
// forbids, in a package's code and in its tests, and passes what it
// allows.
func TestDirectionFinds(t *testing.T) {
	out := strings.Join([]string{
		modulePath + "/leaf||",
		modulePath + "/leaf.test|" + modulePath + "/leaf [" + modulePath + "/leaf.test]," + modulePath + "/leaf_test [" + modulePath + "/leaf.test]|",
		modulePath + "/low|" + modulePath + "/leaf|" + modulePath + "/leaf",
		modulePath + "/high|" + modulePath + "/leaf," + modulePath + "/low,fmt|" + modulePath + "/low,fmt",
		modulePath + "/wing|" + modulePath + "/leaf|",
		modulePath + "/wing.test|" + modulePath + "/leaf," + modulePath + "/high [" + modulePath + "/wing.test]|",
		modulePath + "/wing [" + modulePath + "/wing.test]|" + modulePath + "/leaf|",
	}, "\n") + "\n"
	g := parseList(out)
	for _, c := range []struct {
		rule rule
		want []string
	}{
		{rule{pkg: "leaf", only: []string{}}, nil},
		{rule{pkg: "low", only: []string{}}, []string{"low imports leaf"}},
		{rule{pkg: "high", not: []string{"leaf"}}, []string{"high imports leaf"}}, // not directly, but through low
		{rule{pkg: "high", only: []string{"low"}}, []string{"high imports leaf"}},
		{rule{pkg: "high", not: []string{"wing"}, must: []string{"low"}}, nil},
		{rule{pkg: "high", must: []string{"leaf", "low"}}, []string{"high does not import leaf"}},
		{rule{pkg: "wing", not: []string{"high"}}, nil},
		{rule{pkg: "wing", tests: true, not: []string{"high"}}, []string{"wing or its tests import high"}},
		{rule{pkg: "leaf", tests: true, only: []string{}}, nil}, // its own tests do not count
		{rule{pkg: "gone"}, []string{"there is no package gone (a rule names it)"}},
	} {
		if got := check(g, []rule{c.rule}); !slices.Equal(got, c.want) {
			t.Errorf("%+v: found %q, want %q", c.rule, got, c.want)
		}
	}
}
