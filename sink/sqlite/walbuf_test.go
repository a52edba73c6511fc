//go:build cgo && !windows

package sqlite

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/sink"
)

// walRows is the rows walFill inserts: with rows of about 400 bytes,
// some 300 pages of the log.
const walRows = 3000

// walFill inserts walRows rows into t on conn, rows first+1 to
// first+walRows, whose x sum to walSum(first).
func walFill(ctx context.Context, conn *sql.Conn, first int) error {
	for i := first + 1; i <= first+walRows; i++ {
		if _, err := conn.ExecContext(ctx, `INSERT INTO t(x, pad) VALUES (?, ?)`, i, strings.Repeat(fmt.Sprint(i%10), 400)); err != nil {
			return err
		}
	}
	return nil
}

func walSum(first int) int64 {
	var s int64
	for i := first + 1; i <= first+walRows; i++ {
		s += int64(i)
	}
	return s
}

// TestLogWrittenInLargeWrites: SQLite's two writes per frame of the log
// (header, page) reach the file as a few large writes, and a transaction
// whose pages the cache spills to the log, read back inside it, reads them
// as they were written.
func TestLogWrittenInLargeWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "w.db")
	calls0, writes0 := walWrites()
	db, err := sql.Open("sqlite3", ConnString(path, sink.Settings{BusyTimeout: time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A cache of 20 pages, which the transaction's 300 spill from.
	for _, q := range []string{`CREATE TABLE t(x INTEGER, pad TEXT)`, `PRAGMA cache_size = 20`, `PRAGMA cache_spill = 20`, `BEGIN IMMEDIATE`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	if err := walFill(ctx, conn, 0); err != nil {
		t.Fatal(err)
	}
	var n, sum int64
	var pads string
	if err := conn.QueryRowContext(ctx, `SELECT count(*), sum(x), group_concat(DISTINCT substr(pad, 1, 1)) FROM t`).Scan(&n, &sum, &pads); err != nil || n != walRows || sum != walSum(0) || len(pads) != 19 {
		t.Fatalf("inside the transaction: %d rows summing to %d, pads %q (%v); want %d rows summing to %d, 10 pads", n, sum, pads, err, walRows, walSum(0))
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	db.Close()
	calls, writes := walWrites()
	calls, writes = calls-calls0, writes-writes0
	if calls < 2*300 || writes*20 > calls {
		t.Errorf("SQLite wrote the log %d times, the file was written %d times: want at least 600 and a twentieth", calls, writes)
	}
}

// TestCommitInTheLogBeforeItCounts: a transaction a process committed is
// read by another while that process lives on, idle after its COMMIT, and
// after it is killed there; a transaction it spilled to the log and rolled
// back before is not seen.
func TestCommitInTheLogBeforeItCounts(t *testing.T) {
	if path := os.Getenv("IDEMPORT_WALBUF_CHILD"); path != "" {
		walChild(t, path)
		return
	}
	if testing.Short() {
		t.Skip("kills a process")
	}
	path := filepath.Join(t.TempDir(), "c.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCommitInTheLogBeforeItCounts$")
	cmd.Env = append(os.Environ(), "IDEMPORT_WALBUF_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "committed" {
	}
	check := func(when string) {
		t.Helper()
		db, err := sql.Open("sqlite3", ConnString(path, sink.Settings{BusyTimeout: time.Second}))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var ok string
		if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
			t.Errorf("%s: integrity_check %q (%v)", when, ok, err)
		}
		var n, sum int64
		if err := db.QueryRow(`SELECT count(*), coalesce(sum(x), 0) FROM t`).Scan(&n, &sum); err != nil || n != walRows || sum != walSum(walRows) {
			t.Errorf("%s: %d rows summing to %d (%v), want the %d committed, summing to %d", when, n, sum, err, walRows, walSum(walRows))
		}
	}
	check("the committer idle")
	cmd.Process.Signal(syscall.SIGKILL)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the committer ended with %v, not killed", err)
	}
	check("the committer killed")
}

// walChild spills a transaction to the log and rolls it back, commits
// another, says so, and waits to be killed, its connection open.
func walChild(t *testing.T, path string) {
	ctx := context.Background()
	db, err := sql.Open("sqlite3", ConnString(path, sink.Settings{BusyTimeout: time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// SQLite's own checkpoint off, so that the commit stays in the log.
	for _, q := range []string{`CREATE TABLE t(x INTEGER, pad TEXT)`, `PRAGMA wal_autocheckpoint = 0`, `PRAGMA cache_size = 20`, `PRAGMA cache_spill = 20`, `BEGIN IMMEDIATE`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	if err := walFill(ctx, conn, 0); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`ROLLBACK`, `BEGIN IMMEDIATE`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	if err := walFill(ctx, conn, walRows); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	fmt.Println("committed")
	time.Sleep(time.Minute)
	t.Fatal("not killed")
}

// TestRewrittenCommitSurvivesAKill: a transaction the cache spilled to the
// log and then wrote pages of again (overwritten in place in the log, so
// that SQLite rewrites the checksums of its frames at the COMMIT, the
// commit frame's header last) survives the kill of the process that
// committed it: the recovery of the log finds every frame's checksum.
func TestRewrittenCommitSurvivesAKill(t *testing.T) {
	if path := os.Getenv("IDEMPORT_WALBUF_REWRITE_CHILD"); path != "" {
		walRewriteChild(t, path)
		return
	}
	if testing.Short() {
		t.Skip("kills a process")
	}
	path := filepath.Join(t.TempDir(), "r.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestRewrittenCommitSurvivesAKill$")
	cmd.Env = append(os.Environ(), "IDEMPORT_WALBUF_REWRITE_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "committed" {
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	db, err := sql.Open("sqlite3", ConnString(path, sink.Settings{BusyTimeout: time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, sum int64
	if err := db.QueryRow(`SELECT count(*), coalesce(sum(x), 0) FROM t`).Scan(&n, &sum); err != nil || n != walRows || sum != walSum(0) {
		t.Errorf("after the kill: %d rows summing to %d (%v), want the %d committed, summing to %d", n, sum, err, walRows, walSum(0))
	}
}

// walRewriteChild commits, in a cache of 20 pages, rows whose index
// entries land on pages spilled before, says so, and waits to be killed.
func walRewriteChild(t *testing.T, path string) {
	ctx := context.Background()
	db, err := sql.Open("sqlite3", ConnString(path, sink.Settings{BusyTimeout: time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`CREATE TABLE t(x INTEGER, pad TEXT)`, `CREATE INDEX t_pad ON t(pad)`, `PRAGMA wal_autocheckpoint = 0`, `PRAGMA cache_size = 20`, `PRAGMA cache_spill = 20`, `BEGIN IMMEDIATE`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	for i := 1; i <= walRows; i++ {
		// pad in an order other than x's: the index's pages are written
		// again and again, after the cache spilled them.
		pad := fmt.Sprintf("%08d", (i*7919)%walRows) + strings.Repeat("p", 100)
		if _, err := conn.ExecContext(ctx, `INSERT INTO t(x, pad) VALUES (?, ?)`, i, pad); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	fmt.Println("committed")
	time.Sleep(time.Minute)
	t.Fatal("not killed")
}
