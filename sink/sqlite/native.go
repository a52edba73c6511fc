package sqlite

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// The few SQLite entry points the write loop needs. They resolve to the
// SQLite that github.com/mattn/go-sqlite3 compiles into the binary, so the
// statements below run on the very connection database/sql holds.
typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
int sqlite3_prepare_v2(sqlite3*, const char*, int, sqlite3_stmt**, const char**);
int sqlite3_bind_int64(sqlite3_stmt*, int, int64_t);
int sqlite3_bind_double(sqlite3_stmt*, int, double);
int sqlite3_bind_text(sqlite3_stmt*, int, const char*, int, void(*)(void*));
int sqlite3_bind_null(sqlite3_stmt*, int);
int sqlite3_clear_bindings(sqlite3_stmt*);
int sqlite3_step(sqlite3_stmt*);
int sqlite3_reset(sqlite3_stmt*);
int sqlite3_changes(sqlite3*);
int sqlite3_finalize(sqlite3_stmt*);
int sqlite3_column_int(sqlite3_stmt*, int);
const char *sqlite3_errmsg(sqlite3*);

#define IDP_ROW 100
#define IDP_DONE 101
#define IDP_TS_RANGE 10000 // not an SQLite code

enum { IDP_INT = 1, IDP_FLOAT, IDP_BOOL, IDP_TS, IDP_TEXT };

// One column of an Arrow record batch, as its raw buffers.
typedef struct {
	int kind;
	const uint8_t *valid;  // validity bitmap, NULL when no value is null
	int64_t off;           // the array's offset into its buffers
	const void *values;    // int64_t*, double*, bool bitmap, or int32_t text offsets
	const char *data;      // text bytes
} idp_col;

static int idp_null(const idp_col *c, int64_t i) {
	if (!c->valid) return 0;
	int64_t b = c->off + i;
	return !((c->valid[b >> 3] >> (b & 7)) & 1);
}

// idp_ts writes microseconds since the epoch as 2006-01-02T15:04:05.000000Z
// (27 bytes), proleptic Gregorian, UTC.
static int idp_ts(int64_t us, char *out) {
	int64_t secs = us / 1000000, frac = us % 1000000;
	if (frac < 0) { frac += 1000000; secs -= 1; }
	int64_t days = secs / 86400, sod = secs % 86400;
	if (sod < 0) { sod += 86400; days -= 1; }
	// days to civil date (H. Hinnant's algorithm)
	int64_t z = days + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe/1460 + doe/36524 - doe/146096) / 365;
	int64_t y = yoe + era * 400;
	int64_t doy = doe - (365*yoe + yoe/4 - yoe/100);
	int64_t mp = (5*doy + 2) / 153;
	int64_t d = doy - (153*mp + 2)/5 + 1;
	int64_t m = mp < 10 ? mp + 3 : mp - 9;
	if (m <= 2) y++;
	if (y < 0 || y > 9999) return -1;
	int h = (int)(sod / 3600), mi = (int)(sod % 3600 / 60), s = (int)(sod % 60);
	char *p = out;
	p[0] = '0' + y/1000; p[1] = '0' + y/100%10; p[2] = '0' + y/10%10; p[3] = '0' + y%10;
	p[4] = '-'; p[5] = '0' + m/10; p[6] = '0' + m%10; p[7] = '-'; p[8] = '0' + d/10; p[9] = '0' + d%10;
	p[10] = 'T'; p[11] = '0' + h/10; p[12] = '0' + h%10; p[13] = ':'; p[14] = '0' + mi/10; p[15] = '0' + mi%10;
	p[16] = ':'; p[17] = '0' + s/10; p[18] = '0' + s%10; p[19] = '.';
	for (int k = 25; k >= 20; k--) { p[k] = '0' + frac % 10; frac /= 10; }
	p[26] = 'Z';
	return 27;
}

// idp_bind binds row i of column c to parameter n. ts is scratch for the
// column's timestamp text, which must live until the row is stepped.
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
	default: {
		const int32_t *o = (const int32_t*)c->values;
		return sqlite3_bind_text(st, n, c->data + o[j], o[j+1] - o[j], (void(*)(void*))0);
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

// idp_upsert steps the single-row upsert st once per row: parameters are the
// file key, the ordinal, then the columns. It adds the rows changed
// (inserted or updated) to *changed. On failure it returns the SQLite code
// and the failing row in *failed.
static int idp_upsert(sqlite3 *db, sqlite3_stmt *st, int64_t filekey, const int64_t *ord, int64_t n,
		int ncols, const idp_col *cols, int64_t *changed, int64_t *failed) {
	char ts[32*ncols + 1];
	for (int64_t i = 0; i < n; i++) {
		int rc = sqlite3_bind_int64(st, 1, filekey);
		if (!rc) rc = sqlite3_bind_int64(st, 2, ord[i]);
		if (!rc) rc = idp_bind_row(st, 3, ncols, cols, i, ts);
		if (!rc) {
			rc = sqlite3_step(st);
			if (rc == IDP_DONE) { rc = 0; *changed += sqlite3_changes(db); }
		}
		sqlite3_reset(st);
		if (rc) { *failed = i; sqlite3_clear_bindings(st); return rc; }
	}
	sqlite3_clear_bindings(st);
	return 0;
}

// idp_natural applies rows by natural key, one at a time, and counts each
// exactly: probe (parameters: the key columns, then file key, ordinal,
// version) returns one row with 1 when the stored row is newer (stale) or 0,
// or no row when the key is new; then the upsert runs. counts receives
// inserted, updated, unchanged and stale.
static int idp_natural(sqlite3 *db, sqlite3_stmt *probe, sqlite3_stmt *st, int nkey, const int *keycols, int vercol,
		int64_t filekey, const int64_t *ord, int64_t n, int ncols, const idp_col *cols, int64_t *counts, int64_t *failed) {
	char ts[32*ncols + 1], pts[32*(nkey+1)];
	for (int64_t i = 0; i < n; i++) {
		int rc = 0, exists = 0, stale = 0;
		for (int k = 0; k < nkey && !rc; k++) rc = idp_bind(probe, k+1, &cols[keycols[k]], i, pts + 32*k);
		if (!rc) rc = sqlite3_bind_int64(probe, nkey+1, filekey);
		if (!rc) rc = sqlite3_bind_int64(probe, nkey+2, ord[i]);
		if (!rc && vercol >= 0) rc = idp_bind(probe, nkey+3, &cols[vercol], i, pts + 32*nkey);
		if (!rc) {
			rc = sqlite3_step(probe);
			if (rc == IDP_ROW) { exists = 1; stale = sqlite3_column_int(probe, 0); rc = 0; }
			else if (rc == IDP_DONE) rc = 0;
		}
		sqlite3_reset(probe);
		if (!rc) rc = sqlite3_bind_int64(st, 1, filekey);
		if (!rc) rc = sqlite3_bind_int64(st, 2, ord[i]);
		if (!rc) rc = idp_bind_row(st, 3, ncols, cols, i, ts);
		int changed = 0;
		if (!rc) {
			rc = sqlite3_step(st);
			if (rc == IDP_DONE) { rc = 0; changed = sqlite3_changes(db); }
		}
		sqlite3_reset(st);
		if (rc) { *failed = i; sqlite3_clear_bindings(st); sqlite3_clear_bindings(probe); return rc; }
		if (!exists) counts[0]++;
		else if (changed) counts[1]++;
		else if (stale) counts[3]++;
		else counts[2]++;
	}
	sqlite3_clear_bindings(st);
	sqlite3_clear_bindings(probe);
	return 0;
}
*/
import "C"

import (
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	sqlite3 "github.com/mattn/go-sqlite3"
)

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

// stmt is a statement prepared on the connection's handle. SQLite
// statements outlive transactions, so it is prepared once per writer.
type stmt struct {
	db *C.sqlite3
	st *C.sqlite3_stmt
}

func prepare(db *C.sqlite3, query string) (*stmt, error) {
	q := C.CString(query)
	defer C.free(unsafe.Pointer(q))
	var st *C.sqlite3_stmt
	if rc := C.sqlite3_prepare_v2(db, q, -1, &st, nil); rc != 0 {
		return nil, fmt.Errorf("prepare %q: %s", query, C.GoString(C.sqlite3_errmsg(db)))
	}
	return &stmt{db: db, st: st}, nil
}

func (s *stmt) close() {
	if s != nil && s.st != nil {
		C.sqlite3_finalize(s.st)
		s.st = nil
	}
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

// upsert runs the single-row upsert s for every row of rec and returns how
// many rows it changed.
func (s *stmt) upsert(cs *colBuffers, fileKey int64, ordinals []int64) (int64, int, error) {
	var changed, failed C.int64_t
	rc := C.idp_upsert(s.db, s.st, C.int64_t(fileKey), (*C.int64_t)(unsafe.Pointer(unsafe.SliceData(ordinals))),
		C.int64_t(len(ordinals)), C.int(len(cs.c)), unsafe.SliceData(cs.c), &changed, &failed)
	if rc != 0 {
		return 0, int(failed), s.err(rc)
	}
	return int64(changed), 0, nil
}

// natural applies rows one at a time with probe, counting each exactly:
// inserted, updated, unchanged, stale.
func (s *stmt) natural(probe *stmt, keyCols []C.int, verCol int, cs *colBuffers, fileKey int64, ordinals []int64) ([4]int64, int, error) {
	var counts [4]C.int64_t
	var failed C.int64_t
	rc := C.idp_natural(s.db, probe.st, s.st, C.int(len(keyCols)), unsafe.SliceData(keyCols), C.int(verCol),
		C.int64_t(fileKey), (*C.int64_t)(unsafe.Pointer(unsafe.SliceData(ordinals))), C.int64_t(len(ordinals)),
		C.int(len(cs.c)), unsafe.SliceData(cs.c), &counts[0], &failed)
	if rc != 0 {
		return [4]int64{}, int(failed), s.err(rc)
	}
	return [4]int64{int64(counts[0]), int64(counts[1]), int64(counts[2]), int64(counts[3])}, 0, nil
}

func (s *stmt) err(rc C.int) error {
	if rc == C.IDP_TS_RANGE {
		return errors.New("a timestamp outside the years 0000-9999")
	}
	return fmt.Errorf("%s (SQLite code %d)", C.GoString(C.sqlite3_errmsg(s.db)), int(rc))
}
