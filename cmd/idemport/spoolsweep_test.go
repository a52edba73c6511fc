//go:build unix

package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/remotetest"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/reader/remote"
)

// TestSpoolSweepMeetsLiveImport runs imports of other objects, each of
// which sweeps the spool directory it shares (remote.SpoolKeep), while an
// import of a gzip object (whose partitions read its spooled copy) is
// live, each into its own SQLite file.
//
// Reading: a run killed inside its second partition leaves the copy,
// which then ages past SpoolKeep, as one left by an attempt 8 days ago.
// Its rerun, stopped (SIGSTOP) inside its first partition, reads that
// copy: the sweep of another import leaves it, as the rerun took it
// (within its lease). Aged past SpoolKeep again, as if the rerun had
// been stopped that long, the next sweep removes it; resumed, the rerun
// completes from the copy it holds open, every value exact.
//
// Filling: a first import whose download the server stalls holds its
// copy's lock; aged past SpoolKeep, the copy stays through another
// import's sweep, and the import, let go on, completes exactly.
func TestSpoolSweepMeetsLiveImport(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s3 := remotetest.NewS3(t, "bkt")
	env := s3.Env(root)
	spool := filepath.Join(root, "spool")
	object := func(name string, seed int) (string, *testkit.Target, [][]string, []string) {
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		tg := testkit.NewTarget(t, testkit.SQLite, dir)
		rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 20000, seed)
		s3.Put(t, "bkt", name+"/orders.csv.gz", gzipFile(t, filepath.Join(dir, "orders.csv")), time.Time{})
		args := []string{"import", "--output", "json", "--s3-endpoint", s3.URL, "--s3-path-style", "--spool-dir", spool,
			"--partition-rows", "2000", "s3://bkt/" + name + "/orders.csv.gz"}
		return dir, tg, rows, args
	}
	bdir := filepath.Join(root, "b")
	if err := os.Mkdir(bdir, 0o755); err != nil {
		t.Fatal(err)
	}
	btg := testkit.NewTarget(t, testkit.SQLite, bdir)
	sweeps := 0
	sweep := func() { // an import of another object, which sweeps the spool first
		sweeps++
		key := fmt.Sprintf("b/%d.csv", sweeps)
		s3.Put(t, "bkt", key, fmt.Appendf(nil, "id,v\n%d,b%d\n", sweeps, sweeps), time.Time{})
		r := parsed(t, btg.Exec(t, bdir, env, "import", "--output", "json", "--s3-endpoint", s3.URL, "--s3-path-style",
			"--spool-dir", spool, "--table", "b", "s3://bkt/"+key), key, 0)
		if r.Outcome != "imported" || r.Rows.Inserted != 1 {
			t.Fatalf("%s: %s, rows %+v", key, r.Outcome, r.Rows)
		}
	}
	copyOf := func() string { // the one copy in the spool
		names, _ := filepath.Glob(filepath.Join(spool, "*.spool"))
		if len(names) != 1 {
			t.Fatalf("the spool holds copies %v, want one", names)
		}
		return names[0]
	}
	age := func(copy string) { // nothing has written it for longer than SpoolKeep
		old := time.Now().Add(-remote.SpoolKeep - time.Hour)
		for _, n := range []string{copy, copy + ".sums"} {
			if err := os.Chtimes(n, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	kept := func(copy string) bool {
		_, err := os.Lstat(copy)
		_, serr := os.Lstat(copy + ".sums")
		if (err == nil) != (serr == nil) {
			t.Fatalf("%s: the copy (%v) or its sums file (%v) alone is left", copy, err, serr)
		}
		return err == nil
	}

	// Reading.
	xdir, xtg, xrows, xargs := object("x", 131)
	if r := xtg.Exec(t, xdir, append(env, "IDEMPORT_FAILPOINT=inside-partition:2"), xargs...); r.Signal != syscall.SIGKILL {
		t.Fatalf("not killed inside the second partition: exit %d\n%s", r.Code, r.Stderr)
	}
	xcopy := copyOf()
	age(xcopy)
	x := stopped(t, start(t, xtg, xdir, append(env, "IDEMPORT_FAILPOINT=inside-partition:1:stop"), xargs...))
	sweep()
	if !kept(xcopy) {
		t.Fatal("another import's sweep removed the copy a live import, stopped inside its partition, reads")
	}
	age(xcopy)
	sweep()
	if kept(xcopy) {
		t.Fatal("a copy nothing has written or opened for longer than SpoolKeep, and no one fills, stayed through a sweep")
	}
	continued(t, x)
	if r := finished(t, x, "the rerun whose copy was swept", 0); r.Outcome != "resumed" || r.Partitions.Skipped != 1 ||
		r.Partitions.Committed != 9 || r.Rows.Inserted != 18000 {
		t.Fatalf("the rerun whose copy was swept: %s, partitions %+v, rows %+v; want resumed, 9 partitions and 18000 rows written",
			r.Outcome, r.Partitions, r.Rows)
	}
	checkExact(t, xtg, "ordinal", xrows)

	// Filling.
	ydir, ytg, yrows, yargs := object("y", 137)
	var gets atomic.Int64
	stalled, release := make(chan struct{}), make(chan struct{})
	s3.OnGet(func(r *http.Request) {
		if strings.Contains(r.URL.Path, "/y/") && gets.Add(1) == 3 {
			close(stalled)
			<-release
		}
	})
	y := start(t, ytg, ydir, env, yargs...)
	select {
	case <-stalled:
	case <-time.After(2 * time.Minute):
		t.Fatal("the import of y never asked for its third window")
	}
	ycopy := copyOf()
	age(ycopy)
	sweep()
	kept2 := kept(ycopy)
	close(release)
	s3.OnGet(nil)
	if !kept2 {
		t.Fatal("another import's sweep removed the copy a live import is filling")
	}
	if r := finished(t, y, "the import whose download stalled", 0); r.Outcome != "imported" || r.Rows.Inserted != 20000 {
		t.Fatalf("the import whose download stalled: %s, rows %+v", r.Outcome, r.Rows)
	}
	checkExact(t, ytg, "ordinal", yrows)
	if names, _ := filepath.Glob(filepath.Join(spool, "*")); len(names) != 0 {
		t.Fatalf("the spool holds %v once every import completed", names)
	}
}
