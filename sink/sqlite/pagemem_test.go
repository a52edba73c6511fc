//go:build cgo && linux

package sqlite

import (
	"fmt"
	"strings"
	"testing"
)

// TestPageCacheFromRegion checks that the pages SQLite caches come from the
// region pagemem.c reserves (a header grown past its block size would send
// them back to malloc, one mprotect and fault at a time), and that what is
// written through them reads back: pages are written into and read from
// those blocks, evicted and reused.
func TestPageCacheFromRegion(t *testing.T) {
	env := open(t)
	db := env.DB
	// A cache of 256 pages, so that a write of several MB evicts and
	// reuses blocks.
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := conn.ExecContext(t.Context(), q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`PRAGMA cache_size = 256`)
	exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)`)
	const rows = 4000
	exec(`BEGIN`)
	for i := range rows {
		exec(`INSERT INTO t VALUES (?, ?)`, i, value(i))
	}
	exec(`COMMIT`)
	if used := regionUsed(); used <= 0 {
		t.Fatalf("the page cache took %d bytes from the region, want some", used)
	}
	// Read back through a cold cache.
	exec(`PRAGMA shrink_memory`)
	r, err := conn.QueryContext(t.Context(), `SELECT id, v FROM t ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for r.Next() {
		var id int
		var v string
		if err := r.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		if id != n || v != value(n) {
			t.Fatalf("row %d: read %d, %.20q…; want %d, %.20q…", n, id, v, n, value(n))
		}
		n++
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if n != rows {
		t.Fatalf("read %d rows, want %d", n, rows)
	}
}

// value is row i's text: 1–6 KiB, so that some rows overflow onto pages of their own.
func value(i int) string {
	return strings.Repeat(fmt.Sprintf("%07d|", i), 128+i%640)
}
