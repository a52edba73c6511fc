// The write-ahead log's frames written in large writes.
//
// SQLite writes each frame of the log with two writes, its 24-byte header
// and then its page (wal.c, walWriteOneFrame): two pwrite calls per page
// of 4 KiB, some 75,000 for an import of 1M orders rows, every one of them
// a system call on the writer's thread inside its statements and COMMITs.
// The connections the driver opens use this VFS, which forwards every call
// to the default VFS (unix) and gathers the writes that append to a log
// file into a buffer of WB_CAP bytes, written with one call when it is
// full. The buffer is written before any other call on the file (a read,
// a sync, a truncation, its size, a file control, its close), before a
// write anywhere else in it, and, above all, by the write that ends a
// commit frame (a frame whose header gives the database's size after the
// commit, the frame that makes a transaction count), or that writes a
// commit frame's header again (see wb_write): so when SQLite
// publishes a commit in the log's index (after its last frame's writes
// returned), every frame of it is in the file, as before, whatever
// connection or process reads it next; and a write that fails fails the
// COMMIT that made it, as before. What stays in the buffer past a call
// is frames of a transaction not committed yet (pages spilled from the
// cache), which no other connection reads (they lie past the log's last
// commit) and which this connection reads through the file, after the
// buffer is written. A kill loses them as it lost an uncommitted
// transaction's frames before.
//
// The default VFS is looked up at each open, so that a VFS a test makes
// the default (internal/syncvfs) still sees every write, now in fewer
// calls.

#if !defined(_WIN32)

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vfs.h"

#define IDP_OPEN_WAL 0x00080000 // SQLITE_OPEN_WAL
#define IDP_CANTOPEN 14         // SQLITE_CANTOPEN
#define WB_FRAME_HDR 24        // a log frame's header
#define WB_LOG_HDR 32          // the log file's header
// The unix VFS writes at most 128 KiB - 1 bytes in one call (a longer
// write's length is cut to its low 17 bits, os_unix.c's seekAndWriteFd,
// and fails as a full disk): the buffer holds less.
#define WB_CAP (120 << 10)

// The file space reserved for the default VFS's file, after a wb_file:
// four times what the default VFS asked for when this one was made, so
// that a default VFS a test installs over it (which adds a header of its
// own) still fits.
static int wb_room;
static sqlite3_vfs *wb_orig; // the default VFS when this one was made
static sqlite3_vfs wb_vfs;

typedef struct {
	sqlite3_file base;
	sqlite3_file *real; // the default VFS's file, right after this
	int wal;            // a log file: its appends are gathered
	char *buf;          // the gathered bytes, to be written at start
	int len;
	int64_t start;
	int64_t end;     // the end of the bytes written through this file (see wb_write)
	int commit_next; // the header of a commit frame was the last write
	// Counts for the tests: writes SQLite made to log files, and writes
	// made to the files beneath.
	int64_t calls, writes;
} wb_file;

static pthread_mutex_t wb_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t wb_calls, wb_writes; // of closed log files, and totals

#define REAL(f) (((wb_file*)(f))->real)

// wb_flush writes the gathered bytes; on failure they are dropped and the
// error returned, to the call that needed them written.
static int wb_flush(wb_file *w) {
	if (w->len == 0) return 0;
	int n = w->len;
	w->len = 0;
	w->writes++;
	return w->real->pMethods->xWrite(w->real, w->buf, n, w->start);
}

static int wb_close(sqlite3_file *f) {
	wb_file *w = (wb_file*)f;
	int rc = wb_flush(w);
	int rc2 = REAL(f)->pMethods->xClose(REAL(f));
	if (w->wal) {
		pthread_mutex_lock(&wb_mu);
		wb_calls += w->calls;
		wb_writes += w->writes;
		pthread_mutex_unlock(&wb_mu);
	}
	free(w->buf);
	w->buf = NULL;
	return rc ? rc : rc2;
}

static int wb_read(sqlite3_file *f, void *p, int n, int64_t off) {
	int rc = wb_flush((wb_file*)f);
	return rc ? rc : REAL(f)->pMethods->xRead(REAL(f), p, n, off);
}

// The database's size in pages after the commit, in a frame's header: 0
// in a frame that is not a transaction's last.
static uint32_t wb_commit_size(const unsigned char *h) {
	return (uint32_t)h[4] << 24 | (uint32_t)h[5] << 16 | (uint32_t)h[6] << 8 | h[7];
}

static int wb_write(sqlite3_file *f, const void *p, int n, int64_t off) {
	wb_file *w = (wb_file*)f;
	if (!w->wal) return REAL(f)->pMethods->xWrite(REAL(f), p, n, off);
	w->calls++;
	int commit = w->commit_next;
	w->commit_next = n == WB_FRAME_HDR && off >= WB_LOG_HDR && wb_commit_size(p) != 0;
	// A write at the start of the file begins a log (its header): nothing
	// after it was written yet. A commit frame's header written where this
	// file wrote before is no append followed by its page: SQLite rewrites
	// the headers of a transaction's frames, their checksums, at its COMMIT
	// when it wrote pages of it again over frames it had spilled
	// (wal.c, walRewriteChecksums), the commit frame's last, and then
	// publishes the commit. Left in the buffer, that header would reach the
	// file only at the next call, and a kill before it lose the commit (a
	// recovery of the log stops at a frame whose checksum fails).
	if (off == 0) w->end = 0;
	int rewritten = w->commit_next && off < w->end;
	if (off + n > w->end) w->end = off + n;
	int rc = 0;
	if (w->len > 0 && (off != w->start + w->len || w->len + n > WB_CAP)) rc = wb_flush(w);
	if (rc) return rc;
	if (!w->buf && n <= WB_CAP) w->buf = malloc(WB_CAP);
	if (!w->buf || n > WB_CAP) {
		w->writes++;
		return REAL(f)->pMethods->xWrite(REAL(f), p, n, off);
	}
	if (w->len == 0) w->start = off;
	memcpy(w->buf + w->len, p, (size_t)n);
	w->len += n;
	// The page of a commit frame: the transaction is written whole before
	// SQLite makes it visible.
	return commit || rewritten ? wb_flush(w) : 0;
}

static int wb_truncate(sqlite3_file *f, int64_t n) {
	wb_file *w = (wb_file*)f;
	int rc = wb_flush(w);
	if (n < w->end) w->end = n;
	return rc ? rc : REAL(f)->pMethods->xTruncate(REAL(f), n);
}
static int wb_sync(sqlite3_file *f, int flags) {
	int rc = wb_flush((wb_file*)f);
	return rc ? rc : REAL(f)->pMethods->xSync(REAL(f), flags);
}
static int wb_filesize(sqlite3_file *f, int64_t *n) {
	int rc = wb_flush((wb_file*)f);
	return rc ? rc : REAL(f)->pMethods->xFileSize(REAL(f), n);
}
static int wb_fcntl(sqlite3_file *f, int op, void *arg) {
	int rc = wb_flush((wb_file*)f);
	return rc ? rc : REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int wb_lock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xLock(REAL(f), l); }
static int wb_unlock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xUnlock(REAL(f), l); }
static int wb_reserved(sqlite3_file *f, int *r) { return REAL(f)->pMethods->xCheckReservedLock(REAL(f), r); }
static int wb_sector(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int wb_device(sqlite3_file *f) { return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }
static int wb_shmmap(sqlite3_file *f, int pg, int sz, int ext, void volatile **pp) { return REAL(f)->pMethods->xShmMap(REAL(f), pg, sz, ext, pp); }
static int wb_shmlock(sqlite3_file *f, int off, int n, int flags) { return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags); }
static void wb_shmbarrier(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int wb_shmunmap(sqlite3_file *f, int del) { return REAL(f)->pMethods->xShmUnmap(REAL(f), del); }
static int wb_fetch(sqlite3_file *f, int64_t off, int n, void **pp) {
	int rc = wb_flush((wb_file*)f);
	return rc ? rc : REAL(f)->pMethods->xFetch(REAL(f), off, n, pp);
}
static int wb_unfetch(sqlite3_file *f, int64_t off, void *p) { return REAL(f)->pMethods->xUnfetch(REAL(f), off, p); }

static const sqlite3_io_methods wb_methods = {
	3, wb_close, wb_read, wb_write, wb_truncate, wb_sync, wb_filesize, wb_lock, wb_unlock,
	wb_reserved, wb_fcntl, wb_sector, wb_device, wb_shmmap, wb_shmlock, wb_shmbarrier,
	wb_shmunmap, wb_fetch, wb_unfetch,
};

// wb_base is the VFS beneath: the default one, unless it is this one or
// its files would not fit in the room reserved.
static sqlite3_vfs *wb_base(void) {
	sqlite3_vfs *o = sqlite3_vfs_find(NULL);
	if (!o || o == &wb_vfs || o->szOsFile > wb_room || o->iVersion < 3) return wb_orig;
	return o;
}

static int wb_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out) {
	(void)vfs;
	wb_file *w = (wb_file*)f;
	memset(w, 0, sizeof *w);
	w->real = (sqlite3_file*)(w + 1);
	w->wal = (flags & IDP_OPEN_WAL) != 0;
	sqlite3_vfs *b = wb_base();
	int rc = b->xOpen(b, name, w->real, flags, out);
	if (!w->real->pMethods) {
		f->pMethods = NULL;
		return rc ? rc : IDP_CANTOPEN;
	}
	f->pMethods = &wb_methods;
	return rc;
}

static int wb_delete(sqlite3_vfs *v, const char *n, int d) { (void)v; sqlite3_vfs *b = wb_base(); return b->xDelete(b, n, d); }
static int wb_access(sqlite3_vfs *v, const char *n, int fl, int *r) { (void)v; sqlite3_vfs *b = wb_base(); return b->xAccess(b, n, fl, r); }
static int wb_fullpath(sqlite3_vfs *v, const char *n, int k, char *o) { (void)v; sqlite3_vfs *b = wb_base(); return b->xFullPathname(b, n, k, o); }

// idp_walbuf_install registers the VFS, under the name idemport-wal, not
// as the default; 0 on success. Called once, before the first connection.
int idp_walbuf_install(void) {
	sqlite3_vfs *o = sqlite3_vfs_find(NULL);
	if (!o || o->iVersion < 3) return 1;
	wb_vfs = *o;
	wb_vfs.pNext = NULL;
	wb_vfs.zName = "idemport-wal";
	wb_room = 4 * o->szOsFile;
	wb_vfs.szOsFile = (int)sizeof(wb_file) + wb_room;
	wb_vfs.xOpen = wb_open;
	wb_vfs.xDelete = wb_delete;
	wb_vfs.xAccess = wb_access;
	wb_vfs.xFullPathname = wb_fullpath;
	wb_orig = o;
	return sqlite3_vfs_register(&wb_vfs, 0);
}

// idp_walbuf_counts sets the writes SQLite made to the log files closed
// so far and the writes made to the files beneath for them.
void idp_walbuf_counts(int64_t *calls, int64_t *writes) {
	pthread_mutex_lock(&wb_mu);
	*calls = wb_calls;
	*writes = wb_writes;
	pthread_mutex_unlock(&wb_mu);
}

#endif
