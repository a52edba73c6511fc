package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/reader"
)

// valuesFx is an engine on a fresh target, and a directory for its files.
type valuesFx struct {
	e   *Engine
	tg  *testkit.Target
	dir string
}

func openValues(t *testing.T, name string) *valuesFx {
	t.Helper()
	dir := t.TempDir()
	tg := testkit.NewTarget(t, name, dir)
	o := Options{}
	if tg.IsPostgres() {
		o.StateSchema = tg.Schema
	}
	e, err := Open(context.Background(), tg.Args[1], o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return &valuesFx{e: e, tg: tg, dir: dir}
}

// importText writes content to the file name and imports it with req
// (its Path set).
func (f *valuesFx) importText(t *testing.T, name, content string, req Request) *Result {
	t.Helper()
	path := filepath.Join(f.dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	req.Path = path
	return f.e.Import(context.Background(), req)
}

func (f *valuesFx) exec(t *testing.T, q string) {
	t.Helper()
	if _, err := f.tg.DB.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func (f *valuesFx) text(t *testing.T, q string) string {
	t.Helper()
	var s string
	if err := f.tg.DB.QueryRow(q).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s
}

func wantImported(t *testing.T, res *Result, rows int64) {
	t.Helper()
	if res.Err != nil || (res.Outcome != Imported && res.Outcome != Resumed) || res.Rows.Inserted+res.Rows.Updated != rows {
		t.Fatalf("import: %s %+v %v %+v", res.Outcome, res.Rows, res.Err, res.Refusal)
	}
}

// TestTrickyValuesLandExactly imports the tricky values as CSV and as
// JSONL, in ordinal and natural-key mode, and compares every stored value
// with the file's as text: nothing rounded, nothing turned to NULL.
func TestTrickyValuesLandExactly(t *testing.T) {
	t.Parallel()
	csv, jsonl, cols := testkit.Tricky()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := openValues(t, name)
		for _, file := range []struct{ name, content string }{{"tricky.csv", csv}, {"tricky.jsonl", jsonl}} {
			for _, key := range [][]string{nil, {"id"}, {"big"}} {
				table := strings.ReplaceAll(file.name, ".", "_") + "_" + strings.Join(key, "")
				if key != nil && key[0] == "big" {
					// Row 7's key is NULL: a key column must have one.
					file.content = strings.Replace(file.content, "7,,,,,,\n", "", 1)
					file.content = strings.Replace(file.content, `{"id": 7}`+"\n", "", 1)
				}
				t.Run(table, func(t *testing.T) {
					res := f.importText(t, file.name, file.content, Request{Mapping: Mapping{Table: table, Key: key}})
					want := int64(len(cols[0].Want))
					if key != nil && key[0] == "big" {
						want--
					}
					wantImported(t, res, want)
					check := cols
					if strings.HasSuffix(file.name, ".jsonl") {
						check = append(check[:len(check):len(check)], testkit.TrickyJSON)
					}
					for _, c := range check {
						c.Want = c.Want[:want]
						testkit.CheckTricky(t, f.tg.DB, name, table, "id", c)
					}
				})
			}
		}
	})
}

// TestKeysBeyondFloatStayDistinct: keys that one float64 cannot tell apart
// (2^53 and 2^53+1, beside a decimal) stay two rows, as CSV and JSONL.
func TestKeysBeyondFloatStayDistinct(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := openValues(t, name)
		for _, file := range []struct{ name, content string }{
			{"k.csv", "id,v\n9007199254740992,a\n9007199254740993,b\n1.5,c\n"},
			{"k.jsonl", `{"id": 9007199254740992, "v": "a"}` + "\n" + `{"id": 9007199254740993, "v": "b"}` + "\n" + `{"id": 1.5, "v": "c"}` + "\n"},
		} {
			table := strings.ReplaceAll(file.name, ".", "_")
			res := f.importText(t, file.name, file.content, Request{Mapping: Mapping{Table: table, Key: []string{"id"}}})
			wantImported(t, res, 3)
			testkit.CheckTricky(t, f.tg.DB, name, table, "v", testkit.TrickyColumn{Name: "id",
				Want: []string{"9007199254740992", "9007199254740993", "1.5"}})
		}
	})
}

// TestLeadingZerosIntoIntegerColumn: a table made from a file whose zips
// had no leading zero has an integer column; a later file's 02134 is a bad
// row that says why, never 2134, and keys 007 and 7 never merge.
func TestLeadingZerosIntoIntegerColumn(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := openValues(t, name)
		wantImported(t, f.importText(t, "zips1.csv", "zip,city\n2134,Boston\n10001,New York\n", Request{Mapping: Mapping{Table: "zips"}}), 2)
		res := f.importText(t, "zips2.csv", "zip,city\n02134,Boston\n94105,San Francisco\n", Request{Mapping: Mapping{Table: "zips"}})
		if res.Outcome != Refused || res.Refusal == nil || len(res.Refusal.Rejects) != 1 {
			t.Fatalf("second file: %s %v %+v", res.Outcome, res.Err, res.Refusal)
		}
		rj := res.Refusal.Rejects[0]
		if rj.Ordinal != 1 || rj.Column != "zip" || rj.Value != "02134" || rj.Code != reader.CodeInexact ||
			!strings.Contains(rj.Message, "leading zeros would be lost") || !strings.Contains(rj.Message, "--column zip:string") {
			t.Fatalf("reject %+v", rj)
		}
		// Within --max-rejects the bad row is quarantined, the rest imported.
		res = f.importText(t, "zips2.csv", "zip,city\n02134,Boston\n94105,San Francisco\n", Request{Mapping: Mapping{Table: "zips"},
			MaxRejects: RejectLimit{Count: 1}})
		wantImported(t, res, 1)
		if got := f.list(t, `SELECT `+f.tg.Text("zip")+` AS z FROM zips ORDER BY zip`); got != "2134,10001,94105" {
			t.Fatalf("zips %s", got)
		}

		// Keys: 7 stored, 007 refused, not merged into it.
		wantImported(t, f.importText(t, "ids1.csv", "id,v\n7,seven\n", Request{Mapping: Mapping{Table: "ids", Key: []string{"id"}}}), 1)
		res = f.importText(t, "ids2.csv", "id,v\n007,bond\n", Request{Mapping: Mapping{Table: "ids", Key: []string{"id"}}})
		if res.Outcome != Refused || len(res.Refusal.Rejects) != 1 || res.Refusal.Rejects[0].Code != reader.CodeInexact {
			t.Fatalf("007 into an integer key: %s %v %+v", res.Outcome, res.Err, res.Refusal)
		}
		if got := f.list(t, `SELECT `+f.tg.Text("id")+` || ':' || v FROM ids`); got != "7:seven" {
			t.Fatalf("ids %s", got)
		}
	})
}

// list runs q and joins the text of its rows' one column with commas.
func (f *valuesFx) list(t *testing.T, q string) string {
	t.Helper()
	rows, err := f.tg.DB.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, ",")
}

// TestJSONColumnOnCSV: --column doc:json stores CSV text as the JSON
// document it is (an object stays an object), and text that is not JSON is
// a bad row.
func TestJSONColumnOnCSV(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		f := openValues(t, name)
		content := "id,doc\n" +
			`1,"{""a"": {""b"": [1, 2.50]}}"` + "\n" +
			`2,"[1, ""x""]"` + "\n" +
			`3,"""text"""` + "\n" +
			"4,not json\n" +
			"5,\n"
		req := Request{Mapping: Mapping{Table: "docs", Columns: map[string]idemtype.Type{"doc": idemtype.JSON}}}
		res := f.importText(t, "docs.csv", content, req)
		if res.Outcome != Refused || len(res.Refusal.Rejects) != 1 || res.Refusal.Rejects[0].Ordinal != 4 || res.Refusal.Rejects[0].Code != reader.CodeJSON {
			t.Fatalf("import: %s %v %+v", res.Outcome, res.Err, res.Refusal)
		}
		req.MaxRejects = RejectLimit{Count: 1}
		wantImported(t, f.importText(t, "docs.csv", content, req), 4)
		typeOf := "json_type(doc)"
		if name == testkit.Postgres {
			typeOf = "jsonb_typeof(doc)"
		}
		got := f.list(t, `SELECT coalesce(`+typeOf+`, 'NULL') FROM docs ORDER BY _idemport_row`)
		want := "object,array,string,NULL"
		if name == testkit.SQLite {
			want = "object,array,text,NULL" // json_type's name for a string
		}
		if got != want {
			t.Fatalf("json types %s", got)
		}
		testkit.CheckTricky(t, f.tg.DB, name, "docs", "_idemport_row", testkit.TrickyColumn{Name: "doc", JSON: true,
			Want: []string{`{"a": {"b": [1, 2.50]}}`, `[1, "x"]`, `"text"`, testkit.Null}})
	})
}

// TestNumericColumnExact (PostgreSQL): a user's numeric(38,9) column gets
// 12345678901234567890.123456789 exactly, from CSV and from JSONL, and
// columns of types idemport does not create take the file's text.
func TestNumericColumnExact(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.Postgres)
	f := openValues(t, testkit.Postgres)
	f.exec(t, `CREATE TABLE amounts (id bigint PRIMARY KEY, amount numeric(38,9), qty integer, code varchar(10),
		day date, u uuid, _idemport_file bigint, _idemport_row bigint)`)
	req := Request{Mapping: Mapping{Table: "amounts", Key: []string{"id"}}}
	wantImported(t, f.importText(t, "a.csv", "id,amount,qty,code,day,u\n"+
		"1,12345678901234567890.123456789,7,00123,2026-11-28,a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\n"+
		"2,0.1,,1e5,,\n", req), 2)
	wantImported(t, f.importText(t, "a.jsonl", `{"id": 3, "amount": 12345678901234567890.123456789, "qty": 8, "code": "x"}`+"\n"+
		`{"id": 4, "amount": 9007199254740993, "code": "007"}`+"\n", req), 2)
	got := f.text(t, `SELECT string_agg(concat_ws('|', id, amount, qty, code, day, u), ';' ORDER BY id) FROM amounts`)
	want := "1|12345678901234567890.123456789|7|00123|2026-11-28|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11;" +
		"2|0.100000000|1e5;" +
		"3|12345678901234567890.123456789|8|x;" +
		"4|9007199254740993.000000000|007"
	if got != want {
		t.Fatalf("stored\n%s\nwant\n%s", got, want)
	}
}

// TestShortNumberForms: every short form of a number with zeros or a sign
// (testkit.ZeroForms: 0, 00, 07, -07, +7, -0, 0.0, 00.5), written as CSV
// text, as a JSON string and bare in JSONL, lands as the contract says: in
// a new column of its own (its type inferred, its value kept); in new
// (--column) and existing int64, decimal and float64 columns, as its value
// or as a bad row with its reason, the file refused whole without
// --max-rejects and the bad rows quarantined within it; and as a key, of a
// new key column or of existing int64, decimal and text keys holding 0, 1
// and 7, which it updates only where it means one of them (-0 and 0.0 are
// 0, +7 is 7; 07 never is).
func TestShortNumberForms(t *testing.T) {
	t.Parallel()
	forms := testkit.ZeroForms()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := openValues(t, name)
		for _, as := range []string{testkit.AsCSV, testkit.AsString, testkit.AsNumber} {
			t.Run(as, func(t *testing.T) {
				t.Run("inferred", func(t *testing.T) { f.zerosInferred(t, as, forms) })
				for _, typ := range []string{"int64", "decimal", "float64"} {
					t.Run("new-"+typ, func(t *testing.T) { f.zerosInto(t, as, typ, false, forms) })
					t.Run("existing-"+typ, func(t *testing.T) { f.zerosInto(t, as, typ, true, forms) })
				}
				for _, typ := range []string{"", "int64", "decimal", "string"} {
					for i, z := range forms {
						if as == testkit.AsNumber && !z.Number {
							continue // a bare 07 is no JSON: a bad row in any column (zerosInto)
						}
						t.Run(fmt.Sprintf("key-%s/%s", cmp.Or(typ, "inferred"), z.Text), func(t *testing.T) { f.zeroKey(t, as, typ, i, z) })
					}
				}
			})
		}
	})
}

// zerosFile writes the rows (fields in the file's syntax) under the header
// cols, as CSV or as JSONL objects, to name (its extension added) and
// imports it with req.
func (f *valuesFx) zerosFile(t *testing.T, as, name string, cols []string, rows [][]string, req Request) *Result {
	t.Helper()
	var b strings.Builder
	if as == testkit.AsCSV {
		b.WriteString(strings.Join(cols, ",") + "\n")
		for _, r := range rows {
			b.WriteString(strings.Join(r, ",") + "\n")
		}
		return f.importText(t, name+".csv", b.String(), req)
	}
	for _, r := range rows {
		var fields []string
		for i, c := range cols {
			fields = append(fields, strconv.Quote(c)+": "+r[i])
		}
		b.WriteString("{" + strings.Join(fields, ", ") + "}\n")
	}
	return f.importText(t, name+".jsonl", b.String(), req)
}

// text returns s as a file written as as holds text.
func text(as, s string) string {
	if as == testkit.AsCSV {
		return s
	}
	return strconv.Quote(s)
}

// zerosInferred imports one row holding every form (every JSON number,
// written bare) in a column of its own: each column's type is inferred
// from its form, and holds it.
func (f *valuesFx) zerosInferred(t *testing.T, as string, forms []testkit.ZeroForm) {
	t.Helper()
	table := "inferred_" + as
	cols, row := []string{"k"}, []string{"1"}
	for i, z := range forms {
		if as != testkit.AsNumber || z.Number {
			cols, row = append(cols, fmt.Sprintf("f%d", i)), append(row, z.Field(as))
		}
	}
	wantImported(t, f.zerosFile(t, as, table, cols, [][]string{row}, Request{Mapping: Mapping{Table: table}}), 1)
	for i, z := range forms {
		if as == testkit.AsNumber && !z.Number {
			continue
		}
		col, typ := fmt.Sprintf("f%d", i), z.Inferred(as, false)
		if got := f.tg.ColumnType(t, table, col); got != typ {
			t.Errorf("%s alone (%s) makes a column of %s, want %s", z.Text, as, got, typ)
			continue
		}
		if got, want := f.tg.Texts(t, table, col, typ, "1 = 1", "k"), z.Want(f.tg.Name, typ, as); len(got) != 1 || got[0] != want {
			t.Errorf("%s (%s) in its new %s column: stored %q, want %q", z.Text, as, typ, got, want)
		}
	}
}

// zerosInto imports every form, a row each (k = 1…), into a column v of
// type typ: one the import creates (--column v:typ), or one of an
// existing table. Without --max-rejects the file is refused naming each
// bad row, and nothing is written; within it the bad rows are quarantined
// and every other form lands as its value.
func (f *valuesFx) zerosInto(t *testing.T, as, typ string, existing bool, forms []testkit.ZeroForm) {
	t.Helper()
	table := fmt.Sprintf("into_%s_%s_new", as, typ)
	req := Request{Mapping: Mapping{Table: table, Columns: map[string]idemtype.Type{"v": mustType(t, typ)}}}
	if existing {
		table = strings.TrimSuffix(table, "_new") + "_existing"
		req.Mapping.Table = table
		wantImported(t, f.importText(t, table+"_base.csv", "k,v\n0,1\n", req), 1)
		req.Mapping.Columns = nil
	}
	var rows [][]string
	var bad []string  // "ordinal:code" of each bad row
	var good []string // what v holds for each good row, in order
	for i, z := range forms {
		rows = append(rows, []string{fmt.Sprint(i + 1), z.Field(as)})
		if w := z.Want(f.tg.Name, typ, as); strings.HasPrefix(w, "!") {
			bad = append(bad, fmt.Sprintf("%d:%s", i+1, w[1:]))
		} else {
			good = append(good, w)
		}
	}
	what := fmt.Sprintf("%s into a %s %s column", as, map[bool]string{false: "new", true: "existing"}[existing], typ)

	res := f.zerosFile(t, as, table, []string{"k", "v"}, rows, req)
	if res.Outcome != Refused || res.Refusal == nil {
		t.Fatalf("%s: %s %v, want refused", what, res.Outcome, res.Err)
	}
	var got []string
	for _, rj := range res.Refusal.Rejects {
		if rj.Column != "v" {
			t.Errorf("%s: reject of row %d names column %q", what, rj.Ordinal, rj.Column)
		}
		got = append(got, fmt.Sprintf("%d:%s", rj.Ordinal, rj.Code))
	}
	if !slices.Equal(got, bad) || res.Refusal.Rejected != int64(len(bad)) {
		t.Fatalf("%s: refused with the bad rows %v (%d), want %v", what, got, res.Refusal.Rejected, bad)
	}
	if !existing && f.tg.TableExists(t, table) {
		t.Fatalf("%s: the refused file created its table", what)
	}
	if existing {
		if n := len(f.tg.Texts(t, table, "v", typ, "k > 0", "k")); n != 0 {
			t.Fatalf("%s: the refused file wrote %d rows", what, n)
		}
	}

	req.MaxRejects = RejectLimit{Count: int64(len(bad))}
	wantImported(t, f.zerosFile(t, as, table, []string{"k", "v"}, rows, req), int64(len(good)))
	if got := f.tg.ColumnType(t, table, "v"); got != typ {
		t.Fatalf("%s: the column is %s", what, got)
	}
	if got := f.tg.Texts(t, table, "v", typ, "k > 0", "k"); !slices.Equal(got, good) {
		t.Fatalf("%s: stored %q, want %q", what, got, good)
	}
	got = nil
	for _, r := range testkit.Query(t, f.tg.DB, f.tg.Rebind(`SELECT ordinal, code FROM `+f.tg.Ledger("rejects")+` WHERE table_name = ? ORDER BY ordinal`), table) {
		got = append(got, fmt.Sprintf("%d:%s", r[0], r[1]))
	}
	if !slices.Equal(got, bad) {
		t.Fatalf("%s: quarantined %v, want %v", what, got, bad)
	}
}

// zeroKey imports form z as the key id of a one-row file: into a new table
// (typ ""), where the key column's type is inferred, or into an existing
// table keyed by an id of type typ that holds the keys 0, 1 and 7. The form
// is refused as a bad row (the table unchanged), or writes the key it
// means: a new one, or the row of the key equal to it (by value for a
// number: -0 and 0.0 are 0, +7 is 7; never 07), which then keeps the
// form's text as the last writer's.
func (f *valuesFx) zeroKey(t *testing.T, as, typ string, i int, z testkit.ZeroForm) {
	t.Helper()
	table := fmt.Sprintf("key_%s_%s_%d", as, typ, i)
	type row struct{ id, v string }
	want := map[string]row{} // by testkit.KeyOf
	req := Request{Mapping: Mapping{Table: table, Key: []string{"id"}}}
	if typ == "" {
		table = fmt.Sprintf("key_%s_inferred_%d", as, i)
		req.Mapping.Table = table
		typ = z.Inferred(as, true)
	} else {
		req.Mapping.Columns = map[string]idemtype.Type{"id": mustType(t, typ)}
		wantImported(t, f.importText(t, table+"_base.csv", "id,v\n0,zero\n1,one\n7,seven\n", req), 3)
		req.Mapping.Columns = nil
		for _, r := range []row{{"0", "zero"}, {"1", "one"}, {"7", "seven"}} {
			want[testkit.KeyOf(typ, r.id)] = r
		}
	}
	what := fmt.Sprintf("%s (%s) as a %s key", z.Text, as, typ)
	res := f.zerosFile(t, as, table, []string{"id", "v"}, [][]string{{z.Field(as), text(as, "new")}}, req)
	w := z.Want(f.tg.Name, typ, as)
	if strings.HasPrefix(w, "!") {
		if res.Outcome != Refused || res.Refusal == nil || len(res.Refusal.Rejects) != 1 || res.Refusal.Rejects[0].Code != w[1:] {
			t.Fatalf("%s: %s %v %+v, want refused (%s)", what, res.Outcome, res.Err, res.Refusal, w[1:])
		}
	} else {
		old, updates := want[testkit.KeyOf(typ, w)]
		if res.Err != nil || updates && res.Rows.Updated != 1 || !updates && res.Rows.Inserted != 1 {
			t.Fatalf("%s: %s %+v %v, want the key %s %s", what, res.Outcome, res.Rows, res.Err, w,
				map[bool]string{false: "inserted", true: "updated (key " + old.id + ")"}[updates])
		}
		want[testkit.KeyOf(typ, w)] = row{w, "new"}
		if got := f.tg.ColumnType(t, table, "id"); got != typ {
			t.Fatalf("%s: the key column is %s", what, got)
		}
	}
	ids, vs := f.tg.Texts(t, table, "id", typ, "1 = 1", "v"), f.tg.Texts(t, table, "v", "string", "1 = 1", "v")
	got := map[string]row{}
	for j := range ids {
		got[testkit.KeyOf(typ, ids[j])] = row{ids[j], vs[j]}
	}
	if !maps.Equal(got, want) || len(ids) != len(want) {
		t.Fatalf("%s: the table holds %v, want %v", what, got, want)
	}
}

func mustType(t *testing.T, name string) idemtype.Type {
	t.Helper()
	typ, err := idemtype.ParseType(name)
	if err != nil {
		t.Fatal(err)
	}
	return typ
}
