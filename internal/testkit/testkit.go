// Package testkit helps tests run the real idemport binary against real
// databases: it builds the binary once, runs it as a subprocess, gives each
// test a fresh target (a SQLite file, or a PostgreSQL schema through
// internal/pgtest), queries it, and writes deterministic data files.
package testkit

import (
	"bytes"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3" // tests query the target directly

	"github.com/idemport/idemport/internal/proc"
)

// kit is the state behind Main and Binary: one binary per test process,
// built on first use into a temporary directory of its own, which Main
// removes once the tests are done.
type kit struct {
	// build builds cmd/idemport into path; its tests give it a fake.
	build func(path string) error

	mainCalled bool
	once       sync.Once
	dir, path  string
	err        error
}

// std is the kit of this test process.
var std = &kit{build: goBuild}

// Main runs the tests of a package that uses Binary, then removes the
// binary and its directory (about 60 MB), which no test's cleanup may do
// since they all share it. Call it from the package's TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }
func Main(m *testing.M) int {
	RaiseParallel()
	return std.main(m)
}

// minParallel is how many tests marked parallel RaiseParallel lets run at
// once at least, unless go test's -parallel says otherwise. go test's
// default is GOMAXPROCS, but a test of real processes and databases spends
// most of its time waiting for the processes it started and for the
// database, not running: on a machine with few cores, the default leaves
// it idle.
const minParallel = 4

// RaiseParallel sets go test's -parallel to minParallel when it is lower
// and was not given. Main calls it; a TestMain that does not call Main
// may, before m.Run.
func RaiseParallel() {
	if !flag.Parsed() {
		flag.Parse()
	}
	if f := flag.Lookup("test.parallel"); f != nil {
		explicit := false
		flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
		if n, _ := strconv.Atoi(f.Value.String()); !explicit && n < minParallel {
			f.Value.Set(strconv.Itoa(minParallel))
		}
	}
}

// main runs the tests (m.Run), then removes the binary's directory if one
// was made, whether the build succeeded or not, and returns m.Run's code.
func (k *kit) main(m interface{ Run() int }) int {
	k.mainCalled = true
	code := m.Run()
	if k.dir != "" {
		if err := os.RemoveAll(k.dir); err != nil {
			fmt.Fprintln(os.Stderr, "testkit: remove the binary:", err)
		}
	}
	return code
}

// Binary builds cmd/idemport once per test process and returns its path.
// The package's TestMain must run its tests through Main, which removes
// the binary when they are done.
func Binary(t testing.TB) string {
	t.Helper()
	return std.binary(t)
}

func (k *kit) binary(t testing.TB) string {
	t.Helper()
	if !k.mainCalled {
		t.Fatal("testkit.Binary: the package's TestMain must call testkit.Main, which removes the binary afterwards")
	}
	k.once.Do(func() {
		dir, err := os.MkdirTemp("", "idemport-bin-")
		if err != nil {
			k.err = err
			return
		}
		k.dir = dir
		k.path = filepath.Join(dir, "idemport")
		if runtime.GOOS == "windows" {
			k.path += ".exe"
		}
		k.err = k.build(k.path)
	})
	if k.err != nil {
		t.Fatal(k.err)
	}
	return k.path
}

// goBuild builds cmd/idemport of this module into path as the README tells
// people to, so that the binary every test runs also carries the commit
// (cmd's TestVersionPrintsTheCommit checks it there rather than linking a
// second binary, several CPU-seconds): in a clone, with -buildvcs=true,
// whatever GOFLAGS says; in a git worktree, whose repository Go does not
// find (its .git is a file), with -ldflags -X main.commit= and the
// worktree's HEAD. Without git, or outside a checkout, it builds plainly.
func goBuild(path string) error {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	cmd := exec.Command("go", append(append([]string{"build"}, stampFlags(root)...), "-o", path, "./cmd/idemport")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	return nil
}

// stampFlags are the flags of go build that stamp the commit of the
// checkout at root, as goBuild says.
func stampFlags(root string) []string {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil
	}
	if st, err := os.Stat(filepath.Join(root, ".git")); err == nil && st.IsDir() {
		return []string{"-buildvcs=true"}
	}
	head, err := exec.Command(git, "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return nil
	}
	return []string{"-ldflags", "-X main.commit=" + strings.TrimSpace(string(head))}
}

// Run is a finished run of the binary.
type Run struct {
	Stdout, Stderr string
	Code           int // exit code; -1 when killed by a signal
	Signal         syscall.Signal
}

// Cmd prepares the binary with args, run in dir, with extra environment
// entries (KEY=VALUE). The user's cache directory the binary sees is one of
// the test's own, in the binary's directory (see CacheEnv), unless env says
// otherwise: an import that omits --spool-dir never spools into the cache
// of the user running the tests.
func Cmd(t testing.TB, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), CacheEnv(t)...), env...)
	return cmd
}

// CacheEnv returns the environment entries that make os.UserCacheDir, in a
// process of the binary, a directory of t's own below the binary's
// directory (removed with it by Main), the same for every run of t:
// XDG_CACHE_HOME on Unix, LocalAppData on Windows, HOME on macOS (whose
// cache is $HOME/Library/Caches). Cmd adds them; a command started
// otherwise can.
func CacheEnv(t testing.TB) []string {
	t.Helper()
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || r < ' ' {
			return '_'
		}
		return r
	}, t.Name())
	dir := filepath.Join(filepath.Dir(Binary(t)), "cache", name)
	switch runtime.GOOS {
	case "windows":
		return []string{"LocalAppData=" + dir}
	case "darwin", "ios":
		return []string{"HOME=" + dir}
	case "plan9":
		return []string{"home=" + dir}
	}
	return []string{"XDG_CACHE_HOME=" + dir}
}

// Exec runs the binary to completion.
func Exec(t testing.TB, dir string, env []string, args ...string) Run {
	t.Helper()
	cmd := Cmd(t, dir, env, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return finish(t, err, out.String(), errb.String())
}

// Wait waits for a started command and reports how it ended.
func Wait(t testing.TB, cmd *exec.Cmd) Run {
	t.Helper()
	err := cmd.Wait()
	var out, errb string
	if b, ok := cmd.Stdout.(*bytes.Buffer); ok {
		out = b.String()
	}
	if b, ok := cmd.Stderr.(*bytes.Buffer); ok {
		errb = b.String()
	}
	return finish(t, err, out, errb)
}

func finish(t testing.TB, err error, out, errb string) Run {
	t.Helper()
	r := Run{Stdout: out, Stderr: errb}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.Signal = ws.Signal()
		}
	default:
		t.Fatalf("run idemport: %v", err)
	}
	return r
}

// stopWait is how long WaitStopped waits for a process to stop: a guard
// against one that hangs, not a measure of speed. On a shared machine
// under load a process can take tens of seconds to start, connect and
// reach its failpoint.
const stopWait = 2 * time.Minute

// WaitStopped waits until process pid, a child of the test not yet waited
// for, is stopped, as after it sent itself SIGSTOP. It fails t when the
// process ends first (it never reached its failpoint: the test's Wait then
// tells how it ended) or has not stopped within stopWait. Where the
// platform has no SIGSTOP (Windows) it skips the test.
func WaitStopped(t testing.TB, pid int) {
	t.Helper()
	if !proc.CanTellStopped {
		t.Skipf("%s has no SIGSTOP: the failpoints cannot stop a process", runtime.GOOS)
	}
	deadline := time.Now().Add(stopWait)
	for {
		switch proc.Inspect(pid).State {
		case proc.Stopped:
			return
		case proc.Exited, proc.Absent:
			t.Fatalf("process %d ended before it stopped", pid)
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not stop within %v", pid, stopWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Open opens a SQLite file for the test to query; it is closed at cleanup.
func Open(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Query returns every row of q as text (NULL as nil).
func Query(t testing.TB, db *sql.DB, q string, args ...any) [][]any {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b)
			}
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Int returns the single integer q selects.
func Int(t testing.TB, db *sql.DB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// Orders writes a deterministic orders CSV of n rows to path, with quoted
// notes (commas, quotes, newlines), and returns the rows as written
// (without the header), each as its fields.
func Orders(t testing.TB, path string, n int, seed int) [][]string {
	t.Helper()
	statuses := []string{"pending", "paid", "shipped", "delivered", "cancelled"}
	var rows [][]string
	for i := 1; i <= n; i++ {
		x := (i*7919 + seed*104729) % 1000003
		note := fmt.Sprintf("note %d", x%97)
		switch x % 10 {
		case 0:
			note = ""
		case 1:
			note = fmt.Sprintf("with, comma %d", x)
		case 2:
			note = fmt.Sprintf("say \"hi\" %d", x)
		case 3:
			note = fmt.Sprintf("two\nlines %d", x)
		}
		row := []string{
			fmt.Sprint(1000000000 + i*2),
			fmt.Sprint(100000 + x%900000),
			fmt.Sprintf("SKU-%06d", x%1000000),
			fmt.Sprint(1 + x%20),
			fmt.Sprintf("%d.%02d", x%1000, x%100),
			statuses[x%5],
			time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(x) * time.Minute).Format(time.RFC3339),
			note,
		}
		rows = append(rows, row)
	}
	WriteOrders(t, path, rows)
	return rows
}

// WriteOrders writes rows (each its fields, as Orders returns them) as an
// orders CSV file at path, quoting fields that need it.
func WriteOrders(t testing.TB, path string, rows [][]string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("order_id,customer_id,sku,quantity,unit_price,status,created_at,note\n")
	for _, row := range rows {
		for j, f := range row {
			if j > 0 {
				b.WriteByte(',')
			}
			if strings.ContainsAny(f, ",\"\n") {
				f = `"` + strings.ReplaceAll(f, `"`, `""`) + `"`
			}
			b.WriteString(f)
		}
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
