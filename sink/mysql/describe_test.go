package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// openTarget opens a database of its own through the driver, with
// settings s.
func openTarget(t testing.TB, s sink.Settings) (*sql.DB, string) {
	t.Helper()
	dsn := freshDSN(t)
	db, err := Driver{}.Open(t.Context(), dsn, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.DB.Close() })
	return db.DB, dsn
}

func exec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func TestDescribe(t *testing.T) {
	db, dsn := openTarget(t, sink.Settings{})
	exec(t, db, `CREATE TABLE "T" (
		id BIGINT NOT NULL, code VARCHAR(12) NOT NULL, flag BOOLEAN, small SMALLINT, mid INT DEFAULT 7,
		u BIGINT UNSIGNED, amount DECIMAL(12,3), x DOUBLE, at DATETIME(6), day DATE, doc JSON, note LONGTEXT,
		fixed CHAR(3), blobby BLOB, name VARCHAR(200),
		PRIMARY KEY (id), UNIQUE KEY by_code (code, flag), UNIQUE KEY by_prefix (name(10)), KEY plain (x))`)
	d := Driver{}
	tbl, err := d.Describe(t.Context(), db, "T")
	if err != nil || tbl == nil {
		t.Fatalf("describe: %+v, %v", tbl, err)
	}
	var got []string
	for _, c := range tbl.Columns {
		got = append(got, fmt.Sprintf("%s %s %s notnull=%v default=%v bits=%d chars=%d numeric=%v(%d,%d)",
			c.Name, c.SQLType, c.Kind, c.NotNull, c.Default, c.IntBits, c.MaxChars, c.Numeric, c.Precision, c.Scale))
	}
	want := []string{
		"id bigint(20) int64 notnull=true default=false bits=0 chars=0 numeric=false(0,0)",
		"code varchar(12) string notnull=true default=false bits=0 chars=12 numeric=false(0,0)",
		"flag tinyint(1) bool notnull=false default=true bits=0 chars=0 numeric=false(0,0)",
		"small smallint(6) int64 notnull=false default=true bits=16 chars=0 numeric=false(0,0)",
		"mid int(11) int64 notnull=false default=true bits=32 chars=0 numeric=false(0,0)",
		"u bigint(20) unsigned unknown notnull=false default=true bits=0 chars=0 numeric=false(0,0)",
		"amount decimal(12,3) decimal notnull=false default=true bits=0 chars=0 numeric=true(12,3)",
		"x double float64 notnull=false default=true bits=0 chars=0 numeric=false(0,0)",
		"at datetime(6) timestamptz notnull=false default=true bits=0 chars=0 numeric=false(0,0)",
		"day date date notnull=false default=true bits=0 chars=0 numeric=false(0,0)",
		"doc longtext json notnull=false default=true bits=0 chars=0 numeric=false(0,0)",
		"note longtext string notnull=false default=true bits=0 chars=0 numeric=false(0,0)",
		"fixed char(3) string notnull=false default=true bits=0 chars=3 numeric=false(0,0)",
		"blobby blob unknown notnull=false default=true bits=0 chars=0 numeric=false(0,0)",
		"name varchar(200) string notnull=false default=true bits=0 chars=200 numeric=false(0,0)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("columns:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if k := fmt.Sprint(tbl.Keys); k != "[[id] [code flag]]" {
		t.Errorf("keys %s, want the primary key first, then the unique index on whole columns", k)
	}
	if tbl, err := d.Describe(t.Context(), db, "t"); tbl != nil || err != nil {
		t.Errorf("describe of t, the name in another case: %+v, %v", tbl, err)
	}
	if tbl, err := d.Describe(t.Context(), db, "nope"); tbl != nil || err != nil {
		t.Errorf("describe of a missing table: %+v, %v", tbl, err)
	}
	u, _ := url.Parse(dsn)
	own := strings.TrimPrefix(u.Path, "/")
	if tbl, err := d.Describe(t.Context(), db, own+".T"); err != nil || tbl == nil || len(tbl.Columns) != len(want) {
		t.Errorf("describe qualified by its database: %+v, %v", tbl, err)
	}
	if _, err := d.Describe(t.Context(), db, "no_such_db_here.T"); !errors.Is(err, sink.ErrNoSchema) {
		t.Errorf("describe in a database that does not exist: %v, want ErrNoSchema", err)
	}
}

// TestDescribeInOneMessage: Describe sends its statements (the checks,
// columns and keys from information_schema, then SHOW CREATE TABLE) in
// one message, a round trip where there were four, and reads what it read
// in four: a table's columns, keys and checks as Describe on a connection
// of its own finds them, a missing table as nil.
func TestDescribeInOneMessage(t *testing.T) {
	db, dsn := openTarget(t, sink.Settings{})
	exec(t, db, `CREATE TABLE t (id BIGINT NOT NULL, code VARCHAR(12) NOT NULL, doc JSON, n BIGINT CHECK (n >= 0),
		PRIMARY KEY (id), UNIQUE KEY by_code (code))`)
	proxied, sent := messageProxy(t, dsn)
	through, err := Driver{}.Open(t.Context(), proxied, sink.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer through.DB.Close()
	conn, err := through.DB.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	d := Driver{}
	want, err := d.Describe(t.Context(), db, "t")
	if err != nil || want == nil {
		t.Fatalf("describe: %+v, %v", want, err)
	}
	for _, c := range []struct {
		table string
		want  *sink.Table
	}{{"t", want}, {"nope", nil}} {
		before := sent()
		got, err := d.Describe(t.Context(), conn, c.table)
		n := sent() - before
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("describe %s: %+v, %v; want %+v", c.table, got, err, c.want)
		}
		if n != 1 {
			t.Errorf("describe %s: %d messages, want 1", c.table, n)
		}
	}
}

// TestDescribeCostDoesNotGrowWithColumns: Describe's temporary tables on
// disk (information_schema's, counted by the session) are as many for a
// table of 40 columns as for one of 2. A query that looks up the table's
// checks once per column makes dozens for each, and an import describes
// its tables many times.
func TestDescribeCostDoesNotGrowWithColumns(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{})
	cols := make([]string, 40)
	for i := range cols {
		cols[i] = fmt.Sprintf("c%d BIGINT", i)
	}
	exec(t, db, `CREATE TABLE narrow (id BIGINT PRIMARY KEY, doc JSON)`,
		`CREATE TABLE wide (id BIGINT PRIMARY KEY, doc JSON, `+strings.Join(cols, ", ")+`)`)
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	onDisk := func(table string) int64 {
		t.Helper()
		count := func() int64 {
			var name string
			var n int64
			if err := conn.QueryRowContext(t.Context(), `SHOW SESSION STATUS LIKE 'Created_tmp_disk_tables'`).Scan(&name, &n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := count()
		tbl, err := Driver{}.Describe(t.Context(), conn, table)
		if err != nil || tbl == nil || tbl.Columns[1].Kind != idemtype.JSON {
			t.Fatalf("describe %s: %+v, %v", table, tbl, err)
		}
		return count() - before
	}
	if n, w := onDisk("narrow"), onDisk("wide"); w != n {
		t.Errorf("describing a table of 42 columns made %d temporary tables on disk, one of 2 columns %d", w, n)
	}
}

// TestHoldColumns: a transaction that holds a table's columns makes an
// ALTER TABLE of another connection wait, and fail as Locked once the
// busy timeout passes; after it ends, the change goes through.
func TestHoldColumns(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{BusyTimeout: time.Second})
	exec(t, db, `CREATE TABLE t (id BIGINT PRIMARY KEY)`)
	d := Driver{}
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := d.HoldColumns(t.Context(), tx, "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(t.Context(), `ALTER TABLE t ADD COLUMN c BIGINT`); err == nil || !d.Locked(err) {
		t.Fatalf("ALTER TABLE while the columns are held: %v, want an error Locked recognises", err)
	}
	tx.Rollback()
	exec(t, db, `ALTER TABLE t ADD COLUMN c BIGINT`)
}

// TestHoldColumnsQuotedName: a table name whose quoted part holds a dot
// names one table for HoldColumns, HoldColumnsVersion and ColumnsVersion:
// each holds or reads that table, as ALTER TABLE on it, failing as Locked
// while they hold it, shows. (HoldColumns split the name on every dot, as
// QuoteTable did, and named another table.)
func TestHoldColumnsQuotedName(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{BusyTimeout: time.Second})
	exec(t, db, `CREATE TABLE "dot.ted" (id BIGINT PRIMARY KEY)`)
	var schema string
	if err := db.QueryRow(`SELECT DATABASE()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	ctx, d := t.Context(), Driver{}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	drivertest.RunHoldColumnsNamed(t, conn, d, []string{`"dot.ted"`, q(schema) + `."dot.ted"`, "`dot.ted`"}, func() error {
		if _, err := db.ExecContext(ctx, `ALTER TABLE "dot.ted" ADD COLUMN c BIGINT`); err == nil || !d.Locked(err) {
			return fmt.Errorf("ALTER TABLE: %v, want an error Locked recognises", err)
		}
		return nil
	})
}

// TestHoldColumnsThenWrite: a transaction that holds a table's columns
// and then writes rows into it meets an ALTER TABLE that copies the table
// (a column's type changed) begun between the two: the ALTER waits for
// the transaction, and the rows go in. (Held by a plain read, the ALTER
// took the lock that blocks writers, copied the table, and waited for the
// transaction's read lock, while the transaction's write waited for the
// ALTER: each until the busy timeout, and a partition of an --evolve
// import meeting another's widening then ended busy, exit 4.)
func TestHoldColumnsThenWrite(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{BusyTimeout: 5 * time.Second})
	exec(t, db, `CREATE TABLE t (id BIGINT PRIMARY KEY, n BIGINT)`, `INSERT INTO t VALUES (1, 1)`)
	d := Driver{}
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := d.HoldColumns(t.Context(), tx, "t"); err != nil {
		t.Fatal(err)
	}
	alterer, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer alterer.Close()
	var id int64
	if err := alterer.QueryRowContext(t.Context(), `SELECT CONNECTION_ID()`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	altered := make(chan error, 1)
	go func() {
		_, err := alterer.ExecContext(t.Context(), `ALTER TABLE t MODIFY COLUMN n LONGTEXT`)
		altered <- err
	}()
	awaitMetadataLockWait(t, db, id, altered)
	if _, err := tx.ExecContext(t.Context(), `INSERT INTO t VALUES (2, 2)`); err != nil {
		t.Fatalf("a write of the transaction that holds the columns, while an ALTER TABLE waits: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := receive(t, altered, "the ALTER TABLE, after the transaction,"); err != nil {
		t.Fatalf("the ALTER TABLE after the transaction: %v", err)
	}
	var got string
	if err := db.QueryRow(`SELECT GROUP_CONCAT(id, ':', n ORDER BY id) FROM t`).Scan(&got); err != nil || got != "1:1,2:2" {
		t.Fatalf("t holds %q (%v), want 1:1,2:2", got, err)
	}
}

// TestHoldColumnsVersionInOneMessage: HoldColumnsVersion does what
// HoldColumns and ColumnsVersion do, in that order, in one message: it
// runs a SELECT and a SHOW CREATE TABLE, the table's columns are held
// until the transaction ends (another connection's ALTER TABLE fails as
// Locked), and the version is the definition read after the lock was
// granted, so that an ALTER TABLE made while the lock waited shows in it.
// A missing table is an error, as HoldColumns's.
func TestHoldColumnsVersionInOneMessage(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{BusyTimeout: 2 * time.Second})
	exec(t, db, `CREATE TABLE t (id BIGINT PRIMARY KEY, n BIGINT)`)
	ctx, d := t.Context(), Driver{}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	locker, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()
	status := func(name string) int64 {
		t.Helper()
		var v string
		var n int64
		if err := conn.QueryRowContext(ctx, `SHOW SESSION STATUS LIKE '`+name+`'`).Scan(&v, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var id int64
	if err := conn.QueryRowContext(ctx, `SELECT CONNECTION_ID()`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	// The locker holds t (LOCK TABLES … WRITE), changes n's type under
	// that lock once HoldColumnsVersion waits for it, then lets it go.
	if _, err := locker.ExecContext(ctx, `LOCK TABLES t WRITE`); err != nil {
		t.Fatal(err)
	}
	selects, shows := status("Com_select"), status("Com_show_create_table")
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	type held struct {
		v   string
		err error
	}
	done := make(chan held, 1)
	go func() {
		v, err := d.HoldColumnsVersion(ctx, conn, "t")
		done <- held{v, err}
	}()
	awaitMetadataLockWait(t, db, id, done)
	_, err = locker.ExecContext(ctx, `ALTER TABLE t MODIFY COLUMN n LONGTEXT`)
	if _, uerr := locker.ExecContext(ctx, `UNLOCK TABLES`); err == nil {
		err = uerr
	}
	if err != nil {
		t.Fatalf("the ALTER TABLE under the lock: %v", err)
	}
	h := receive(t, done, "HoldColumnsVersion, once the lock was let go,")
	v, err := h.v, h.err
	if err != nil {
		t.Fatal(err)
	}
	want, err := d.ColumnsVersion(ctx, tx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if v != want || !strings.Contains(v, `"n" longtext`) {
		t.Errorf("HoldColumnsVersion read\n%s\nwant, as ColumnsVersion reads it after the ALTER TABLE,\n%s", v, want)
	}
	if _, err := db.ExecContext(ctx, `ALTER TABLE t ADD COLUMN c BIGINT`); err == nil || !d.Locked(err) {
		t.Errorf("ALTER TABLE while the columns are held: %v, want an error Locked recognises", err)
	}
	tx.Rollback()
	// The counters: the two statements, and ColumnsVersion's SHOW CREATE TABLE.
	if n, m := status("Com_select")-selects, status("Com_show_create_table")-shows; n != 1 || m != 2 {
		t.Errorf("%d SELECT and %d SHOW CREATE TABLE statements, want 1 and 2", n, m)
	}
	if _, err := d.HoldColumnsVersion(ctx, conn, "missing"); err == nil {
		t.Error("a missing table: no error")
	}
}

func TestDeleteFile(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{})
	exec(t, db, `CREATE TABLE t (id BIGINT PRIMARY KEY, "_idemport_file" BIGINT, "_idemport_row" BIGINT)`,
		`INSERT INTO t VALUES (1, 7, 1), (2, 7, 2), (3, 8, 1), (4, NULL, NULL)`)
	d := Driver{}
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if n, err := d.DeleteFile(t.Context(), tx, "t", 7); n != 2 || err != nil {
		t.Errorf("delete file 7: %d, %v; want 2", n, err)
	}
	if n, err := d.DeleteFile(t.Context(), tx, "missing", 7); n != 0 || err != nil {
		t.Errorf("delete from a missing table: %d, %v; want 0, nil", n, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&left); err != nil || left != 2 {
		t.Errorf("%d rows left (%v), want 2", left, err)
	}
}

// TestDecimalRounds: the server rounds a value with more digits after the
// point than a DECIMAL column's scale, with no error even in strict mode,
// and refuses one too large for it; the plan pass refuses the first by
// Limits().Rules, with the column's precision and scale from Describe.
func TestDecimalRounds(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{})
	exec(t, db, `CREATE TABLE t (id BIGINT PRIMARY KEY, d DECIMAL(12,3))`,
		`INSERT INTO t VALUES (1, '1.0005')`)
	var got string
	if err := db.QueryRow(`SELECT CAST(d AS CHAR) FROM t WHERE id = 1`).Scan(&got); err != nil || got != "1.001" {
		t.Errorf("1.0005 into DECIMAL(12,3) became %q (%v); the server no longer rounds it: revisit valueRules", got, err)
	}
	if _, err := db.Exec(`INSERT INTO t VALUES (2, '1234567890.5')`); err == nil {
		t.Error("a value too large for DECIMAL(12,3) went in")
	}
	r := Driver{}.Limits().Rules.Decimal
	if r.MaxDigits != 65 || r.MaxScale != 30 || r.Code == "" {
		t.Errorf("decimal rule %+v, want DECIMAL's 65 digits, 30 after the point", r)
	}
	tbl, err := Driver{}.Describe(t.Context(), db, "t")
	if err != nil {
		t.Fatal(err)
	}
	if c := tbl.Column("d"); c == nil || !c.Numeric || c.Precision != 12 || c.Scale != 3 {
		t.Errorf("column d: %+v, want numeric (12,3)", c)
	}
}

// TestTables: Tables finds the tables whose names begin with a prefix, as
// written (its _ and % are not patterns, and case counts), in the DSN's
// database alone, qualified by it (CurrentSchema names it); TableExists finds a table by
// a plain, quoted or qualified name.
func TestTables(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{})
	exec(t, db, `CREATE TABLE st_a (id BIGINT)`, `CREATE TABLE "St_b" (id BIGINT)`, `CREATE TABLE stxc (id BIGINT)`,
		`CREATE TABLE "st%d" (id BIGINT)`, `CREATE TABLE seen_e (id BIGINT)`)
	other, err := url.Parse(freshDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	exec(t, db, `CREATE TABLE `+q(strings.TrimPrefix(other.Path, "/"))+`.st_z (id BIGINT)`)
	d := Driver{}
	schema, err := d.CurrentSchema(t.Context(), db)
	if err != nil || !strings.HasPrefix(schema, "idemport_test_") {
		t.Fatalf("current schema %q (%v), want the test's database", schema, err)
	}
	got, err := d.Tables(t.Context(), db, "st_", "seen_")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{schema + ".seen_e", schema + ".st_a"}; !slices.Equal(got, want) {
		t.Errorf("tables %q, want %q", got, want)
	}
	for name, want := range map[string]bool{"st_a": true, `"st_a"`: true, schema + ".st_a": true, q(schema) + `."st_a"`: true,
		"ST_A": false, "st_b": false, "St_b": true, "nope": false, "nope.st_a": false} {
		if ok, err := d.TableExists(t.Context(), db, name); ok != want || err != nil {
			t.Errorf("TableExists(%s) = %v, %v; want %v", name, ok, err, want)
		}
	}
}
