package main

import (
	"crypto/sha256"
	"database/sql"
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/idemport/idemport/internal/testkit"
)

// nullText stands for SQL NULL in the tables tableText returns.
const nullText = "<NULL>"

// tableText returns the columns cols of table, rows in file order, every
// value as the database renders it as text (NULL as nullText). A column
// the table does not have fails the query, and so the test.
func tableText(t *testing.T, tg *testkit.Target, table string, cols ...string) [][]string {
	t.Helper()
	var exprs []string
	for _, c := range cols {
		if tg.IsPostgres() {
			exprs = append(exprs, testkit.QuoteOne(c)+"::text")
		} else {
			exprs = append(exprs, "CAST("+testkit.QuoteOne(c)+" AS TEXT)")
		}
	}
	rows, err := tg.DB.Query("SELECT " + strings.Join(exprs, ", ") + " FROM " + tg.QuoteTable(t, table) + " ORDER BY _idemport_row")
	if err != nil {
		t.Fatalf("read %s: %v", table, err)
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = nullText
			if v.Valid {
				row[i] = v.String
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// columnsOf returns the names of table's columns that are not idemport's.
func columnsOf(t *testing.T, tg *testkit.Target, table string) []string {
	t.Helper()
	q := `SELECT name FROM pragma_table_info(?) ORDER BY cid`
	if tg.IsPostgres() {
		q = `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`
	}
	var out []string
	for _, r := range testkit.Query(t, tg.DB, q, table) {
		if n := r[0].(string); !strings.HasPrefix(n, "_idemport_") {
			out = append(out, n)
		}
	}
	return out
}

// checkTable asserts that table has exactly the columns of want's first
// row, in order, and then exactly want's other rows, value by value.
func checkTable(t *testing.T, tg *testkit.Target, table string, want [][]string) {
	t.Helper()
	if got := columnsOf(t, tg, table); !reflect.DeepEqual(got, want[0]) {
		t.Fatalf("%s has columns %q, want %q", table, got, want[0])
	}
	got := tableText(t, tg, table, want[0]...)
	if len(got) == 0 {
		got = nil
	}
	if w := want[1:]; !reflect.DeepEqual(got, w) && len(got)+len(w) > 0 {
		t.Fatalf("%s holds\n%q\nwant\n%q", table, got, w)
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHeaderless imports a CSV and a TSV file without a header, with and
// without --columns, and a file whose header --columns replaces: every
// row lands, the first one too, under the names given. A first line of
// numbers imported with a header gets a note naming --no-header.
func TestHeaderless(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		writeFiles(t, dir, map[string]string{
			"nohdr.csv": "1,alice,10\n2,\"bob, jr\",\n3,,30\n",
			"nohdr.tsv": "1\talice\t10\n2\tbob\t20\n",
			"hdr.csv":   "id,name,id\n1,a,x\n",
			"nums.csv":  "1,2,3\n4,5,6\n",
		})
		importTo(t, tg, dir, nil, 0, "--table", "plain", "--no-header", "nohdr.csv")
		checkTable(t, tg, "plain", [][]string{{"column1", "column2", "column3"},
			{"1", "alice", "10"}, {"2", "bob, jr", nullText}, {"3", nullText, "30"}})
		importTo(t, tg, dir, nil, 0, "--table", "named", "--no-header", "--columns", "id,name,qty", "nohdr.csv")
		checkTable(t, tg, "named", [][]string{{"id", "name", "qty"},
			{"1", "alice", "10"}, {"2", "bob, jr", nullText}, {"3", nullText, "30"}})
		importTo(t, tg, dir, nil, 0, "--table", "tabs", "--no-header", "--columns", "id,name,qty", "nohdr.tsv")
		checkTable(t, tg, "tabs", [][]string{{"id", "name", "qty"}, {"1", "alice", "10"}, {"2", "bob", "20"}})
		// A header with a repeated name is usable once --columns names it.
		importTo(t, tg, dir, nil, 0, "--table", "renamed", "--columns", "id,name,code", "hdr.csv")
		checkTable(t, tg, "renamed", [][]string{{"id", "name", "code"}, {"1", "a", "x"}})

		run := tg.Exec(t, dir, nil, "import", "--table", "nums", "nums.csv")
		if run.Code != 0 || !strings.Contains(run.Stdout, "looks like data") || !strings.Contains(run.Stdout, "--no-header") {
			t.Fatalf("a header of numbers: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
		run = tg.Exec(t, dir, nil, "import", "--table", "bad", "--columns", "a,b", "nohdr.csv")
		if run.Code != 2 || !strings.Contains(run.Stdout+run.Stderr, "--columns gives 2 names") {
			t.Fatalf("--columns with too few names: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
	})
}

// TestChoosingColumnsText imports a CSV, a TSV and a JSONL file with a
// title line to skip, a column to leave out and one to rename: the table
// holds exactly the columns chosen, in --select's order, with the file's
// values; a key and a type name the column as renamed.
func TestChoosingColumnsText(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		writeFiles(t, dir, map[string]string{
			"r.csv":   "Sales report, December\nid,Customer Name,secret,amount\n1,Ann,x,1.50\n2,\"Bo, B\",\xff,2.25\n",
			"r.tsv":   "Sales report\n\nid\tCustomer Name\tsecret\tamount\n1\tAnn\tx\t1.50\n2\tBo B\t\xff\t2.25\n",
			"r.jsonl": "# exported 2026-12-01\n{\"id\":1,\"Customer Name\":\"Ann\",\"secret\":\"x\",\"amount\":1.50}\n{\"secret\":{\"deep\":[1]},\"amount\":2.25,\"Customer Name\":\"Bo\",\"id\":2,\"other\":7}\n",
		})
		for file, skip := range map[string]string{"r.csv": "1", "r.tsv": "2", "r.jsonl": "1"} {
			table := strings.ReplaceAll(file, ".", "_")
			args := []string{"--table", table, "--skip-lines", skip, "--select", "amount,Customer Name,id",
				"--rename", "Customer Name=customer", "--rename", "id=order_id", "--key", "order_id", "--column", "amount:decimal", file}
			res := importTo(t, tg, dir, nil, 0, args...)
			if res.Rows.Inserted != 2 || res.Rows.Rejected != 0 {
				t.Fatalf("%s: %+v", file, res)
			}
			wantName := map[string]string{"r.csv": "Bo, B", "r.tsv": "Bo B", "r.jsonl": "Bo"}[file]
			want := [][]string{{"amount", "customer", "order_id"}, {"1.50", "Ann", "1"}, {"2.25", wantName, "2"}}
			checkTable(t, tg, table, want)
		}
	})
}

// TestReadingOptionsChangeTheFingerprint imports a file, then the same
// file with each reading option: every rerun is a conflict (exit 3) naming
// the option, never a second import.
func TestReadingOptionsChangeTheFingerprint(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		writeFiles(t, dir, map[string]string{"f.csv": "id,name,qty\n1,a,2\n3,b,4\n"})
		importTo(t, tg, dir, nil, 0, "--table", "f", "f.csv")
		for _, c := range []struct {
			field string
			args  []string
		}{
			{"skip_lines", []string{"--skip-lines", "1"}},
			{"no_header", []string{"--no-header"}},
			{"names", []string{"--columns", "x,y,z"}},
			{"select", []string{"--select", "id,name"}},
			{"rename", []string{"--rename", "qty=quantity"}},
			{"null", []string{"--null", "NA"}},
		} {
			run := tg.Exec(t, dir, nil, append(append([]string{"import", "--table", "f"}, c.args...), "f.csv")...)
			if run.Code != 3 || !strings.Contains(run.Stdout, "mapping differs") || !strings.Contains(run.Stdout, c.field+" was") {
				t.Errorf("%v: exit %d\n%s%s", c.args, run.Code, run.Stdout, run.Stderr)
			}
			plan := tg.Exec(t, dir, nil, append(append([]string{"plan", "--table", "f"}, c.args...), "f.csv")...)
			if !strings.Contains(plan.Stdout, `"`+c.field+`"`) || !strings.Contains(plan.Stdout, "conflict") {
				t.Errorf("plan %v does not show the option or the conflict:\n%s%s", c.args, plan.Stdout, plan.Stderr)
			}
		}
		checkTable(t, tg, "f", [][]string{{"id", "name", "qty"}, {"1", "a", "2"}, {"3", "b", "4"}})
	})
}

// writeColumnar writes ids 1..n, names and a secret column as a Parquet
// file with row groups of group rows, or an Arrow IPC file with record
// batches of group rows.
func writeColumnar(t *testing.T, path string, n, group int) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "Customer Name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "secret", Type: arrow.BinaryTypes.Binary}}, nil)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var write func(arrow.RecordBatch) error
	var closeW func() error
	if strings.HasSuffix(path, ".parquet") {
		w, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
		if err != nil {
			t.Fatal(err)
		}
		write, closeW = w.Write, w.Close
	} else {
		w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema))
		if err != nil {
			t.Fatal(err)
		}
		write, closeW = w.Write, w.Close
	}
	for id := 1; id <= n; {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := 0; i < group && id <= n; i, id = i+1, id+1 {
			b.Field(0).(*array.Int64Builder).Append(int64(id))
			if id%3 == 0 {
				b.Field(1).AppendNull()
			} else {
				b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("name %d", id))
			}
			b.Field(2).(*array.BinaryBuilder).Append([]byte{0xff, byte(id)})
		}
		rec := b.NewRecordBatch()
		if err := write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		b.Release()
	}
	if err := closeW(); err != nil {
		t.Fatal(err)
	}
}

// TestChoosingColumnsColumnar imports a Parquet and an Arrow file with
// their first rows skipped (across a whole row group or record batch and
// into the next), a column left out and two renamed: the table holds
// exactly the rows and columns chosen; a rerun is a duplicate, and the
// file read again with a partition at a time (--workers, resumed by a
// reapply) gives the same rows. Partitions of 3 rows make each row group
// or record batch of 3 rows a partition of its own (an Arrow IPC file's
// would otherwise be gathered into one), so that the skip passes over a
// whole partition and into the next: of the 4, the 3 left are planned.
func TestChoosingColumnsColumnar(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		for _, file := range []string{"c.parquet", "c.arrow"} {
			writeColumnar(t, filepath.Join(dir, file), 10, 3)
			table := strings.ReplaceAll(file, ".", "_")
			args := []string{"--table", table, "--skip-lines", "4", "--select", "Customer Name,id",
				"--rename", "Customer Name=customer", "--rename", "id=order_id", "--key", "order_id", "--partition-rows", "3", file}
			res := importTo(t, tg, dir, nil, 0, args...)
			if res.Rows.Inserted != 6 || res.Partitions.Total != 3 {
				t.Fatalf("%s: %+v", file, res)
			}
			want := [][]string{{"customer", "order_id"}}
			for id := 5; id <= 10; id++ {
				c := fmt.Sprintf("name %d", id)
				if id%3 == 0 {
					c = nullText
				}
				want = append(want, []string{c, fmt.Sprint(id)})
			}
			checkTable(t, tg, table, want)
			if again := importTo(t, tg, dir, nil, 0, args...); again.Outcome != "duplicate" {
				t.Fatalf("%s again: %+v", file, again)
			}
			tg.Exec(t, dir, nil, "undo", "--forget", "--table", table, file)
			if _, err := tg.DB.Exec("DELETE FROM " + tg.QuoteTable(t, table)); err != nil {
				t.Fatal(err)
			}
			if res := importTo(t, tg, dir, nil, 0, append([]string{"--workers", "2"}, args...)...); res.Rows.Inserted != 6 {
				t.Fatalf("%s after undo: %+v", file, res)
			}
			checkTable(t, tg, table, want)
		}
	})
}

// TestNullMarkers imports a TSV file in PostgreSQL's text form (\N for
// NULL) and a CSV file that says NA: an unquoted marker is NULL, a quoted
// one is the text, an unquoted empty field stays NULL and a quoted empty
// one stays empty; a numeric column with NA in it is still numeric. A
// rerun with other markers is a conflict.
func TestNullMarkers(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		writeFiles(t, dir, map[string]string{
			"pg.tsv": "id\tname\tqty\n1\t\\N\t3\n2\tNA\t\\N\n3\t\\\\N\t\n",
			"na.csv": "id,name,qty\n1,NA,NA\n2,\"NA\",4\n3,NULL,\n4,\"\",5\n",
		})
		importTo(t, tg, dir, nil, 0, "--table", "pg", "--null", `\N`, "pg.tsv")
		checkTable(t, tg, "pg", [][]string{{"id", "name", "qty"}, {"1", nullText, "3"}, {"2", "NA", nullText}, {"3", `\\N`, nullText}})
		importTo(t, tg, dir, nil, 0, "--table", "na", "--null", "NA", "--null", "NULL", "--column", "qty:int64", "na.csv")
		checkTable(t, tg, "na", [][]string{{"id", "name", "qty"}, {"1", nullText, nullText}, {"2", "NA", "4"}, {"3", nullText, nullText}, {"4", "", "5"}})
		if n := testkit.Int(t, tg.DB, `SELECT sum(qty) FROM na`); n != 9 {
			t.Fatalf("qty is not numeric: sum %d", n)
		}
		// The markers are a set: their order is the same mapping.
		if r := importTo(t, tg, dir, nil, 0, "--table", "na", "--null", "NULL", "--null", "NA", "--column", "qty:int64", "na.csv"); r.Outcome != "duplicate" {
			t.Fatalf("same markers in another order: %+v", r)
		}
		run := tg.Exec(t, dir, nil, "import", "--table", "na", "--null", "NA", "--column", "qty:int64", "na.csv")
		if run.Code != 3 || !strings.Contains(run.Stdout, "null was") {
			t.Fatalf("other markers: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
		writeFiles(t, dir, map[string]string{"x.jsonl": "{\"a\":1}\n"})
		run = tg.Exec(t, dir, nil, "import", "--table", "j", "--null", "NA", "x.jsonl")
		if run.Code != 2 || !strings.Contains(run.Stdout+run.Stderr, "--null is for CSV and TSV") {
			t.Fatalf("--null on JSONL: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
	})
}

// TestEncodings imports files made with iconv in Windows-1252,
// ISO-8859-1, Shift-JIS and UTF-16 (with a byte order mark, no
// --encoding), and the UTF-8 files they were made from: each table equals
// the UTF-8 file's, value by value, and both hold the UTF-8 file's fields.
// The content digest is over the file's own bytes. A Windows-1252 file
// read as UTF-8 is refused with advice to give --encoding.
func TestEncodings(t *testing.T) {
	t.Parallel()
	src, err := filepath.Abs("../../testdata/encodings")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		file, utf8 string
		args       []string
	}{
		{"cp1252.windows-1252.csv", "cp1252.utf8.csv", []string{"--encoding", "windows-1252"}},
		{"latin.iso-8859-1.csv", "latin.utf8.csv", []string{"--encoding", "iso-8859-1"}},
		{"sjis.shift_jis.csv", "sjis.utf8.csv", []string{"--encoding", "shift_jis"}},
		{"utf16.bom.csv", "utf16.utf8.csv", nil},
	}
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		for _, c := range cases {
			for _, f := range []string{c.file, c.utf8} {
				b, err := os.ReadFile(filepath.Join(src, f))
				if err != nil {
					t.Fatal(err)
				}
				writeFiles(t, dir, map[string]string{f: string(b)})
			}
			want := [][]string{{"id", "name", "city", "note"}}
			b, _ := os.ReadFile(filepath.Join(dir, c.utf8))
			recs, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, recs[1:]...)
			table := strings.SplitN(c.file, ".", 2)[0]
			ref := importTo(t, tg, dir, nil, 0, "--table", table+"_utf8", "--column", "id:string", c.utf8)
			checkTable(t, tg, table+"_utf8", want)
			res := importTo(t, tg, dir, nil, 0, append([]string{"--table", table, "--column", "id:string", "--partition-rows", "1"}, append(c.args, c.file)...)...)
			if res.Rows.Inserted != 3 || res.Partitions.Total != 3 {
				t.Fatalf("%s: %+v", c.file, res)
			}
			checkTable(t, tg, table, want)
			raw, _ := os.ReadFile(filepath.Join(dir, c.file))
			if sum := sha256.Sum256(raw); res.ContentDigest != "sha256:"+hex.EncodeToString(sum[:]) || res.ContentDigest == ref.ContentDigest {
				t.Fatalf("%s: content digest %s is not the digest of its bytes", c.file, res.ContentDigest)
			}
			if len(c.args) > 0 { // the encoding is part of the mapping
				run := tg.Exec(t, dir, nil, "import", "--table", table, "--column", "id:string", c.file)
				if run.Code != 3 || !strings.Contains(run.Stdout, "encoding was") {
					t.Fatalf("%s without --encoding: exit %d\n%s", c.file, run.Code, run.Stdout)
				}
			}
		}
		run := tg.Exec(t, dir, nil, "import", "--table", "guess", "cp1252.windows-1252.csv")
		if run.Code != 5 || !strings.Contains(run.Stdout, "this file is not UTF-8: give --encoding (for example windows-1252") {
			t.Fatalf("Windows-1252 read as UTF-8: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
		if tg.TableExists(t, "guess") && testkit.Int(t, tg.DB, `SELECT count(*) FROM guess`) != 0 {
			t.Fatal("a refused file wrote rows")
		}
	})
}

// TestQuoteErrors refuses files whose quotes are broken: the message names
// the line where the quote opened and how far it ran, shows at most about
// 80 characters of the value (the JSON result keeps it whole), and a rerun
// says "refused earlier" in one line.
func TestQuoteErrors(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("0123456789", 30)
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		writeFiles(t, dir, map[string]string{
			"runs.csv":  "id,note,qty\n1,ok,2\n2,\"broken " + long + "\n3,next,4\n4,more,5\n5,\"closing\" here,6\n6,fine,7\n",
			"open.csv":  "title\n\nid,note\n1,ok\n2,\"never closed\n3,x\n",
			"stray.csv": "id,note\n1,\"a\"b\n2,\"c\"\"d\"\n",
		})
		for _, c := range []struct {
			file, want string
			args       []string
		}{
			{"runs.csv", `row 2 column "note" value "broken 0123456789012345678901234567890123456789012345678901234567890123456789012"…[248 more bytes]: a quoted field opened on line 3 runs over 4 lines, to a closing quote on line 6 that a character follows: check for an unescaped quote on line 3`, nil},
			{"open.csv", `a quoted field opened on line 5 runs over 2 lines to the end of the file: check for an unescaped quote on line 5`, []string{"--skip-lines", "2"}},
			{"stray.csv", `row 1 column "note" value "a": unexpected character after a closing quote (line 2): a quote inside a quoted field is written twice`, nil},
		} {
			args := append(append([]string{"import"}, c.args...), c.file)
			run := tg.Exec(t, dir, nil, args...)
			if run.Code != 5 || !strings.Contains(run.Stdout, c.want) {
				t.Fatalf("%s: exit %d, want %q in\n%s%s", c.file, run.Code, c.want, run.Stdout, run.Stderr)
			}
		}
		res := importJSON(t, dir, nil, 5, append(slices.Clone(tg.Args), "--output", "json", "--table", "runs_json", "runs.csv")...)
		if !strings.Contains(res.Error, "[248 more bytes]") {
			t.Fatalf("JSON error: %q", res.Error)
		}
		out := tg.Exec(t, dir, nil, "import", "--output", "json", "--table", "runs_json2", "runs.csv").Stdout
		if !strings.Contains(out, `"value":"broken `+long+`\n3,next,4\n4,more,5\n5,"`) {
			t.Fatalf("the JSON result does not keep the value whole:\n%s", out)
		}
		run := tg.Exec(t, dir, nil, "import", "runs.csv")
		first, _, _ := strings.Cut(run.Stdout, "\n")
		if run.Code != 5 || !strings.Contains(first, "refused earlier on") || !strings.Contains(first, "unescaped quote on line 3") ||
			len(first) > 400 || strings.Count(run.Stdout, "\n") != 2 {
			t.Fatalf("rerun: exit %d\n%s", run.Code, run.Stdout)
		}
	})
}

// TestDatesAndTimes imports ISO dates, timestamps without a zone and
// points in time into a new table: inference types them date, timestamp
// and timestamptz (date, timestamp, timestamptz on PostgreSQL, ISO 8601
// text on SQLite), and every value lands as the file says. Columns fixed
// with SQL type names read the same; values that are not strict ISO 8601
// are bad rows naming the form expected, quarantined with --max-rejects.
func TestDatesAndTimes(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		writeFiles(t, dir, map[string]string{
			"t.csv":   "id,day,at,instant\n1,2024-02-29,2024-01-02 03:04:05,2024-01-02T03:04:05Z\n2,1969-12-31,1999-12-31T23:59:59.123456,2024-01-02T05:04:05+02:00\n3,,,\n",
			"bad.csv": "id,day,at,amount\n1,2024-02-29,2024-01-02 03:04:05,12.50\n2,29/02/2024,2024-01-02 03:04:05,1\n3,2024-03-02,2024-01-02T03:04:05+01:00,2\n4,2024-03-01,2024-01-02,3\n",
		})
		importTo(t, tg, dir, nil, 0, "t.csv")
		kinds := map[string]string{}
		for _, c := range columnsOf(t, tg, "t") {
			q := `SELECT type FROM pragma_table_info('t') WHERE name = ?`
			if tg.IsPostgres() {
				q = `SELECT data_type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 't' AND column_name = $1`
			}
			kinds[c] = testkit.Query(t, tg.DB, q, c)[0][0].(string)
		}
		want := map[string]string{"id": "INTEGER", "day": "DATE", "at": "TIMESTAMP WITHOUT TIME ZONE", "instant": "TIMESTAMP"}
		if tg.IsPostgres() {
			want = map[string]string{"id": "bigint", "day": "date", "at": "timestamp without time zone", "instant": "timestamp with time zone"}
		}
		if !reflect.DeepEqual(kinds, want) {
			t.Fatalf("column types %v, want %v", kinds, want)
		}
		at1, at2 := "2024-01-02T03:04:05.000000", "1999-12-31T23:59:59.123456"
		if tg.IsPostgres() {
			at1, at2 = "2024-01-02 03:04:05", "1999-12-31 23:59:59.123456"
		}
		got := testkit.Query(t, tg.DB, `SELECT CAST(day AS TEXT), CAST(at AS TEXT), `+tg.TimeText("instant")+` FROM t ORDER BY id`)
		wantRows := [][]any{{"2024-02-29", at1, "2024-01-02T03:04:05.000000Z"}, {"1969-12-31", at2, "2024-01-02T03:04:05.000000Z"}, {nil, nil, nil}}
		if !reflect.DeepEqual(got, wantRows) {
			t.Fatalf("values %q, want %q", got, wantRows)
		}

		res := importTo(t, tg, dir, nil, 0, "--table", "b", "--max-rejects", "3", "--column", "day:date", "--column", "at:timestamp",
			"--column", "amount:numeric(12,2)", "bad.csv")
		if res.Rows.Inserted != 2 || res.Rows.Rejected != 2 {
			t.Fatalf("bad values: %+v", res)
		}
		list := tg.Exec(t, dir, nil, "rejects", "list", "--table", "b", "bad.csv").Stdout
		for _, w := range []string{"not a valid date (want ISO 8601: YYYY-MM-DD)", "a timestamp (without time zone) has no zone"} {
			if !strings.Contains(list, w) {
				t.Errorf("rejects list does not say %q:\n%s", w, list)
			}
		}
		at0 := "2024-01-02T00:00:00.000000"
		if tg.IsPostgres() {
			at1, at0 = "2024-01-02 03:04:05", "2024-01-02 00:00:00"
		}
		got = testkit.Query(t, tg.DB, `SELECT CAST(day AS TEXT), CAST(at AS TEXT), CAST(amount AS TEXT) FROM b ORDER BY _idemport_row`)
		if w := [][]any{{"2024-02-29", at1, "12.50"}, {"2024-03-01", at0, "3"}}; !reflect.DeepEqual(got, w) {
			t.Fatalf("b holds %q, want %q", got, w)
		}
		run := tg.Exec(t, dir, nil, "import", "--table", "b", "--max-rejects", "3", "--column", "day:date", "--column", "at:timestamptz",
			"--column", "amount:numeric", "bad.csv")
		if run.Code != 3 || !strings.Contains(run.Stdout, `columns was {"amount":"decimal","at":"localtimestamp","day":"date"}, now {"amount":"decimal","at":"timestamp","day":"date"}`) {
			t.Fatalf("another type: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
	})
}

// TestMappingVersion1KeepsItsIdentity imports a file, then makes its
// ledger record what version 1 recorded (the same canonical mapping with
// mapping_version 1, and its digest): a rerun is still a duplicate, not a
// conflict, though version 2 reads dates otherwise.
func TestMappingVersion1KeepsItsIdentity(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		writeFiles(t, dir, map[string]string{"d.csv": "id,day\n1,2024-01-02\n"})
		importTo(t, tg, dir, nil, 0, "--column", "id:bigint", "d.csv")
		ops := tg.Ledger("operations")
		mapping := testkit.Query(t, tg.DB, "SELECT mapping FROM "+ops)[0][0].(string)
		if !strings.HasPrefix(mapping, `{"mapping_version":2,`) {
			t.Fatalf("mapping %s", mapping)
		}
		v1 := strings.Replace(mapping, `"mapping_version":2`, `"mapping_version":1`, 1)
		sum := sha256.Sum256([]byte(v1))
		if _, err := tg.DB.Exec(tg.Rebind("UPDATE "+ops+" SET mapping = ?, mapping_digest = ?"), v1, "sha256:"+hex.EncodeToString(sum[:])); err != nil {
			t.Fatal(err)
		}
		if r := importTo(t, tg, dir, nil, 0, "--column", "id:bigint", "d.csv"); r.Outcome != "duplicate" {
			t.Fatalf("rerun of a version 1 import: %+v", r)
		}
	})
}
