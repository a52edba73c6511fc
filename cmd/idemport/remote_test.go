//go:build !windows

package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/remotetest"
	"github.com/idemport/idemport/internal/testkit"
)

// remoteFixture is an S3 server holding a prefix of mixed formats, and the
// same files on disk.
type remoteFixture struct {
	s3    *remotetest.Server
	env   []string
	flags []string // reach the server
	dir   string
	files map[string][]byte // key below drop/ → bytes
}

func newRemoteFixture(t *testing.T) *remoteFixture {
	t.Helper()
	dir := t.TempDir()
	f := &remoteFixture{s3: remotetest.NewS3(t, "bkt"), dir: dir, files: map[string][]byte{}}
	f.env = f.s3.Env(dir)
	f.flags = []string{"--s3-endpoint", f.s3.URL, "--s3-path-style", "--spool-dir", filepath.Join(dir, "spool")}
	local := filepath.Join(dir, "local")
	os.Mkdir(local, 0o755)
	testkit.Orders(t, filepath.Join(local, "a.csv"), 3000, 51)
	testkit.Orders(t, filepath.Join(local, "b.csv"), 2000, 52)
	os.WriteFile(filepath.Join(local, "b.csv.gz"), gzipFile(t, filepath.Join(local, "b.csv")), 0o644)
	os.Remove(filepath.Join(local, "b.csv"))
	writeRowGroups(t, filepath.Join(local, "c.parquet"), 4, 250)
	os.WriteFile(filepath.Join(local, "d.jsonl"), []byte(`{"id":1,"v":"x","n":{"a":[1,2]}}`+"\n"+`{"id":2,"v":null,"n":9007199254740993}`+"\n"), 0o644)
	for _, name := range []string{"a.csv", "b.csv.gz", "c.parquet", "d.jsonl"} {
		b, err := os.ReadFile(filepath.Join(local, name))
		if err != nil {
			t.Fatal(err)
		}
		f.files[name] = b
		f.s3.Put(t, "bkt", "drop/"+name, b, time.Now().Add(-time.Hour))
	}
	f.s3.Put(t, "bkt", "drop/README.txt", []byte("not data"), time.Time{})
	f.s3.Put(t, "bkt", "other/x.csv", []byte("id\n1\n"), time.Time{})
	return f
}

// remoteImport runs import --output json and returns its result lines.
func remoteImport(t *testing.T, tg *testkit.Target, dir string, env []string, code int, args ...string) []result {
	t.Helper()
	run := tg.Exec(t, dir, env, append([]string{"import", "--output", "json"}, args...)...)
	if run.Code != code {
		t.Fatalf("exit %d, want %d:\n%s\n%s", run.Code, code, run.Stdout, run.Stderr)
	}
	var out []result
	for _, line := range strings.Split(strings.TrimSpace(run.Stdout), "\n") {
		if line == "" {
			continue
		}
		var r result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// tableRows returns every row of table as text, ordered, without
// idemport's lineage columns.
func tableRows(t *testing.T, tg *testkit.Target, table string) []string {
	t.Helper()
	rows, err := tg.DB.Query(`SELECT * FROM ` + table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for i, c := range cols {
			if strings.HasPrefix(c, "_idemport") {
				continue
			}
			v := vals[i]
			if bs, ok := v.([]byte); ok {
				v = string(bs)
			}
			fmt.Fprintf(&b, "%s=%#v|", c, v)
		}
		out = append(out, b.String())
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestRemotePrefixImport imports an S3 prefix of mixed formats, filtered by
// --glob, and compares every value with an import of the same files from
// disk; then reruns it: every object is a duplicate by the LIST request
// alone, with no HEAD request and no byte downloaded.
func TestRemotePrefixImport(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		t.Parallel()
		f := newRemoteFixture(t)
		remoteTg := testkit.NewTarget(t, name, filepath.Join(f.dir))
		localDir := filepath.Join(f.dir, "local")
		localTg := testkit.NewTarget(t, name, localDir)

		// The glob leaves README.txt out; other/ is not below the prefix.
		args := append(slices.Clone(f.flags), "--glob", "[abcd].*", "s3://bkt/drop/")
		res := remoteImport(t, remoteTg, f.dir, f.env, 0, args...)
		var files []string
		for _, r := range res {
			if r.Outcome != "imported" {
				t.Fatalf("%s: %s %s", r.File, r.Outcome, r.Error)
			}
			files = append(files, r.File)
		}
		if want := []string{"s3://bkt/drop/a.csv", "s3://bkt/drop/b.csv.gz", "s3://bkt/drop/c.parquet", "s3://bkt/drop/d.jsonl"}; !slices.Equal(files, want) {
			t.Fatalf("files %v, want %v in key order", files, want)
		}
		lres := remoteImport(t, localTg, localDir, nil, 0, "a.csv", "b.csv.gz", "c.parquet", "d.jsonl")
		for i, table := range []string{"a", "b", "c", "d"} {
			got, want := tableRows(t, remoteTg, table), tableRows(t, localTg, table)
			if len(want) == 0 || !slices.Equal(got, want) {
				t.Fatalf("table %s: %d rows from S3, %d from disk; first differing:\n%v\n%v", table, len(got), len(want), first(got), first(want))
			}
			if res[i].ContentDigest != lres[i].ContentDigest {
				t.Fatalf("%s: digest %s from S3, %s from disk", table, res[i].ContentDigest, lres[i].ContentDigest)
			}
		}

		// verify reads the objects again and finds the table matches.
		if v := remoteTg.Exec(t, f.dir, f.env, append([]string{"verify", "--s3-endpoint", f.s3.URL, "--s3-path-style"},
			"s3://bkt/drop/a.csv", "s3://bkt/drop/c.parquet")...); v.Code != 0 {
			t.Fatalf("verify: exit %d\n%s%s", v.Code, v.Stdout, v.Stderr)
		}
		if p := remoteTg.Exec(t, f.dir, f.env, "plan", "--s3-endpoint", f.s3.URL, "--s3-path-style", "s3://bkt/drop/b.csv.gz"); p.Code != 0 ||
			!strings.Contains(p.Stdout, "s3://bkt/drop/b.csv.gz") || !strings.Contains(p.Stdout, "duplicate") {
			t.Fatalf("plan: exit %d\n%s%s", p.Code, p.Stdout, p.Stderr)
		}
		// status and history name the object by its URL; history finds it
		// by its URL.
		st := remoteTg.Exec(t, f.dir, f.env, "status", "--output", "json", "--table", "b")
		if st.Code != 0 || !strings.Contains(st.Stdout, `"s3://bkt/drop/b.csv.gz"`) || !strings.Contains(st.Stdout, `"completed"`) {
			t.Fatalf("status: exit %d\n%s%s", st.Code, st.Stdout, st.Stderr)
		}
		hist := remoteTg.Exec(t, f.dir, f.env, "history", "s3://bkt/drop/c.parquet")
		if hist.Code != 0 || !strings.Contains(hist.Stdout, "s3://bkt/drop/c.parquet") {
			t.Fatalf("history: exit %d\n%s%s", hist.Code, hist.Stdout, hist.Stderr)
		}

		// --min-age goes by Last-Modified: a fresh object is skipped.
		f.s3.Put(t, "bkt", "young/a2.csv", f.files["a.csv"][:200], time.Now())
		young := remoteImport(t, remoteTg, f.dir, f.env, 0, append(slices.Clone(f.flags), "--min-age", "10m", "s3://bkt/young/a2.csv", "s3://bkt/drop/d.jsonl")...)
		if young[0].Outcome != "skipped" || young[1].Outcome != "duplicate" {
			t.Fatalf("--min-age 10m: %s, %s; want the fresh object skipped, the hour-old one a duplicate", young[0].Outcome, young[1].Outcome)
		}

		f.s3.Reset()
		res = remoteImport(t, remoteTg, f.dir, f.env, 0, args...)
		for _, r := range res {
			if r.Outcome != "duplicate" || !r.QuickCheck {
				t.Fatalf("rerun %s: %s (quick check %v) %s", r.File, r.Outcome, r.QuickCheck, r.Error)
			}
		}
		if c := f.s3.Counts(); c.Head != 0 || c.Get != 0 || c.List != 1 || c.Bytes != 0 {
			t.Fatalf("a rerun of 4 imported objects made %+v; want one LIST, whose ETags and sizes prove them unchanged", c)
		}
	})
}

func first(s []string) string {
	if len(s) == 0 {
		return "(none)"
	}
	return s[0]
}

// TestRemoteResumeFetchesOnlyUnfinished kills an import of an S3 object
// after 9 of its 10 partitions committed (having fetched the object once);
// the rerun knows the object by its HEAD request and, the copy the killed
// run left being gone (as on another host), fetches the last partition's
// byte range, not the object. (With the copy, it fetches nothing:
// TestRemoteRerunReadsTheCopy.)
func TestRemoteResumeFetchesOnlyUnfinished(t *testing.T) {
	t.Parallel()
	t.Run("csv", func(t *testing.T) {
		dir := t.TempDir()
		s3 := remotetest.NewS3(t, "bkt")
		env := s3.Env(dir)
		testkit.Orders(t, filepath.Join(dir, "orders.csv"), 50000, 61)
		data, _ := os.ReadFile(filepath.Join(dir, "orders.csv"))
		s3.Put(t, "bkt", "in/orders.csv", data, time.Time{})
		spool := filepath.Join(dir, "spool")
		args := []string{"import", "--s3-endpoint", s3.URL, "--s3-path-style", "--spool-dir", spool, "--partition-rows", "5000", "s3://bkt/in/orders.csv"}
		killed := testkit.Exec(t, dir, append(env, "IDEMPORT_FAILPOINT=after-partition-commit:9"), args...)
		if killed.Signal != syscall.SIGKILL {
			t.Fatalf("not killed: %d %s", killed.Code, killed.Stderr)
		}
		first := s3.Counts()
		// Hash and plan share one download, which fills the spooled copy
		// the 9 partitions applied are read from.
		if first.Bytes < int64(len(data)) || first.Bytes > int64(len(data))*11/10 {
			t.Fatalf("the first run fetched %d bytes of a %d-byte object, want it about once", first.Bytes, len(data))
		}
		if err := os.RemoveAll(spool); err != nil {
			t.Fatal(err)
		}
		s3.Reset()
		res := remoteRun(t, dir, env, 0, args[1:]...)
		if res.Outcome != "resumed" || res.Partitions.Skipped != 9 || !res.QuickCheck {
			t.Fatalf("rerun: %+v", res)
		}
		db := testkit.Open(t, filepath.Join(dir, "idemport.db"))
		last := testkit.Int(t, db, `SELECT byte_length FROM idemport_partitions WHERE idx = 9`)
		c := s3.Counts()
		// The header is read to open the object (one window of 64 KiB at
		// most), then the last partition's range, exactly.
		if c.Bytes < last || c.Bytes > last+64<<10 {
			t.Fatalf("the resumed run fetched %d bytes; the last partition has %d of the object's %d (%+v)", c.Bytes, last, len(data), c)
		}
		// The copy the killed run left is removed once the import completes.
		if left, _ := filepath.Glob(filepath.Join(spool, "*")); len(left) != 0 {
			t.Fatalf("the spool holds %v after the import completed", left)
		}
		if n := testkit.Int(t, db, `SELECT count(DISTINCT order_id) FROM orders`); n != 50000 {
			t.Fatalf("%d distinct orders, want 50000", n)
		}
		if n := testkit.Int(t, db, `SELECT count(*) FROM orders`); n != 50000 {
			t.Fatalf("%d rows, want 50000", n)
		}
	})
	t.Run("parquet", func(t *testing.T) {
		dir := t.TempDir()
		s3 := remotetest.NewS3(t, "bkt")
		env := s3.Env(dir)
		writeRowGroups(t, filepath.Join(dir, "orders.parquet"), 10, 5000)
		data, _ := os.ReadFile(filepath.Join(dir, "orders.parquet"))
		s3.Put(t, "bkt", "orders.parquet", data, time.Time{})
		args := []string{"import", "--s3-endpoint", s3.URL, "--s3-path-style", "s3://bkt/orders.parquet"}
		killed := testkit.Exec(t, dir, append(env, "IDEMPORT_FAILPOINT=after-partition-commit:9"), args...)
		if killed.Signal != syscall.SIGKILL {
			t.Fatalf("not killed: %d %s", killed.Code, killed.Stderr)
		}
		s3.Reset()
		res := remoteRun(t, dir, env, 0, args[1:]...)
		if res.Outcome != "resumed" || res.Partitions.Skipped != 9 || !res.QuickCheck {
			t.Fatalf("rerun: %+v", res)
		}
		if c := s3.Counts(); c.Bytes > int64(len(data))/5 {
			t.Fatalf("the resumed run fetched %d bytes of a %d-byte object with 10 row groups (%+v)", c.Bytes, len(data), c)
		}
		db := testkit.Open(t, filepath.Join(dir, "idemport.db"))
		if n := testkit.Int(t, db, `SELECT count(DISTINCT id) FROM orders`); n != 50000 {
			t.Fatalf("%d distinct ids, want 50000", n)
		}
	})
}

// remoteRun runs import --output json for one input against the SQLite
// file in dir and returns its result.
func remoteRun(t *testing.T, dir string, env []string, code int, args ...string) result {
	t.Helper()
	run := testkit.Exec(t, dir, env, append([]string{"import", "--output", "json"}, args...)...)
	if run.Code != code {
		t.Fatalf("exit %d, want %d: %s %s", run.Code, code, run.Stdout, run.Stderr)
	}
	var r result
	if err := json.Unmarshal([]byte(run.Stdout), &r); err != nil {
		t.Fatalf("%q: %v", run.Stdout, err)
	}
	return r
}

// TestRemoteObjectReplacedMidImport replaces an S3 object (same size, other
// bytes) while its import is frozen between partitions: the attempt stops
// with "source changed", the operation is abandoned with the rows it had
// committed, and the new version, imported next, is the only one in the
// table.
func TestRemoteObjectReplacedMidImport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s3 := remotetest.NewS3(t, "bkt")
	env := s3.Env(dir)
	old := testkit.Orders(t, filepath.Join(dir, "v1.csv"), 1000, 71)
	v1, _ := os.ReadFile(filepath.Join(dir, "v1.csv"))
	s3.Put(t, "bkt", "orders.csv", v1, time.Time{})
	args := []string{"import", "--s3-endpoint", s3.URL, "--s3-path-style", "--partition-rows", "100", "s3://bkt/orders.csv"}
	cmd := testkit.Cmd(t, dir, append(env, "IDEMPORT_FAILPOINT=after-partition-commit:3:stop"), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	testkit.WaitStopped(t, cmd.Process.Pid)
	v2 := bytes.Clone(v1)
	v2[len(v2)-5] = 'Z' // inside the last partition, same size
	s3.Put(t, "bkt", "orders.csv", v2, time.Time{})
	testkit.Continue(cmd.Process)
	r := testkit.Wait(t, cmd)
	if r.Code != 1 || !strings.Contains(r.Stdout, "source changed") || !strings.Contains(r.Stdout, "abandoned") {
		t.Fatalf("exit %d: %s", r.Code, r.Stdout)
	}
	db := testkit.Open(t, filepath.Join(dir, "idemport.db"))
	if n := testkit.Int(t, db, `SELECT count(*) FROM orders`); n != 0 {
		t.Fatalf("%d rows left by the abandoned import", n)
	}
	res := remoteRun(t, dir, env, 0, args[1:]...)
	if res.Outcome != "imported" {
		t.Fatalf("the new version: %+v", res)
	}
	// Every row is the new version's: the table is what an import of the
	// new version from disk makes.
	localDir := filepath.Join(dir, "local")
	os.Mkdir(localDir, 0o755)
	os.WriteFile(filepath.Join(localDir, "orders.csv"), v2, 0o644)
	local := testkit.NewTarget(t, testkit.SQLite, localDir)
	remoteImport(t, local, localDir, nil, 0, "orders.csv")
	remote := &testkit.Target{Name: testkit.SQLite, DB: db}
	if got, want := tableRows(t, remote, "orders"), tableRows(t, local, "orders"); len(got) != len(old) || !slices.Equal(got, want) {
		t.Fatalf("%d rows, want the new version's %d", len(got), len(want))
	}
}

// TestRemoteFaultsEndExact imports an S3 object and an HTTP file while the
// servers answer 500, 503 SlowDown and 429 and cut connections mid-body:
// the retries end with exactly the rows of the same files imported from
// disk.
func TestRemoteFaultsEndExact(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		s3 := remotetest.NewS3(t, "bkt")
		web := remotetest.NewHTTP(t)
		env := s3.Env(dir)
		testkit.Orders(t, filepath.Join(dir, "s.csv"), 20000, 81)
		testkit.Orders(t, filepath.Join(dir, "h.csv"), 20000, 82)
		for _, n := range []string{"s.csv", "h.csv"} {
			b, _ := os.ReadFile(filepath.Join(dir, n))
			s3.Put(t, "bkt", n, b, time.Time{})
			web.Put(t, "", "files/"+n, b, time.Time{})
		}
		faults := []remotetest.Fault{{Status: 500}, {CutAfter: 1000}, {Status: 503, Code: "SlowDown"},
			{Status: 429, Code: "TooManyRequests"}, {CutAfter: 30000}, {Status: 502}}
		s3.Fail(faults...)
		web.Fail(faults...)
		tg := testkit.NewTarget(t, name, dir)
		run := tg.Exec(t, dir, env, "import", "--output", "json", "--s3-endpoint", s3.URL, "--s3-path-style", "--partition-rows", "2000",
			"s3://bkt/s.csv", web.URL+"/files/h.csv")
		if run.Code != 0 {
			t.Fatalf("exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
		// The retries are logged as a warning, naming each input.
		for _, in := range []string{"s3://bkt/s.csv", web.URL + "/files/h.csv"} {
			if !regexpLine(run.Stderr, `WARN.* msg=fetched .*file=`+regexp.QuoteMeta(in)+` .*retries=[1-9]`) {
				t.Fatalf("no warning of retries for %s:\n%s", in, run.Stderr)
			}
		}
		for _, r := range parseResults(t, run.Stdout) {
			if r.Outcome != "imported" || r.Rows.Inserted != 20000 {
				t.Fatalf("%s: %+v", r.File, r)
			}
		}
		if c := s3.Counts(); c.Get < int64(len(faults)) {
			t.Fatalf("the S3 faults were not all served: %+v", c)
		}
		localDir := filepath.Join(dir, "local")
		os.Mkdir(localDir, 0o755)
		local := testkit.NewTarget(t, name, localDir)
		remoteImport(t, local, dir, nil, 0, "--partition-rows", "2000", "s.csv", "h.csv")
		for _, table := range []string{"s", "h"} {
			got, want := tableRows(t, tg, table), tableRows(t, local, table)
			if !slices.Equal(got, want) {
				t.Fatalf("table %s: %d rows through faults, %d from disk", table, len(got), len(want))
			}
		}
	})
}

// TestRemoteMissingObjects: a missing object is an error naming the URL (exit 1), with the other inputs still imported, and
// credentials in a URL never shown.
func TestRemoteMissingObjects(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s3 := remotetest.NewS3(t, "bkt")
	web := remotetest.NewHTTP(t)
	env := s3.Env(dir)
	testkit.Orders(t, filepath.Join(dir, "ok.csv"), 10, 91)
	b, _ := os.ReadFile(filepath.Join(dir, "ok.csv"))
	web.Put(t, "", "ok.csv", b, time.Time{})
	secretURL := strings.Replace(web.URL, "http://", "http://user:hunter2@", 1) + "/ok.csv?token=hunter2"
	run := testkit.Exec(t, dir, env, "import", "--output", "json", "--s3-endpoint", s3.URL, "--s3-path-style",
		"s3://bkt/missing.csv", secretURL, web.URL+"/gone.csv")
	if run.Code != 1 {
		t.Fatalf("exit %d: %s %s", run.Code, run.Stdout, run.Stderr)
	}
	if strings.Contains(run.Stdout+run.Stderr, "hunter2") {
		t.Fatalf("a credential was shown:\n%s%s", run.Stdout, run.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(run.Stdout), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `s3://bkt/missing.csv: not found`) ||
		!strings.Contains(lines[1], `"outcome":"imported"`) || !strings.Contains(lines[2], "/gone.csv: not found") {
		t.Fatalf("results:\n%s", run.Stdout)
	}
}

// TestRemoteWorkersShareOneObject plans a 20-partition S3 object, then
// starts three worker processes on it against PostgreSQL, the copy the
// planning run left removed (as on hosts of their own): they share the
// partitions, and together fetch about one object's bytes, not three.
func TestRemoteWorkersShareOneObject(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.Postgres)
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.Postgres, dir)
	s3 := remotetest.NewS3(t, "bkt")
	env := s3.Env(dir)
	const partitions, per = 20, 2500
	want := testkit.Orders(t, filepath.Join(dir, "orders.csv"), partitions*per, 101)
	data, _ := os.ReadFile(filepath.Join(dir, "orders.csv"))
	s3.Put(t, "bkt", "big/orders.csv", data, time.Time{})
	spool := filepath.Join(dir, "spool")
	args := []string{"--s3-endpoint", s3.URL, "--s3-path-style", "--spool-dir", spool, "--partition-rows", fmt.Sprint(per), "s3://bkt/big/orders.csv"}
	// Planned beforehand, so that the three start on an equal footing.
	if r := tg.Exec(t, dir, append(env, "IDEMPORT_FAILPOINT=after-plan"), append([]string{"import"}, args...)...); r.Signal != syscall.SIGKILL {
		t.Fatalf("the planning run was not killed: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if err := os.RemoveAll(spool); err != nil {
		t.Fatal(err)
	}
	s3.Reset()

	workers := importAtOnce(t, tg, dir, env, 3, partitions, args...)
	checkExact(t, tg, "ordinal", want)
	c := s3.Counts()
	t.Logf("3 workers fetched %d bytes of a %d-byte object in %d GETs and %d HEADs (%d workers committed partitions)", c.Bytes, len(data), c.Get, c.Head, workers)
	// Each worker reads the header (one window of 64 KiB at most) and the
	// byte ranges of the partitions it claims.
	if c.Bytes < int64(len(data))*95/100 || c.Bytes > int64(len(data))+3*64<<10 {
		t.Fatalf("3 workers fetched %d bytes of a %d-byte object, want about one object", c.Bytes, len(data))
	}
}

// importAtOnce runs n processes of the import of args (the command and
// --output json before them) at once, each exiting 0 or 4, and checks that
// every one of the partitions is committed once and that at least two of
// the processes committed some; it returns how many did.
func importAtOnce(t *testing.T, tg *testkit.Target, dir string, env []string, n, partitions int, args ...string) int {
	t.Helper()
	procs := make([]*started, n)
	for i := range procs {
		procs[i] = start(t, tg, dir, env, append([]string{"import", "--output", "json"}, args...)...)
	}
	committed := map[string]int64{}
	for i, p := range procs {
		r := testkit.Wait(t, p.cmd)
		if r.Code != 0 && r.Code != 4 {
			t.Fatalf("process %d: exit %d\n%s%s", i, r.Code, r.Stdout, r.Stderr)
		}
		res := parseResults(t, r.Stdout)[0]
		committed[res.AttemptID] = res.Partitions.Committed
		t.Logf("process %d: %s, %d partitions committed", i, res.Outcome, res.Partitions.Committed)
	}
	by := checkCommittedOnce(t, tg, partitions)
	joined := 0
	for id, n := range by {
		if n > 0 && committed[id] > 0 {
			joined++
		}
	}
	if joined < 2 {
		t.Fatalf("only %d of the %d processes committed partitions: %v", joined, n, by)
	}
	return joined
}

// spooledObject puts 20,000 orders (testkit.Orders with seed), gzipped, on
// a new S3 server as s3://bkt/orders.csv.gz, and returns the test's
// directory, the server, a run's environment, the object's bytes, the
// spool directory and the arguments of an import of it in 10 partitions.
func spooledObject(t *testing.T, seed int) (dir string, s3 *remotetest.Server, env []string, gz []byte, spool string, args []string) {
	t.Helper()
	dir = t.TempDir()
	s3 = remotetest.NewS3(t, "bkt")
	env = s3.Env(dir)
	testkit.Orders(t, filepath.Join(dir, "orders.csv"), 20000, seed)
	gz = gzipFile(t, filepath.Join(dir, "orders.csv"))
	s3.Put(t, "bkt", "orders.csv.gz", gz, time.Time{})
	spool = filepath.Join(dir, "spool")
	args = []string{"import", "--s3-endpoint", s3.URL, "--s3-path-style", "--spool-dir", spool, "--partition-rows", "2000", "s3://bkt/orders.csv.gz"}
	return dir, s3, env, gz, spool, args
}

// gzipFile returns the gzip compression of the file at path.
func gzipFile(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	// The fastest level: what the tests read is the same at any, and the
	// default took 3.4 s of CPU for the 78 MB of TestProgressBarUnderATerminal, this 0.7 s.
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	zw.Write(raw)
	zw.Close()
	return gz.Bytes()
}

// TestRemoteCompressedSpool imports a gzip CSV object of 10 partitions: it
// is downloaded once into the spool directory, not once per partition; a
// run killed midway leaves the copy, which the rerun reads without
// downloading again; the copy is removed when the import completes.
func TestRemoteCompressedSpool(t *testing.T) {
	t.Parallel()
	dir, s3, env, gz, spool, args := spooledObject(t, 111)
	spooled := func() []string { // the copy and its sums file
		names, _ := filepath.Glob(filepath.Join(spool, "*"))
		return names
	}

	killed := testkit.Exec(t, dir, append(env, "IDEMPORT_FAILPOINT=after-partition-commit:5"), args...)
	if killed.Signal != syscall.SIGKILL {
		t.Fatalf("not killed: %d %s", killed.Code, killed.Stderr)
	}
	if c := s3.Counts(); c.Bytes != int64(len(gz)) {
		t.Fatalf("the first run fetched %d bytes of a %d-byte object, want it once (%+v)", c.Bytes, len(gz), c)
	}
	if len(spooled()) != 2 {
		t.Fatalf("spool after the kill: %v, want the copy and its sums", spooled())
	}
	s3.Reset()
	res := remoteRun(t, dir, env, 0, args[1:]...)
	if res.Outcome != "resumed" || res.Partitions.Skipped != 5 {
		t.Fatalf("rerun: %+v", res)
	}
	if c := s3.Counts(); c.Bytes != 0 {
		t.Fatalf("the rerun fetched %d bytes: the spooled copy was complete (%+v)", c.Bytes, c)
	}
	if s := spooled(); len(s) != 0 {
		t.Fatalf("spool after completion: %v", s)
	}
	db := testkit.Open(t, filepath.Join(dir, "idemport.db"))
	if n := testkit.Int(t, db, `SELECT count(DISTINCT order_id) FROM orders`); n != 20000 {
		t.Fatalf("%d distinct orders, want 20000", n)
	}
	if n := testkit.Int(t, db, `SELECT count(*) FROM orders`); n != 20000 {
		t.Fatalf("%d rows, want 20000", n)
	}
}

// TestRemoteSpoolKilledMidDownload kills the import (SIGKILL, from the
// server, as it asks for the third window of a gzip object): the rerun
// resumes the spooled copy where it stopped, fetching only the bytes the
// copy lacks, and imports the file exactly.
func TestRemoteSpoolKilledMidDownload(t *testing.T) {
	t.Parallel()
	dir, s3, env, gz, spool, args := spooledObject(t, 121)

	cmd := testkit.Cmd(t, dir, env, args...)
	var gets atomic.Int64
	s3.OnGet(func(*http.Request) {
		if gets.Add(1) == 3 {
			cmd.Process.Kill()
		}
	})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if r := testkit.Wait(t, cmd); r.Signal != syscall.SIGKILL {
		t.Fatalf("not killed: exit %d %s", r.Code, r.Stderr)
	}
	s3.OnGet(nil)
	// Two windows, of 64 and 128 KiB, were fetched and written.
	names, _ := filepath.Glob(filepath.Join(spool, "*.spool"))
	if len(names) != 1 {
		t.Fatalf("spool: %v", names)
	}
	st, _ := os.Stat(names[0])
	if st.Size() != (64+128)<<10 {
		t.Fatalf("the copy holds %d bytes, want the two windows fetched (%d)", st.Size(), (64+128)<<10)
	}
	s3.Reset()
	res := remoteRun(t, dir, env, 0, args[1:]...)
	if res.Outcome != "imported" || res.Rows.Inserted != 20000 {
		t.Fatalf("rerun: %+v", res)
	}
	if c := s3.Counts(); c.Bytes != int64(len(gz))-st.Size() {
		t.Fatalf("the rerun fetched %d bytes; the copy lacked %d (%+v)", c.Bytes, int64(len(gz))-st.Size(), c)
	}
	db := testkit.Open(t, filepath.Join(dir, "idemport.db"))
	if n := testkit.Int(t, db, `SELECT count(DISTINCT order_id) FROM orders`); n != 20000 {
		t.Fatalf("%d distinct orders, want 20000", n)
	}
}
