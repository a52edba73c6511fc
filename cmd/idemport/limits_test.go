package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// ddl runs DDL on the target.
func ddl(t *testing.T, tg *testkit.Target, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := tg.DB.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// textRows returns cols of table as text, in file order, NULL as nil.
func textRows(t *testing.T, tg *testkit.Target, table string, cols ...string) [][]any {
	t.Helper()
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = tg.Text(c)
	}
	return testkit.Query(t, tg.DB, fmt.Sprintf(`SELECT %s FROM %s ORDER BY _idemport_row`, strings.Join(sel, ", "), table))
}

// rejectsOf returns the stored rejects: ordinal, column, code, and whether
// the message holds want[ordinal].
func checkRejects(t *testing.T, tg *testkit.Target, want map[int64][2]string) {
	t.Helper()
	got := testkit.Query(t, tg.DB, `SELECT ordinal, coalesce(column_name, ''), code, message, raw_row FROM `+tg.Ledger("rejects")+` ORDER BY ordinal`)
	if len(got) != len(want) {
		t.Fatalf("rejects: %v, want rows %v", got, want)
	}
	for _, r := range got {
		w, ok := want[r[0].(int64)]
		w[0], w[1] = refusedAs(tg, w[0], w[1])
		if !ok || r[2] != w[0] || !strings.Contains(strings.ToLower(r[3].(string)), strings.ToLower(w[1])) {
			t.Fatalf("reject %v, want code %q and a message with %q", r, w[0], w[1])
		}
		if r[4] == "" {
			t.Fatalf("reject of row %v keeps no row text", r[0])
		}
	}
}

// refusedAs returns the reject code and the part of its message by which
// the target names a refusal that PostgreSQL gives as code and msg:
// MariaDB's decimal type is DECIMAL, and its own messages name a UNIQUE
// key's duplicate and a failed CHECK constraint otherwise.
func refusedAs(tg *testkit.Target, code, msg string) (string, string) {
	if !tg.IsMariaDB() {
		return code, msg
	}
	if code == "numeric" {
		return "decimal", strings.ReplaceAll(msg, "numeric(", "DECIMAL(")
	}
	switch msg {
	case "unique constraint":
		return code, "duplicate entry"
	case "check constraint":
		return code, "(error 4025)" // CONSTRAINT `t.c` failed for `db`.`t`
	}
	return code, msg
}

func opState(t *testing.T, tg *testkit.Target) string {
	t.Helper()
	got := testkit.Query(t, tg.DB, `SELECT state FROM `+tg.Ledger("operations"))
	if len(got) != 1 {
		t.Fatalf("operations: %v", got)
	}
	return got[0][0].(string)
}

func write(t *testing.T, dir, name, data string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestValuesTheTableCannotHoldAreBadRows imports into an existing table
// values its columns cannot hold: integers past smallint and integer,
// text past varchar(n) and char(n), numbers numeric(p,s) would round or
// cannot hold, NULL into NOT NULL (SQLite has only the last). They are bad
// rows found by the plan: over --max-rejects the file is refused before
// any effect; within it they are quarantined with their reason and every
// other row lands exactly, in partitions after them too.
func TestValuesTheTableCannotHoldAreBadRows(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		var data string
		var want [][]any
		var bad map[int64][2]string
		cols := []string{"id", "s", "i", "v", "c", "n", "name"}
		if tg.IsPostgres() || tg.IsMariaDB() {
			text := map[bool]string{true: "text", false: "longtext"}[tg.IsPostgres()]
			ddl(t, tg, `CREATE TABLE people (_idemport_file bigint NOT NULL, _idemport_row bigint NOT NULL,
				id bigint, s smallint, i integer, v varchar(5), c char(3), n numeric(6,2), name `+text+` NOT NULL,
				PRIMARY KEY (_idemport_file, _idemport_row))`)
			data = "id,s,i,v,c,n,name\n" +
				"1,32767,2147483647,héllo,abc,9999.99,a\n" +
				"2,-32768,-2147483648,,ab,1.230,b\n" +
				"3,32768,1,x,x,1,c\n" + // smallint
				"4,1,2147483648,x,x,1,d\n" + // integer
				"5,1,1,abcdef,x,1,e\n" + // varchar(5)
				"6,1,1,x,abcd,1,f\n" + // char(3)
				"7,1,1,x,x,10000,g\n" + // numeric(6,2): too large
				"8,1,1,x,x,1.234,h\n" + // numeric(6,2): would round
				"9,1,1,x,x,1,\n" + // NOT NULL
				"10,,,,,-0.5,j\n"
			want = [][]any{
				{"1", "32767", "2147483647", "héllo", "abc", "9999.99", "a"},
				{"2", "-32768", "-2147483648", nil, "ab", "1.23", "b"}, // char(n) as text drops its padding
				{"10", nil, nil, nil, nil, "-0.50", "j"},
			}
			bad = map[int64][2]string{3: {"range", "-32768..32767"}, 4: {"range", "-2147483648..2147483647"}, 5: {"length", "more than the column's 5"},
				6: {"length", "more than the column's 3"}, 7: {"numeric", "too large for numeric(6,2)"}, 8: {"numeric", "would round"}, 9: {"null", "NOT NULL"}}
		} else {
			ddl(t, tg, `CREATE TABLE people (_idemport_file INTEGER NOT NULL, _idemport_row INTEGER NOT NULL,
				id INTEGER, name TEXT NOT NULL, PRIMARY KEY (_idemport_file, _idemport_row)) WITHOUT ROWID`)
			cols = []string{"id", "name"}
			data = "id,name\n1,a\n2,\n3,\"\"\n4,d\n5,\n6,f\n"
			want = [][]any{{"1", "a"}, {"3", ""}, {"4", "d"}, {"6", "f"}}
			bad = map[int64][2]string{2: {"null", "NOT NULL"}, 5: {"null", "NOT NULL"}}
		}
		write(t, dir, "people.csv", data)
		args := []string{"--partition-rows", "2", "people.csv"}

		// Over the limit: refused before any effect.
		run := tg.Exec(t, dir, nil, append([]string{"import"}, args...)...)
		if run.Code != 5 || !strings.Contains(run.Stdout, fmt.Sprintf("%d of", len(bad))) {
			t.Fatalf("exit %d: %s %s", run.Code, run.Stdout, run.Stderr)
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM people`); n != 0 {
			t.Fatalf("a refused file wrote %d rows", n)
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("rejects")); n != 0 {
			t.Fatalf("a refused file stored %d rejects", n)
		}
		if s := opState(t, tg); s != "refused" {
			t.Fatalf("operation %s", s)
		}

		// Within it: the bad rows quarantined, the others exact.
		res := importTo(t, tg, dir, nil, 0, append([]string{"--max-rejects", fmt.Sprint(len(bad))}, args...)...)
		if res.Rows.Rejected != int64(len(bad)) || res.Rows.Inserted != int64(len(want)) {
			t.Fatalf("within the limit: %+v", res)
		}
		if got := textRows(t, tg, "people", cols...); !reflect.DeepEqual(got, want) {
			t.Fatalf("people:\n got  %q\n want %q", got, want)
		}
		checkRejects(t, tg, bad)
		list := tg.Exec(t, dir, nil, "rejects", "list", "people.csv")
		if list.Code != 0 || !strings.Contains(list.Stdout, "column is NOT NULL in table people") {
			t.Fatalf("rejects list: %d %s", list.Code, list.Stdout)
		}
	})
}

// TestJSONThatJSONBRefusesIsABadRow imports nested JSON values holding
// \u0000 or a number beyond numeric, which PostgreSQL's jsonb refuses: on
// PostgreSQL they are bad rows found by the plan; SQLite stores their text.
func TestJSONThatJSONBRefusesIsABadRow(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		write(t, dir, "docs.jsonl", `{"id":1,"doc":{"a":1}}
{"id":2,"doc":{"a":"\u0000"}}
{"id":3,"doc":[1e1000000]}
{"id":4,"doc":{"b":"\\u0000","n":1e-400}}
{"id":5,"doc":{"k\u0000":[true]}}
{"id":6,"doc":[1e131071]}
`)
		want := [][]any{{"1", `{"a":1}`}, {"2", `{"a":"\u0000"}`}, {"3", `[1e1000000]`}, {"4", `{"b":"\\u0000","n":1e-400}`},
			{"5", `{"k\u0000":[true]}`}, {"6", `[1e131071]`}}
		if !tg.IsPostgres() {
			importTo(t, tg, dir, nil, 0, "--partition-rows", "2", "docs.jsonl")
			if got := textRows(t, tg, "docs", "id", "doc"); !reflect.DeepEqual(got, want) {
				t.Fatalf("docs:\n got  %q\n want %q", got, want)
			}
			return
		}
		run := tg.Exec(t, dir, nil, "import", "--partition-rows", "2", "docs.jsonl")
		if run.Code != 5 || !strings.Contains(run.Stdout, "3 of 6 rows are bad") {
			t.Fatalf("exit %d: %s %s", run.Code, run.Stdout, run.Stderr)
		}
		if tg.TableExists(t, "docs") {
			t.Fatal("a refused file created its table")
		}
		res := importTo(t, tg, dir, nil, 0, "--partition-rows", "2", "--max-rejects", "3", "docs.jsonl")
		if res.Rows.Inserted != 3 || res.Rows.Rejected != 3 {
			t.Fatalf("within the limit: %+v", res)
		}
		got := testkit.Query(t, tg.DB, `SELECT id, doc = CAST(v AS jsonb) FROM docs JOIN (VALUES (1, '{"a":1}'), (4, '{"b":"\\u0000","n":1e-400}'), (6, '[1e131071]')) m(k, v) ON k = id ORDER BY id`)
		if !reflect.DeepEqual(got, [][]any{{int64(1), true}, {int64(4), true}, {int64(6), true}}) {
			t.Fatalf("docs: %v", got)
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM docs`); n != 3 {
			t.Fatalf("docs has %d rows", n)
		}
		checkRejects(t, tg, map[int64][2]string{2: {"jsonb", `\u0000`}, 3: {"jsonb", "beyond numeric"}, 5: {"jsonb", `\u0000`}})
	})
}

// accountsTable creates a table whose UNIQUE and CHECK constraints and
// trigger no plan can check: rows 6 (a second a@x), 10 (age -1) and 12
// (id 13, which the trigger refuses) of accountsCSV fail them.
func accountsTable(t *testing.T, tg *testkit.Target) {
	t.Helper()
	if tg.IsPostgres() {
		ddl(t, tg, `CREATE TABLE accounts (_idemport_file bigint NOT NULL, _idemport_row bigint NOT NULL,
			id bigint, email text UNIQUE, age bigint CHECK (age >= 0), PRIMARY KEY (_idemport_file, _idemport_row))`,
			`CREATE FUNCTION no13() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
				IF NEW.id = 13 THEN RAISE EXCEPTION 'id 13 is not allowed'; END IF; RETURN NEW; END $$`,
			`CREATE TRIGGER no13 BEFORE INSERT OR UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION no13()`)
		return
	}
	if tg.IsMariaDB() {
		ddl(t, tg, `CREATE TABLE accounts (_idemport_file bigint NOT NULL, _idemport_row bigint NOT NULL,
			id bigint, email varchar(100) UNIQUE, age bigint CHECK (age >= 0), PRIMARY KEY (_idemport_file, _idemport_row))`,
			`CREATE TRIGGER no13 BEFORE INSERT ON accounts FOR EACH ROW
				IF NEW.id = 13 THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'id 13 is not allowed'; END IF`,
			`CREATE TRIGGER no13u BEFORE UPDATE ON accounts FOR EACH ROW
				IF NEW.id = 13 THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'id 13 is not allowed'; END IF`)
		return
	}
	ddl(t, tg, `CREATE TABLE accounts (_idemport_file INTEGER NOT NULL, _idemport_row INTEGER NOT NULL,
		id INTEGER, email TEXT UNIQUE, age INTEGER CHECK (age >= 0), PRIMARY KEY (_idemport_file, _idemport_row)) WITHOUT ROWID`,
		`CREATE TRIGGER no13 BEFORE INSERT ON accounts WHEN NEW.id = 13 BEGIN SELECT RAISE(ABORT, 'id 13 is not allowed'); END`)
}

const accountsCSV = "id,email,age\n" +
	"1,a@x,1\n2,b@x,2\n3,c@x,3\n4,d@x,4\n" + // partition 0
	"5,e@x,5\n6,a@x,6\n7,g@x,7\n8,h@x,8\n" + // partition 1: row 6 repeats a@x
	"9,i@x,9\n10,j@x,-1\n11,k@x,11\n13,m@x,12\n" // partition 2: row 10 fails the CHECK, row 12 the trigger

// accountsWant is the table once the three refused rows are quarantined.
var accountsWant = [][]any{{"1", "a@x", "1"}, {"2", "b@x", "2"}, {"3", "c@x", "3"}, {"4", "d@x", "4"}, {"5", "e@x", "5"},
	{"7", "g@x", "7"}, {"8", "h@x", "8"}, {"9", "i@x", "9"}, {"11", "k@x", "11"}}

var accountsRejects = map[int64][2]string{6: {"constraint", "unique constraint"}, 10: {"constraint", "check constraint"}, 12: {"constraint", "id 13 is not allowed"}}

// TestRowsRefusedAtApplyTimeAreQuarantined writes rows that a UNIQUE
// constraint on another column, a CHECK constraint and a trigger refuse.
// The failing rows are isolated and quarantined within --max-rejects; past
// it the file is refused (exit 5) naming the row, the partition holding it
// stays uncommitted (its rows and rejects too), the operation resumable,
// and a rerun with a higher limit completes exactly.
func TestRowsRefusedAtApplyTimeAreQuarantined(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		accountsTable(t, tg)
		write(t, dir, "accounts.csv", accountsCSV)
		args := []string{"--partition-rows", "4", "accounts.csv"}

		// --max-rejects 1 admits row 6, not rows 10 and 12.
		failed := importTo(t, tg, dir, nil, 5, append([]string{"--max-rejects", "1"}, args...)...)
		_, check := refusedAs(tg, "constraint", "check constraint")
		if !strings.Contains(failed.Error, "row 10") || !strings.Contains(strings.ToLower(failed.Error), check) || !strings.Contains(failed.Error, "partition 2 is not committed") {
			t.Fatalf("over the limit: %+v", failed)
		}
		if failed.Rows.Inserted != 7 || failed.Rows.Rejected != 1 || failed.Partitions.Committed != 2 {
			t.Fatalf("over the limit, counted %+v", failed)
		}
		if got := textRows(t, tg, "accounts", "id", "email", "age"); !reflect.DeepEqual(got, accountsWant[:7]) {
			t.Fatalf("accounts after the failure:\n got  %q\n want %q", got, accountsWant[:7])
		}
		checkRejects(t, tg, map[int64][2]string{6: accountsRejects[6]})
		if s := opState(t, tg); s != "failed" {
			t.Fatalf("operation %s", s)
		}
		// The same limit fails the same way; a higher one completes.
		importTo(t, tg, dir, nil, 5, append([]string{"--max-rejects", "2"}, args...)...)
		ok := importTo(t, tg, dir, nil, 0, append([]string{"--max-rejects", "3"}, args...)...)
		if ok.Outcome != "resumed" || ok.Rows.Inserted != 2 || ok.Rows.Rejected != 2 || ok.Partitions.Committed != 1 {
			t.Fatalf("rerun: %+v", ok)
		}
		if got := textRows(t, tg, "accounts", "id", "email", "age"); !reflect.DeepEqual(got, accountsWant) {
			t.Fatalf("accounts:\n got  %q\n want %q", got, accountsWant)
		}
		checkRejects(t, tg, accountsRejects)
		// The operation's counters add up to the file.
		got := testkit.Query(t, tg.DB, `SELECT state, rows_read, rows_inserted, rows_rejected FROM `+tg.Ledger("operations"))
		if !reflect.DeepEqual(got, [][]any{{"completed", int64(12), int64(9), int64(3)}}) {
			t.Fatalf("operation: %v", got)
		}
		list := tg.Exec(t, dir, nil, "rejects", "list", "accounts.csv")
		if list.Code != 0 || !strings.Contains(list.Stdout, "id 13 is not allowed") {
			t.Fatalf("rejects list: %d %s", list.Code, list.Stdout)
		}
		// The refused rows export as the file had them.
		export := tg.Exec(t, dir, nil, "rejects", "export", "accounts.csv")
		for _, row := range []string{",6,6,a@x,6\n", ",10,10,j@x,-1\n", ",12,13,m@x,12\n"} {
			if export.Code != 0 || !strings.Contains(export.Stdout, row) {
				t.Fatalf("rejects export lacks %q: %d %s", row, export.Code, export.Stdout)
			}
		}
	})
}

// TestKillDuringIsolationThenRerun kills the import while it isolates the
// refused rows of a partition; the rerun ends exact, each refused row
// quarantined once.
func TestKillDuringIsolationThenRerun(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, n := range []int{1, 3, 6} {
			t.Run(fmt.Sprint(n), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				accountsTable(t, tg)
				write(t, dir, "accounts.csv", accountsCSV)
				args := []string{"import", "--max-rejects", "3", "--partition-rows", "4", "accounts.csv"}
				killed := tg.Exec(t, dir, []string{fmt.Sprintf("IDEMPORT_FAILPOINT=inside-isolation:%d", n)}, args...)
				if killed.Code != -1 {
					t.Fatalf("not killed: exit %d %s %s", killed.Code, killed.Stdout, killed.Stderr)
				}
				importTo(t, tg, dir, nil, 0, args[1:]...)
				if got := textRows(t, tg, "accounts", "id", "email", "age"); !reflect.DeepEqual(got, accountsWant) {
					t.Fatalf("accounts:\n got  %q\n want %q", got, accountsWant)
				}
				checkRejects(t, tg, accountsRejects)
				got := testkit.Query(t, tg.DB, `SELECT state, rows_read, rows_inserted, rows_rejected FROM `+tg.Ledger("operations"))
				if !reflect.DeepEqual(got, [][]any{{"completed", int64(12), int64(9), int64(3)}}) {
					t.Fatalf("operation: %v", got)
				}
			})
		}
	})
}

// wideCSV writes a CSV file of n columns c0..c(n-1) and two rows, the first
// v0, y, …, y, v(n-1), the second all x.
func wideCSV(t *testing.T, dir, name string, n int) {
	t.Helper()
	var b strings.Builder
	for r := range 3 {
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			switch r {
			case 0:
				fmt.Fprintf(&b, "c%d", i)
			case 1:
				if i == 0 || i == n-1 {
					fmt.Fprintf(&b, "v%d", i)
				} else {
					b.WriteString("y") // small: a PostgreSQL row must fit a page
				}
			default:
				b.WriteString("x")
			}
		}
		b.WriteByte('\n')
	}
	write(t, dir, name, b.String())
}

// refusedUpFront checks a limit refusal: exit 5, the message names the
// limit and the column, no table, nothing but the refused operation and
// its attempt in the ledger.
func refusedUpFront(t *testing.T, tg *testkit.Target, dir, table string, want []string, args ...string) {
	t.Helper()
	run := tg.Exec(t, dir, nil, append([]string{"import"}, args...)...)
	if run.Code != 5 {
		t.Fatalf("exit %d, want 5: %.500s %.500s", run.Code, run.Stdout, run.Stderr)
	}
	for _, w := range want {
		if !strings.Contains(run.Stdout, w) {
			t.Fatalf("the refusal does not say %q: %.1000s", w, run.Stdout)
		}
	}
	if tg.TableExists(t, table) {
		t.Fatalf("a refused file created table %s", table)
	}
	got := testkit.Query(t, tg.DB, `SELECT state, rows_inserted FROM `+tg.Ledger("operations")+` ORDER BY created_at DESC LIMIT 1`)
	if !reflect.DeepEqual(got, [][]any{{"refused", int64(0)}}) {
		t.Fatalf("operation: %v", got)
	}
	// A rerun is refused again from the stored report, writing nothing.
	before := tg.Snapshot(t)
	if again := tg.Exec(t, dir, nil, append([]string{"import"}, args...)...); again.Code != 5 || !strings.Contains(again.Stdout, "refused earlier") {
		t.Fatalf("rerun: exit %d %.500s", again.Code, again.Stdout)
	}
	if d := before.Diff(tg.Snapshot(t)); d != "" {
		t.Fatalf("the repeated refusal wrote to %s", d)
	}
}

// TestLimitsAreRefusedUpFront: more columns than the database allows
// (lineage columns counted), names that collide where the database folds
// case, and names over PostgreSQL's 63 bytes (a column, a table, and the
// table name taken from a long file name) refuse the file before any
// effect, exit 5, naming the limit and the column; just within each limit
// the file imports exactly.
func TestLimitsAreRefusedUpFront(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		most := 1997 // SQLite: 2000 columns, 2 lineage, 1 of the batch table
		switch {
		case tg.IsPostgres():
			most = 1598 // 1600 columns, 2 lineage
		case tg.IsMariaDB():
			most = 1015 // 1017 columns, 2 lineage
		}
		wideCSV(t, dir, "over.csv", most+1)
		refusedUpFront(t, tg, dir, "over", []string{fmt.Sprintf("the file has %d columns, more than the %d", most+1, most), fmt.Sprintf(`column "c%d"`, most)}, "over.csv")
		wideCSV(t, dir, "within.csv", most)
		importTo(t, tg, dir, nil, 0, "within.csv")
		got := testkit.Query(t, tg.DB, fmt.Sprintf(`SELECT c0, c%d FROM within ORDER BY _idemport_row`, most-1))
		if !reflect.DeepEqual(got, [][]any{{"v0", fmt.Sprintf("v%d", most-1)}, {"x", "x"}}) {
			t.Fatalf("within: %v", got)
		}

		write(t, dir, "cased.csv", "id,ID\n1,2\n")
		longest, fit := 63, "cased.csv" // PostgreSQL's names: 63 bytes
		if tg.IsMariaDB() {
			longest, fit = 64, "fitcol.csv"
		}
		long := strings.Repeat("a", longest+1)
		if !tg.IsPostgres() {
			refusedUpFront(t, tg, dir, "cased", []string{`column "ID"`, `same column as "id"`}, "cased.csv")
			write(t, dir, "lineage.csv", "id,_IDEMPORT_ROW\n1,2\n")
			refusedUpFront(t, tg, dir, "lineage", []string{`column "_IDEMPORT_ROW"`, `same column as "_idemport_row"`}, "lineage.csv")
		}
		if tg.Name == testkit.SQLite {
			// SQLite has no length limit on names.
			write(t, dir, long+".csv", long+"\n1\n")
			importTo(t, tg, dir, nil, 0, long+".csv")
			if got := testkit.Query(t, tg.DB, `SELECT `+long+` FROM `+long); !reflect.DeepEqual(got, [][]any{{int64(1)}}) {
				t.Fatalf("%s: %v", long, got)
			}
			return
		}
		if tg.IsPostgres() {
			// PostgreSQL's quoted names keep their case: id and ID are two columns.
			importTo(t, tg, dir, nil, 0, "cased.csv")
			if got := testkit.Query(t, tg.DB, `SELECT "id", "ID" FROM cased`); !reflect.DeepEqual(got, [][]any{{int64(1), int64(2)}}) {
				t.Fatalf("cased: %v", got)
			}
		}

		// A column name of 64 bytes; 63 fit (MariaDB: 65 and 64).
		write(t, dir, "longcol.csv", "id,"+long+"\n1,2\n")
		refusedUpFront(t, tg, dir, "longcol", []string{fmt.Sprintf("column %q", long), fmt.Sprintf("%d bytes", longest+1), fmt.Sprintf("%d bytes", longest)}, "longcol.csv")
		write(t, dir, "fitcol.csv", "id,"+long[:longest]+"\n1,2\n")
		importTo(t, tg, dir, nil, 0, "fitcol.csv")
		if got := testkit.Query(t, tg.DB, `SELECT `+long[:longest]+` FROM fitcol`); !reflect.DeepEqual(got, [][]any{{int64(2)}}) {
			t.Fatalf("fitcol: %v", got)
		}
		// Two long file names alike in their first 63 bytes, whose default
		// table names would be cut to one; a long --table.
		for _, f := range []string{long + "_x.csv", long + "_y.csv"} {
			write(t, dir, f, "id\n1\n")
			refusedUpFront(t, tg, dir, long[:longest], []string{fmt.Sprintf("table name %q", strings.TrimSuffix(f, ".csv")), fmt.Sprintf("%d bytes", longest), "--table"}, f)
		}
		refusedUpFront(t, tg, dir, long[:longest], []string{fmt.Sprintf("table name %q", long)}, "--table", long, fit)
		if tables := tg.Tables(t); slices.ContainsFunc(tables, func(s string) bool { return strings.HasPrefix(s, "aaa") }) {
			t.Fatalf("tables: %v", tables)
		}
	})
}

// TestRefusedRowsWithWorkers applies the partitions of accountsCSV on three
// workers: however their commits interleave, no more refused rows are
// committed than --max-rejects allows, and a rerun with a higher limit
// completes exactly.
func TestRefusedRowsWithWorkers(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		for range 3 {
			dir := t.TempDir()
			tg := testkit.NewTarget(t, name, dir)
			accountsTable(t, tg)
			write(t, dir, "accounts.csv", accountsCSV)
			args := []string{"--workers", "3", "--partition-rows", "4", "accounts.csv"}
			failed := importTo(t, tg, dir, nil, 5, append([]string{"--max-rejects", "2"}, args...)...)
			if !strings.Contains(failed.Error, "is not committed") {
				t.Fatalf("over the limit: %+v", failed)
			}
			if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("rejects")); n > 2 {
				t.Fatalf("%d refused rows committed, more than --max-rejects 2", n)
			}
			if n := testkit.Int(t, tg.DB, `SELECT coalesce(sum(rows_rejected), 0) FROM `+tg.Ledger("operations")); n > 2 {
				t.Fatalf("the operation counts %d rejected rows, more than --max-rejects 2", n)
			}
			importTo(t, tg, dir, nil, 0, append([]string{"--max-rejects", "3"}, args...)...)
			// Rows 1 and 6 clash on the UNIQUE email: the one whose
			// partition commits second is refused.
			want, rejects := accountsWant, accountsRejects
			if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("rejects")+` WHERE ordinal = 1`); n == 1 {
				want = append([][]any{{"2", "b@x", "2"}, {"3", "c@x", "3"}, {"4", "d@x", "4"}, {"5", "e@x", "5"}, {"6", "a@x", "6"}}, accountsWant[5:]...)
				rejects = map[int64][2]string{1: accountsRejects[6], 10: accountsRejects[10], 12: accountsRejects[12]}
			}
			if got := textRows(t, tg, "accounts", "id", "email", "age"); !reflect.DeepEqual(got, want) {
				t.Fatalf("accounts:\n got  %q\n want %q", got, want)
			}
			checkRejects(t, tg, rejects)
		}
	})
}

// TestParquetValuesTheTableCannotHold imports a Parquet file whose ids pass
// an existing smallint column from its second row group on: the plan finds
// them, so over --max-rejects nothing is written (no row group commits
// before the failure), and within it every other row lands exactly.
// PostgreSQL only: SQLite has no integer widths.
func TestParquetValuesTheTableCannotHold(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.Postgres)
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.Postgres, dir)
	ddl(t, tg, `CREATE TABLE groups (_idemport_file bigint NOT NULL, _idemport_row bigint NOT NULL, id smallint, label varchar(3),
		PRIMARY KEY (_idemport_file, _idemport_row))`)
	writeRowGroups(t, filepath.Join(dir, "groups.parquet"), 3, 20000) // ids 1..60000
	run := tg.Exec(t, dir, nil, "import", "groups.parquet")
	if run.Code != 5 || !strings.Contains(run.Stdout, "27233 of 60000 rows are bad") || !strings.Contains(run.Stdout, `row 32768 column "id" value "32768"`) {
		t.Fatalf("exit %d: %.600s %.600s", run.Code, run.Stdout, run.Stderr)
	}
	if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM groups`); n != 0 {
		t.Fatalf("a refused file wrote %d rows", n)
	}
	res := importTo(t, tg, dir, nil, 0, "--max-rejects", "27233", "groups.parquet")
	if res.Rows.Inserted != 32767 || res.Rows.Rejected != 27233 {
		t.Fatalf("within the limit: %+v", res)
	}
	got := testkit.Query(t, tg.DB, `SELECT count(*), count(DISTINCT id), min(id), max(id), sum(id), bool_and(id = _idemport_row AND label = 'row') FROM groups`)
	if !reflect.DeepEqual(got, [][]any{{int64(32767), int64(32767), int64(1), int64(32767), int64(32767 * 32768 / 2), true}}) {
		t.Fatalf("groups: %v", got)
	}

	// A CHECK no plan can check refuses ids 7000, 14000, …, 56000 at apply
	// time: they are isolated, quarantined and export their values.
	ddl(t, tg, `CREATE TABLE checked (_idemport_file bigint NOT NULL, _idemport_row bigint NOT NULL, id bigint CHECK (id % 7000 <> 0), label text,
		PRIMARY KEY (_idemport_file, _idemport_row))`)
	res = importTo(t, tg, dir, nil, 0, "--table", "checked", "--max-rejects", "8", "groups.parquet")
	if res.Rows.Inserted != 60000-8 || res.Rows.Rejected != 8 {
		t.Fatalf("checked: %+v", res)
	}
	got = testkit.Query(t, tg.DB, `SELECT count(*), sum(id)::bigint, bool_and(id = _idemport_row AND label = 'row' AND id % 7000 <> 0) FROM checked`)
	if !reflect.DeepEqual(got, [][]any{{int64(60000 - 8), int64(60000*60001/2 - 7000*36), true}}) {
		t.Fatalf("checked: %v", got)
	}
	export := tg.Exec(t, dir, nil, "rejects", "export", "--table", "checked", "groups.parquet")
	for id := 7000; id <= 56000; id += 7000 {
		if row := fmt.Sprintf(",%d,%d,row\n", id, id); export.Code != 0 || !strings.Contains(export.Stdout, row) {
			t.Fatalf("rejects export lacks %q: %d %.1000s %s", row, export.Code, export.Stdout, export.Stderr)
		}
	}
}

// TestRefusedRowsInNaturalKeyMode isolates refused rows when rows upsert on
// a natural key, a key repeated in the file included: the later
// occurrence of key 4 wins, and the rows refused are quarantined.
func TestRefusedRowsInNaturalKeyMode(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		ddl(t, tg, `CREATE TABLE members (id bigint PRIMARY KEY, email text UNIQUE, age bigint CHECK (age >= 0),
			_idemport_file bigint, _idemport_row bigint)`)
		write(t, dir, "members.csv", "id,email,age\n1,a@x,1\n2,b@x,2\n3,a@x,3\n4,d@x,4\n5,e@x,-5\n4,dd@x,44\n6,f@x,6\n")
		args := []string{"--key", "id", "--partition-rows", "3", "members.csv"}
		importTo(t, tg, dir, nil, 5, append([]string{"--max-rejects", "1"}, args...)...)
		res := importTo(t, tg, dir, nil, 0, append([]string{"--max-rejects", "2"}, args...)...)
		if res.Outcome != "resumed" {
			t.Fatalf("rerun: %+v", res)
		}
		want := [][]any{{"1", "a@x", "1"}, {"2", "b@x", "2"}, {"4", "dd@x", "44"}, {"6", "f@x", "6"}}
		if got := testkit.Query(t, tg.DB, `SELECT `+tg.Text("id")+`, email, `+tg.Text("age")+` FROM members ORDER BY id`); !reflect.DeepEqual(got, want) {
			t.Fatalf("members:\n got  %q\n want %q", got, want)
		}
		checkRejects(t, tg, map[int64][2]string{3: {"constraint", "unique constraint"}, 5: {"constraint", "check constraint"}})
		// Key 4's first occurrence is superseded by its later one.
		got := testkit.Query(t, tg.DB, `SELECT state, rows_read, rows_inserted + rows_updated + rows_unchanged + rows_stale + rows_superseded, rows_superseded, rows_rejected FROM `+tg.Ledger("operations"))
		if !reflect.DeepEqual(got, [][]any{{"completed", int64(7), int64(5), int64(1), int64(2)}}) {
			t.Fatalf("operation: %v", got)
		}
	})
}
