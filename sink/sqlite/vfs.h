// SQLite's public ABI (sqlite3.h), as far as a VFS that forwards every
// call to another needs it, declared by hand as native.h's entry points
// are: the log's buffer (walbuf.c) and the tests' VFS that counts writes
// and syncs (internal/syncvfs) include it. TestDeclaredAsSQLiteDeclares
// holds it to sqlite3.h.

#ifndef IDP_VFS_H
#define IDP_VFS_H

#include <stdint.h>

typedef struct sqlite3_file sqlite3_file;
typedef struct sqlite3_io_methods sqlite3_io_methods;
struct sqlite3_file {
	const sqlite3_io_methods *pMethods;
};
struct sqlite3_io_methods {
	int iVersion;
	int (*xClose)(sqlite3_file*);
	int (*xRead)(sqlite3_file*, void*, int, int64_t);
	int (*xWrite)(sqlite3_file*, const void*, int, int64_t);
	int (*xTruncate)(sqlite3_file*, int64_t);
	int (*xSync)(sqlite3_file*, int);
	int (*xFileSize)(sqlite3_file*, int64_t*);
	int (*xLock)(sqlite3_file*, int);
	int (*xUnlock)(sqlite3_file*, int);
	int (*xCheckReservedLock)(sqlite3_file*, int*);
	int (*xFileControl)(sqlite3_file*, int, void*);
	int (*xSectorSize)(sqlite3_file*);
	int (*xDeviceCharacteristics)(sqlite3_file*);
	int (*xShmMap)(sqlite3_file*, int, int, int, void volatile**);
	int (*xShmLock)(sqlite3_file*, int, int, int);
	void (*xShmBarrier)(sqlite3_file*);
	int (*xShmUnmap)(sqlite3_file*, int);
	int (*xFetch)(sqlite3_file*, int64_t, int, void**);
	int (*xUnfetch)(sqlite3_file*, int64_t, void*);
};
typedef struct sqlite3_vfs sqlite3_vfs;
typedef void (*sqlite3_syscall_ptr)(void);
struct sqlite3_vfs {
	int iVersion;
	int szOsFile;
	int mxPathname;
	sqlite3_vfs *pNext;
	const char *zName;
	void *pAppData;
	int (*xOpen)(sqlite3_vfs*, const char*, sqlite3_file*, int, int*);
	int (*xDelete)(sqlite3_vfs*, const char*, int);
	int (*xAccess)(sqlite3_vfs*, const char*, int, int*);
	int (*xFullPathname)(sqlite3_vfs*, const char*, int, char*);
	void *(*xDlOpen)(sqlite3_vfs*, const char*);
	void (*xDlError)(sqlite3_vfs*, int, char*);
	void (*(*xDlSym)(sqlite3_vfs*, void*, const char*))(void);
	void (*xDlClose)(sqlite3_vfs*, void*);
	int (*xRandomness)(sqlite3_vfs*, int, char*);
	int (*xSleep)(sqlite3_vfs*, int);
	int (*xCurrentTime)(sqlite3_vfs*, double*);
	int (*xGetLastError)(sqlite3_vfs*, int, char*);
	int (*xCurrentTimeInt64)(sqlite3_vfs*, int64_t*);
	int (*xSetSystemCall)(sqlite3_vfs*, const char*, sqlite3_syscall_ptr);
	sqlite3_syscall_ptr (*xGetSystemCall)(sqlite3_vfs*, const char*);
	const char *(*xNextSystemCall)(sqlite3_vfs*, const char*);
};
sqlite3_vfs *sqlite3_vfs_find(const char*);
int sqlite3_vfs_register(sqlite3_vfs*, int);

#endif
