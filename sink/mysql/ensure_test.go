package mysql

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// kinds lists the columns of table as name:kind, and its keys.
func kinds(t *testing.T, db *sql.DB, table string) string {
	t.Helper()
	tbl, err := Driver{}.Describe(t.Context(), db, table)
	if err != nil || tbl == nil {
		t.Fatalf("describe %s: %+v, %v", table, tbl, err)
	}
	var cols []string
	for _, c := range tbl.Columns {
		cols = append(cols, fmt.Sprintf("%s:%s:%s", c.Name, c.SQLType, c.Kind))
	}
	return strings.Join(cols, " ") + fmt.Sprintf(" keys=%v", tbl.Keys)
}

// TestEnsureCreates: the tables Ensure creates are described as the
// kinds they were made of (a decimal is text marked a decimal, a local
// timestamp a DATETIME marked local), keyed by lineage in ordinal mode and
// by the natural key otherwise, string keys a VARCHAR within InnoDB's
// 3,072 key bytes; a second Ensure finds the table.
func TestEnsureCreates(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{})
	f := drivertest.Open(t, drivertest.Env{DB: db, Driver: Driver{}})
	all := drivertest.Schema(drivertest.I64("i"), drivertest.F64("f"), drivertest.Str("s"), drivertest.Bool("b"),
		drivertest.TS("at"), drivertest.JSON("j"), drivertest.Dec("d"))
	f.MustEnsure(sink.Target{Table: "o"}, all)
	f.MustEnsure(sink.Target{Table: "o"}, all)
	want := "_idemport_file:bigint(20):int64 _idemport_row:bigint(20):int64 i:bigint(20):int64 f:double:float64 s:longtext:string " +
		"b:tinyint(1):bool at:datetime(6):timestamptz j:longtext:json d:mediumtext:decimal keys=[[_idemport_file _idemport_row]]"
	if got := kinds(t, db, "o"); got != want {
		t.Errorf("ordinal table:\n%s\nwant\n%s", got, want)
	}

	local := arrow.Field{Name: "l", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true}
	if idemtype.TypeOf(local) != idemtype.LocalTimestamp {
		t.Fatal("the field is not a local timestamp")
	}
	keyed := drivertest.Schema(drivertest.Str("code"), drivertest.I64("n"), local, drivertest.Dec("amount"))
	f.MustEnsure(sink.Target{Table: "k", Key: []string{"code", "n"}}, keyed)
	want = "code:varchar(384):string n:bigint(20):int64 l:datetime(6):timestamp amount:mediumtext:decimal " +
		"_idemport_file:bigint(20):int64 _idemport_row:bigint(20):int64 keys=[[code n]]"
	if got := kinds(t, db, "k"); got != want {
		t.Errorf("keyed table:\n%s\nwant\n%s", got, want)
	}
	// Strict mode refuses a key too long for its VARCHAR, never cuts it.
	if _, err := db.Exec(`INSERT INTO k (code, n) VALUES (?, 1)`, strings.Repeat("é", 385)); err == nil {
		t.Error("a key of 385 characters went into VARCHAR(384)")
	}
	if _, err := db.Exec(`INSERT INTO k (code, n) VALUES (?, 1)`, strings.Repeat("😀", 384)); err != nil {
		t.Errorf("a key of 384 four-byte characters: %v", err)
	}
	if got := (Driver{}).Limits().KeyChars(2); got != 384 {
		t.Errorf("the plan pass bounds each column of a two-column key at %d characters, the table at 384", got)
	}
}

// TestEnsureDecimalKey: a decimal key column keeps the text written (1.50)
// and is keyed by its number, so that 1.5 and 1.50 are one key, and 10
// is not 1 nor 100; digits past DECIMAL's 30 after the point still tell
// keys apart. Describe lists the key on the decimal column, not the
// number column behind it.
func TestEnsureDecimalKey(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{})
	f := drivertest.Open(t, drivertest.Env{DB: db, Driver: Driver{}})
	f.MustEnsure(sink.Target{Table: "t", Key: []string{"s", "k"}}, drivertest.Schema(drivertest.Str("s"), drivertest.Dec("k"), drivertest.Str("v")))
	want := "s:varchar(384):string k:varchar(384):decimal v:longtext:string _idemport_file:bigint(20):int64 _idemport_row:bigint(20):int64 keys=[[s k]]"
	if got := kinds(t, db, "t"); got != want {
		t.Errorf("table:\n%s\nwant\n%s", got, want)
	}
	tiny := "0." + strings.Repeat("0", 40)
	exec(t, db, `INSERT INTO t (s, k) VALUES ('a', '1.50'), ('a', '10'), ('a', '100'), ('b', '1.5'), ('a', '0'),
		('a', '`+tiny+`1'), ('a', '`+tiny+`2')`)
	var got string
	if err := db.QueryRow(`SELECT group_concat(k ORDER BY k SEPARATOR ' ') FROM t WHERE s = 'a'`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "0 " + tiny + "1 " + tiny + "2 1.50 10 100"; got != want {
		t.Errorf("keys %q, want %q", got, want)
	}
	for _, k := range []string{"1.5", "1", "1.500", "0.00", tiny + "10"} {
		if _, err := db.Exec(`INSERT INTO t (s, k) VALUES ('a', ?)`, k); k != "1" && err == nil {
			t.Errorf("key %s went in beside the number already there", k)
		} else if k == "1" && err != nil {
			t.Errorf("key 1, not 1.50: %v", err)
		}
	}
	if n := f.Int(`SELECT count(*) FROM t WHERE ` + Driver{}.KeyValue("k", idemtype.Decimal) + ` = ` + Driver{}.KeyValue("'1.5000'", idemtype.Decimal) + ` AND s = 'a'`); n != 1 {
		t.Errorf("KeyValue finds %d rows of 1.5000 with s = 'a', want 1", n)
	}
}

// TestAddColumnAndWiden: an added column is of the kind of its field
// (a decimal marked as one); a widened one keeps its values exactly, its
// NOT NULL, and takes the new kind; a key column is not widened.
func TestAddColumnAndWiden(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{})
	d := Driver{}
	exec(t, db, `CREATE TABLE t (id BIGINT PRIMARY KEY, n BIGINT NOT NULL, x DOUBLE)`,
		`INSERT INTO t VALUES (1, 9223372036854775807, 0.1)`)
	run := func(_ string, fn func(tx *sql.Tx) error) error {
		t.Helper()
		tx, err := db.BeginTx(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := fn(tx); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	}
	for _, fd := range []arrow.Field{drivertest.Dec("d"), drivertest.JSON("j")} {
		if err := run("add", func(tx *sql.Tx) error { return d.AddColumn(t.Context(), tx, "t", fd) }); err != nil {
			t.Fatalf("add column %s: %v", fd.Name, err)
		}
	}
	if err := run("widen n", func(tx *sql.Tx) error { return d.Widen(t.Context(), tx, "t", "n", idemtype.Decimal) }); err != nil {
		t.Fatal(err)
	}
	if err := run("widen x", func(tx *sql.Tx) error { return d.Widen(t.Context(), tx, "t", "x", idemtype.String) }); err != nil {
		t.Fatal(err)
	}
	want := "id:bigint(20):int64 n:mediumtext:decimal x:longtext:string d:mediumtext:decimal j:longtext:json keys=[[id]]"
	if got := kinds(t, db, "t"); got != want {
		t.Errorf("table:\n%s\nwant\n%s", got, want)
	}
	var n, x string
	var notNull bool
	if err := db.QueryRow(`SELECT n, x FROM t`).Scan(&n, &x); err != nil || n != "9223372036854775807" || x != "0.1" {
		t.Errorf("widened values %q, %q (%v)", n, x, err)
	}
	if err := db.QueryRow(`SELECT is_nullable = 'NO' FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 't' AND column_name = 'n'`).Scan(&notNull); err != nil || !notNull {
		t.Errorf("n is no longer NOT NULL (%v)", err)
	}
	if _, err := db.Exec(`INSERT INTO t (id, n, j) VALUES (2, '1', 'not json')`); err == nil {
		t.Error("an added JSON column took text that is not JSON")
	}
	err := run("widen id", func(tx *sql.Tx) error { return d.Widen(t.Context(), tx, "t", "id", idemtype.String) })
	if ce := (*sink.ConfigError)(nil); !errors.As(err, &ce) {
		t.Errorf("widen a key column: %v, want a ConfigError", err)
	}
}

// TestEnsureCollation: in a database whose default collation folds case
// and pads, the keys of a table Ensure makes are still told apart byte by
// byte: a, A and "a " are three keys.
func TestEnsureCollation(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{})
	exec(t, db, `ALTER DATABASE CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci`)
	f := drivertest.Open(t, drivertest.Env{DB: db, Driver: Driver{}})
	f.MustEnsure(sink.Target{Table: "t", Key: []string{"s"}}, drivertest.Schema(drivertest.Str("s"), drivertest.Str("v")))
	f.Exec(`INSERT INTO t (s, v) VALUES ('a', '1'), ('A', '2'), ('a ', '3')`)
	if n := f.Int(`SELECT count(*) FROM t WHERE v = 'x' OR s = 'a'`); n != 1 {
		t.Errorf("%d rows of key a, want 1", n)
	}
}
