// SQLite's page cache in huge pages, on Linux.
//
// SQLite asks for each page of its cache with a malloc of its own, about
// 4.3 KiB for a page of 4 KiB, and the writer's cache fills its 64 MiB
// (15,000 pages) in a large import. From glibc each such page was a fresh
// piece of a thread's arena, grown by an mprotect, and a page fault or two
// when first written: at 1M rows about 12,700 mprotect calls and 16,000
// faults on the writer's thread, each costing microseconds in a virtual
// machine. Here the memory methods SQLite is configured with hand out
// blocks of that size from one region reserved at SQLite's initialisation
// and marked for transparent huge pages, opened 2 MiB at a time, so the
// kernel fills it 2 MiB at a time (where huge pages are off, 4 KiB at a
// time as before, with an mprotect per 2 MiB instead of per block). Every
// other size goes to SQLite's own methods, as before.
//
// Blocks are bump-allocated from the region, and freed blocks kept on a
// list for the next page to cache, never returned to the system: the
// process keeps the largest page cache it has held, as glibc mostly did. A
// process that never opens SQLite reserves nothing; once the region is used
// up, or where it cannot be reserved, blocks come from malloc as before.

#if defined(__linux__)

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

// sqlite3_mem_methods, as sqlite3.h declares it.
typedef struct {
	void *(*xMalloc)(int);
	void (*xFree)(void*);
	void *(*xRealloc)(void*, int);
	int (*xSize)(void*);
	int (*xRoundup)(int);
	int (*xInit)(void*);
	void (*xShutdown)(void*);
	void *pAppData;
} idp_mem_methods;

int sqlite3_config(int, ...);

#define IDP_CONFIG_MALLOC 4    // SQLITE_CONFIG_MALLOC
#define IDP_CONFIG_GETMALLOC 5 // SQLITE_CONFIG_GETMALLOC

// The sizes served from the region: a page of 4 KiB with SQLite's headers
// (PgHdr1, and the pager's and the B-tree's extra, about 200 bytes).
#define IDP_SLOT_MIN 4097
#define IDP_SLOT 4608
#define IDP_REGION ((size_t)256 << 20) // address space only, until used: four caches of 64 MiB
#define IDP_HUGE ((uintptr_t)2 << 20)

static idp_mem_methods idp_base;
static pthread_mutex_t idp_mu = PTHREAD_MUTEX_INITIALIZER;
static char *idp_start, *idp_end; // the region, set once by idp_init
static char *idp_next;            // its first block not handed out yet
static char *idp_usable;          // the end of its part made readable and writable
static char *idp_stop;            // where handing out ends: idp_end, or where mprotect failed
static void *idp_free;            // freed blocks, linked through their first word

static int idp_in_region(const void *p) {
	return idp_start && (const char*)p >= idp_start && (const char*)p < idp_end;
}

static void *idp_malloc(int n) {
	if (n >= IDP_SLOT_MIN && n <= IDP_SLOT && idp_start) {
		void *p = NULL;
		pthread_mutex_lock(&idp_mu);
		if (idp_free) {
			p = idp_free;
			idp_free = *(void**)p;
		} else if (idp_stop - idp_next >= IDP_SLOT) {
			// The region is reserved without access, so that it counts
			// against no commit limit until used; it is opened 2 MiB at
			// a time.
			if (idp_usable - idp_next < IDP_SLOT) {
				if (mprotect(idp_usable, IDP_HUGE, PROT_READ | PROT_WRITE) == 0) idp_usable += IDP_HUGE;
				else idp_stop = idp_next; // no more blocks from the region
			}
			if (idp_usable - idp_next >= IDP_SLOT) {
				p = idp_next;
				idp_next += IDP_SLOT;
			}
		}
		pthread_mutex_unlock(&idp_mu);
		if (p) return p;
	}
	return idp_base.xMalloc(n);
}

static void idp_release(void *p) {
	pthread_mutex_lock(&idp_mu);
	*(void**)p = idp_free;
	idp_free = p;
	pthread_mutex_unlock(&idp_mu);
}

static void idp_freemem(void *p) {
	if (idp_in_region(p)) idp_release(p);
	else idp_base.xFree(p);
}

static int idp_size(void *p) {
	return idp_in_region(p) ? IDP_SLOT : idp_base.xSize(p);
}

static void *idp_realloc(void *p, int n) {
	if (!idp_in_region(p)) return idp_base.xRealloc(p, n);
	if (n >= IDP_SLOT_MIN && n <= IDP_SLOT) return p;
	void *q = idp_malloc(n);
	if (!q) return NULL; // p stays allocated, as realloc leaves it
	memcpy(q, p, n < IDP_SLOT ? (size_t)n : IDP_SLOT);
	idp_release(p);
	return q;
}

static int idp_roundup(int n) { return idp_base.xRoundup(n); }

static int idp_init(void *app) {
	int rc = idp_base.xInit(idp_base.pAppData);
	if (rc || idp_start) return rc;
	char *r = mmap(NULL, IDP_REGION + IDP_HUGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED) return 0; // blocks come from malloc
	char *s = (char*)(((uintptr_t)r + IDP_HUGE - 1) & ~(IDP_HUGE - 1));
#ifdef MADV_HUGEPAGE
	madvise(s, IDP_REGION, MADV_HUGEPAGE);
#endif
	pthread_mutex_lock(&idp_mu);
	idp_next = idp_usable = s;
	idp_end = idp_stop = s + IDP_REGION;
	idp_start = s;
	pthread_mutex_unlock(&idp_mu);
	return 0;
}

// The region outlives sqlite3_shutdown: blocks in it may still be held
// (SQLite frees its caches first, but a later initialisation reuses it).
static void idp_shutdown(void *app) { idp_base.xShutdown(idp_base.pAppData); }

// Runs when the program is loaded, before any thread or any use of SQLite,
// since SQLite takes a new allocator only before its initialisation. A
// program that configures SQLite's allocator itself replaces this one.
// idp_region_used returns the bytes of the region handed out so far, or -1
// when there is no region; for the tests.
int64_t idp_region_used(void) {
	pthread_mutex_lock(&idp_mu);
	int64_t n = idp_start ? (int64_t)(idp_next - idp_start) : -1;
	pthread_mutex_unlock(&idp_mu);
	return n;
}

__attribute__((constructor)) static void idp_configure_memory(void) {
	if (sqlite3_config(IDP_CONFIG_GETMALLOC, &idp_base) || !idp_base.xMalloc) return;
	idp_mem_methods m = {idp_malloc, idp_freemem, idp_realloc, idp_size, idp_roundup, idp_init, idp_shutdown, NULL};
	sqlite3_config(IDP_CONFIG_MALLOC, &m);
}

#endif
