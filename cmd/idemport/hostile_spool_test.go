//go:build unix

package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/remotetest"
	"github.com/idemport/idemport/internal/testkit"
)

// The spool as a neighbour sees it: another local user who can guess its
// path and plant files there, and a copy left in it that is not what was
// downloaded.

// spoolName learns the name a compressed object's spooled copy takes in
// the spool directory spool matches (a glob): a run killed after identify
// leaves the copy behind. It removes the run's database and the spool.
func spoolName(t *testing.T, dir string, env []string, args []string, spool string) string {
	t.Helper()
	run := testkit.Exec(t, dir, append(env, "IDEMPORT_FAILPOINT=after-identify"), args...)
	if run.Signal != syscall.SIGKILL {
		t.Fatalf("not killed after identify: exit %d %s", run.Code, run.Stderr)
	}
	names, _ := filepath.Glob(filepath.Join(spool, "*.spool"))
	if len(names) != 1 {
		t.Fatalf("spool %s holds %v, want one copy", spool, names)
	}
	for _, n := range []string{"idemport.db", "idemport.db-wal", "idemport.db-shm"} {
		os.Remove(filepath.Join(dir, n))
	}
	os.RemoveAll(filepath.Dir(names[0]))
	return filepath.Base(names[0])
}

// gzipCSV returns the gzip compression of csv, padded with a gzip comment
// to size bytes when size is not 0.
func gzipCSV(t *testing.T, csv string, size int) []byte {
	t.Helper()
	compress := func(comment string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Comment = comment
		zw.Write([]byte(csv))
		zw.Close()
		return b.Bytes()
	}
	out := compress("")
	if size == 0 {
		return out
	}
	if pad := size - len(out) - 1; pad > 0 { // a comment costs its bytes and a NUL
		out = compress(strings.Repeat("x", pad))
	}
	if len(out) != size {
		t.Fatalf("cannot make %d gzip bytes of %d", size, len(out))
	}
	return out
}

// csvRows is a CSV of n rows, id and a text of which prefix is the start.
func csvRows(n int, prefix string) string {
	var b strings.Builder
	b.WriteString("id,v\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d,%s%d\n", i, prefix, i)
	}
	return b.String()
}

// TestSpoolNeighbourDirectory: with HOME and XDG_CACHE_HOME unset, the
// spool is in the temporary directory, where another user (nobody) made
// the spool directory first, writable by all, and planted a symbolic link
// at the copy's name pointing at a file of the importing user. The import
// refuses the directory (exit 2, naming it and how to fix it): the linked
// file is untouched and nothing is imported. Before, the linked file was
// truncated and overwritten by the download.
func TestSpoolNeighbourDirectory(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to act as the user nobody")
	}
	dir := t.TempDir()
	s3 := remotetest.NewS3(t, "bkt")
	env := s3.Env(dir)
	gz := gzipCSV(t, csvRows(300, "real "), 0)
	s3.Put(t, "bkt", "orders.csv.gz", gz, time.Time{})
	args := []string{"import", "--s3-endpoint", s3.URL, "--s3-path-style", "s3://bkt/orders.csv.gz"}

	// A shared temporary directory, as /tmp, where nobody can reach it.
	tmp, err := os.MkdirTemp("", "idemport-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	os.Chmod(tmp, 0o1777)
	env = append(env, "HOME=", "XDG_CACHE_HOME=", "TMPDIR="+tmp)
	name := spoolName(t, dir, env, args, filepath.Join(tmp, "idemport-spool*"))
	victim := filepath.Join(dir, "victim.txt")
	if err := os.WriteFile(victim, []byte("the importing user's precious file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The neighbour plants the directory, under the names this version and
	// the one before it used.
	for _, spool := range []string{fmt.Sprintf("idemport-spool-%d", os.Geteuid()), "idemport-spool"} {
		plant := exec.Command("/bin/sh", "-c", `mkdir -m 0777 "$1" && chmod 0777 "$1" && ln -s "$2" "$1/$3"`, "sh", filepath.Join(tmp, spool), victim, name)
		plant.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		if out, err := plant.CombinedOutput(); err != nil {
			t.Fatalf("plant as nobody: %v %s", err, out)
		}
	}
	tg := testkit.NewTarget(t, testkit.SQLite, dir)
	run := tg.Exec(t, dir, env, args...)
	got, _ := os.ReadFile(victim)
	if string(got) != "the importing user's precious file\n" {
		t.Errorf("the neighbour's link made the import write %d bytes into the victim file", len(got))
	}
	if run.Code != 2 || !strings.Contains(run.Stdout+run.Stderr, "spool directory "+filepath.Join(tmp, fmt.Sprintf("idemport-spool-%d", os.Geteuid()))) ||
		!strings.Contains(run.Stdout+run.Stderr, "--spool-dir") {
		t.Fatalf("exit %d, want 2 naming the spool directory and --spool-dir:\n%s%s", run.Code, run.Stdout, run.Stderr)
	}
	if tg.TableExists(t, "orders") {
		t.Fatalf("orders exists after a refused spool: %v", tableRows(t, tg, "orders"))
	}
}

// TestSpoolPlantedCopy: a file of the object's size planted in the spool
// under the copy's name, with other rows, is not taken for the object: it
// has no record of what was downloaded, so it is fetched again, and the
// table holds the object's rows. Before, the planted rows were imported
// under the object's identity (300 of 300, reported imported).
func TestSpoolPlantedCopy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s3 := remotetest.NewS3(t, "bkt")
	env := s3.Env(dir)
	real := csvRows(300, "the object's row ")
	gz := gzipCSV(t, real, 0)
	s3.Put(t, "bkt", "orders.csv.gz", gz, time.Time{})
	spool := filepath.Join(dir, "spool")
	args := []string{"import", "--s3-endpoint", s3.URL, "--s3-path-style", "--spool-dir", spool, "s3://bkt/orders.csv.gz"}
	name := spoolName(t, dir, env, args, spool)

	planted := gzipCSV(t, csvRows(300, "planted "), len(gz))
	os.MkdirAll(spool, 0o700)
	if err := os.WriteFile(filepath.Join(spool, name), planted, 0o600); err != nil {
		t.Fatal(err)
	}
	tg := testkit.NewTarget(t, testkit.SQLite, dir)
	res := remoteRun(t, dir, env, 0, append(tg.Args, args[1:]...)...)
	if res.Outcome != "imported" || res.Rows.Inserted != 300 {
		t.Fatalf("%+v", res)
	}
	if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM orders WHERE v LIKE 'planted %'`); n != 0 {
		t.Fatalf("%d planted rows imported under the object's identity", n)
	}
	if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM orders WHERE v LIKE 'the object''s row %'`); n != 300 {
		t.Fatalf("%d of the object's 300 rows imported", n)
	}
}

// TestDefaultSpoolIsTheTestsOwn: an import of an S3 object that names no
// --spool-dir, killed once its copy is complete, leaves the copy in the
// default spool of the cache directory the test kit gives the binary, one
// of the test's own, never in the cache of the user running the tests.
func TestDefaultSpoolIsTheTestsOwn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s3 := remotetest.NewS3(t, "bkt")
	s3.Put(t, "bkt", "own.csv", []byte(csvRows(300, "own ")), time.Time{})
	cache, ok := strings.CutPrefix(testkit.CacheEnv(t)[0], "XDG_CACHE_HOME=")
	if !ok {
		t.Skip("the cache directory is not XDG_CACHE_HOME here")
	}
	// The test's cache is the same for every run of it (-count), and each
	// run's server has a URL of its own: only the copies this run made count.
	glob := filepath.Join(cache, "idemport", "spool", "*.spool")
	before, _ := filepath.Glob(glob)
	killed := testkit.Exec(t, dir, append(s3.Env(dir), "IDEMPORT_FAILPOINT=after-plan"), "import", "--s3-endpoint", s3.URL, "--s3-path-style", "s3://bkt/own.csv")
	if killed.Signal != syscall.SIGKILL {
		t.Fatalf("not killed: exit %d\n%s%s", killed.Code, killed.Stdout, killed.Stderr)
	}
	all, _ := filepath.Glob(glob)
	var copies []string
	for _, c := range all {
		if !slices.Contains(before, c) {
			copies = append(copies, c)
		}
	}
	if len(copies) != 1 {
		t.Fatalf("the test's cache holds the new copies %v, want the killed import's", copies)
	}
	if user, err := os.UserCacheDir(); err == nil {
		if _, err := os.Lstat(filepath.Join(user, "idemport", "spool", filepath.Base(copies[0]))); err == nil {
			t.Fatalf("the copy is also in the user's cache %s", user)
		}
	}
}
