package reader

import (
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/reader/internal/value"
	"github.com/idemport/idemport/sink/postgres"
)

// TestLimitsAgreeWithPostgres asks the real server, for each value, whether
// its column type takes it, and compares with the plan pass's verdict under
// the rules the PostgreSQL driver supplies, so that a value the checks pass
// never fails the write and a value they refuse is one the server refuses
// (or would silently change).
func TestLimitsAgreeWithPostgres(t *testing.T) {
	db, _ := pgtest.Open(t)
	rules := postgres.Driver{}.Limits().Rules
	cases := []struct {
		typ  string
		lim  Limit
		t    idemtype.Type
		vals []string
	}{
		{"smallint", Limit{MinInt: -32768, MaxInt: 32767}, idemtype.Int64, []string{"32767", "32768", "-32768", "-32769", "0"}},
		{"integer", Limit{MinInt: -1 << 31, MaxInt: 1<<31 - 1}, idemtype.Int64, []string{"2147483647", "2147483648", "-2147483648", "-2147483649"}},
		{"varchar(3)", Limit{MaxChars: 3}, idemtype.String, []string{"abc", "abcd", "äöü", "äöüx", "", "ab "}},
		{"char(2)", Limit{MaxChars: 2}, idemtype.String, []string{"ab", "abc", "é"}},
		{"numeric(5,2)", Limit{Decimal: true, Precision: 5, Scale: 2}, idemtype.String, []string{
			"123.45", "1234.5", "123.456", "123.450", "-999.99", "999.995", "0.001", "0.0", "1e2", "1e3", "12345e-2", "12345e-3",
			"0.000000", "00123.45", "+1.5", "1.5e-2"}},
		{"numeric(3,0)", Limit{Decimal: true, Precision: 3}, idemtype.String, []string{"999", "1000", "999.4", "1e2", "0.5"}},
		{"numeric", Limit{Decimal: true}, idemtype.String, []string{"1e131071", "1e131072", "1e-16383", "1e-16384", "0e99999999",
			"0.5e-16383", "12e-16384", "123456789012345678901234567890.123456789", "1e1000000", "-1e-400", "0.000e-16384"}},
	}
	for _, c := range cases {
		for _, v := range c.vals {
			c.lim.Table = "t"
			cl := value.Cell{B: []byte(v), Kind: value.CellText}
			x, code, msg := value.Convert(cl, c.t)
			if code == "" {
				code, msg = value.CheckLimits(&rules, &c.lim, false, cl, x, c.t)
			}
			refused := code != ""
			want := pgRefuses(t, db, v, c.typ)
			if refused != want {
				t.Errorf("%s into %s: checks refuse=%v (%s), PostgreSQL refuses or changes it=%v", v, c.typ, refused, msg, want)
			}
		}
	}
	for _, j := range []string{`{"a":"\u0000"}`, `{"a\u0000":1}`, `["\\u0000"]`, `[1e1000000]`, `{"n":-1e131072}`, `{"n":1e131071}`,
		`[0.5e-16383]`, `[1e-16383]`, `{"s":"x\"\\u0000"}`, `{"s":"x\\\u0000"}`, `[true,null,"\u00e9"]`, `[-0.0e5]`} {
		refused := value.JSONRefuses(&rules, []byte(j)) != ""
		var ok bool
		err := db.QueryRow(`SELECT $1::jsonb IS NOT NULL`, j).Scan(&ok)
		if refused != (err != nil) {
			t.Errorf("jsonb %s: checks refuse=%v, PostgreSQL says %v", j, refused, err)
		}
	}
}

// pgRefuses reports whether PostgreSQL refuses text v as type typ, or
// stores a value whose text differs in meaning (numeric rounding, char
// padding aside).
func pgRefuses(t *testing.T, db *sql.DB, v, typ string) bool {
	t.Helper()
	var same bool
	q := `SELECT $1::` + typ + `::text = $1`
	switch {
	case strings.HasPrefix(typ, "numeric"):
		q = `SELECT $1::` + typ + ` = $1::numeric`
	case strings.HasPrefix(typ, "char"):
		q = `SELECT rtrim($1::` + typ + `::text) = rtrim($1)`
	case strings.Contains(typ, "int"):
		q = `SELECT $1::` + typ + ` = $1::numeric`
	}
	if err := db.QueryRow(q, v).Scan(&same); err != nil {
		return true
	}
	return !same
}

// TestLimitsInTypedFiles checks Parquet values against the target's
// limits: the plan pass and the partition reader find the same bad rows.
func TestLimitsInTypedFiles(t *testing.T) {
	mem := memory.NewGoAllocator()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "nn", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "doc", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	rows := []struct {
		s   int32
		v   string
		nn  *int64
		doc string
	}{
		{32767, "abc", ptr(1), `{"a":1}`},
		{32768, "abc", ptr(2), `{}`},           // 2: smallint
		{1, "abcd", ptr(3), `{}`},              // 3: varchar(3)
		{1, "äöü", nil, `{}`},                  // 4: NOT NULL
		{-32768, "", ptr(5), `{"a":"\u0000"}`}, // a string forced to json is a JSON string, which jsonb takes
		{1, "x", ptr(6), `[1e1000000]`},
		{2, "y", ptr(7), `[1e-400]`},
	}
	for _, r := range rows {
		b.Field(0).(*array.Int32Builder).Append(r.s)
		b.Field(1).(*array.StringBuilder).Append(r.v)
		if r.nn == nil {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Int64Builder).Append(*r.nn)
		}
		b.Field(3).(*array.StringBuilder).Append(r.doc)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	path := writeParquetRecord(t, "l.parquet", rec, 3, true)
	opts := Options{
		Types: map[string]idemtype.Type{"doc": idemtype.JSON},
		Rules: postgres.Driver{}.Limits().Rules,
		Limits: map[string]Limit{"s": {MinInt: -32768, MaxInt: 32767, Table: "t"}, "v": {MaxChars: 3, Table: "t"},
			"nn": {NotNull: true, Table: "t"}, "doc": {JSON: true, Table: "t"}},
	}
	f, plan := scanChecked(t, path, opts, ScanOptions{KeepRejects: 100})
	var got [][2]any
	for _, r := range plan.Rejects {
		got = append(got, [2]any{r.Ordinal, r.Code})
	}
	want := [][2]any{{int64(2), value.CodeRange}, {int64(3), value.CodeLength}, {int64(4), value.CodeNull}}
	if !reflect.DeepEqual(got, want) || plan.Rejected != 3 {
		t.Fatalf("rejects %v (%d), want %v", got, plan.Rejected, want)
	}
	_, ords := readPlan(t, f, plan, 2)
	if !reflect.DeepEqual(ords, []int64{1, 5, 6, 7}) {
		t.Fatalf("good ordinals %v", ords)
	}
}

func ptr(v int64) *int64 { return &v }

// TestRulesComeFromTheDriver checks that the decimal and JSON rules a value
// is refused by are those Options.Rules gives, not the reader's own: the
// same file, read for a table of the same columns, is refused or taken as
// the database's types hold it, and the reason code is the database's.
func TestRulesComeFromTheDriver(t *testing.T) {
	// A database whose decimal type holds 65 digits, 30 after the point
	// (MariaDB's DECIMAL), and whose JSON type takes any valid JSON.
	decimal65 := idemtype.ValueRules{Decimal: idemtype.DecimalRule{Name: "decimal", Code: "decimal", MaxDigits: 65, MaxScale: 30}}
	pg := postgres.Driver{}.Limits().Rules
	digits66 := "1" + strings.Repeat("0", 65)
	scale31 := "0." + strings.Repeat("0", 30) + "1"
	path := writeFile(t, "r.csv", []byte("n,doc\n1.5,{}\n"+digits66+",{}\n"+scale31+",{}\n7,\"{\"\"a\"\":\"\"\\u0000\"\"}\"\n"))
	opts := Options{
		Types:  map[string]idemtype.Type{"n": idemtype.String, "doc": idemtype.JSON},
		Limits: map[string]Limit{"n": {Decimal: true, Table: "t"}, "doc": {JSON: true, Table: "t"}},
	}
	for _, c := range []struct {
		name  string
		rules idemtype.ValueRules
		want  [][2]any
	}{
		{"none", idemtype.ValueRules{}, nil},
		{"decimal(65,30)", decimal65, [][2]any{{int64(2), "decimal"}, {int64(3), "decimal"}}},
		{"postgres", pg, [][2]any{{int64(4), "jsonb"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := opts
			o.Rules = c.rules
			_, plan := scanChecked(t, path, o, ScanOptions{KeepRejects: 10})
			var got [][2]any
			for _, r := range plan.Rejects {
				got = append(got, [2]any{r.Ordinal, r.Code})
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("rejects %v, want %v", got, c.want)
			}
		})
	}
}

// TestKeyLengthOfANewTable: the key columns of a table the driver will
// create hold a bounded text each (Limit.Key), checked whatever kind the
// plan pass infers for the column, in characters: a longer key is a bad
// row naming its row and column, and a key of as many four-byte
// characters as the bound is not.
func TestKeyLengthOfANewTable(t *testing.T) {
	path := writeFile(t, "k.csv", []byte("k,d,v\nabcd,1.50,a\nabcde,1,b\n😀😀😀😀,2,c\nx,1.2345,d\nxyz,1.23,e\n"))
	key := Limit{MaxChars: 4, Key: true, Table: "t"}
	opts := Options{Key: []string{"k", "d"}, Limits: map[string]Limit{"k": key, "d": key}}
	_, plan := scanChecked(t, path, opts, ScanOptions{KeepRejects: 10})
	var got [][3]any
	for _, r := range plan.Rejects {
		got = append(got, [3]any{r.Ordinal, r.Column, r.Code})
	}
	want := [][3]any{{int64(2), "k", value.CodeLength}, {int64(4), "d", value.CodeLength}}
	if !reflect.DeepEqual(got, want) || plan.Rejected != 2 {
		t.Fatalf("rejects %v (%d), want %v", got, plan.Rejected, want)
	}
}

// TestAllJSONChecksInferredColumns: with Options.AllJSON, a JSON object or
// array in a JSONL column whose type is inferred, in a row that is clean
// UTF-8 and has no limit on any column, is still checked against the
// database's JSON rules; the same text in a CSV field is text, not JSON,
// and is not.
func TestAllJSONChecksInferredColumns(t *testing.T) {
	pg := postgres.Driver{}.Limits().Rules
	huge := "1e" + strings.Repeat("9", 7)
	jsonl := writeFile(t, "j.jsonl", []byte(`{"id":1,"doc":{"a":1}}`+"\n"+`{"id":2,"doc":{"a":`+huge+`}}`+"\n"+`{"id":3,"doc":[2]}`+"\n"))
	csvPath := writeFile(t, "j.csv", []byte("id,doc\n1,\"{\"\"a\"\":1}\"\n2,\"{\"\"a\"\":"+huge+"}\"\n"))
	for _, c := range []struct {
		name, path string
		want       [][2]any
	}{
		{"jsonl", jsonl, [][2]any{{int64(2), "jsonb"}}},
		{"csv", csvPath, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, plan := scanChecked(t, c.path, Options{Rules: pg, AllJSON: true}, ScanOptions{KeepRejects: 10})
			var got [][2]any
			for _, r := range plan.Rejects {
				got = append(got, [2]any{r.Ordinal, r.Code})
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("rejects %v, want %v", got, c.want)
			}
		})
	}
}

// TestLimitsInCSVReadPass: a CSV file's partitions are read as its plan
// pass checked them: rows a column's limit or --all-json's check of a
// json column refuses are skipped as the plan's bad rows, in partitions
// cut between them, the rest read with their values.
func TestLimitsInCSVReadPass(t *testing.T) {
	huge := "1e" + strings.Repeat("9", 7)
	path := writeFile(t, "l.csv", []byte("s,v,doc\n"+
		"32767,abc,\"{\"\"a\"\":1}\"\n"+
		"32768,abc,{}\n"+ // 2: smallint
		"1,abcd,{}\n"+ // 3: varchar(3)
		"-32768,,[1]\n"+
		"2,xy,\"{\"\"a\"\":"+huge+"}\"\n"+ // 5: jsonb's numbers
		"3,z,[2]\n"))
	opts := Options{
		Types:   map[string]idemtype.Type{"s": idemtype.Int64, "v": idemtype.String, "doc": idemtype.JSON},
		Rules:   postgres.Driver{}.Limits().Rules,
		AllJSON: true,
		Limits:  map[string]Limit{"s": {MinInt: -32768, MaxInt: 32767, Table: "t"}, "v": {MaxChars: 3, Table: "t"}},
	}
	for _, rows := range []int64{2, 100} {
		f, plan := scanChecked(t, path, opts, ScanOptions{KeepRejects: 100, PartitionRows: rows})
		var got [][2]any
		for _, r := range plan.Rejects {
			got = append(got, [2]any{r.Ordinal, r.Code})
		}
		if len(got) != 3 || plan.Rejected != 3 || got[0] != [2]any{int64(2), value.CodeRange} || got[1] != [2]any{int64(3), value.CodeLength} || got[2][0] != int64(5) {
			t.Fatalf("partitions of %d rows: rejects %v (%d)", rows, got, plan.Rejected)
		}
		vals, ords := readPlan(t, f, plan, 2)
		if !reflect.DeepEqual(ords, []int64{1, 4, 6}) || fmt.Sprint(vals) != `[[32767 abc {"a":1}] [-32768 <nil> [1]] [3 z [2]]]` {
			t.Fatalf("partitions of %d rows: good ordinals %v, values %v", rows, ords, vals)
		}
		// --all-json alone, no column with a limit.
		opts := opts
		opts.Limits = nil
		f, plan = scanChecked(t, path, opts, ScanOptions{KeepRejects: 100, PartitionRows: rows})
		if plan.Rejected != 1 || plan.Rejects[0].Ordinal != 5 {
			t.Fatalf("partitions of %d rows, --all-json alone: rejects %v", rows, plan.Rejects)
		}
		if _, ords := readPlan(t, f, plan, 2); !reflect.DeepEqual(ords, []int64{1, 2, 3, 4, 6}) {
			t.Fatalf("partitions of %d rows, --all-json alone: good ordinals %v", rows, ords)
		}
	}
}
