//go:build cgo && !windows

// Package syncvfs is a test's view of what SQLite syncs: a VFS over the
// default one (unix) that forwards every call and counts, for the files
// whose names end as a test says, the bytes written and the syncs, and how
// many of those bytes no sync has covered yet. A sync of any handle of a
// file covers every handle's writes, as fsync covers the whole file.
//
// It resolves to the SQLite that github.com/mattn/go-sqlite3 compiles into
// the binary, as the driver's C does; only tests import it.
package syncvfs

/*
#cgo CFLAGS: -I${SRCDIR}/../..
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// SQLite's VFS interface, declared once for the driver's C and this.
#include "vfs.h"

// The counts, for the files whose names end in suffix.
static pthread_mutex_t sv_mu = PTHREAD_MUTEX_INITIALIZER;
static char sv_suffix[512];
static int64_t sv_written, sv_syncs, sv_synced; // sv_synced: of sv_written, what a sync covered

static sqlite3_vfs *sv_orig;
static sqlite3_vfs sv_vfs;

typedef struct {
	sqlite3_file base;
	sqlite3_file *real; // the default VFS's file, right after this
	int watched;
} sv_file;

#define REAL(f) (((sv_file*)(f))->real)

static int sv_close(sqlite3_file *f) { return REAL(f)->pMethods->xClose(REAL(f)); }
static int sv_read(sqlite3_file *f, void *p, int n, int64_t off) { return REAL(f)->pMethods->xRead(REAL(f), p, n, off); }
static int sv_write(sqlite3_file *f, const void *p, int n, int64_t off) {
	int rc = REAL(f)->pMethods->xWrite(REAL(f), p, n, off);
	if (rc == 0 && ((sv_file*)f)->watched) {
		pthread_mutex_lock(&sv_mu);
		sv_written += n;
		pthread_mutex_unlock(&sv_mu);
	}
	return rc;
}
static int sv_truncate(sqlite3_file *f, int64_t n) { return REAL(f)->pMethods->xTruncate(REAL(f), n); }
static int sv_sync(sqlite3_file *f, int flags) {
	if (!((sv_file*)f)->watched) return REAL(f)->pMethods->xSync(REAL(f), flags);
	// What was written before the sync began is what it covers.
	pthread_mutex_lock(&sv_mu);
	int64_t covered = sv_written;
	pthread_mutex_unlock(&sv_mu);
	int rc = REAL(f)->pMethods->xSync(REAL(f), flags);
	if (rc == 0) {
		pthread_mutex_lock(&sv_mu);
		sv_syncs++;
		if (covered > sv_synced) sv_synced = covered;
		pthread_mutex_unlock(&sv_mu);
	}
	return rc;
}
static int sv_filesize(sqlite3_file *f, int64_t *n) { return REAL(f)->pMethods->xFileSize(REAL(f), n); }
static int sv_lock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xLock(REAL(f), l); }
static int sv_unlock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xUnlock(REAL(f), l); }
static int sv_reserved(sqlite3_file *f, int *r) { return REAL(f)->pMethods->xCheckReservedLock(REAL(f), r); }
static int sv_fcntl(sqlite3_file *f, int op, void *arg) { return REAL(f)->pMethods->xFileControl(REAL(f), op, arg); }
static int sv_sector(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int sv_device(sqlite3_file *f) { return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }
static int sv_shmmap(sqlite3_file *f, int pg, int sz, int ext, void volatile **pp) { return REAL(f)->pMethods->xShmMap(REAL(f), pg, sz, ext, pp); }
static int sv_shmlock(sqlite3_file *f, int off, int n, int flags) { return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags); }
static void sv_shmbarrier(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int sv_shmunmap(sqlite3_file *f, int del) { return REAL(f)->pMethods->xShmUnmap(REAL(f), del); }
static int sv_fetch(sqlite3_file *f, int64_t off, int n, void **pp) { return REAL(f)->pMethods->xFetch(REAL(f), off, n, pp); }
static int sv_unfetch(sqlite3_file *f, int64_t off, void *p) { return REAL(f)->pMethods->xUnfetch(REAL(f), off, p); }

static const sqlite3_io_methods sv_methods = {
	3, sv_close, sv_read, sv_write, sv_truncate, sv_sync, sv_filesize, sv_lock, sv_unlock,
	sv_reserved, sv_fcntl, sv_sector, sv_device, sv_shmmap, sv_shmlock, sv_shmbarrier,
	sv_shmunmap, sv_fetch, sv_unfetch,
};

static int sv_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out) {
	(void)vfs;
	sv_file *s = (sv_file*)f;
	s->real = (sqlite3_file*)(s + 1);
	s->watched = 0;
	int rc = sv_orig->xOpen(sv_orig, name, s->real, flags, out);
	if (!s->real->pMethods) {
		f->pMethods = NULL;
		return rc;
	}
	f->pMethods = &sv_methods;
	if (name) {
		pthread_mutex_lock(&sv_mu);
		size_t n = strlen(name), m = strlen(sv_suffix);
		s->watched = m > 0 && n >= m && strcmp(name + n - m, sv_suffix) == 0;
		pthread_mutex_unlock(&sv_mu);
	}
	return rc;
}

static int sv_delete(sqlite3_vfs *v, const char *n, int d) { (void)v; return sv_orig->xDelete(sv_orig, n, d); }
static int sv_access(sqlite3_vfs *v, const char *n, int fl, int *r) { (void)v; return sv_orig->xAccess(sv_orig, n, fl, r); }
static int sv_fullpath(sqlite3_vfs *v, const char *n, int k, char *o) { (void)v; return sv_orig->xFullPathname(sv_orig, n, k, o); }

// sv_install registers the VFS as the default, once; 0 on success.
static int sv_install(void) {
	if (sv_orig) return 0;
	sqlite3_vfs *o = sqlite3_vfs_find(NULL);
	if (!o || o->iVersion < 3) return 1;
	sv_vfs = *o;
	sv_vfs.pNext = NULL;
	sv_vfs.zName = "idemport-syncvfs";
	sv_vfs.szOsFile = (int)sizeof(sv_file) + o->szOsFile;
	sv_vfs.xOpen = sv_open;
	sv_vfs.xDelete = sv_delete;
	sv_vfs.xAccess = sv_access;
	sv_vfs.xFullPathname = sv_fullpath;
	sv_orig = o;
	int rc = sqlite3_vfs_register(&sv_vfs, 1);
	if (rc != 0) sv_orig = NULL;
	return rc;
}

static void sv_watch(const char *suffix) {
	pthread_mutex_lock(&sv_mu);
	strncpy(sv_suffix, suffix, sizeof sv_suffix - 1);
	sv_written = sv_syncs = sv_synced = 0;
	pthread_mutex_unlock(&sv_mu);
}

static void sv_counts(int64_t *written, int64_t *syncs, int64_t *unsynced) {
	pthread_mutex_lock(&sv_mu);
	*written = sv_written;
	*syncs = sv_syncs;
	*unsynced = sv_written - sv_synced;
	pthread_mutex_unlock(&sv_mu);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	_ "github.com/mattn/go-sqlite3" // the SQLite this counts under
)

var mu sync.Mutex

// Counts is what the watched files saw since Watch.
type Counts struct {
	Written  int64 // bytes written
	Syncs    int64 // syncs that succeeded
	Unsynced int64 // bytes written that no sync begun after them has covered
}

// Watch makes the sync-counting VFS SQLite's default, for every connection
// opened from now on in this process (it stays so), and counts from zero
// the writes and syncs of the files opened from now on whose names end in
// suffix (the name SQLite opens: for a database's log, its path with
// "-wal").
func Watch(suffix string) error {
	mu.Lock()
	defer mu.Unlock()
	if rc := C.sv_install(); rc != 0 {
		return fmt.Errorf("register the sync-counting VFS: SQLite code %d", rc)
	}
	if suffix == "" {
		return errors.New("no file to watch")
	}
	cs := C.CString(suffix)
	defer C.free(unsafe.Pointer(cs))
	C.sv_watch(cs)
	return nil
}

// Read returns the counts so far.
func Read() Counts {
	var w, s, u C.int64_t
	C.sv_counts(&w, &s, &u)
	return Counts{Written: int64(w), Syncs: int64(s), Unsynced: int64(u)}
}
