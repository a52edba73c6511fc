package mysql

import (
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// TestSession: every connection of an Open has the session settings the
// driver's statements rely on, whichever connection of the pool runs them.
func TestSession(t *testing.T) {
	dsn := freshDSN(t)
	for _, c := range []struct {
		s        sink.Settings
		wait     int64
		readOnly int64
	}{
		{sink.Settings{BusyTimeout: 1500 * time.Millisecond}, 2, 0},
		{sink.Settings{}, maxLockWait, 0},
		{sink.Settings{ReadOnly: true, BusyTimeout: time.Second}, 1, 1},
	} {
		db, err := Driver{}.Open(t.Context(), dsn, c.s)
		if err != nil {
			t.Fatal(err)
		}
		defer db.DB.Close()
		db.DB.SetMaxIdleConns(4)
		conns := 3
		for range conns { // several connections at once: each is set up
			conn, err := db.DB.Conn(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var mode, zone, iso, charset string
			var rowWait, tableWait, ro int64
			if err := conn.QueryRowContext(t.Context(), `SELECT @@SESSION.sql_mode, @@SESSION.time_zone, @@SESSION.tx_isolation,
				@@SESSION.character_set_connection, @@SESSION.innodb_lock_wait_timeout, @@SESSION.lock_wait_timeout, @@SESSION.tx_read_only`).
				Scan(&mode, &zone, &iso, &charset, &rowWait, &tableWait, &ro); err != nil {
				t.Fatal(err)
			}
			for _, m := range []string{"STRICT_ALL_TABLES", "ANSI_QUOTES", "PIPES_AS_CONCAT", "NO_BACKSLASH_ESCAPES"} {
				if !strings.Contains(","+mode+",", ","+m+",") {
					t.Errorf("sql_mode %s lacks %s", mode, m)
				}
			}
			if zone != "+00:00" || iso != "READ-COMMITTED" || charset != "utf8mb4" || rowWait != c.wait || tableWait != c.wait || ro != c.readOnly {
				t.Errorf("%+v: time_zone %s, isolation %s, charset %s, lock waits %d and %d, read-only %d; want +00:00, READ-COMMITTED, utf8mb4, lock waits %d, read-only %d",
					c.s, zone, iso, charset, rowWait, tableWait, ro, c.wait, c.readOnly)
			}
		}
	}
}

// TestArgumentsGoInTheStatement: a statement's arguments are written into
// its text, as the session's NO_BACKSLASH_ESCAPES reads it, rather than
// bound to a statement the server prepares: a prepared statement cost a
// round trip to prepare it and a packet to close it, for every statement
// with arguments (161 in a first import of 1M rows by --key). Every value
// still lands exact: BIGINT's edges, doubles to the last bit, text with
// quotes, backslashes, NUL and 4-byte UTF-8, the empty string apart from
// NULL, and times to the microsecond.
func TestArgumentsGoInTheStatement(t *testing.T) {
	f := writerFx(t)
	f.Exec(`CREATE TABLE v (i BIGINT, x DOUBLE, s LONGTEXT, at DATETIME(6))`)
	prepared := func() int64 {
		return f.Int(`SELECT variable_value FROM information_schema.session_status WHERE variable_name = 'Com_stmt_prepare'`)
	}
	at := time.Date(2026, 3, 29, 2, 30, 0, 999999000, time.UTC)
	type row struct {
		i  *int64
		x  *float64
		s  *string
		at *time.Time
	}
	i64 := func(v int64) *int64 { return &v }
	f64 := func(v float64) *float64 { return &v }
	str := func(v string) *string { return &v }
	rows := []row{
		{i64(math.MaxInt64), f64(0.1), str(`it's a \'quote\' \\ and \`), &at},
		{i64(math.MinInt64), f64(1e300), str("nul\x00byte ' \" 𝄞"), nil},
		{i64(1<<53 + 1), f64(5e-324), str(""), nil},
		{nil, f64(0.30000000000000004), nil, nil},
		{i64(-1), f64(-123456789.12345679), str(`\N`), nil},
	}
	before := prepared()
	for _, r := range rows {
		var args []any
		for _, p := range []any{r.i, r.x, r.s, r.at} {
			switch p := p.(type) {
			case *int64:
				args = append(args, nilOr(p))
			case *float64:
				args = append(args, nilOr(p))
			case *string:
				args = append(args, nilOr(p))
			case *time.Time:
				args = append(args, nilOr(p))
			}
		}
		if _, err := f.Conn.ExecContext(f.Ctx, `INSERT INTO v VALUES (?, ?, ?, ?)`, args...); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rows {
		var n int64
		if err := f.Conn.QueryRowContext(f.Ctx, `SELECT count(*) FROM v WHERE i <=> ? AND x = ? AND s <=> ? AND at <=> ?`,
			nilOr(r.i), nilOr(r.x), nilOr(r.s), nilOr(r.at)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%v: %d rows found by their arguments, want 1", r, n)
		}
	}
	if n := prepared() - before; n != 0 {
		t.Errorf("%d statements prepared, want none", n)
	}
	got := drivertest.Strings(t, f.Env.DB, `SELECT CONCAT_WS('|', coalesce(i, 'NULL'), coalesce(HEX(s), 'NULL'), coalesce(at, 'NULL')) FROM v`)
	var want []string
	var xs []float64
	for _, r := range rows {
		s := "NULL"
		if r.s != nil {
			s = strings.ToUpper(hex.EncodeToString([]byte(*r.s)))
		}
		i, a := "NULL", "NULL"
		if r.i != nil {
			i = strconv.FormatInt(*r.i, 10)
		}
		if r.at != nil {
			a = r.at.Format("2006-01-02 15:04:05.000000")
		}
		want = append(want, i+"|"+s+"|"+a)
		xs = append(xs, *r.x)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("v holds\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
	slices.Sort(xs)
	rs, err := f.Env.DB.QueryContext(f.Ctx, `SELECT x FROM v ORDER BY x`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for k := 0; rs.Next(); k++ {
		var x float64
		if err := rs.Scan(&x); err != nil {
			t.Fatal(err)
		}
		if k >= len(xs) || math.Float64bits(x) != math.Float64bits(xs[k]) {
			t.Errorf("double %d is %v, want %v", k, x, xs)
		}
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
}

// nilOr returns *p, or nil when p is nil.
func nilOr[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
