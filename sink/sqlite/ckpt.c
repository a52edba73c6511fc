// The writer's checkpoints of the write-ahead log, moved off its commits.
//
// SQLite's automatic checkpoint runs on the committing connection, inside
// its COMMIT, once the log holds wal_autocheckpoint pages (1000): for a
// partition of an import that is the whole partition's pages read back
// from the log and written to the database, and two fsyncs, 130-210 ms of
// a 300-400 ms partition. Here the writer's connection runs a hook of its
// own instead (sqlite3_wal_hook replaces the automatic checkpoint's):
//
//   - Below the same threshold it does nothing, as SQLite's would.
//   - At or above it, it syncs the log before COMMIT returns, as the
//     checkpoint would have done first, so a commit that leaves the log
//     at or above the threshold is on disk when COMMIT returns
//     (synchronous=NORMAL syncs only there), and hands the checkpoint to
//     a thread with a connection of its own, which runs it (PASSIVE)
//     while the writer goes on with its next partition.
//   - Once the log held limit frames before the transaction that commits,
//     it waits for that thread's checkpoint, syncs the log, and
//     checkpoints on its own connection so that the log starts over
//     (idp_ckpt_restart: RESTART, waiting for other connections as far as
//     it may). The sync is its own: SQLite's checkpoint syncs the log
//     only before it copies frames, and one that another connection's
//     read leaves nothing to copy (a read begun after the last
//     checkpoint) returned, and with SQLite's own automatic checkpoint
//     returns, with the commit's log unsynced. A checkpoint that overlaps the writer's next transaction
//     never lets SQLite start the log over (the writer has read the log
//     by then), so without this the log grew to the size of the database.
//     After it the next transaction writes the log from its start again,
//     so the log file stays below limit frames and two transactions'
//     (and what other connections commit between the writer's), unless
//     a reader holds a snapshot of the log longer than wait_ms.
//     Counting the log before the transaction, not after it, leaves a
//     transaction of more than limit frames (a partition of 64 MiB of a
//     file is some 19,000 pages) to the thread every other commit:
//     counted after it, each such commit waited for a whole checkpoint of
//     its pages, 0.3-0.7 s a partition.
//
// Every call to the writer's handle (the hook runs inside its COMMIT)
// happens on the goroutine that holds the connection; the thread uses
// only its own handle. Connections are opened without SQLite's mutex, but
// SQLite's global state (the file locks of the unix VFS, the page cache's
// memory, pagemem.c) is guarded by its own mutexes.
//
// On Windows there is no thread: idp_ckpt_start returns NULL, and the
// writer's connection checkpoints inside its COMMIT as SQLite does by
// itself (a commit while another connection reads may return with its log
// unsynced there, as with SQLite alone).
#include "native.h"

#ifdef _WIN32

idp_ckpt *idp_ckpt_start(sqlite3 *db, int threshold, int limit, int busy_ms, int wait_ms) {
	(void)db;
	(void)threshold;
	(void)limit;
	(void)busy_ms;
	(void)wait_ms;
	return NULL;
}

void idp_ckpt_stop(sqlite3 *db, idp_ckpt *c, int threshold) {
	(void)db;
	(void)c;
	(void)threshold;
}

void idp_ckpt_detach(sqlite3 *db, idp_ckpt *c, int threshold) {
	(void)db;
	(void)c;
	(void)threshold;
}

void idp_ckpt_join(idp_ckpt *c) {
	(void)c;
}

void idp_ckpt_hold(idp_ckpt *c, int on) {
	(void)c;
	(void)on;
}

int idp_ckpt_pending(idp_ckpt *c) {
	(void)c;
	return 0;
}

void idp_ckpt_stats(idp_ckpt *c, int64_t *bg, int64_t *fg, int *busy) {
	(void)c;
	*bg = 0;
	*fg = 0;
	*busy = 0;
}

#else

#include <pthread.h>
#include <time.h>

#include "vfs.h" // a log file's sqlite3_file, synced through its methods

// These declarations, and every other one of SQLite's made by hand here,
// in vfs.h and native.h, are held to the header of the SQLite compiled in
// by TestDeclaredAsSQLiteDeclares.

void *sqlite3_wal_hook(sqlite3*, int (*)(void*, sqlite3*, const char*, int), void*);
int sqlite3_wal_autocheckpoint(sqlite3*, int);
int sqlite3_wal_checkpoint_v2(sqlite3*, const char*, int, int*, int*);
int sqlite3_open_v2(const char*, sqlite3**, int, const char*);
int sqlite3_close(sqlite3*);
int sqlite3_exec(sqlite3*, const char*, int (*)(void*, int, char**, char**), void*, char**);
const char *sqlite3_db_filename(sqlite3*, const char*);
int sqlite3_file_control(sqlite3*, const char*, int, void*);
int sqlite3_busy_handler(sqlite3*, int (*)(void*, int), void*);
int sqlite3_busy_timeout(sqlite3*, int);
int sqlite3_sleep(int);

#define IDP_OPEN_READWRITE 0x00000002
#define IDP_OPEN_NOMUTEX 0x00008000
#define IDP_FCNTL_JOURNAL_POINTER 28
#define IDP_SYNC_NORMAL 0x00002
#define IDP_CHECKPOINT_PASSIVE 0
#define IDP_CHECKPOINT_RESTART 2
#define IDP_BUSY 5

struct idp_ckpt {
	sqlite3 *db; // the thread's own connection
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int want, busy, stop; // under mu
	int held, pending;    // under mu: the thread's checkpoints held back (tests); one waiting for that to end
	int threshold, limit; // frames
	int busy_ms, wait_ms; // the writer's busy timeout; how long its checkpoint at the limit waits for others' locks
	double until;         // when that checkpoint stops waiting (idp_ckpt_busy)
	int last;             // frames of the log at the writer's last commit (the hook's alone)
	int64_t bg, fg;       // checkpoints by the thread, by the writer (under mu)
};

static void *idp_ckpt_main(void *arg) {
	idp_ckpt *c = arg;
	pthread_mutex_lock(&c->mu);
	for (;;) {
		while (!c->want && !c->stop) pthread_cond_wait(&c->cv, &c->mu);
		if (c->stop) break;
		c->want = 0;
		while (c->held && !c->stop) {
			c->pending = 1;
			pthread_cond_wait(&c->cv, &c->mu);
		}
		c->pending = 0;
		if (c->stop) break;
		c->busy = 1;
		pthread_mutex_unlock(&c->mu);
		// PASSIVE: copies what no reader still needs, waits for no one,
		// and syncs the log and then the database as every checkpoint
		// does. A failure (another checkpoint running) leaves the frames
		// to the next one.
		sqlite3_wal_checkpoint_v2(c->db, "main", IDP_CHECKPOINT_PASSIVE, NULL, NULL);
		pthread_mutex_lock(&c->mu);
		c->busy = 0;
		c->bg++;
		pthread_cond_broadcast(&c->cv);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

// idp_ckpt_sync syncs the write-ahead log of db's schema name, as a
// checkpoint does before it copies, and returns SQLite's code.
static int idp_ckpt_sync(sqlite3 *db, const char *name) {
	sqlite3_file *f = NULL;
	if (sqlite3_file_control(db, name, IDP_FCNTL_JOURNAL_POINTER, &f) != 0 || !f || !f->pMethods) return 1;
	return f->pMethods->xSync(f, IDP_SYNC_NORMAL);
}

// idp_now is a monotonic clock's time in seconds.
static double idp_now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

// idp_ckpt_busy is the writer's busy handler while it checkpoints at the
// limit: it waits, a millisecond at a time, until c->until.
static int idp_ckpt_busy(void *arg, int n) {
	(void)n;
	idp_ckpt *c = arg;
	if (idp_now() >= c->until) return 0;
	sqlite3_sleep(1);
	return 1;
}

// idp_ckpt_restart checkpoints the writer's log at the limit so that its
// next transaction writes the log from its start again, and returns
// SQLite's code. Other connections to the file are in the way of that,
// the process's own among them (the pipeline's lease renewals, which wait
// for the writer's lock and commit right after its COMMIT):
//
//   - Their commits checkpoint by themselves past the threshold, inside
//     their COMMIT. SQLite runs one checkpoint at a time and answers a
//     second SQLITE_BUSY at once, without calling the busy handler: that
//     answer, ignored, left the log to grow. It is asked again, a few
//     milliseconds apart, for as long as the busy timeout.
//   - One that commits while the checkpoint runs, from a snapshot of
//     the log taken before it ended, appends to the log rather than start
//     it over, and the writer's next transaction, reading that, appends
//     again: with a renewal between every two partitions the log never
//     started over (a 100M-row import's grew to 5 GB). RESTART holds the
//     write lock while it copies, so no commit comes between, and waits
//     until no reader reads from the log, after which the next
//     transaction, whichever connection's, starts it over.
//
// It waits for others' locks (another writer's transaction, a read that
// began before the checkpoint ended) at most wait_ms: a reader that holds
// its snapshot longer keeps the log from starting over, which copies what
// it may and leaves the log to grow by a transaction at each commit until
// that reader ends. The writer's busy timeout is set back afterwards.
static int idp_ckpt_restart(idp_ckpt *c, sqlite3 *db, const char *name) {
	double start = idp_now();
	int rc;
	for (int pause = 1;; pause = pause < 16 ? 2 * pause : pause) {
		c->until = idp_now() + c->wait_ms / 1e3;
		sqlite3_busy_handler(db, idp_ckpt_busy, c);
		int frames = -1;
		rc = sqlite3_wal_checkpoint_v2(db, name, IDP_CHECKPOINT_RESTART, &frames, NULL);
		sqlite3_busy_timeout(db, c->busy_ms);
		// frames is -1 only when the checkpoint could not begin: another
		// connection's runs.
		if (rc != IDP_BUSY || frames >= 0 || idp_now() - start >= c->busy_ms / 1e3) break;
		sqlite3_sleep(pause);
	}
	return rc;
}

static int idp_ckpt_hook(void *arg, sqlite3 *db, const char *name, int frames) {
	idp_ckpt *c = arg;
	// The frames the log held before this transaction: the log at the
	// writer's last commit, unless it has started over since, which its
	// holding fewer frames now shows (a log that started over and grew
	// past that again is taken for one that did not: more, never fewer).
	// At the writer's first commit the log is taken to have held all.
	int before = c->last < 0 ? frames : frames > c->last ? c->last : 0;
	c->last = frames;
	if (frames < c->threshold) return 0;
	pthread_mutex_lock(&c->mu);
	int stopped = c->stop;
	pthread_mutex_unlock(&c->mu);
	// The log on disk before COMMIT returns, whoever checkpoints it. Should
	// the sync fail, the checkpoint is run here, and syncs again.
	if (before < c->limit && !stopped && idp_ckpt_sync(db, name) == 0) {
		pthread_mutex_lock(&c->mu);
		c->want = 1;
		pthread_cond_signal(&c->cv);
		pthread_mutex_unlock(&c->mu);
		return 0;
	}
	pthread_mutex_lock(&c->mu);
	c->want = 0;
	while (c->busy) pthread_cond_wait(&c->cv, &c->mu);
	c->fg++;
	pthread_mutex_unlock(&c->mu);
	// SQLite's checkpoint syncs the log only when it has frames to copy:
	// one that another connection's read leaves nothing to copy (the
	// reader started after the last checkpoint, and the log has not
	// started over since) skips the sync, and with it this commit's. The
	// sync here makes that commit's log durable too; where the checkpoint
	// copies, its own sync finds nothing left to write. Failures are
	// ignored, as SQLite's hook ignores its checkpoint's.
	idp_ckpt_sync(db, name);
	idp_ckpt_restart(c, db, name);
	return 0;
}

idp_ckpt *idp_ckpt_start(sqlite3 *db, int threshold, int limit, int busy_ms, int wait_ms) {
	const char *path = sqlite3_db_filename(db, "main");
	if (!path || !*path || threshold <= 0) return NULL; // in memory, or no automatic checkpoints to move
	idp_ckpt *c = calloc(1, sizeof *c);
	if (!c) return NULL;
	c->threshold = threshold;
	c->limit = limit;
	c->busy_ms = busy_ms;
	c->wait_ms = wait_ms;
	c->last = -1;
	if (sqlite3_open_v2(path, &c->db, IDP_OPEN_READWRITE | IDP_OPEN_NOMUTEX, NULL) != 0 ||
	    sqlite3_exec(c->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL) != 0) {
		sqlite3_close(c->db);
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	if (pthread_create(&c->th, NULL, idp_ckpt_main, c) != 0) {
		pthread_cond_destroy(&c->cv);
		pthread_mutex_destroy(&c->mu);
		sqlite3_close(c->db);
		free(c);
		return NULL;
	}
	sqlite3_wal_hook(db, idp_ckpt_hook, c);
	return c;
}

void idp_ckpt_stop(sqlite3 *db, idp_ckpt *c, int threshold) {
	if (db) {
		idp_ckpt_detach(db, c, threshold);
		idp_ckpt_join(c);
		return;
	}
	// The connection is closed: the hook may still run, on a connection
	// database/sql keeps, where it checkpoints as SQLite's (c is kept).
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->th, NULL);
	sqlite3_close(c->db);
	c->db = NULL;
}

void idp_ckpt_detach(sqlite3 *db, idp_ckpt *c, int threshold) {
	sqlite3_wal_autocheckpoint(db, threshold); // SQLite's hook again: nothing on db uses c from now on
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

void idp_ckpt_join(idp_ckpt *c) {
	pthread_join(c->th, NULL);
	sqlite3_close(c->db);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

void idp_ckpt_hold(idp_ckpt *c, int on) {
	pthread_mutex_lock(&c->mu);
	c->held = on;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

int idp_ckpt_pending(idp_ckpt *c) {
	pthread_mutex_lock(&c->mu);
	int p = c->pending;
	pthread_mutex_unlock(&c->mu);
	return p;
}

void idp_ckpt_stats(idp_ckpt *c, int64_t *bg, int64_t *fg, int *busy) {
	pthread_mutex_lock(&c->mu);
	*bg = c->bg;
	*fg = c->fg;
	*busy = c->busy;
	pthread_mutex_unlock(&c->mu);
}

#endif
