package sqlite

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// cSources returns the files whose C declares parts of SQLite's
// interface by hand, without sqlite3.h: the driver's C files and headers,
// and the cgo preambles of its Go files and of its internal packages'
// (syncvfs). The SQLite that github.com/mattn/go-sqlite3 compiles in is
// reached only through its symbols, and its header is on the include path
// of no package but that one.
func cSources(t *testing.T) []string {
	var out []string
	for _, pat := range []string{"*.c", "*.h", "*.go", "internal/*/*.go"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			if !strings.HasSuffix(f, "_test.go") {
				out = append(out, f)
			}
		}
	}
	return out
}

// handStructs maps the structures those files declare by hand to
// sqlite3.h's name for them.
var handStructs = map[string]string{
	"sqlite3_file":       "sqlite3_file",
	"sqlite3_io_methods": "sqlite3_io_methods",
	"sqlite3_vfs":        "sqlite3_vfs",
	"idp_mem_methods":    "sqlite3_mem_methods",
}

// TestDeclaredAsSQLiteDeclares holds every declaration of SQLite's
// interface made by hand in the driver's C and in syncvfs to the header of
// the SQLite compiled in (go-sqlite3's sqlite3-binding.h): each function's
// return and parameter types, each structure's members in order, their
// types (a structure may stop before the header's last member, as far as
// it is read), and each IDP_ constant named after an SQLITE_ one. Compiled
// apart, a declaration that drifted from SQLite's would still build, link
// and call with the wrong layout; this is the check that the compiler
// cannot make.
func TestDeclaredAsSQLiteDeclares(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/mattn/go-sqlite3").Output()
	if err != nil {
		t.Fatalf("find go-sqlite3's module: %v", err)
	}
	hb, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "sqlite3-binding.h"))
	if err != nil {
		t.Fatal(err)
	}
	header := stripComments(string(hb))
	realFuncs := cFuncs(header, true)
	realStructs := cStructs(header)
	realConsts := cConsts(header, "SQLITE_")
	var funcs, structs, consts int
	sources := cSources(t)
	for _, name := range sources {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		if strings.HasSuffix(name, ".go") {
			m := preambleRE.FindStringSubmatch(src)
			if m == nil {
				continue
			}
			src = m[1] // the C is a comment to Go
		}
		src = stripComments(src)
		for fn, decl := range cFuncs(src, false) {
			funcs++
			if want, ok := realFuncs[fn]; !ok {
				t.Errorf("%s declares %s, which sqlite3.h does not", name, fn)
			} else if decl != want {
				t.Errorf("%s declares\n\t%s\nsqlite3.h\n\t%s", name, decl, want)
			}
		}
		for s, members := range cStructs(src) {
			real, ok := handStructs[s]
			if !ok {
				continue
			}
			structs++
			want := realStructs[real]
			if len(want) == 0 {
				t.Errorf("%s declares struct %s, which sqlite3.h does not", name, real)
				continue
			}
			if len(members) > len(want) {
				t.Errorf("%s: struct %s has %d members, sqlite3.h's %d", name, s, len(members), len(want))
				continue
			}
			for i, m := range members {
				if m != want[i] {
					t.Errorf("%s: struct %s's member %d is\n\t%s\nin sqlite3.h\n\t%s", name, s, i, m, want[i])
				}
			}
		}
		for c, v := range cConsts(src, "IDP_") {
			want, ok := realConsts[c]
			if !ok {
				continue // a constant of the driver's own (IDP_TS_RANGE)
			}
			consts++
			if v != want {
				t.Errorf("%s: IDP_%s is %d, SQLITE_%s %d", name, c, v, c, want)
			}
		}
	}
	// The scan found what it checks: a parse that found nothing passes.
	if funcs < 20 || structs < 4 || consts < 8 {
		t.Errorf("checked %d functions, %d structures and %d constants: the scan of %v missed some", funcs, structs, consts, sources)
	}
}

var (
	preambleRE = regexp.MustCompile(`(?s)/\*(.*?)\*/\s*import "C"`)
	commentRE  = regexp.MustCompile(`(?s)/\*.*?\*/|//[^\n]*`)
	protoRE    = regexp.MustCompile(`(?m)^(?:SQLITE_API\s+)?((?:const\s+)?[A-Za-z_]\w*(?:\s+[A-Za-z_]\w*)*[\s*]+)(sqlite3_\w+)\s*\(([^;{]*?)\)\s*;`)
	structRE   = regexp.MustCompile(`(?s)(?:^|\n)(?:typedef\s+)?struct\s*(\w*)\s*\{(.*?)\}\s*(\w*)\s*;`)
	defineRE   = regexp.MustCompile(`(?m)^#define\s+([A-Z_0-9]+)\s+(0x[0-9a-fA-F]+|[0-9]+)\s*$`)
	tokenRE    = regexp.MustCompile(`[A-Za-z_]\w*|\.\.\.|\S`)
	cTypeWords = map[string]bool{"int": true, "char": true, "long": true, "short": true, "double": true, "float": true, "void": true}
)

// stripComments removes C's comments from src.
func stripComments(src string) string { return commentRE.ReplaceAllString(src, " ") }

// cFuncs returns the declarations of sqlite3_ functions in src (real: in
// sqlite3.h, each marked SQLITE_API), by name, normalized (normalizeC).
func cFuncs(src string, real bool) map[string]string {
	out := map[string]string{}
	for _, m := range protoRE.FindAllStringSubmatch(src, -1) {
		if real != strings.HasPrefix(m[0], "SQLITE_API") {
			continue
		}
		out[m[2]] = normalizeC(m[1]+" "+m[2]+"("+m[3]+")", "")
	}
	return out
}

// cStructs returns the members of each structure src defines, by its
// name (a typedef's for an unnamed one), each normalized (normalizeC).
func cStructs(src string) map[string][]string {
	out := map[string][]string{}
	for _, m := range structRE.FindAllStringSubmatch(src, -1) {
		name := m[1]
		if name == "" {
			name = m[3]
		}
		var members []string
		for _, d := range strings.Split(m[2], ";") {
			if d = strings.TrimSpace(d); d == "" {
				continue
			}
			members = append(members, normalizeMember(d)...)
		}
		out[name] = members
	}
	return out
}

// cConsts returns the integer constants src defines whose names start
// with prefix, by the rest of their names.
func cConsts(src, prefix string) map[string]int64 {
	out := map[string]int64{}
	for _, m := range defineRE.FindAllStringSubmatch(src, -1) {
		if rest, ok := strings.CutPrefix(m[1], prefix); ok {
			if v, err := strconv.ParseInt(m[2], 0, 64); err == nil {
				out[rest] = v
			}
		}
	}
	return out
}

// normalizeMember normalizes one member declaration, or each of a list
// ("void *a, *b"), as "name: type".
func normalizeMember(d string) []string {
	toks := tokenRE.FindAllString(d, -1)
	// A function pointer: its name is the first identifier in "(*name)".
	for i := 0; i+3 < len(toks); i++ {
		if toks[i] == "(" && toks[i+1] == "*" && toks[i+3] == ")" && tokenRE.MatchString(toks[i+2]) && toks[i+2][0] != '(' {
			name := toks[i+2]
			return []string{name + ": " + normalizeC(d, name)}
		}
	}
	// A plain declaration: the base type, then one name per comma.
	parts := strings.Split(d, ",")
	first := tokenRE.FindAllString(parts[0], -1)
	base := strings.Join(strings.Fields(strings.TrimRight(strings.Join(first[:len(first)-1], " "), "* ")), " ")
	var out []string
	for _, p := range parts {
		pt := tokenRE.FindAllString(p, -1)
		name := pt[len(pt)-1]
		stars := strings.Count(strings.Join(pt, ""), "*")
		out = append(out, name+": "+normalizeC(base+strings.Repeat("*", stars), ""))
	}
	return out
}

// normalizeC spells a C declaration one way: no struct keywords, no
// parameter names (keep, the member's own, is kept), SQLite's integer
// types by their stdint names, a pointer to an opaque SQLite mutex as
// void*, and a space only between two words.
func normalizeC(d, keep string) string {
	var toks []string
	for _, t := range tokenRE.FindAllString(d, -1) {
		switch t {
		case "struct", "SQLITE_API":
			continue
		case "sqlite3_int64", "sqlite_int64":
			t = "int64_t"
		case "sqlite3_uint64", "sqlite_uint64":
			t = "uint64_t"
		case "sqlite3_mutex":
			t = "void"
		case "sqlite3_filename":
			toks = append(toks, "const", "char", "*")
			continue
		}
		toks = append(toks, t)
	}
	word := func(t string) bool {
		return t != "" && (t[0] == '_' || t[0] >= 'A' && t[0] <= 'Z' || t[0] >= 'a' && t[0] <= 'z')
	}
	var kept []string
	for i, t := range toks {
		if word(t) && t != keep && !cTypeWords[t] && i > 0 && i+1 < len(toks) && (toks[i+1] == "," || toks[i+1] == ")") &&
			(word(toks[i-1]) && toks[i-1] != "const" || toks[i-1] == "*") {
			continue // a parameter's name
		}
		kept = append(kept, t)
	}
	var b strings.Builder
	for i, t := range kept {
		if i > 0 && word(t) && word(kept[i-1]) {
			b.WriteByte(' ')
		}
		b.WriteString(t)
	}
	return b.String()
}
