package reader

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/internal/value"
	"github.com/idemport/idemport/reader/text"
)

func TestJSONLColumns(t *testing.T) {
	const data = `{"b":1,"a":"x"}
{"c":true,"a":"y"}
{"a":null,"d":{"k":[1,2]}}
{"b":2,"e":[1,"two",{"three":3}],"d":{}}
{}
`
	path := writeFile(t, "c.jsonl", []byte(data))
	f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 2})
	if f.Format() != JSONL || f.Header() != nil {
		t.Fatalf("format %s header %q", f.Format(), f.Header())
	}
	if got := schemaString(plan.Schema); got != "b:int64,a:string,c:bool,d:json,e:json" {
		t.Fatalf("schema %s", got)
	}
	if plan.Rows != 5 || plan.Rejected != 0 || len(plan.Partitions) != 3 {
		t.Fatalf("plan %+v", plan)
	}
	rows, ords := readPlan(t, f, plan, 10)
	want := [][]any{
		{"1", "x", nil, nil, nil},
		{nil, "y", "true", nil, nil},
		{nil, nil, nil, `{"k":[1,2]}`, nil},
		{"2", nil, nil, `{}`, `[1,"two",{"three":3}]`},
		{nil, nil, nil, nil, nil},
	}
	if !reflect.DeepEqual(rows, want) || !reflect.DeepEqual(ords, seq(1, 5)) {
		t.Fatalf("got  %q %v\nwant %q", rows, ords, want)
	}
}

// jsonlColumn lays out values (raw JSON, "" for a missing key) as key v of
// one object per line, next to a key k that numbers the lines.
func jsonlColumn(values []string) []byte {
	var b strings.Builder
	for i, v := range values {
		if v == "" {
			fmt.Fprintf(&b, "{\"k\":%d}\n", i+1)
		} else {
			fmt.Fprintf(&b, "{\"k\":%d,\"v\":%s}\n", i+1, v)
		}
	}
	return []byte(b.String())
}

func TestInferJSONL(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		typ    idemtype.Type
		want   []any
	}{
		{"int64", []string{"3", "-4", "0"}, idemtype.Int64, []any{"3", "-4", "0"}},
		{"int_and_float_widen", []string{"3", "3.5"}, idemtype.Float64, []any{"3", "3.5"}},
		{"float_then_int", []string{"3.5", "3"}, idemtype.Float64, []any{"3.5", "3"}},
		{"exponent", []string{"1e2"}, idemtype.Float64, []any{"100"}},
		{"float_one_point_zero", []string{"1.0"}, idemtype.Float64, []any{"1"}},
		{"float_overflow_is_decimal", []string{"1.5", "1e999"}, idemtype.Decimal, []any{"1.5", "1" + strings.Repeat("0", 999)}},
		{"beyond_decimal_is_string", []string{"1.5", "1e200000"}, idemtype.String, []any{"1.5", "1e200000"}},
		{"int64_overflow_is_decimal", []string{"12345678901234567890"}, idemtype.Decimal, []any{"12345678901234567890"}},
		{"numeric_strings_stay_strings", []string{`"3"`, `"4.5"`}, idemtype.String, []any{"3", "4.5"}},
		{"leading_zero_string", []string{`"08123"`}, idemtype.String, []any{"08123"}},
		{"number_and_string", []string{"3", `"4"`}, idemtype.String, []any{"3", "4"}},
		{"string_and_number", []string{`"4"`, "3"}, idemtype.String, []any{"4", "3"}},
		{"bool", []string{"true", "false"}, idemtype.Bool, []any{"true", "false"}},
		{"bool_strings_stay_strings", []string{`"true"`, `"false"`}, idemtype.String, []any{"true", "false"}},
		{"bool_and_number", []string{"true", "1"}, idemtype.String, []any{"true", "1"}},
		{"timestamp", []string{`"2024-01-02T03:04:05Z"`, `"2024-01-02 03:04:05+01:00"`}, idemtype.Timestamp, []any{"2024-01-02T03:04:05.000000Z", "2024-01-02T02:04:05.000000Z"}},
		{"timestamp_no_zone_is_utc", []string{`"2024-01-02T03:04:05.25"`}, idemtype.Timestamp, []any{"2024-01-02T03:04:05.250000Z"}},
		{"date_only_is_string", []string{`"2024-01-02"`}, idemtype.String, []any{"2024-01-02"}},
		{"timestamp_and_text", []string{`"2024-01-02T03:04:05Z"`, `"soon"`}, idemtype.String, []any{"2024-01-02T03:04:05Z", "soon"}},
		{"timestamp_and_number", []string{`"2024-01-02T03:04:05Z"`, "5"}, idemtype.String, []any{"2024-01-02T03:04:05Z", "5"}},
		{"string_escapes", []string{`"a\"b\\c\n\u00e9"`}, idemtype.String, []any{"a\"b\\c\né"}},
		{"empty_string", []string{`""`, `"x"`}, idemtype.String, []any{"", "x"}},
		{"nulls_and_missing", []string{"null", "", "7"}, idemtype.Int64, []any{nil, nil, "7"}},
		{"all_null", []string{"null", ""}, idemtype.String, []any{nil, nil}},
		{"object", []string{`{"x":1,"y":[true,null]}`}, idemtype.JSON, []any{`{"x":1,"y":[true,null]}`}},
		{"object_whitespace_dropped", []string{`{ "x" : 1 }`}, idemtype.JSON, []any{`{"x":1}`}},
		{"array", []string{`[1,2]`, `[]`}, idemtype.JSON, []any{`[1,2]`, `[]`}},
		{"json_and_scalars", []string{`{"x":1}`, `"s"`, "3", "true", "null"}, idemtype.JSON, []any{`{"x":1}`, `"s"`, "3", "true", nil}},
		{"scalars_then_json", []string{"3", `[1]`}, idemtype.JSON, []any{"3", "[1]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "v.jsonl", jsonlColumn(tc.values))
			f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 2})
			if plan.Rejected != 0 {
				t.Fatalf("rejects %+v", plan.Rejects)
			}
			if len(plan.Schema) != 2 || plan.Schema[1].Name != "v" {
				t.Fatalf("schema %+v", plan.Schema)
			}
			if got := plan.Schema[1].Type; got != tc.typ {
				t.Fatalf("type %s, want %s", got, tc.typ)
			}
			rows, _ := readPlan(t, f, plan, 3)
			var got []any
			for _, r := range rows {
				got = append(got, r[1])
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestJSONLRejects(t *testing.T) {
	type rej struct {
		ordinal int64
		at      string // the line: its first occurrence gives the offset
		column  string
		value   string
		code    string
	}
	for _, tc := range []struct {
		name    string
		data    string
		opts    Options
		rows    int64
		rejects []rej
		schema  string
		want    [][]any
		ords    []int64
	}{
		{
			name: "not_objects",
			data: "{\"a\":1}\n[1,2]\n42\n\"str\"\nnull\ntrue\n{\"a\":2}\n",
			rows: 7,
			rejects: []rej{
				{2, "[1,2]", "", "", CodeJSON},
				{3, "42", "", "", CodeJSON},
				{4, "\"str\"", "", "", CodeJSON},
				{5, "null", "", "", CodeJSON},
				{6, "true", "", "", CodeJSON},
			},
			schema: "a:int64",
			want:   [][]any{{"1"}, {"2"}},
			ords:   []int64{1, 7},
		},
		{
			name: "invalid_json",
			data: "{\"a\":1}\n{\"a\":\n{\"a\":2,}\n{'a':3}\n{\"a\":4} {\"a\":5}\nnot json\n{\"a\":6}\n",
			rows: 7,
			rejects: []rej{
				{2, "{\"a\":\n", "", "", CodeJSON},
				{3, "{\"a\":2,}", "", "", CodeJSON},
				{4, "{'a'", "", "", CodeJSON},
				{5, "{\"a\":4} ", "", "", CodeJSON},
				{6, "not json", "", "", CodeJSON},
			},
			schema: "a:int64",
			want:   [][]any{{"1"}, {"6"}},
			ords:   []int64{1, 7},
		},
		{
			// Rejected lines do not count towards inference, nor do the keys
			// they would add give the columns types.
			name: "rejects_do_not_infer",
			data: "{\"a\":1}\n{\"a\":\"text\",\"b\":\"x\u0000\"}\n{\"a\":2.5,\"\":1}\n{\"a\":3}\n",
			rows: 4,
			rejects: []rej{
				{2, "{\"a\":\"text\"", "b", "x\x00", value.CodeNUL},
				{3, "{\"a\":2.5", "", "", CodeJSON},
			},
			schema: "a:int64,b:string",
			want:   [][]any{{"1", nil}, {"3", nil}},
			ords:   []int64{1, 4},
		},
		{
			name: "escaped_nul",
			data: "{\"s\":\"ok\"}\n{\"s\":\"a\\u0000b\"}\n",
			rows: 2,
			rejects: []rej{
				{2, "{\"s\":\"a\\u", "s", "a\x00b", value.CodeNUL},
			},
			schema: "s:string",
			want:   [][]any{{"ok"}},
			ords:   []int64{1},
		},
		{
			name: "invalid_utf8",
			data: "{\"s\":\"ok\"}\n{\"s\":\"bad\xff\"}\n",
			rows: 2,
			rejects: []rej{
				{2, "{\"s\":\"bad", "s", "bad\xff", CodeUTF8},
			},
			schema: "s:string",
			want:   [][]any{{"ok"}},
			ords:   []int64{1},
		},
		{
			name: "forced_types",
			data: "{\"n\":3,\"t\":\"2024-01-02\"}\n{\"n\":3.0,\"t\":\"2024-01-02T03:04:05Z\"}\n{\"n\":3.5}\n{\"n\":\"4\"}\n{\"n\":\"four\"}\n{\"t\":5}\n{\"n\":true}\n",
			opts: Options{Types: map[string]idemtype.Type{"n": idemtype.Int64, "t": idemtype.Timestamp}},
			rows: 7,
			rejects: []rej{
				{3, "{\"n\":3.5}", "n", "3.5", value.CodeType},
				{5, "{\"n\":\"four\"}", "n", "four", value.CodeType},
				{6, "{\"t\":5}", "t", "5", value.CodeType},
				{7, "{\"n\":true}", "n", "true", value.CodeType},
			},
			schema: "n:int64,t:timestamptz",
			want:   [][]any{{"3", "2024-01-02T00:00:00.000000Z"}, {"3", "2024-01-02T03:04:05.000000Z"}, {"4", nil}},
			ords:   []int64{1, 2, 4},
		},
		{
			name: "not_null",
			data: "{\"id\":1}\n{\"id\":null}\n{\"x\":2}\n{\"id\":\"\",\"x\":3}\n{\"id\":4}\n",
			opts: Options{NotNull: []string{"id"}, Types: map[string]idemtype.Type{"id": idemtype.Int64}},
			rows: 5,
			rejects: []rej{
				{2, "{\"id\":null}", "id", "", value.CodeNull},
				{3, "{\"x\":2}", "id", "", value.CodeNull},
				{4, "{\"id\":\"\"", "id", "", value.CodeNull},
			},
			schema: "id:int64,x:string",
			want:   [][]any{{"1", nil}, {"4", nil}},
			ords:   []int64{1, 5},
		},
		{
			name: "blank_lines_crlf_and_bom",
			data: "\ufeff{\"a\":1}\r\n\r\n\n{\"a\":2}\r\n\r\n[3]\r\n{\"a\":4}",
			rows: 4,
			rejects: []rej{
				{3, "[3]", "", "", CodeJSON},
			},
			schema: "a:int64",
			want:   [][]any{{"1"}, {"2"}, {"4"}},
			ords:   []int64{1, 2, 4},
		},
	} {
		for _, size := range []int64{1, 2, 100} {
			t.Run(fmt.Sprintf("%s/partition=%d", tc.name, size), func(t *testing.T) {
				path := writeFile(t, "r.jsonl", []byte(tc.data))
				f, plan := scanChecked(t, path, tc.opts, ScanOptions{PartitionRows: size, KeepRejects: 100})
				if plan.Rows != tc.rows || plan.Rejected != int64(len(tc.rejects)) || len(plan.Rejects) != len(tc.rejects) {
					t.Fatalf("rows %d rejected %d, want %d and %d: %+v", plan.Rows, plan.Rejected, tc.rows, len(tc.rejects), plan.Rejects)
				}
				for i, w := range tc.rejects {
					g := plan.Rejects[i]
					off := int64(strings.Index(tc.data, w.at))
					if off < 0 {
						t.Fatalf("bad test: %q not in the data", w.at)
					}
					if g.Ordinal != w.ordinal || g.Offset != off || g.Column != w.column || g.Value != w.value || g.Code != w.code || g.Message == "" {
						t.Fatalf("reject %d: %+v\nwant ordinal %d offset %d column %q value %q code %q", i, g, w.ordinal, off, w.column, w.value, w.code)
					}
				}
				if got := schemaString(plan.Schema); got != tc.schema {
					t.Fatalf("schema %s, want %s", got, tc.schema)
				}
				rows, ords := readPlan(t, f, plan, 2)
				if !reflect.DeepEqual(rows, tc.want) || !reflect.DeepEqual(ords, tc.ords) {
					t.Fatalf("got  %q %v\nwant %q %v", rows, ords, tc.want, tc.ords)
				}
			})
		}
	}
}

func TestJSONLPartitions(t *testing.T) {
	// Keys appear late and in varying order; each partition read on its own
	// must still put every value under its column.
	var b strings.Builder
	var want [][]any
	offsets := []int64{}
	ends := []int64{}
	for i := 1; i <= 11; i++ {
		offsets = append(offsets, int64(b.Len()))
		if i%4 == 0 {
			b.WriteString("\n")
		}
		switch {
		case i < 5:
			fmt.Fprintf(&b, "{\"id\":%d,\"name\":\"n%d\"}\n", i, i)
			want = append(want, []any{fmt.Sprint(i), fmt.Sprintf("n%d", i), nil})
		case i%2 == 0:
			fmt.Fprintf(&b, "{\"late\":[%d],\"name\":\"n%d\",\"id\":%d}\n", i, i, i)
			want = append(want, []any{fmt.Sprint(i), fmt.Sprintf("n%d", i), fmt.Sprintf("[%d]", i)})
		default:
			fmt.Fprintf(&b, "{\"id\":%d,\"late\":null}\n", i)
			want = append(want, []any{fmt.Sprint(i), nil, nil})
		}
		ends = append(ends, int64(b.Len()))
	}
	data := b.String()
	path := writeFile(t, "p.jsonl", []byte(data))
	for _, size := range []int64{1, 3, 4, 11, 50} {
		t.Run(fmt.Sprint("partition=", size), func(t *testing.T) {
			f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: size})
			if got := schemaString(plan.Schema); got != "id:int64,name:string,late:json" {
				t.Fatalf("schema %s", got)
			}
			if int64(len(plan.Partitions)) != (11+size-1)/size {
				t.Fatalf("%d partitions", len(plan.Partitions))
			}
			for k := len(plan.Partitions) - 1; k >= 0; k-- {
				p := plan.Partitions[k]
				first := int64(k)*size + 1
				rows := min(size, 12-first)
				if p.First != first || p.Rows != rows || p.Offset != offsets[first-1] || p.Length != ends[first+rows-2]-offsets[first-1] {
					t.Fatalf("partition %d: %+v", k, p)
				}
				if crc := crc32c([]byte(data[p.Offset : p.Offset+p.Length])); crc != p.CRC {
					t.Fatalf("partition %d: crc %08x, want %08x", k, p.CRC, crc)
				}
				got, ords, _, err := readPart(f, plan, p, 2)
				if err != nil {
					t.Fatalf("partition %d: %v", k, err)
				}
				if !reflect.DeepEqual(ords, seq(first, rows)) || !reflect.DeepEqual(got, want[first-1:first-1+rows]) {
					t.Fatalf("partition %d: got %q %v", k, got, ords)
				}
			}
		})
	}
}

func TestJSONLSourceChanged(t *testing.T) {
	const data = "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n{\"a\":4}\n"
	for _, tc := range []struct {
		name    string
		edited  string
		changed []bool
	}{
		{"value", "{\"a\":1}\n{\"a\":2}\n{\"a\":5}\n{\"a\":4}\n", []bool{false, true}},
		{"new_key", "{\"a\":1}\n{\"a\":2}\n{\"b\":3}\n{\"a\":4}\n", []bool{false, true}},
		{"truncated", "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n", []bool{false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "s.jsonl", []byte(data))
			f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 2})
			writeCompressed(t, path, []byte(tc.edited))
			for k, p := range plan.Partitions {
				_, _, _, err := readPart(f, plan, p, 10)
				if tc.changed[k] != errors.Is(err, ErrSourceChanged) || (!tc.changed[k] && err != nil) {
					t.Fatalf("partition %d: %v", k, err)
				}
			}
		})
	}
}

func TestJSONLEmpty(t *testing.T) {
	for _, tc := range []struct{ name, data string }{
		{"zero_bytes", ""},
		{"blank_lines", "\n\r\n\n"},
		{"bom_only", "\ufeff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "e.ndjson", []byte(tc.data))
			_, plan := scanChecked(t, path, Options{}, ScanOptions{})
			if plan.Rows != 0 || len(plan.Partitions) != 0 || len(plan.Schema) != 0 {
				t.Fatalf("plan %+v", plan)
			}
		})
	}
}

func TestJSONLTooManyKeys(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i <= text.MaxJSONColumns; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\"k%d\":%d", i, i)
	}
	b.WriteString("}\n")
	path := writeFile(t, "k.jsonl", []byte(b.String()))
	f := openChecked(t, path, Options{})
	_, err := f.Scan(context.Background(), ScanOptions{})
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Row != 1 {
		t.Fatalf("got %v, want a *ParseError at row 1", err)
	}
}

// TestJSONLRepeatedKeyLastWins: a key repeated inside one object takes its
// last value, as PostgreSQL's jsonb and most JSON parsers do, in flat
// objects and in objects with nested values (read by the general parser)
// alike: a last null is NULL, a key written with an escape is the same
// key, and a column's type is inferred from the values kept only ("x" is
// dropped, so a is int64).
func TestJSONLRepeatedKeyLastWins(t *testing.T) {
	const data = `{"k":1,"a":"x","a":2}
{"k":2,"a":3,"n":{"z":1},"a":4}
{"k":3,"a":5,"a":null}
{"k":4,"a":null,"n":[1],"a":6}
{"k":5,"a\u0062":7,"ab":8}
{"k":6,"ab":9,"n":{},"a\u0062":10}
`
	path := writeFile(t, "r.jsonl", []byte(data))
	f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 10})
	if got := schemaString(plan.Schema); got != "k:int64,a:int64,n:json,ab:int64" {
		t.Fatalf("schema %s", got)
	}
	if plan.Rows != 6 || plan.Rejected != 0 {
		t.Fatalf("plan %+v", plan)
	}
	rows, _ := readPlan(t, f, plan, 10)
	want := [][]any{
		{"1", "2", nil, nil},
		{"2", "4", `{"z":1}`, nil},
		{"3", nil, nil, nil},
		{"4", "6", `[1]`, nil},
		{"5", nil, nil, "8"},
		{"6", nil, `{}`, "10"},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("got  %q\nwant %q", rows, want)
	}
}
