package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	csv, jsonl, cols := testkit.Tricky()
	testkit.Each(t, func(t *testing.T, name string) {
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
	testkit.Each(t, func(t *testing.T, name string) {
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
	testkit.Each(t, func(t *testing.T, name string) {
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
		if got := f.list(t, `SELECT CAST(zip AS TEXT) AS z FROM zips ORDER BY zip`); got != "2134,10001,94105" {
			t.Fatalf("zips %s", got)
		}

		// Keys: 7 stored, 007 refused, not merged into it.
		wantImported(t, f.importText(t, "ids1.csv", "id,v\n7,seven\n", Request{Mapping: Mapping{Table: "ids", Key: []string{"id"}}}), 1)
		res = f.importText(t, "ids2.csv", "id,v\n007,bond\n", Request{Mapping: Mapping{Table: "ids", Key: []string{"id"}}})
		if res.Outcome != Refused || len(res.Refusal.Rejects) != 1 || res.Refusal.Rejects[0].Code != reader.CodeInexact {
			t.Fatalf("007 into an integer key: %s %v %+v", res.Outcome, res.Err, res.Refusal)
		}
		if got := f.list(t, `SELECT CAST(id AS TEXT) || ':' || v FROM ids`); got != "7:seven" {
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
	testkit.Each(t, func(t *testing.T, name string) {
		f := openValues(t, name)
		content := "id,doc\n" +
			`1,"{""a"": {""b"": [1, 2.50]}}"` + "\n" +
			`2,"[1, ""x""]"` + "\n" +
			`3,"""text"""` + "\n" +
			"4,not json\n" +
			"5,\n"
		req := Request{Mapping: Mapping{Table: "docs", Columns: map[string]reader.Type{"doc": reader.JSON}}}
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

// TestVerifyNaturalKeyWhateverTheTypes: verify recounts a natural-key
// import whose file, read alone, infers other types than the table's.
func TestVerifyNaturalKeyWhateverTheTypes(t *testing.T) {
	testkit.Each(t, func(t *testing.T, name string) {
		f := openValues(t, name)
		for _, tc := range []struct{ table, first, second, name string }{
			// A text key; the second file's keys alone are integers.
			{"codes", "id,v\nA1,x\nB2,y\n", "id,v\n3,c\n4,d\n", "codes2.csv"},
			// A decimal key; the second file's keys alone are integers.
			{"decs", "id,v\n9007199254740993,x\n1.5,y\n", "id,v\n3,c\n4,d\n", "decs2.csv"},
			// An integer key; the second file's keys alone are text.
			{"ints", "id,v\n1,x\n2,y\n", `{"id": "3", "v": "c"}` + "\n" + `{"id": "4", "v": "d"}` + "\n", "ints2.jsonl"},
		} {
			t.Run(tc.table, func(t *testing.T) {
				req := Request{Mapping: Mapping{Table: tc.table, Key: []string{"id"}}}
				wantImported(t, f.importText(t, tc.table+"1.csv", tc.first, req), 2)
				wantImported(t, f.importText(t, tc.name, tc.second, req), 2)
				req.Path = filepath.Join(f.dir, tc.name)
				rep, err := f.e.Verify(context.Background(), req)
				if err != nil {
					t.Fatalf("verify: %v", err)
				}
				if len(rep.Differences) != 0 || rep.Found != 2 || rep.Expected != 2 {
					t.Fatalf("verify: %+v", rep)
				}
			})
		}
	})
}
