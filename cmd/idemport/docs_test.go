package main

// The examples of README.md and docs/*.md run here: every ```console block
// is a session whose commands are run, in one shell per block, with the
// binary as idemport on the PATH, and whose printed lines must be what the
// block shows. So an example that no longer matches what idemport prints
// fails the tests, and a link to a heading or a file that is gone too.
//
// A block may be preceded by an HTML comment that the rendered page does
// not show, saying how to run it:
//
//	<!-- example
//	setup: SHELL          run before the first command (in the block's directory)
//	before N: SHELL       run before the N-th command (1-based), keeping $?
//	file NAME             write the nearest ```sh block above to NAME
//	continue              run in the directory of the previous block of the page
//	postgres              PG names a fresh PostgreSQL database
//	interrupt-at POINT    `timeout … CMD` sends SIGINT once CMD stops at POINT (a failpoint), not after a time
//	vary numbers          numbers may differ (for sessions of processes racing)
//	skip: REASON          not run, for the reason given
//	-->
//
// The comparison ignores what differs from run to run: attempt IDs,
// times, durations, content digests, host:pid, and runs of spaces (the
// width of a table's columns). A line "…" stands for any lines. The
// command `go run ./cmd/idemport` is run as `idemport`. Commands whose
// prompt names a host (`host-a$`) are started together, and their outputs
// compared as a set.

import (
	"bufio"
	"database/sql"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/internal/testkit"
	_ "github.com/jackc/pgx/v5/stdlib"
)

// example is one ```console block of a page.
type example struct {
	page      string
	line      int // of the opening fence
	directive map[string][]string
	cmds      []exampleCmd
	script    string // content of the nearest ```sh block above, for "file"
}

type exampleCmd struct {
	host string // the prompt's host (host-a$), empty for $
	text string
	want []string
}

func (e example) has(key string) bool { _, ok := e.directive[key]; return ok }

// pages returns README.md and docs/*.md, relative to the module's root.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../../README.md"}, docs...)
}

var directiveLine = regexp.MustCompile(`^(setup|before \d+|skip|file|continue|postgres|interrupt-at|vary)(?::? (.*))?$`)

// parseExamples reads the console blocks of page.
func parseExamples(t *testing.T, page string) []example {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []example
	var script []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "```") {
			continue
		}
		lang := strings.TrimPrefix(l, "```")
		start := i
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			body = append(body, lines[i])
		}
		switch lang {
		case "sh", "bash":
			script = body
		case "console":
			e := example{page: page, line: start + 1, directive: map[string][]string{}, script: strings.Join(script, "\n") + "\n"}
			if start > 0 && strings.TrimSpace(lines[start-1]) == "-->" {
				j := start - 2
				for j >= 0 && !strings.HasPrefix(lines[j], "<!-- example") {
					j--
				}
				if j < 0 {
					t.Fatalf("%s:%d: a comment ends above the block without <!-- example", page, start+1)
				}
				for _, d := range lines[j+1 : start-1] {
					m := directiveLine.FindStringSubmatch(strings.TrimSpace(d))
					if m == nil {
						t.Fatalf("%s:%d: unknown example directive %q", page, start+1, d)
					}
					key, val := m[1], m[2]
					if n, ok := strings.CutPrefix(key, "before "); ok {
						key, val = "before", n+":"+val
					}
					e.directive[key] = append(e.directive[key], val)
				}
			}
			prompt := regexp.MustCompile(`^([a-z][\w-]*)?\$ (.*)$`)
			for _, bl := range body {
				if m := prompt.FindStringSubmatch(bl); m != nil {
					e.cmds = append(e.cmds, exampleCmd{host: m[1], text: m[2]})
					continue
				}
				if len(e.cmds) == 0 {
					t.Fatalf("%s:%d: a console block must start with a command ($ …): %q", page, start+1, bl)
				}
				c := &e.cmds[len(e.cmds)-1]
				c.want = append(c.want, bl)
			}
			out = append(out, e)
		}
	}
	return out
}

// TestDocExamples runs every console block of README.md and docs/*.md.
// The sessions are written for Linux (GNU touch -d, /proc), where CI runs them.
func TestDocExamples(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the examples' sessions are written for Linux")
	}
	pathDir := t.TempDir()
	if err := os.Symlink(testkit.Binary(t), filepath.Join(pathDir, "idemport")); err != nil {
		t.Fatal(err)
	}
	var genMu sync.Mutex // the pages run in parallel
	built := false
	gen := func(t *testing.T) {
		genMu.Lock()
		defer genMu.Unlock()
		if built {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(pathDir, "gen"), "./bench/gen")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building bench/gen: %v\n%s", err, out)
		}
		built = true
	}
	// The pages run in parallel, each in directories of its own (and a
	// PostgreSQL database of its own where a block asks for one); the
	// blocks of a page run in order, since a block may continue in the
	// directory of the one before.
	for _, page := range pages(t) {
		t.Run(strings.TrimPrefix(page, "../../"), func(t *testing.T) {
			t.Parallel()
			docPage(t, page, pathDir, gen)
		})
	}
}

// docPage runs the console blocks of page, in order, and rewrites them
// with -update-docs.
func docPage(t *testing.T, page, pathDir string, gen func(*testing.T)) {
	var prevDir string
	var updated map[int][]string // opening fence line → the block's new body
	for _, e := range parseExamples(t, page) {
		name := fmt.Sprintf("%d", e.line)
		parent := t
		t.Run(name, func(t *testing.T) {
			if r := e.directive["skip"]; r != nil {
				t.Skip(r[0])
			}
			for _, tool := range []string{"bash", "jq", "sqlite3"} {
				if _, err := exec.LookPath(tool); err != nil && strings.Contains(blockText(e), tool) {
					t.Skipf("%s is not installed", tool)
				}
			}
			dir := prevDir
			if !e.has("continue") || dir == "" {
				dir = sandbox(parent)
			}
			prevDir = dir
			env := []string{"PATH=" + pathDir + string(os.PathListSeparator) + os.Getenv("PATH"),
				"HOME=" + filepath.Join(dir, ".home"), "TZ=UTC", "LC_ALL=C.UTF-8", "TERM=dumb"}
			if e.has("postgres") {
				env = append(env, "PG="+freshDatabase(t))
			}
			if strings.Contains(strings.Join(e.directive["setup"], "\n")+strings.Join(e.directive["before"], "\n"), "gen ") {
				gen(t)
			}
			got := runExample(t, e, dir, env)
			if *updateDocs {
				if updated == nil {
					updated = map[int][]string{}
				}
				var body []string
				for i, c := range e.cmds {
					body = append(body, c.host+"$ "+c.text)
					body = append(body, got[i]...)
				}
				updated[e.line] = body
				return
			}
			compareExample(t, e, got)
		})
	}
	if updated != nil {
		rewritePage(t, page, updated)
	}
}

var updateDocs = flag.Bool("update-docs", false, "rewrite the console blocks of README.md and docs/*.md with what their commands print (review the diff!)")

// rewritePage replaces the bodies of the console blocks that open at the
// lines given.
func rewritePage(t *testing.T, page string, bodies map[int][]string) {
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		out = append(out, lines[i])
		body, ok := bodies[i+1]
		if !ok {
			continue
		}
		out = append(out, body...)
		for i++; !strings.HasPrefix(lines[i], "```"); i++ {
		}
		out = append(out, lines[i])
	}
	if err := os.WriteFile(page, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

func blockText(e example) string {
	var b strings.Builder
	for _, c := range e.cmds {
		b.WriteString(c.text + "\n")
	}
	return b.String()
}

// sandbox returns a directory holding a copy of the repository's
// testdata/*.csv, as a checkout's testdata/ holds them.
func sandbox(t *testing.T) string {
	dir, err := os.MkdirTemp(t.TempDir(), "example")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../../testdata/*.csv")
	os.MkdirAll(filepath.Join(dir, "testdata"), 0o755)
	os.MkdirAll(filepath.Join(dir, ".home"), 0o755)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "testdata", filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// docDatabases numbers the databases of one test process's examples.
var docDatabases atomic.Int64

// freshDatabase creates a PostgreSQL database of its own for an example,
// dropped when t ends, and returns its URL.
func freshDatabase(t *testing.T) string {
	dsn := pgtest.DSN(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	name := fmt.Sprintf("idemport_docs_%d_%d", os.Getpid(), docDatabases.Add(1))
	db.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`)
	if _, err := db.Exec(`CREATE DATABASE ` + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`) })
	u, err := url.Parse(dsn)
	if err != nil || !strings.HasPrefix(u.Scheme, "postgres") {
		t.Fatalf("the test server's DSN is not a postgres:// URL")
	}
	u.Path = "/" + name
	return u.String()
}

const endMark = "@@idemport-example-end "

// runExample runs e's commands in one bash process in dir and returns each
// command's printed lines (stdout and stderr, in the order written).
func runExample(t *testing.T, e example, dir string, env []string) [][]string {
	t.Helper()
	var s strings.Builder
	s.WriteString("cd " + strconv.Quote(dir) + "\n")
	for _, f := range e.directive["file"] {
		fmt.Fprintf(&s, "cat > %s <<'IDEMPORT_EXAMPLE_EOF'\n%sIDEMPORT_EXAMPLE_EOF\n", f, e.script)
	}
	for _, p := range e.directive["interrupt-at"] {
		// timeout -s INT N CMD…: the command runs with the failpoint
		// stopping it at POINT, and gets SIGINT (and SIGCONT) there, as a
		// person pressing Ctrl-C at that moment would send it.
		fmt.Fprintf(&s, `timeout() {
	while [[ $1 == -* ]]; do case $1 in -s) shift 2;; *) shift;; esac; done
	shift
	IDEMPORT_FAILPOINT=%s:stop "$@" & local pid=$!
	until grep -q '^State:[[:space:]]*T' /proc/$pid/status 2>/dev/null || ! kill -0 $pid 2>/dev/null; do sleep 0.05; done
	kill -INT $pid; kill -CONT $pid; wait $pid
}
`, p)
	}
	for _, c := range e.directive["setup"] {
		fmt.Fprintf(&s, "( %s ) >.setup.log 2>&1 || { echo '@@idemport-example-setup-failed'; cat .setup.log; exit 99; }\n", c)
	}
	before := map[int][]string{}
	for _, b := range e.directive["before"] {
		n, c, _ := strings.Cut(b, ":")
		i, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil {
			t.Fatalf("before %q: %v", b, err)
		}
		before[i] = append(before[i], strings.TrimSpace(c))
	}
	for i := 0; i < len(e.cmds); i++ {
		c := e.cmds[i]
		for _, b := range before[i+1] {
			fmt.Fprintf(&s, "__rc=$?; ( %s ) >.setup.log 2>&1 || { echo '@@idemport-example-setup-failed'; cat .setup.log; exit 99; }; (exit $__rc)\n", b)
		}
		text := strings.ReplaceAll(c.text, "go run ./cmd/idemport", "idemport")
		if c.host == "" {
			fmt.Fprintf(&s, "{\n%s\n} 2>&1\n__rc=$?; echo; echo '%s%d'; (exit $__rc)\n", text, endMark, i)
			continue
		}
		// A group of commands on hosts, started together.
		j := i
		for ; j < len(e.cmds) && e.cmds[j].host != ""; j++ {
			fmt.Fprintf(&s, "{\n%s\n} >.out.%d 2>&1 &\n", strings.ReplaceAll(e.cmds[j].text, "go run ./cmd/idemport", "idemport"), j)
		}
		s.WriteString("wait\n")
		for k := i; k < j; k++ {
			fmt.Fprintf(&s, "cat .out.%d; echo; echo '%s%d'\n", k, endMark, k)
		}
		i = j - 1
	}
	s.WriteString("exit 0\n")
	cmd := exec.Command("bash", "-c", s.String())
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "@@idemport-example-setup-failed") {
		t.Fatalf("the example's setup failed:\n%s", out)
	}
	if err != nil {
		t.Fatalf("the example's shell failed: %v\n%s", err, out)
	}
	got := make([][]string, len(e.cmds))
	var cur []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if n, ok := strings.CutPrefix(l, endMark); ok {
			i, _ := strconv.Atoi(n)
			// the echo before the mark ends an unterminated last line
			if len(cur) > 0 && cur[len(cur)-1] == "" {
				cur = cur[:len(cur)-1]
			}
			got[i] = cur
			cur = nil
			continue
		}
		cur = append(cur, l)
	}
	return got
}

var (
	normUUID     = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	normTime     = regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?Z`)
	normDuration = regexp.MustCompile(`\b(\d+(\.\d+)?(ns|µs|us|ms|s|m|h))+\)`)
	normDigest   = regexp.MustCompile(`sha256:[0-9a-f]+…?`)
	normAgo      = regexp.MustCompile(`modified \d+s ago`)
	normNumber   = regexp.MustCompile(`\d+`)
	normSpace    = regexp.MustCompile(`\s+`)
)

// normalizeExample returns l without what differs from run to run; host is the
// host name whose host:pid is left out.
func normalizeExample(l, host string, numbers bool) string {
	l = normUUID.ReplaceAllString(l, "<uuid>")
	l = normTime.ReplaceAllString(l, "<time>")
	l = normDuration.ReplaceAllString(l, "<duration>)")
	l = normDigest.ReplaceAllString(l, "sha256:<digest>")
	l = normAgo.ReplaceAllString(l, "modified <n>s ago")
	l = regexp.MustCompile(`\b`+regexp.QuoteMeta(host)+`:\d+\b`).ReplaceAllString(l, "<host:pid>")
	if numbers {
		l = normNumber.ReplaceAllString(l, "<n>")
	}
	return strings.TrimSpace(normSpace.ReplaceAllString(l, " "))
}

// compareExample fails t where a command printed other lines than the
// example shows.
func compareExample(t *testing.T, e example, got [][]string) {
	t.Helper()
	host, _ := os.Hostname()
	numbers := slices.Contains(e.directive["vary"], "numbers")
	norm := func(lines []string, host string) []string {
		var out []string
		for _, l := range lines {
			out = append(out, normalizeExample(l, host, numbers))
		}
		return out
	}
	var groupWant, groupGot []string
	for i, c := range e.cmds {
		want, have := norm(c.want, "vm"), norm(got[i], host)
		if c.host != "" {
			groupWant = append(groupWant, strings.Join(want, "\n"))
			groupGot = append(groupGot, strings.Join(have, "\n"))
			if i+1 < len(e.cmds) && e.cmds[i+1].host != "" {
				continue
			}
			slices.Sort(groupWant)
			slices.Sort(groupGot)
			if !slices.Equal(groupWant, groupGot) {
				t.Errorf("%s:%d: the hosts' commands printed\n%s\nthe example shows\n%s", e.page, e.line, strings.Join(groupGot, "\n--\n"), strings.Join(groupWant, "\n--\n"))
			}
			groupWant, groupGot = nil, nil
			continue
		}
		if !matchLines(want, have) {
			t.Errorf("%s:%d: `%s` printed\n%s\nthe example shows\n%s", e.page, e.line, c.text, strings.Join(got[i], "\n"), strings.Join(c.want, "\n"))
		}
	}
}

// matchLines reports whether have is want, where a want line "…" stands
// for any lines.
func matchLines(want, have []string) bool {
	if len(want) == 0 {
		return len(have) == 0
	}
	if want[0] == "…" {
		for k := 0; k <= len(have); k++ {
			if matchLines(want[1:], have[k:]) {
				return true
			}
		}
		return false
	}
	return len(have) > 0 && want[0] == have[0] && matchLines(want[1:], have[1:])
}

// TestDocLinks checks that every relative link of README.md and docs/*.md
// names a file that exists and, with #anchor, a heading of it.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading := regexp.MustCompile(`(?m)^#+ (.*)$`)
	anchors := func(path string) map[string]bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		set := map[string]bool{}
		inFence := false
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "```") {
				inFence = !inFence
			}
			if m := heading.FindStringSubmatch(l); m != nil && !inFence {
				s := strings.ToLower(strings.TrimSpace(m[1]))
				s = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`).ReplaceAllString(s, "")
				set[strings.ReplaceAll(s, " ", "-")] = true
			}
		}
		return set
	}
	for _, page := range pages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %s: %v", page, target, err)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !anchors(path)[anchor] {
				t.Errorf("%s: link %s: no heading %q in %s", page, target, anchor, path)
			}
		}
	}
}
