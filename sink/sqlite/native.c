#include <stdio.h>

#include "native.h"

// SQLite's virtual table interface, as sqlite3.h declares it (version 1 of
// the module object; SQLite reads no further than iVersion says).
typedef struct sqlite3_module sqlite3_module;
typedef struct sqlite3_vtab {
	const sqlite3_module *pModule;
	int nRef;
	char *zErrMsg;
} sqlite3_vtab;
typedef struct sqlite3_vtab_cursor {
	sqlite3_vtab *pVtab;
} sqlite3_vtab_cursor;
typedef struct sqlite3_index_info {
	int nConstraint;
	struct sqlite3_index_constraint {
		int iColumn;
		unsigned char op;
		unsigned char usable;
		int iTermOffset;
	} *aConstraint;
	int nOrderBy;
	struct sqlite3_index_orderby {
		int iColumn;
		unsigned char desc;
	} *aOrderBy;
	struct sqlite3_index_constraint_usage {
		int argvIndex;
		unsigned char omit;
	} *aConstraintUsage;
	int idxNum;
	char *idxStr;
	int needToFreeIdxStr;
	int orderByConsumed;
	double estimatedCost;
	int64_t estimatedRows;
	int idxFlags;
	uint64_t colUsed;
} sqlite3_index_info;
struct sqlite3_module {
	int iVersion;
	int (*xCreate)(sqlite3*, void*, int, const char *const*, sqlite3_vtab**, char**);
	int (*xConnect)(sqlite3*, void*, int, const char *const*, sqlite3_vtab**, char**);
	int (*xBestIndex)(sqlite3_vtab*, sqlite3_index_info*);
	int (*xDisconnect)(sqlite3_vtab*);
	int (*xDestroy)(sqlite3_vtab*);
	int (*xOpen)(sqlite3_vtab*, sqlite3_vtab_cursor**);
	int (*xClose)(sqlite3_vtab_cursor*);
	int (*xFilter)(sqlite3_vtab_cursor*, int, const char*, int, sqlite3_value**);
	int (*xNext)(sqlite3_vtab_cursor*);
	int (*xEof)(sqlite3_vtab_cursor*);
	int (*xColumn)(sqlite3_vtab_cursor*, sqlite3_context*, int);
	int (*xRowid)(sqlite3_vtab_cursor*, int64_t*);
	int (*xUpdate)(sqlite3_vtab*, int, sqlite3_value**, int64_t*);
	int (*xBegin)(sqlite3_vtab*);
	int (*xSync)(sqlite3_vtab*);
	int (*xCommit)(sqlite3_vtab*);
	int (*xRollback)(sqlite3_vtab*);
	int (*xFindFunction)(sqlite3_vtab*, int, const char*, void (**)(sqlite3_context*, int, sqlite3_value**), void**);
	int (*xRename)(sqlite3_vtab*, const char*);
};

int sqlite3_create_module_v2(sqlite3*, const char*, const sqlite3_module*, void*, void(*)(void*));
int sqlite3_declare_vtab(sqlite3*, const char*);
int sqlite3_vtab_config(sqlite3*, int, ...);
void *sqlite3_value_pointer(sqlite3_value*, const char*);
void *sqlite3_malloc64(uint64_t);
void sqlite3_free(void*);
char *sqlite3_mprintf(const char*, ...);
void sqlite3_result_int64(sqlite3_context*, int64_t);
void sqlite3_result_double(sqlite3_context*, double);
void sqlite3_result_text(sqlite3_context*, const char*, int, void(*)(void*));
void sqlite3_result_error(sqlite3_context*, const char*, int);

#define SQLITE_ERROR 1
#define SQLITE_NOMEM 7
#define SQLITE_CONSTRAINT 19
#define SQLITE_INDEX_CONSTRAINT_EQ 2
#define SQLITE_VTAB_INNOCUOUS 2

static int idp_null(const idp_col *c, int64_t i) {
	if (!c->valid) return 0;
	int64_t b = c->off + i;
	return !((c->valid[b >> 3] >> (b & 7)) & 1);
}

// idp_civil sets *y, *m, *d to the proleptic Gregorian date days days
// after 1970-01-01 (H. Hinnant's algorithm, as sink.Civil).
static void idp_civil(int64_t days, int64_t *y, int64_t *m, int64_t *d) {
	int64_t z = days + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe/1460 + doe/36524 - doe/146096) / 365;
	int64_t doy = doe - (365*yoe + yoe/4 - yoe/100);
	int64_t mp = (5*doy + 2) / 153;
	*d = doy - (153*mp + 2)/5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = yoe + era * 400 + (*m <= 2);
}

// idp_date writes days since 1970-01-01 as sink.FormatDate does (Go's
// time package): YYYY-MM-DD, a year outside 0000-9999 with its sign and
// all its digits (-0001-12-31, 10000-01-01). out holds 32 bytes; it
// returns the length.
static int idp_date(int64_t days, char *out) {
	int64_t y, m, d;
	idp_civil(days, &y, &m, &d);
	char *p = out, digits[24];
	uint64_t u = y < 0 ? -(uint64_t)y : (uint64_t)y;
	int n = 0;
	if (y < 0) *p++ = '-';
	do { digits[n++] = (char)('0' + u % 10); u /= 10; } while (u);
	for (int k = n; k < 4; k++) *p++ = '0';
	while (n) *p++ = digits[--n];
	p[0] = '-'; p[1] = '0' + m/10; p[2] = '0' + m%10; p[3] = '-'; p[4] = '0' + d/10; p[5] = '0' + d%10;
	return (int)(p + 6 - out);
}

// The first and last microseconds since the epoch idp_ts writes:
// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z.
#define IDP_TS_MIN (-62167219200LL * 1000000)
#define IDP_TS_MAX (253402300800LL * 1000000 - 1)

// idp_pairs holds the two digits of 00 to 99.
static const char idp_pairs[] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

static void idp_pair(char *p, unsigned v) { memcpy(p, idp_pairs + 2*v, 2); }

// idp_ts writes microseconds since the epoch as 2006-01-02T15:04:05.000000Z
// (27 bytes), proleptic Gregorian, UTC, or returns -1 for a year outside
// 0000-9999. It is idp_civil's algorithm counted from 0000-01-01, so that
// every quantity is unsigned, with the digits written two at a time: the
// writer renders a timestamp column's every value, and this took half the
// time (12.5 ns a value against 27.8; the same text for every day of the
// range and 200M values at random).
static int idp_ts(int64_t us, char *out) {
	if (us < IDP_TS_MIN || us > IDP_TS_MAX) return -1;
	uint64_t u = (uint64_t)(us - IDP_TS_MIN);
	uint64_t secs = u / 1000000;
	unsigned frac = (unsigned)(u % 1000000);
	unsigned days = (unsigned)(secs / 86400), sod = (unsigned)(secs % 86400);
	// Days since 0000-03-01 of the era before year 0 (146097 days, 400
	// years), where idp_civil counts from 0000-03-01.
	unsigned z = days - 60 + 146097;
	unsigned era = z / 146097, doe = z - era * 146097;
	unsigned yoe = (doe - doe/1460 + doe/36524 - doe/146096) / 365;
	unsigned doy = doe - (365*yoe + yoe/4 - yoe/100);
	unsigned mp = (5*doy + 2) / 153;
	unsigned d = doy - (153*mp + 2)/5 + 1;
	unsigned m = mp < 10 ? mp + 3 : mp - 9;
	unsigned y = yoe + era*400 + (m <= 2) - 400;
	char *p = out;
	idp_pair(p, y / 100); idp_pair(p + 2, y % 100);
	p[4] = '-'; idp_pair(p + 5, m); p[7] = '-'; idp_pair(p + 8, d);
	p[10] = 'T'; idp_pair(p + 11, sod / 3600); p[13] = ':'; idp_pair(p + 14, sod % 3600 / 60);
	p[16] = ':'; idp_pair(p + 17, sod % 60); p[19] = '.';
	idp_pair(p + 20, frac / 10000); idp_pair(p + 22, frac / 100 % 100); idp_pair(p + 24, frac % 100);
	p[26] = 'Z';
	return 27;
}

// ---- the batch table ----

typedef struct {
	sqlite3_vtab base;
	int ncols;
} batch_tab;

typedef struct {
	sqlite3_vtab_cursor base;
	idp_batch *b;
	int64_t i;
	char ts[]; // 32 bytes per column: the text of its timestamp or date in row i
} batch_cursor;

static int batch_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out, char **err) {
	int ncols = (int)(intptr_t)aux;
	// "CREATE TABLE x(f,r," + ",c<k>" per column + ",batch HIDDEN)"
	size_t cap = 64 + (size_t)ncols * 16;
	char *ddl = malloc(cap);
	if (!ddl) return SQLITE_NOMEM;
	size_t len = (size_t)snprintf(ddl, cap, "CREATE TABLE x(f,r");
	for (int k = 0; k < ncols; k++) len += (size_t)snprintf(ddl + len, cap - len, ",c%d", k);
	snprintf(ddl + len, cap - len, ",batch HIDDEN)");
	int rc = sqlite3_declare_vtab(db, ddl);
	free(ddl);
	if (rc) return rc;
	sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
	batch_tab *t = sqlite3_malloc64(sizeof *t);
	if (!t) return SQLITE_NOMEM;
	memset(t, 0, sizeof *t);
	t->ncols = ncols;
	*out = &t->base;
	return 0;
}

static int batch_disconnect(sqlite3_vtab *v) {
	sqlite3_free(v);
	return 0;
}

// The table can only be read with its batch given: batch = ?.
static int batch_best_index(sqlite3_vtab *v, sqlite3_index_info *info) {
	int hidden = 2 + ((batch_tab*)v)->ncols;
	for (int i = 0; i < info->nConstraint; i++) {
		const struct sqlite3_index_constraint *c = &info->aConstraint[i];
		if (c->iColumn == hidden && c->op == SQLITE_INDEX_CONSTRAINT_EQ && c->usable) {
			info->aConstraintUsage[i].argvIndex = 1;
			info->aConstraintUsage[i].omit = 1;
			info->estimatedCost = 1;
			info->estimatedRows = 1000;
			return 0;
		}
	}
	return SQLITE_CONSTRAINT;
}

static int batch_open(sqlite3_vtab *v, sqlite3_vtab_cursor **out) {
	int ncols = ((batch_tab*)v)->ncols;
	batch_cursor *c = sqlite3_malloc64(sizeof *c + 32 * (uint64_t)ncols + 1);
	if (!c) return SQLITE_NOMEM;
	memset(c, 0, sizeof *c);
	*out = &c->base;
	return 0;
}

static int batch_close(sqlite3_vtab_cursor *cur) {
	sqlite3_free(cur);
	return 0;
}

static int batch_filter(sqlite3_vtab_cursor *cur, int idx, const char *idxs, int argc, sqlite3_value **argv) {
	batch_cursor *c = (batch_cursor*)cur;
	c->b = argc == 1 ? sqlite3_value_pointer(argv[0], IDP_BATCH_TYPE) : NULL;
	c->i = 0;
	if (!c->b) {
		sqlite3_free(cur->pVtab->zErrMsg);
		cur->pVtab->zErrMsg = sqlite3_mprintf("idemport_batch: no batch bound");
		return SQLITE_ERROR;
	}
	if (c->b->ncols != ((batch_tab*)cur->pVtab)->ncols) {
		sqlite3_free(cur->pVtab->zErrMsg);
		cur->pVtab->zErrMsg = sqlite3_mprintf("idemport_batch: a batch of %d columns, not %d", c->b->ncols, ((batch_tab*)cur->pVtab)->ncols);
		return SQLITE_ERROR;
	}
	c->b->pos = 0;
	return 0;
}

static int batch_next(sqlite3_vtab_cursor *cur) {
	batch_cursor *c = (batch_cursor*)cur;
	c->b->pos = ++c->i;
	return 0;
}

static int batch_eof(sqlite3_vtab_cursor *cur) {
	batch_cursor *c = (batch_cursor*)cur;
	return !c->b || c->i >= c->b->n;
}

static int batch_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int k) {
	batch_cursor *c = (batch_cursor*)cur;
	const idp_batch *b = c->b;
	int64_t i = c->i;
	if (k == 0) { sqlite3_result_int64(ctx, b->filekey); return 0; }
	if (k == 1) { sqlite3_result_int64(ctx, b->ord[i]); return 0; }
	k -= 2;
	if (k >= b->ncols) return 0; // the hidden column reads as NULL
	const idp_col *col = &b->cols[k];
	if (idp_null(col, i)) return 0;
	int64_t j = col->off + i;
	switch (col->kind) {
	case IDP_INT:
		sqlite3_result_int64(ctx, ((const int64_t*)col->values)[j]);
		break;
	case IDP_FLOAT:
		sqlite3_result_double(ctx, ((const double*)col->values)[j]);
		break;
	case IDP_BOOL:
		sqlite3_result_int64(ctx, (((const uint8_t*)col->values)[j >> 3] >> (j & 7)) & 1);
		break;
	case IDP_TS: {
		// The text lives in the cursor until this column is read for the
		// next row, after this row is written.
		char *ts = c->ts + 32*k;
		int len = idp_ts(((const int64_t*)col->values)[j], ts);
		if (len < 0) {
			c->b->ts_range = 1;
			sqlite3_result_error(ctx, "a timestamp outside the years 0000-9999", -1);
			return 0;
		}
		sqlite3_result_text(ctx, ts, len, (void(*)(void*))0);
		break;
	}
	case IDP_DATE: {
		char *text = c->ts + 32*k; // as a timestamp's
		sqlite3_result_text(ctx, text, idp_date(((const int32_t*)col->values)[j], text), (void(*)(void*))0);
		break;
	}
	default: {
		const int32_t *o = (const int32_t*)col->values;
		// A batch whose strings are all empty has no data buffer; a NULL
		// pointer would make the empty string a NULL.
		sqlite3_result_text(ctx, col->data ? col->data + o[j] : "", o[j+1] - o[j], (void(*)(void*))0);
	}
	}
	return 0;
}

static int batch_rowid(sqlite3_vtab_cursor *cur, int64_t *rowid) {
	*rowid = ((batch_cursor*)cur)->i;
	return 0;
}

// Eponymous-only: no xCreate, so the table exists on every connection the
// module is registered on, without a schema entry.
static const sqlite3_module batch_module = {
	.iVersion = 1,
	.xConnect = batch_connect,
	.xBestIndex = batch_best_index,
	.xDisconnect = batch_disconnect,
	.xOpen = batch_open,
	.xClose = batch_close,
	.xFilter = batch_filter,
	.xNext = batch_next,
	.xEof = batch_eof,
	.xColumn = batch_column,
	.xRowid = batch_rowid,
};

int idp_register(sqlite3 *db, int ncols) {
	char name[48];
	snprintf(name, sizeof name, "idemport_batch_%d", ncols);
	return sqlite3_create_module_v2(db, name, &batch_module, (void*)(intptr_t)ncols, NULL);
}

int idp_run(sqlite3 *db, sqlite3_stmt *st, idp_batch *b, int64_t *changed) {
	b->pos = 0;
	b->ts_range = 0;
	int rc = sqlite3_bind_pointer(st, 1, b, IDP_BATCH_TYPE, NULL);
	if (!rc) {
		rc = sqlite3_step(st);
		if (rc == IDP_DONE) { rc = 0; *changed = sqlite3_changes(db); }
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc && b->ts_range) rc = IDP_TS_RANGE;
	return rc;
}

// ---- natural keys, one row at a time ----

// idp_bind binds row i of column c to parameter n. ts is scratch for the
// column's timestamp or date text (32 bytes), which must live until the
// row is stepped.
static int idp_bind(sqlite3_stmt *st, int n, const idp_col *c, int64_t i, char *ts) {
	if (idp_null(c, i)) return sqlite3_bind_null(st, n);
	int64_t j = c->off + i;
	switch (c->kind) {
	case IDP_INT:
		return sqlite3_bind_int64(st, n, ((const int64_t*)c->values)[j]);
	case IDP_FLOAT:
		return sqlite3_bind_double(st, n, ((const double*)c->values)[j]);
	case IDP_BOOL:
		return sqlite3_bind_int64(st, n, (((const uint8_t*)c->values)[j >> 3] >> (j & 7)) & 1);
	case IDP_TS: {
		int len = idp_ts(((const int64_t*)c->values)[j], ts);
		if (len < 0) return IDP_TS_RANGE;
		return sqlite3_bind_text(st, n, ts, len, (void(*)(void*))0);
	}
	case IDP_DATE:
		return sqlite3_bind_text(st, n, ts, idp_date(((const int32_t*)c->values)[j], ts), (void(*)(void*))0);
	default: {
		const int32_t *o = (const int32_t*)c->values;
		/* A batch whose strings are all empty has no data buffer, and
		   SQLite binds a NULL pointer as NULL: an empty string must stay
		   an empty string. */
		const char *p = c->data ? c->data + o[j] : "";
		return sqlite3_bind_text(st, n, p, o[j+1] - o[j], (void(*)(void*))0);
	}
	}
}

static int idp_bind_row(sqlite3_stmt *st, int first, int ncols, const idp_col *cols, int64_t i, char *ts) {
	for (int c = 0; c < ncols; c++) {
		int rc = idp_bind(st, first + c, &cols[c], i, ts + 32*c);
		if (rc) return rc;
	}
	return 0;
}

// idp_natural applies rows by natural key, one at a time, and counts each
// exactly: probe (parameters: the key columns, then file key, ordinal,
// version) returns one row with 1 when the stored row is newer (stale) or 0,
// or no row when the key is new; then the upsert st (parameters: file key,
// ordinal, the columns) runs. counts receives inserted, updated, unchanged
// and stale. On failure it returns the code and the failing row in *failed.
//
// When rekey is not NULL, an upsert with st's parameters that also writes
// the key, the probe's row has a second column, 1 when the stored key is
// written otherwise than the row's (equal in value), and rekey runs instead
// of st for such a row.
//
// When relin is not NULL (the file holds keys the table may compare as
// one: sink.Target.Loose), a stored row the upsert left unchanged, not
// newer, takes the row's lineage by relin (parameters: the key columns,
// then file key and ordinal), which leaves a row of the same file as it
// is; the row stays counted unchanged.
//
// When ins is not NULL, a plain INSERT with st's parameters, each row is
// first inserted with it: done, the row is new, with one lookup of its key
// instead of two. A constraint it fails (the key is stored, or another
// constraint the upsert will report) changes nothing, and the row goes
// through the probe and the upsert; any other failure is the row's.
int idp_natural(sqlite3 *db, sqlite3_stmt *ins, sqlite3_stmt *probe, sqlite3_stmt *st, sqlite3_stmt *rekey, sqlite3_stmt *relin, int nkey, const int *keycols, int vercol,
		int64_t filekey, const int64_t *ord, int64_t n, int ncols, const idp_col *cols, int64_t *counts, int64_t *failed) {
	char *ts = malloc(32*(size_t)ncols + 1), *pts = malloc(32*((size_t)nkey+1));
	if (!ts || !pts) { free(ts); free(pts); *failed = 0; return SQLITE_NOMEM; }
	int rc = 0;
	for (int64_t i = 0; i < n && !rc; i++) {
		if (ins) {
			rc = sqlite3_bind_int64(ins, 1, filekey);
			if (!rc) rc = sqlite3_bind_int64(ins, 2, ord[i]);
			if (!rc) rc = idp_bind_row(ins, 3, ncols, cols, i, ts);
			if (!rc) rc = sqlite3_step(ins);
			sqlite3_reset(ins);
			// A row a trigger skipped (RAISE(IGNORE)) changes nothing: unchanged.
			if (rc == IDP_DONE) { rc = 0; counts[sqlite3_changes(db) ? 0 : 2]++; continue; }
			if ((rc & 0xff) != SQLITE_CONSTRAINT) { *failed = i; break; }
			rc = 0;
		}
		int exists = 0, stale = 0, other = 0;
		for (int k = 0; k < nkey && !rc; k++) rc = idp_bind(probe, k+1, &cols[keycols[k]], i, pts + 32*k);
		if (!rc) rc = sqlite3_bind_int64(probe, nkey+1, filekey);
		if (!rc) rc = sqlite3_bind_int64(probe, nkey+2, ord[i]);
		if (!rc && vercol >= 0) rc = idp_bind(probe, nkey+3, &cols[vercol], i, pts + 32*nkey);
		if (!rc) {
			rc = sqlite3_step(probe);
			if (rc == IDP_ROW) {
				exists = 1;
				stale = sqlite3_column_int(probe, 0);
				if (rekey) other = sqlite3_column_int(probe, 1);
				rc = 0;
			}
			else if (rc == IDP_DONE) rc = 0;
		}
		sqlite3_reset(probe);
		sqlite3_stmt *up = other ? rekey : st;
		if (!rc) rc = sqlite3_bind_int64(up, 1, filekey);
		if (!rc) rc = sqlite3_bind_int64(up, 2, ord[i]);
		if (!rc) rc = idp_bind_row(up, 3, ncols, cols, i, ts);
		int changed = 0;
		if (!rc) {
			rc = sqlite3_step(up);
			if (rc == IDP_DONE) { rc = 0; changed = sqlite3_changes(db); }
		}
		sqlite3_reset(up);
		if (!rc && relin && exists && !changed && !stale) {
			for (int k = 0; k < nkey && !rc; k++) rc = idp_bind(relin, k+1, &cols[keycols[k]], i, pts + 32*k);
			if (!rc) rc = sqlite3_bind_int64(relin, nkey+1, filekey);
			if (!rc) rc = sqlite3_bind_int64(relin, nkey+2, ord[i]);
			if (!rc) { rc = sqlite3_step(relin); if (rc == IDP_DONE) rc = 0; }
			sqlite3_reset(relin);
		}
		if (rc) { *failed = i; break; }
		if (!exists) counts[changed ? 0 : 2]++;
		else if (changed) counts[1]++;
		else if (stale) counts[3]++;
		else counts[2]++;
	}
	sqlite3_clear_bindings(st);
	if (rekey) sqlite3_clear_bindings(rekey);
	if (relin) sqlite3_clear_bindings(relin);
	sqlite3_clear_bindings(probe);
	if (ins) sqlite3_clear_bindings(ins);
	free(ts);
	free(pts);
	return rc;
}
