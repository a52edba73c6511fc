package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/reader"
)

// serveUnproven starts an HTTP server, closed when the test ends, that
// serves v1 at any path with neither an ETag nor a Last-Modified, so that
// nothing tells versions apart, and v2 (the same size, other bytes) from
// the first request for which before reports true (that one included) or
// the first after one for which after reports true. Either may be nil.
func serveUnproven(t *testing.T, v1, v2 []byte, before, after func(r *http.Request) bool) *httptest.Server {
	t.Helper()
	if len(v2) != len(v1) || bytes.Equal(v1, v2) {
		t.Fatal("v2 is not other bytes of v1's size")
	}
	var current atomic.Pointer[[]byte]
	current.Store(&v1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if before != nil && before(r) {
			current.Store(&v2)
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(*current.Load()))
		if after != nil && after(r) {
			current.Store(&v2)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRemoteUnprovenRangesAfterHash: an object whose server sends no
// ETag and no Last-Modified, read without a spooled copy, is replaced by
// other bytes of the same size once its hash has read its last byte. The
// partitions must not import the new bytes under the digest of the old:
// the import either holds the hashed version's values, or fails with
// "source changed" and holds none of the new ones. (It fails: each
// partition's bytes are checked against the CRC-32C the plan pass took
// of them while the hash read them.)
func TestRemoteUnprovenRangesAfterHash(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		f := newFx(t, name)
		v1 := []byte(items(20000, 1))
		v2 := bytes.Replace(v1, []byte("item 19999-1\n"), []byte("item 19999-X\n"), 1) // same size
		var swapped atomic.Bool
		srv := serveUnproven(t, v1, v2, nil, func(r *http.Request) bool { // once the hash has read the last byte
			return r.Method == http.MethodGet && strings.HasSuffix(r.Header.Get("Range"), "-"+strconv.Itoa(len(v1)-1)) && !swapped.Swap(true)
		})
		res := f.e.Import(context.Background(), Request{Path: srv.URL + "/items.csv", Mapping: Mapping{Table: "items"},
			Remote: fastRetries(), PartitionRows: 2000})
		if !swapped.Load() {
			t.Fatal("the hash never read the last byte")
		}
		var n int64
		if f.tg.TableExists(t, "items") {
			n = f.rows(t, `SELECT count(*) FROM items`)[0][0].(int64)
			if x := f.rows(t, `SELECT count(*) FROM items WHERE name = 'item 19999-X'`)[0][0].(int64); x != 0 {
				t.Fatalf("%s (%v): the table holds the replacement's value 'item 19999-X' under the digest %s of the version hashed",
					res.Outcome, res.Err, res.ContentDigest)
			}
		}
		switch {
		case res.Outcome == Imported && n == 20000:
		case res.Outcome == Failed && errors.Is(res.Err, reader.ErrSourceChanged) && n == 0:
		default:
			t.Fatalf("%s, %d rows: %v", res.Outcome, n, res.Err)
		}
	})
}

// TestRemoteUnprovenRawRowsAfterRead: the rows the database refuses are
// quarantined with their text, which the apply reads again from the
// object after the partition was read and checked. An object that proves
// no version (no ETag, no Last-Modified), read without a spooled copy,
// replaced by bytes of the same size in between, must not have the
// replacement's text quarantined as the refused row of the version
// imported.
func TestRemoteUnprovenRawRowsAfterRead(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := newFx(t, name)
		f.exec(t, `CREATE TABLE checked (v varchar(32), n bigint CHECK (n >= 0), _idemport_file bigint, _idemport_row bigint, PRIMARY KEY (_idemport_file, _idemport_row))`)
		var sb strings.Builder
		sb.WriteString("v,n\n")
		for i := 1; i <= 4000; i++ {
			n := i
			if i == 3999 {
				n = -1 // refused by the CHECK
			}
			fmt.Fprintf(&sb, "r%d,%d\n", i, n)
		}
		v1 := []byte(sb.String())
		v2 := bytes.Replace(v1, []byte("\nr3999,-1\n"), []byte("\nrXXXX,-1\n"), 1) // same size
		// The last partition's range: read once by the apply, once more for
		// the text of the row the database refused, which gets v2's bytes.
		var lasts atomic.Int64
		part := "bytes=" + strconv.Itoa(bytes.Index(v1, []byte("\nr3001,"))+1) + "-"
		srv := serveUnproven(t, v1, v2, func(r *http.Request) bool {
			return r.Method == http.MethodGet && strings.HasPrefix(r.Header.Get("Range"), part) && lasts.Add(1) == 2
		}, nil)
		res := f.e.Import(context.Background(), Request{Path: srv.URL + "/checked.csv", Mapping: Mapping{Table: "checked"},
			Remote: fastRetries(), PartitionRows: 1000, MaxRejects: RejectLimit{Count: 1}})
		if lasts.Load() < 2 {
			t.Fatalf("the last partition was read %d times: %s %v", lasts.Load(), res.Outcome, res.Err)
		}
		for _, r := range f.rows(t, `SELECT ordinal, raw_row FROM `+f.tg.Ledger("rejects")+` WHERE table_name = 'checked'`) {
			if raw := fmt.Sprint(r[1]); !strings.Contains(raw, "r3999") {
				t.Fatalf("%s (%v): row %v is quarantined as %q, the replacement's text, under the digest %s of the version read",
					res.Outcome, res.Err, r[0], raw, res.ContentDigest)
			}
		}
		rejects := f.rows(t, `SELECT count(*) FROM `+f.tg.Ledger("rejects")+` WHERE table_name = 'checked'`)[0][0].(int64)
		switch {
		case res.Outcome == Imported && rejects == 1:
		case res.Outcome == Failed && errors.Is(res.Err, reader.ErrSourceChanged) && rejects == 0:
			if n := f.rows(t, `SELECT count(*) FROM checked`)[0][0].(int64); n != 0 {
				t.Fatalf("abandoned, yet checked holds %d rows", n)
			}
		default:
			t.Fatalf("%s, %d rejects: %v", res.Outcome, rejects, res.Err)
		}
	})
}
