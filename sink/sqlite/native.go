package sqlite

// #include "native.h"
import "C"

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/idemport/idemport/sink"
)

// rawHandle names the sqlite3 handle type in this package's files that
// have no C preamble of their own.
type rawHandle = C.sqlite3

// handle returns the sqlite3* of a database/sql connection of the mattn
// driver. The driver keeps it unexported; reading the field by name keeps
// this working as long as the driver names it db, which the tests check.
func handle(conn *sql.Conn) (*C.sqlite3, error) {
	var h *C.sqlite3
	err := conn.Raw(func(dc any) error {
		c, ok := dc.(*sqlite3.SQLiteConn)
		if !ok {
			return fmt.Errorf("not a SQLite connection: %T", dc)
		}
		f := reflect.ValueOf(c).Elem().FieldByName("db")
		if !f.IsValid() || f.Kind() != reflect.Pointer {
			return errors.New("the SQLite driver keeps its handle elsewhere")
		}
		h = *(**C.sqlite3)(unsafe.Pointer(f.UnsafeAddr()))
		if h == nil {
			return errors.New("the SQLite connection is closed")
		}
		return nil
	})
	return h, err
}

// errNoTx is what a write on the raw handle answers when the connection
// has no transaction open: its transaction was rolled back (database/sql
// rolls back a transaction whose context is cancelled, from a goroutine of
// its own) or committed. Stepping the statements then would commit each
// row by itself.
var errNoTx = errors.New("the transaction is no longer open; nothing written")

// inTx runs fn, which steps statements on s's handle, the raw handle of conn, only
// while conn's transaction is open, and keeps it open until fn returns:
// database/sql rolls a transaction back under the connection's lock, which
// Conn.Raw holds, so a rollback for a cancelled context waits for the
// batch instead of ending the transaction under it (after which the rest
// of the batch would commit row by row).
func (s *stmt) inTx(ctx context.Context, conn *sql.Conn, fn func() error) error {
	return conn.Raw(func(any) error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		if C.sqlite3_get_autocommit(s.db) != 0 {
			return fmt.Errorf("write: %w", errNoTx)
		}
		return fn()
	})
}

// stmt is a statement prepared on the connection's handle. SQLite
// statements outlive transactions, so it is prepared once per writer.
type stmt struct {
	conn *sql.Conn
	db   *C.sqlite3
	st   *C.sqlite3_stmt
}

// prepare prepares query on db, the raw handle of conn. Like every use of
// the handle, it runs inside conn.Raw: the connections are opened without
// SQLite's own mutex (ConnString), and conn.Raw holds the lock under which
// database/sql uses the connection, also from its own goroutines (the
// rollback of a transaction whose context was cancelled).
func prepare(conn *sql.Conn, db *C.sqlite3, query string) (*stmt, error) {
	q := C.CString(query)
	defer C.free(unsafe.Pointer(q))
	var st *C.sqlite3_stmt
	err := conn.Raw(func(any) error {
		if rc := C.sqlite3_prepare_v2(db, q, -1, &st, nil); rc != 0 {
			return fmt.Errorf("prepare %q: %s", query, C.GoString(C.sqlite3_errmsg(db)))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &stmt{conn: conn, db: db, st: st}, nil
}

// runs is how many times s has run (SQLITE_STMTSTATUS_RUN).
func (s *stmt) runs() int { return int(C.sqlite3_stmt_status(s.st, 6, 0)) }

// close finalizes s inside conn.Raw (see prepare). On a connection
// already closed, whose handle may be in use by another caller of the
// pool, it leaves s to the connection's own close.
func (s *stmt) close() {
	if s != nil && s.st != nil {
		s.conn.Raw(func(any) error {
			C.sqlite3_finalize(s.st)
			return nil
		})
		s.st = nil
	}
}

// serialized reports whether conn's SQLite handle has a mutex of its own
// (SQLite's serialized mode), which Open's connections go without.
func serialized(conn *sql.Conn) (bool, error) {
	db, err := handle(conn)
	if err != nil {
		return false, err
	}
	var yes bool
	err = conn.Raw(func(any) error {
		yes = C.sqlite3_db_mutex(db) != nil
		return nil
	})
	return yes, err
}

// colBuffers describes a record batch's columns to C. Their buffers are pinned
// until release, so C may read them.
type colBuffers struct {
	c      []C.idp_col // C memory
	pinner runtime.Pinner
}

func newColBuffers(n int) *colBuffers {
	p := C.calloc(C.size_t(max(n, 1)), C.size_t(unsafe.Sizeof(C.idp_col{})))
	return &colBuffers{c: unsafe.Slice((*C.idp_col)(p), max(n, 1))[:n]}
}

func (cs *colBuffers) free() {
	if cap(cs.c) > 0 {
		C.free(unsafe.Pointer(unsafe.SliceData(cs.c[:cap(cs.c)])))
		cs.c = nil
	}
}

// set points the C descriptors at rec's buffers, pinning them.
func (cs *colBuffers) set(rec arrow.RecordBatch) error {
	for i, col := range rec.Columns() {
		d := col.Data()
		bufs := d.Buffers()
		c := &cs.c[i]
		*c = C.idp_col{off: C.int64_t(d.Offset())}
		if col.NullN() > 0 && bufs[0] != nil {
			c.valid = (*C.uint8_t)(cs.pin(bufs[0].Bytes()))
		}
		switch col.(type) {
		case *array.Int64:
			c.kind = C.IDP_INT
		case *array.Float64:
			c.kind = C.IDP_FLOAT
		case *array.Boolean:
			c.kind = C.IDP_BOOL
		case *array.Timestamp:
			c.kind = C.IDP_TS
		case *array.Date32:
			c.kind = C.IDP_DATE // rendered as sink.FormatDate's text
		case *array.String:
			c.kind = C.IDP_TEXT
			c.data = (*C.char)(cs.pin(bufs[2].Bytes()))
		default:
			return fmt.Errorf("column %d: unsupported Arrow type %s", i, col.DataType())
		}
		c.values = cs.pin(bufs[1].Bytes())
	}
	return nil
}

func (cs *colBuffers) pin(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	cs.pinner.Pin(p)
	return p
}

func (cs *colBuffers) release() { cs.pinner.Unpin() }

// batch is the C description of one record batch for the batch table.
type batch struct{ c *C.idp_batch }

func newBatch() batch {
	return batch{(*C.idp_batch)(C.calloc(1, C.size_t(unsafe.Sizeof(C.idp_batch{}))))}
}

func (b *batch) free() {
	if b.c != nil {
		C.free(unsafe.Pointer(b.c))
		b.c = nil // a second free (the writer closed again) frees nothing
	}
}

// register makes the batch table for ncols columns available on conn,
// whose handle is db, unless it already is: registering a module again
// would drop the table under statements prepared on it.
func register(ctx context.Context, conn *sql.Conn, db *C.sqlite3, ncols int) error {
	var n int
	err := conn.QueryRowContext(ctx, `SELECT count(*) FROM pragma_module_list WHERE name = ?`, batchTable(ncols)).Scan(&n)
	if err != nil {
		return fmt.Errorf("look for the batch table: %w", err)
	}
	if n > 0 {
		return nil
	}
	return conn.Raw(func(any) error {
		if rc := C.idp_register(db, C.int(ncols)); rc != 0 {
			return fmt.Errorf("register the batch table: %s", C.GoString(C.sqlite3_errmsg(db)))
		}
		return nil
	})
}

// batchTable names the batch table of ncols columns in SQL.
func batchTable(ncols int) string { return fmt.Sprintf("idemport_batch_%d", ncols) }

// run steps s, a statement that reads the batch table, once over the rows of
// cs with these ordinals, and returns how many rows it changed. On failure
// it returns the index of the row it failed on.
func (s *stmt) run(b batch, cs *colBuffers, fileKey int64, ordinals []int64) (int64, int, error) {
	b.c.filekey = C.int64_t(fileKey)
	b.c.ord = (*C.int64_t)(cs.pin(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(ordinals))), 8*len(ordinals))))
	b.c.n = C.int64_t(len(ordinals))
	b.c.ncols = C.int(len(cs.c))
	b.c.cols = unsafe.SliceData(cs.c)
	var changed C.int64_t
	rc := C.idp_run(s.db, s.st, b.c, &changed)
	b.c.ord, b.c.cols = nil, nil
	if rc != 0 {
		return 0, min(int(b.c.pos), len(ordinals)-1), s.err(rc)
	}
	return int64(changed), 0, nil
}

// natural applies rows one at a time with probe, counting each exactly:
// inserted, updated, unchanged, stale. With ins, a plain insert of the same
// parameters, each row is tried with it first; with rekey, an upsert of the
// same parameters, it is run instead for a row whose key the probe finds
// written otherwise; with relin, a row the upsert left unchanged takes the
// row's lineage (see idp_natural).
func (s *stmt) natural(ins, probe, rekey, relin *stmt, keyCols []C.int, verCol int, cs *colBuffers, fileKey int64, ordinals []int64) ([4]int64, int, error) {
	var counts [4]C.int64_t
	var failed C.int64_t
	var first, other, lineage *C.sqlite3_stmt
	if ins != nil {
		first = ins.st
	}
	if rekey != nil {
		other = rekey.st
	}
	if relin != nil {
		lineage = relin.st
	}
	rc := C.idp_natural(s.db, first, probe.st, s.st, other, lineage, C.int(len(keyCols)), unsafe.SliceData(keyCols), C.int(verCol),
		C.int64_t(fileKey), (*C.int64_t)(unsafe.Pointer(unsafe.SliceData(ordinals))), C.int64_t(len(ordinals)),
		C.int(len(cs.c)), unsafe.SliceData(cs.c), &counts[0], &failed)
	if rc != 0 {
		return [4]int64{}, int(failed), s.err(rc)
	}
	return [4]int64{int64(counts[0]), int64(counts[1]), int64(counts[2]), int64(counts[3])}, 0, nil
}

// err describes a failed step. A failure caused by the row's values (a
// constraint or trigger, a datatype mismatch, a value too big, a timestamp
// out of range) is a *sink.RowError.
func (s *stmt) err(rc C.int) error {
	if rc == C.IDP_TS_RANGE {
		msg := "a timestamp outside the years 0000-9999"
		return &sink.RowError{Code: sink.CodeRefused, Reason: msg, Err: errors.New(msg)}
	}
	msg := C.GoString(C.sqlite3_errmsg(s.db))
	err := fmt.Errorf("%s (SQLite code %d)", msg, int(rc))
	switch rc & 0xff {
	case 19: // SQLITE_CONSTRAINT: UNIQUE, CHECK, NOT NULL, FOREIGN KEY, RAISE in a trigger
		return &sink.RowError{Code: sink.CodeConstraint, Reason: msg, Err: err}
	case 18, 20: // SQLITE_TOOBIG, SQLITE_MISMATCH
		return &sink.RowError{Code: sink.CodeRefused, Reason: msg, Err: err}
	}
	return err
}

// Locked implements sink.Driver: SQLite answers "database is locked" (or
// a table lock) when another connection kept its write lock past the busy
// timeout.
func (Driver) Locked(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

// Full implements sink.Driver: SQLite answers "database or disk is full"
// when a write found no space left.
func (Driver) Full(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrFull
}

// RowError implements sink.RowErrorer: SQLITE_CONSTRAINT (UNIQUE,
// CHECK, NOT NULL, FOREIGN KEY, RAISE in a trigger) is a *sink.RowError of
// CodeConstraint, SQLITE_TOOBIG and SQLITE_MISMATCH of CodeRefused, as
// the writer reads them (stmt.err).
func (Driver) RowError(err error) error {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code {
	case sqlite3.ErrConstraint:
		return &sink.RowError{Code: sink.CodeConstraint, Reason: se.Error(), Err: err}
	case sqlite3.ErrTooBig, sqlite3.ErrMismatch:
		return &sink.RowError{Code: sink.CodeRefused, Reason: se.Error(), Err: err}
	}
	return err
}

// walLimit is the frames the write-ahead log held before a transaction at
// which the writer checkpoints on its own connection as that transaction
// commits, rather than in the background (see ckpt.c): 64 MiB of 4 KiB
// pages. That checkpoint starts the log over, so the log file stays below
// walLimit frames and two transactions' (of an import, two partitions'),
// plus its header and what other connections commit between the writer's
// transactions (the pipeline's lease renewals: a few pages each), while no
// reader holds a snapshot of the log for longer than walWait. Such a
// reader (a query of the table by another program, run across the
// checkpoint) keeps the log from starting over until it ends: until then
// the log grows by the writer's transactions, as SQLite's own checkpoint
// leaves it to.
var walLimit = 16384

// walWait is how long the writer's checkpoint at walLimit waits for other
// connections' locks: another writer's transaction (whose end the writer's
// next one waits for anyway), and the reads begun before the checkpoint
// ended, which keep the log from starting over. A checkpoint that a reader
// holds up waits this long once every other partition or so: a query of a
// large table by another program, run in a loop beside an import, slows
// the import by up to that, rather than growing its log.
var walWait = time.Second

// checkpointer runs the automatic checkpoints of a writer's connection on
// a thread of its own; a nil *checkpointer does nothing.
type checkpointer struct {
	c         *C.idp_ckpt
	threshold C.int
}

// startCheckpointer moves the automatic checkpoints of conn, whose handle is
// db, to a thread of its own. Without a threshold (wal_autocheckpoint 0),
// a file, or a thread (on Windows there is none), it returns nil and conn
// checkpoints as before.
func startCheckpointer(ctx context.Context, conn *sql.Conn, db *C.sqlite3) (*checkpointer, error) {
	var threshold, busy int
	if err := conn.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&threshold); err != nil {
		return nil, fmt.Errorf("read wal_autocheckpoint: %w", err)
	}
	if err := conn.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil {
		return nil, fmt.Errorf("read busy_timeout: %w", err)
	}
	var c *C.idp_ckpt
	err := conn.Raw(func(any) error {
		c = C.idp_ckpt_start(db, C.int(threshold), C.int(walLimit), C.int(busy), C.int(walWait.Milliseconds()))
		return nil
	})
	if err != nil || c == nil {
		return nil, err
	}
	return &checkpointer{c: c, threshold: C.int(threshold)}, nil
}

// stop gives conn, whose handle is db, its automatic checkpoint back, and
// stops and joins the thread, whose connection it closes. A checkpoint
// running finishes first; one only asked for is left to SQLite's.
func (k *checkpointer) stop(conn *sql.Conn, db *C.sqlite3) {
	if k == nil || k.c == nil {
		return
	}
	err := conn.Raw(func(any) error {
		C.idp_ckpt_stop(db, k.c, k.threshold)
		return nil
	})
	if err != nil {
		// conn was closed before the writer: its handle may be back in
		// database/sql's pool with the hook on it, which from now on
		// checkpoints on that connection as SQLite's does.
		C.idp_ckpt_stop(nil, k.c, k.threshold)
	}
	k.c = nil
}

// detach is stop without the wait for a checkpoint the thread runs: it
// gives conn, whose handle is db, its automatic checkpoint back and tells
// the thread to stop, and returns the wait for the thread, which joins it
// and closes its connection. Where conn was closed it stops as stop does,
// and the wait does nothing.
func (k *checkpointer) detach(conn *sql.Conn, db *C.sqlite3) (wait func()) {
	if k == nil || k.c == nil {
		return func() {}
	}
	c := k.c
	err := conn.Raw(func(any) error {
		C.idp_ckpt_detach(db, c, k.threshold)
		return nil
	})
	if err != nil {
		k.stop(conn, db)
		return func() {}
	}
	k.c = nil
	var once sync.Once
	return func() { once.Do(func() { C.idp_ckpt_join(c) }) }
}

// hold holds the thread's checkpoints back (on) or lets them run: a test
// that needs a checkpoint to run inside the writer's next transaction holds
// them, and lets the one pending (see pending) run there.
func (k *checkpointer) hold(on bool) {
	var v C.int
	if on {
		v = 1
	}
	C.idp_ckpt_hold(k.c, v)
}

// pending says whether a checkpoint the writer asked for waits for hold(false).
func (k *checkpointer) pending() bool {
	return C.idp_ckpt_pending(k.c) != 0
}

// stats returns the checkpoints the thread ran, those the writer ran at
// the limit, and whether the thread is checkpointing now.
func (k *checkpointer) stats() (bg, fg int64, busy bool) {
	var b, f C.int64_t
	var r C.int
	C.idp_ckpt_stats(k.c, &b, &f, &r)
	return int64(b), int64(f), r != 0
}
