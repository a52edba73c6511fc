package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestAtomicCountsColumnsThatRoundTheFile: an --atomic import into an
// existing PostgreSQL table whose columns hold the file's values rounded
// or narrowed (numeric(10,2), real, timestamp(0)) counts a row whose
// values the table already holds, as the table holds them, unchanged,
// and completes at once: its classification compares the staged values as
// the columns hold them, as the move's ON CONFLICT does, so the two agree
// and the move is not taken for one that met another import's key. And
// an --atomic import into a partitioned table, whose INSERT returns no
// system column, moves and counts its rows.
func TestAtomicCountsColumnsThatRoundTheFile(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.Postgres)
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.Postgres, dir)
	if _, err := tg.DB.Exec(`CREATE TABLE rv (id bigint PRIMARY KEY, price numeric(10,2), r real, ts timestamp(0), note text)`); err != nil {
		t.Fatal(err)
	}
	key := []string{"--table", "rv", "--key", "id"}
	writeFile(t, dir, "a.csv", "id,price,r,ts,note\n1,1.5,0.1,2024-01-01 00:00:00.5,a\n2,2.25,0.2,2024-01-02 00:00:00.25,b\n")
	if r := importTo(t, tg, dir, nil, 0, append(key, "a.csv")...); r.Rows.Inserted != 2 {
		t.Fatalf("a.csv: %+v, want 2 inserted", r.Rows)
	}
	// The same values for 1, another note for 2, and a new key.
	writeFile(t, dir, "b.csv", "id,price,r,ts,note\n1,1.5,0.1,2024-01-01 00:00:00.5,a\n2,2.25,0.2,2024-01-02 00:00:00.25,bb\n3,3.1,0.3,2024-01-03 00:00:00.75,c\n")
	r := importTo(t, tg, dir, nil, 0, append([]string{"--atomic"}, append(key, "b.csv")...)...)
	if r.Rows.Read != 3 || r.Rows.Inserted != 1 || r.Rows.Updated != 1 || r.Rows.Unchanged != 1 || r.Rows.Stale != 0 {
		t.Fatalf("b.csv --atomic: %+v, want 3 read, 1 inserted, 1 updated, 1 unchanged", r.Rows)
	}
	got := testkit.Query(t, tg.DB, `SELECT id, price::text, r::text, ts::text, note FROM rv ORDER BY id`)
	want := testkit.Query(t, tg.DB, `SELECT * FROM (VALUES
		(1::bigint, 1.5::numeric(10,2)::text, 0.1::real::text, '2024-01-01 00:00:00.5'::timestamp(0)::text, 'a'),
		(2, 2.25::numeric(10,2)::text, 0.2::real::text, '2024-01-02 00:00:00.25'::timestamp(0)::text, 'bb'),
		(3, 3.1::numeric(10,2)::text, 0.3::real::text, '2024-01-03 00:00:00.75'::timestamp(0)::text, 'c')) v ORDER BY 1`)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rv holds %v, want %v", got, want)
	}
	// The rerun is a duplicate; the operations' counts add up over the ledger.
	if r := importTo(t, tg, dir, nil, 0, append([]string{"--atomic"}, append(key, "b.csv")...)...); r.Outcome != "duplicate" {
		t.Fatalf("rerun of b.csv: %s, want duplicate", r.Outcome)
	}
	if n := testkit.Int(t, tg.DB, `SELECT `+tg.Sum("rows_inserted")+` FROM `+tg.Ledger("operations")); n != 3 {
		t.Fatalf("%d rows inserted over the ledger, want 3 (one a key)", n)
	}

	// A value the column cannot hold, for a stored key: the
	// classification's cast meets it first, and it is the table's
	// refusal (exit 5), as the move's would be, not a failure.
	writeFile(t, dir, "c.csv", "id,price,r,ts,note\n1,1.5,1e300,2024-01-01 00:00:00.5,a\n")
	if r := importTo(t, tg, dir, nil, 5, append([]string{"--atomic"}, append(key, "c.csv")...)...); r.Outcome != "refused" || !strings.Contains(r.Error, "cannot be moved into rv") {
		t.Fatalf("c.csv --atomic: %s %q, want refused by the table", r.Outcome, r.Error)
	}
	if again := testkit.Query(t, tg.DB, `SELECT id, price::text, r::text, ts::text, note FROM rv ORDER BY id`); !reflect.DeepEqual(again, want) {
		t.Fatalf("after the refusal rv holds %v, want %v", again, want)
	}

	// A key the column rounds: the file's 00:00:00.6 is the stored
	// 00:00:01 to a timestamp(0) key, for the classification as for the
	// move's ON CONFLICT.
	if _, err := tg.DB.Exec(`CREATE TABLE rk (ts timestamp(0) PRIMARY KEY, v text)`); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "k1.csv", "ts,v\n2024-01-01 00:00:01,a\n")
	importTo(t, tg, dir, nil, 0, "--table", "rk", "--key", "ts", "k1.csv")
	writeFile(t, dir, "k2.csv", "ts,v\n2024-01-01 00:00:00.6,b\n")
	if r := importTo(t, tg, dir, nil, 0, "--atomic", "--table", "rk", "--key", "ts", "k2.csv"); r.Rows.Inserted != 0 || r.Rows.Updated != 1 {
		t.Fatalf("k2.csv --atomic: %+v, want 1 updated", r.Rows)
	}
	if got := testkit.Query(t, tg.DB, `SELECT ts::text, v FROM rk`); !reflect.DeepEqual(got, [][]any{{"2024-01-01 00:00:01", "b"}}) {
		t.Fatalf("rk holds %v", got)
	}

	// A json column, which has no equality operator: compared as jsonb.
	if _, err := tg.DB.Exec(`CREATE TABLE rj (id bigint PRIMARY KEY, j json)`); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "j1.csv", "id,j\n1,\"{\"\"a\"\": 1}\"\n2,\"[1, 2]\"\n")
	importTo(t, tg, dir, nil, 0, "--table", "rj", "--key", "id", "j1.csv")
	writeFile(t, dir, "j2.csv", "id,j\n1,\"{\"\"a\"\": 2}\"\n2,\"[1, 2]\"\n3,null\n")
	if r := importTo(t, tg, dir, nil, 0, "--atomic", "--table", "rj", "--key", "id", "j2.csv"); r.Rows.Inserted != 1 || r.Rows.Updated != 1 || r.Rows.Unchanged != 1 {
		t.Fatalf("j2.csv --atomic: %+v, want 1 inserted, 1 updated, 1 unchanged", r.Rows)
	}
	if got := testkit.Query(t, tg.DB, `SELECT id, j::text FROM rj ORDER BY id`); !reflect.DeepEqual(got, [][]any{{int64(1), `{"a": 2}`}, {int64(2), `[1, 2]`}, {int64(3), `null`}}) {
		t.Fatalf("rj holds %v", got)
	}

	if _, err := tg.DB.Exec(`CREATE TABLE pt (id bigint PRIMARY KEY, v text) PARTITION BY RANGE (id);
		CREATE TABLE pt_low PARTITION OF pt FOR VALUES FROM (MINVALUE) TO (100);
		CREATE TABLE pt_high PARTITION OF pt FOR VALUES FROM (100) TO (MAXVALUE)`); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "p.csv", "id,v\n1,one\n150,one hundred fifty\n")
	if r := importTo(t, tg, dir, nil, 0, "--atomic", "--table", "pt", "--key", "id", "p.csv"); r.Rows.Inserted != 2 {
		t.Fatalf("p.csv --atomic into a partitioned table: %+v, want 2 inserted", r.Rows)
	}
	if got := testkit.Query(t, tg.DB, `SELECT id, v FROM pt ORDER BY id`); !reflect.DeepEqual(got, [][]any{{int64(1), "one"}, {int64(150), "one hundred fifty"}}) {
		t.Fatalf("pt holds %v", got)
	}
}

// TestAtomicEnumAndDomainColumns: an --atomic import into an existing
// PostgreSQL table of an enum and a domain column, whose values the stage
// holds as text (or as the file's numbers), moves them cast to the
// columns' types, as a plain import by key writes them; a value the enum
// or the domain refuses is the table's refusal (exit 5, the database's
// reason, the undo --forget next step, the table as before), not a
// failure every rerun meets again.
func TestAtomicEnumAndDomainColumns(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.Postgres)
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.Postgres, dir)
	for _, s := range []string{
		`CREATE TYPE mood AS ENUM ('sad', 'ok', 'glad')`,
		`CREATE DOMAIN pos AS integer CHECK (VALUE > 0)`,
		`CREATE DOMAIN code AS text CHECK (VALUE ~ '^[A-Z]+$')`,
		`CREATE TABLE em (id bigint PRIMARY KEY, m mood, p pos, c code)`,
		`CREATE TABLE ep (id bigint PRIMARY KEY, m mood, p pos, c code)`,
	} {
		if _, err := tg.DB.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, dir, "a.csv", "id,m,p,c\n1,sad,3,AB\n2,ok,4,CD\n")
	writeFile(t, dir, "b.csv", "id,m,p,c\n1,glad,3,AB\n2,ok,4,CD\n3,sad,5,EF\n")
	// Plain by key and --atomic land the same values.
	importTo(t, tg, dir, nil, 0, "--table", "ep", "--key", "id", "a.csv")
	importTo(t, tg, dir, nil, 0, "--table", "ep", "--key", "id", "b.csv")
	atomic := []string{"--atomic", "--table", "em", "--key", "id"}
	if r := importTo(t, tg, dir, nil, 0, append(atomic, "a.csv")...); r.Rows.Inserted != 2 {
		t.Fatalf("a.csv --atomic: %+v, want 2 inserted", r.Rows)
	}
	if r := importTo(t, tg, dir, nil, 0, append(atomic, "b.csv")...); r.Rows.Inserted != 1 || r.Rows.Updated != 1 || r.Rows.Unchanged != 1 {
		t.Fatalf("b.csv --atomic: %+v, want 1 inserted, 1 updated, 1 unchanged", r.Rows)
	}
	const read = `SELECT id::text, m::text, p::text, c::text FROM %s ORDER BY id`
	want := [][]any{{"1", "glad", "3", "AB"}, {"2", "ok", "4", "CD"}, {"3", "sad", "5", "EF"}}
	for _, table := range []string{"em", "ep"} {
		if got := testkit.Query(t, tg.DB, strings.Replace(read, "%s", table, 1)); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s holds %v, want %v", table, got, want)
		}
	}
	// Values the types refuse: each file refused whole, every rerun
	// the same way, the table as it was.
	for _, c := range []struct{ name, body, reason string }{
		{"enum.csv", "id,m,p,c\n4,sad,1,GH\n5,happy,2,IJ\n", `invalid input value for enum mood: "happy"`},
		{"domain.csv", "id,m,p,c\n4,sad,1,GH\n5,ok,-2,IJ\n", `value for domain pos violates check constraint`},
		{"text.csv", "id,m,p,c\n1,sad,1,gh\n", `value for domain code violates check constraint`},
	} {
		writeFile(t, dir, c.name, c.body)
		for range 2 {
			r := importTo(t, tg, dir, nil, 5, append(atomic, c.name)...)
			if r.Outcome != "refused" || !strings.Contains(r.Error, "cannot be moved into em") || !strings.Contains(r.Error, c.reason) {
				t.Fatalf("%s --atomic: %s %q, want refused: %s", c.name, r.Outcome, r.Error, c.reason)
			}
		}
		if got := testkit.Query(t, tg.DB, strings.Replace(read, "%s", "em", 1)); !reflect.DeepEqual(got, want) {
			t.Fatalf("after %s em holds %v, want %v", c.name, got, want)
		}
	}
}
