//go:build cgo

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
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// ckptRows is the rows of one transaction of these tests: with rows of
// about 400 bytes, some 150 pages of the log.
const ckptRows = 1500

// ckptFixture is a file opened as the pipeline opens its targets, a
// table, and a writer on one connection whose automatic checkpoint runs
// at 100 frames (SQLite's default is 1000; fewer keep the tests small).
type ckptFixture struct {
	t      *testing.T
	ctx    context.Context
	path   string
	db     *sql.DB
	conn   *sql.Conn
	w      sink.Writer
	schema *arrow.Schema
	txs    int64
	during func() // called inside each transaction, after its rows are written
}

func newCkptFixture(t *testing.T, path string) *ckptFixture {
	ctx := context.Background()
	db, err := Driver{}.Open(ctx, "sqlite://"+path, sink.Settings{BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f := &ckptFixture{t: t, ctx: ctx, path: path, db: db.DB, schema: drivertest.Schema(drivertest.I64("id"), drivertest.Str("s"))}
	if f.conn, err = f.db.Conn(ctx); err != nil {
		t.Fatal(err)
	}
	f.exec(`PRAGMA wal_autocheckpoint=100`)
	tg := sink.Target{Table: "t"}
	tx, err := f.conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := (Driver{}).Ensure(ctx, tx, tg, f.schema); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if f.w, err = (Driver{}).Writer(ctx, f.conn, tg, f.schema); err != nil {
		t.Fatal(err)
	}
	if err := f.conn.QueryRowContext(ctx, `SELECT count(*) / ? FROM t`, ckptRows).Scan(&f.txs); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *ckptFixture) exec(query string) {
	if _, err := f.conn.ExecContext(f.ctx, query); err != nil {
		f.t.Fatal(err)
	}
}

// commit writes the next ckptRows rows in one transaction.
func (f *ckptFixture) commit() {
	rows := make([][]any, ckptRows)
	for i := range rows {
		rows[i] = []any{int(f.txs)*ckptRows + i, strings.Repeat("x", 400)}
	}
	rec := drivertest.Batch(f.t, f.schema, rows...)
	defer rec.Release()
	tx, err := f.conn.BeginTx(f.ctx, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.w.Write(f.ctx, tx, 1, rec, drivertest.Seq(f.txs*ckptRows+1, (f.txs+1)*ckptRows)); err != nil {
		f.t.Fatal(err)
	}
	if f.during != nil {
		f.during()
	}
	if err := tx.Commit(); err != nil {
		f.t.Fatal(err)
	}
	f.txs++
}

func (f *ckptFixture) close() {
	if err := f.w.Close(); err != nil {
		f.t.Error(err)
	}
	f.conn.Close()
	f.db.Close()
}

func walFrames(t *testing.T, path string) int64 {
	st, err := os.Stat(path + "-wal")
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return (st.Size() - 32) / (4096 + 24)
}

// TestWALBounded: a writer's checkpoints run in the background, and the
// write-ahead log stays below walLimit frames and two transactions'
// however many transactions commit (a background checkpoint overlapping
// the next transaction never lets SQLite start the log over: without the
// writer's own checkpoint at the limit it grew by every transaction). The
// writer's Close gives the connection SQLite's automatic checkpoint back,
// and stops the thread and closes its connection: closing the database
// then checkpoints and removes the log, and the file holds every row.
func TestWALBounded(t *testing.T) {
	bg, fg, most := walBounded(t, 400, 40)
	if bg == 0 || fg >= bg {
		t.Errorf("checkpoints in the background %d, by the writer %d: want most in the background", bg, fg)
	}
	if most < 100 || most > 300 {
		t.Errorf("a transaction grew the log by at most %d frames, want 100-300 (above the threshold, below the bound's slack)", most)
	}
}

// TestWALBoundedLargeTransactions: transactions of more frames than
// walLimit (an import's partitions of 64 MiB of a file: some 19,000 pages
// each, against a limit of 16,384) still leave every other checkpoint to
// the thread, rather than each to the writer, and the log stays below the
// same bound.
func TestWALBoundedLargeTransactions(t *testing.T) {
	bg, fg, most := walBounded(t, 100, 20)
	if most <= 100 {
		t.Fatalf("a transaction grew the log by at most %d frames, want more than the limit, 100", most)
	}
	// Every other transaction is the writer's to checkpoint, the others
	// the thread's; the thread may take two hand-offs in one checkpoint
	// when it wakes late, so only the writer's count is exact.
	if bg == 0 || fg > 11 {
		t.Errorf("checkpoints in the background %d, by the writer %d, of 20 transactions: want every other one in the background", bg, fg)
	}
}

// TestWALBoundedBesideAnotherWriter: another connection of the same
// database (the pipeline's heartbeat, renewing its leases) commits small
// transactions of its own right after the writer's, having waited for its
// write lock, one at a time, and its commits checkpoint automatically past
// the same threshold, as the heartbeat's past SQLite's 1000 pages: the log
// still stays below walLimit frames and two transactions'. The writer's
// own checkpoint at the limit found the other connection's running (busy,
// and ignored) or was followed by the other's commit from a snapshot taken
// before it ended, which left the log never starting over: it grew by
// every transaction, as a 100M-row import's did to 5 GB.
func TestWALBoundedBesideAnotherWriter(t *testing.T) {
	skipWithoutCheckpointThread(t)
	old, wait := walLimit, walWait
	// The other connections' reads are short, but a loaded machine may
	// hold one past the writer's wait: waited for here, whatever it takes.
	walLimit, walWait = 400, time.Minute
	defer func() { walLimit, walWait = old, wait }()
	path := filepath.Join(t.TempDir(), "beside.db")
	f := newCkptFixture(t, path)
	defer f.close()
	other, err := f.db.Conn(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, q := range []string{`PRAGMA wal_autocheckpoint=100`, `CREATE TABLE beat (n INTEGER)`, `INSERT INTO beat VALUES (0)`} {
		if _, err := other.ExecContext(f.ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// Inside a transaction of the writer's, a beat begins unless one is
	// still under way: it waits for the writer's lock and commits after
	// that transaction, while the writer goes on with its next one.
	beats, pending := make(chan error, 1), false
	var n int64
	f.during = func() {
		select {
		case err := <-beats:
			if err != nil {
				t.Error(err)
			}
			pending = false
			n++
		default:
		}
		if !pending {
			pending = true
			go func() {
				_, err := other.ExecContext(f.ctx, `UPDATE beat SET n = n + 1`)
				beats <- err
			}()
		}
	}
	var most int64
	for range 120 {
		before := walFrames(t, path)
		f.commit()
		most = max(most, walFrames(t, path)-before) // a transaction's frames, and a beat's
		if n := walFrames(t, path); n > int64(walLimit)+2*most {
			t.Fatalf("after %d transactions the log holds %d frames, want at most %d (the limit and two transactions')", f.txs, n, int64(walLimit)+2*most)
		}
	}
	if pending {
		if err := <-beats; err != nil {
			t.Error(err)
		}
		n++
	}
	var beat int64
	if err := other.QueryRowContext(f.ctx, `SELECT n FROM beat`).Scan(&beat); err != nil || beat != n || n < 60 {
		t.Errorf("beats: %d (%v), want %d, at least 60", beat, err, n)
	}
}

// TestWALBoundedBesideReads: other connections of the same database read
// it all the while, one short read after another (idemport status, a
// reader of the checkpoints): the log still stays below walLimit frames and
// two transactions'. A read begun before the writer's commit keeps a
// checkpoint from copying past it; one that copied what it could and did
// not wait for the read to end (PASSIVE) left the log never starting over.
func TestWALBoundedBesideReads(t *testing.T) {
	skipWithoutCheckpointThread(t)
	old, wait := walLimit, walWait
	// The other connections' reads are short, but a loaded machine may
	// hold one past the writer's wait: waited for here, whatever it takes.
	walLimit, walWait = 400, time.Minute
	defer func() { walLimit, walWait = old, wait }()
	path := filepath.Join(t.TempDir(), "reads.db")
	f := newCkptFixture(t, path)
	defer f.close()
	ctx, stop := context.WithCancel(f.ctx)
	reads := make(chan int64, 2)
	for range 2 {
		go func() {
			var n int64
			defer func() { reads <- n }()
			for ctx.Err() == nil {
				var rows int64
				if err := f.db.QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&rows); err != nil {
					if ctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				n++
			}
		}()
	}
	var most int64
	for range 60 {
		before := walFrames(t, path)
		f.commit()
		most = max(most, walFrames(t, path)-before)
		if n := walFrames(t, path); n > int64(walLimit)+2*most {
			stop()
			t.Fatalf("after %d transactions the log holds %d frames, want at most %d (the limit and two transactions')", f.txs, n, int64(walLimit)+2*most)
		}
	}
	stop()
	if n := <-reads + <-reads; n < 60 {
		t.Errorf("%d reads beside 60 transactions, want at least 60", n)
	}
}

// walBounded commits txs transactions through a writer whose limit is
// limit frames, each while the thread's checkpoint of the transactions
// before runs, and checks that the log never holds more than limit and two
// transactions' frames, and that the file holds every row once closed. It
// returns the checkpoints run by the thread and by the writer, and the
// most frames a transaction added to the log.
func walBounded(t *testing.T, limit, txs int) (bg, fg, most int64) {
	t.Helper()
	skipWithoutCheckpointThread(t)
	old := walLimit
	walLimit = limit
	defer func() { walLimit = old }()
	path := filepath.Join(t.TempDir(), "wal.db")
	f := newCkptFixture(t, path)
	k := f.w.(*writer).ckpt
	if k == nil {
		t.Fatal("the writer runs no checkpointer")
	}
	// Each background checkpoint runs inside the writer's next
	// transaction, as it may whenever the thread is slower than the
	// writer: held back until that transaction has written its rows, then
	// waited for. It then copies all but that transaction's frames, so
	// SQLite never starts the log over by itself.
	k.hold(true)
	f.during = func() {
		if !k.pending() {
			return
		}
		before, _, _ := k.stats()
		k.hold(false)
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
			if bg, _, _ := k.stats(); bg > before {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the thread's checkpoint did not run within a minute of being let go")
			}
		}
		k.hold(true)
	}
	for range txs {
		before := walFrames(t, path)
		f.commit()
		most = max(most, walFrames(t, path)-before) // at least a transaction's frames
		if n := walFrames(t, path); n > int64(walLimit)+2*most {
			t.Fatalf("after %d transactions the log holds %d frames, want at most %d (the limit and two transactions')", f.txs, n, int64(walLimit)+2*most)
		}
	}
	k.hold(false)
	bg, fg, _ = k.stats()
	t.Logf("checkpoints in the background %d, by the writer %d; most frames a transaction wrote %d", bg, fg, most)
	f.close()
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after the database closed its log is still there (%v): a connection is left open", err)
	}
	db, err := sql.Open("sqlite3", ConnString(path, sink.Settings{BusyTimeout: time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	var ok string
	if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != int64(txs)*ckptRows {
		t.Errorf("rows: %d (%v), want %d", n, err, int64(txs)*ckptRows)
	}
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Errorf("integrity_check: %q (%v)", ok, err)
	}
	return bg, fg, most
}

// skipWithoutCheckpointThread skips a test of the checkpoint thread where
// ckpt.c has none (Windows: the writer checkpoints inside its COMMIT, as
// SQLite does by itself).
func skipWithoutCheckpointThread(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no checkpoint thread on Windows")
	}
}

// TestWriterCloseRestoresCheckpoint: the connection a writer was on goes
// back to the pool checkpointing as SQLite does by itself.
func TestWriterCloseRestoresCheckpoint(t *testing.T) {
	skipWithoutCheckpointThread(t)
	f := newCkptFixture(t, filepath.Join(t.TempDir(), "restore.db"))
	defer f.db.Close()
	defer f.conn.Close()
	var auto int
	if err := f.conn.QueryRowContext(f.ctx, `PRAGMA wal_autocheckpoint`).Scan(&auto); err != nil || auto != 0 {
		t.Errorf("with the writer: wal_autocheckpoint %d (%v), want 0 (the writer's hook)", auto, err)
	}
	f.commit()
	if err := f.w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.conn.QueryRowContext(f.ctx, `PRAGMA wal_autocheckpoint`).Scan(&auto); err != nil || auto != 100 {
		t.Errorf("after the writer: wal_autocheckpoint %d (%v), want 100", auto, err)
	}
}

// TestKilledDuringBackgroundCheckpoint kills (SIGKILL) a process that
// commits transaction after transaction while its background checkpoint
// runs, three times: each time the file opens, passes integrity_check, and
// holds whole transactions, at least those the process reported committed
// (it may have committed more than it said), and the next process goes on writing in it.
func TestKilledDuringBackgroundCheckpoint(t *testing.T) {
	skipWithoutCheckpointThread(t)
	if path := os.Getenv("IDEMPORT_CKPT_CHILD"); path != "" {
		ckptChild(t, path)
		return
	}
	if testing.Short() {
		t.Skip("kills processes")
	}
	path := filepath.Join(t.TempDir(), "kill.db")
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKilledDuringBackgroundCheckpoint$")
		cmd.Env = append(os.Environ(), "IDEMPORT_CKPT_CHILD="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var reported, during int64 = -1, 0
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			what, n, _ := strings.Cut(sc.Text(), " ")
			v, _ := strconv.ParseInt(n, 10, 64)
			switch what {
			case "committed":
				reported = v
			case "checkpointing":
				during++
			}
			if during > int64(round) && reported >= 0 {
				cmd.Process.Signal(syscall.SIGKILL)
				break
			}
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: the process ended with %v, not killed while checkpointing", round, err)
		}
		db, err := sql.Open("sqlite3", ConnString(path, sink.Settings{BusyTimeout: time.Second}))
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		var ok string
		if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
			t.Errorf("round %d: integrity_check %q (%v)", round, ok, err)
		}
		if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n%ckptRows != 0 || n/ckptRows < reported {
			t.Errorf("round %d: %d rows (%v), want whole transactions of %d, at least the %d reported committed", round, n, err, ckptRows, reported)
		}
		db.Close()
	}
}

// ckptChild commits transactions into path until killed (or 200 of them),
// saying after each how many transactions the file holds, and when its
// checkpointer is seen running, so.
func ckptChild(t *testing.T, path string) {
	walLimit = 400 // the writer's own checkpoints too
	f := newCkptFixture(t, path)
	k := f.w.(*writer).ckpt
	done := make(chan struct{})
	lines := make(chan string, 1000)
	go func() {
		for l := range lines {
			fmt.Println(l)
		}
		close(done)
	}()
	go func() {
		for {
			if _, _, busy := k.stats(); busy {
				lines <- "checkpointing 0"
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	for range 200 {
		f.commit()
		lines <- fmt.Sprint("committed ", f.txs)
	}
	close(lines)
	<-done
	t.Fatal("not killed")
}
