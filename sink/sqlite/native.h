// The C half of the SQLite writer: the SQLite entry points it needs, the
// description of an Arrow column it reads, and the batch table.
//
// The entry points resolve to the SQLite that github.com/mattn/go-sqlite3
// compiles into the binary, so everything here runs on the very connection
// database/sql holds. The structures declared below are SQLite's public,
// stable ABI (sqlite3.h), declared here only as far as this code reads them.

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
typedef struct sqlite3_value sqlite3_value;
typedef struct sqlite3_context sqlite3_context;

int sqlite3_prepare_v2(sqlite3*, const char*, int, sqlite3_stmt**, const char**);
int sqlite3_bind_int64(sqlite3_stmt*, int, int64_t);
int sqlite3_bind_double(sqlite3_stmt*, int, double);
int sqlite3_bind_text(sqlite3_stmt*, int, const char*, int, void(*)(void*));
int sqlite3_bind_null(sqlite3_stmt*, int);
int sqlite3_bind_pointer(sqlite3_stmt*, int, void*, const char*, void(*)(void*));
int sqlite3_clear_bindings(sqlite3_stmt*);
int sqlite3_step(sqlite3_stmt*);
int sqlite3_reset(sqlite3_stmt*);
int sqlite3_changes(sqlite3*);
int sqlite3_finalize(sqlite3_stmt*);
int sqlite3_column_int(sqlite3_stmt*, int);
int sqlite3_stmt_status(sqlite3_stmt*, int, int);
const char *sqlite3_errmsg(sqlite3*);
int sqlite3_get_autocommit(sqlite3*);
void *sqlite3_db_mutex(sqlite3*); // sqlite3_mutex*, NULL without a mutex of its own

#define IDP_OK 0
#define IDP_ROW 100
#define IDP_DONE 101
#define IDP_TS_RANGE 10000 // not an SQLite code

enum { IDP_INT = 1, IDP_FLOAT, IDP_BOOL, IDP_TS, IDP_TEXT, IDP_DATE };

// One column of an Arrow record batch, as its raw buffers.
typedef struct {
	int kind;
	const uint8_t *valid;  // validity bitmap, NULL when no value is null
	int64_t off;           // the array's offset into its buffers
	const void *values;    // int64_t*, double*, bool bitmap, int32_t text offsets or int32_t days
	const char *data;      // text bytes
} idp_col;

// A batch of rows for the batch table: a file key, the rows' ordinals, and
// their columns. pos is the row the table is on, so that a statement that
// fails names the row it failed on; ts_range is set when a timestamp could
// not be written.
typedef struct {
	int64_t filekey;
	const int64_t *ord;
	int64_t n;
	int ncols;
	const idp_col *cols;
	int64_t pos;
	int ts_range;
} idp_batch;

// IDP_BATCH_TYPE tags the pointer a statement binds for the batch table.
#define IDP_BATCH_TYPE "idemport_batch"

// idp_register makes the table-valued function idemport_batch_N (N = ncols)
// available on db. Its columns are f (the file key), r (the ordinal), c0 …
// c{N-1}, and a hidden column batch that must be bound to an idp_batch with
// sqlite3_bind_pointer and type IDP_BATCH_TYPE:
//
//	INSERT INTO t SELECT f, r, c0, c1 FROM idemport_batch_2 WHERE batch = ?1
//
// so one statement step writes a whole batch.
int idp_register(sqlite3 *db, int ncols);

// idp_run binds b to parameter 1 of st, steps st once, and returns the
// SQLite code (0 on success) and the rows it changed in *changed.
int idp_run(sqlite3 *db, sqlite3_stmt *st, idp_batch *b, int64_t *changed);

// idp_natural applies rows by natural key one at a time; see native.c.
int idp_natural(sqlite3 *db, sqlite3_stmt *ins, sqlite3_stmt *probe, sqlite3_stmt *st, sqlite3_stmt *rekey, sqlite3_stmt *relin, int nkey, const int *keycols, int vercol,
		int64_t filekey, const int64_t *ord, int64_t n, int ncols, const idp_col *cols, int64_t *counts, int64_t *failed);

// idp_ckpt moves the automatic checkpoints of a writer's connection to a
// thread of its own (ckpt.c). idp_ckpt_start installs it on db, whose
// automatic checkpoint runs at threshold frames and whose busy timeout is
// busy_ms, and lets the log grow to limit frames before the writer
// checkpoints itself again, so that the log starts over, waiting at most
// wait_ms for other connections' locks (and at most busy_ms for another
// connection's checkpoint to end); it returns NULL (and changes nothing)
// where it cannot. idp_ckpt_stop gives db back
// SQLite's automatic checkpoint at threshold (db NULL: the connection is
// closed), stops and joins the thread and closes its connection.
// idp_ckpt_detach does the same for db but does not wait: the thread ends
// once a checkpoint it runs has ended, and idp_ckpt_join, called once
// after it (from any thread), waits for that, closes the thread's
// connection and frees c.
// idp_ckpt_hold holds the thread's checkpoints back (on) or lets them run,
// and idp_ckpt_pending says whether one waits for that: for tests that need
// a checkpoint to run inside the writer's next transaction.
typedef struct idp_ckpt idp_ckpt;
idp_ckpt *idp_ckpt_start(sqlite3 *db, int threshold, int limit, int busy_ms, int wait_ms);
void idp_ckpt_stop(sqlite3 *db, idp_ckpt *c, int threshold);
void idp_ckpt_detach(sqlite3 *db, idp_ckpt *c, int threshold);
void idp_ckpt_join(idp_ckpt *c);
void idp_ckpt_stats(idp_ckpt *c, int64_t *bg, int64_t *fg, int *busy);
void idp_ckpt_hold(idp_ckpt *c, int on);
int idp_ckpt_pending(idp_ckpt *c);
