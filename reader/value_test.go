package reader

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/internal/value"
)

// csvColumn lays out fields (raw CSV text, quotes included) as column v of a
// file whose column k numbers the rows, so no row is blank.
func csvColumn(fields []string) []byte {
	var b strings.Builder
	b.WriteString("k,v\n")
	for i, f := range fields {
		fmt.Fprintf(&b, "%d,%s\n", i+1, f)
	}
	return []byte(b.String())
}

func TestInferCSV(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fields []string
		typ    idemtype.Type
		want   []any // column v read back; nil is null
	}{
		{"int64", []string{"1", "-2", "0", "42"}, idemtype.Int64, []any{"1", "-2", "0", "42"}},
		{"int64_limits", []string{"9223372036854775807", "-9223372036854775808"}, idemtype.Int64, []any{"9223372036854775807", "-9223372036854775808"}},
		{"int64_overflow_is_decimal", []string{"1", "9223372036854775808"}, idemtype.Decimal, []any{"1", "9223372036854775808"}},
		{"int64_quoted", []string{`"42"`, `"7"`}, idemtype.Int64, []any{"42", "7"}},
		{"int64_with_nulls", []string{"", "5", ""}, idemtype.Int64, []any{nil, "5", nil}},
		{"minus_zero", []string{"-0"}, idemtype.Int64, []any{"0"}},
		{"float64", []string{"1.5", "-0.25", "0.0"}, idemtype.Float64, []any{"1.5", "-0.25", "0"}},
		{"int_and_float_widen", []string{"1", "2.5", "3"}, idemtype.Float64, []any{"1", "2.5", "3"}},
		{"float_then_int_widen", []string{"2.5", "1"}, idemtype.Float64, []any{"2.5", "1"}},
		{"exponent", []string{"1e5"}, idemtype.Float64, []any{"100000"}},
		{"exponents", []string{"1E-3", "2.5e+2", "-3e0"}, idemtype.Float64, []any{"0.001", "250", "-3"}},
		{"exponent_and_int", []string{"7", "1e5"}, idemtype.Float64, []any{"7", "100000"}},
		{"float_overflow_is_decimal", []string{"1.5", "1e999"}, idemtype.Decimal, []any{"1.5", "1" + strings.Repeat("0", 999)}},
		{"float_overflow_negative_is_decimal", []string{"-1e400"}, idemtype.Decimal, []any{"-1" + strings.Repeat("0", 400)}},
		{"beyond_decimal_is_string", []string{"1.5", "1e200000"}, idemtype.String, []any{"1.5", "1e200000"}},
		{"nan_is_string", []string{"1.5", "NaN"}, idemtype.String, []any{"1.5", "NaN"}},
		{"inf_is_string", []string{"inf"}, idemtype.String, []any{"inf"}},
		{"infinity_is_string", []string{"1", "-Infinity", "+Inf"}, idemtype.String, []any{"1", "-Infinity", "+Inf"}},
		{"leading_zeros_stay_string", []string{"08123", "123"}, idemtype.String, []any{"08123", "123"}},
		{"leading_zero_alone", []string{"0123"}, idemtype.String, []any{"0123"}},
		{"leading_zeros_in_float", []string{"00.5"}, idemtype.String, []any{"00.5"}},
		{"zero_point_five", []string{"0.5"}, idemtype.Float64, []any{"0.5"}},
		{"bare_fraction_is_string", []string{".5"}, idemtype.String, []any{".5"}},
		{"plus_sign_is_string", []string{"+5"}, idemtype.String, []any{"+5"}},
		{"hex_is_string", []string{"0x1F"}, idemtype.String, []any{"0x1F"}},
		{"thousands_separator_is_string", []string{`"1,000"`}, idemtype.String, []any{"1,000"}},
		{"spaces_are_string", []string{" 1"}, idemtype.String, []any{" 1"}},
		{"bool", []string{"true", "false"}, idemtype.Bool, []any{"true", "false"}},
		{"bool_any_case", []string{"TRUE", "False", "tRuE", "fAlSe"}, idemtype.Bool, []any{"true", "false", "true", "false"}},
		{"bool_with_nulls", []string{"", "true"}, idemtype.Bool, []any{nil, "true"}},
		{"yes_no_is_string", []string{"yes", "no"}, idemtype.String, []any{"yes", "no"}},
		{"t_f_is_string", []string{"t", "f"}, idemtype.String, []any{"t", "f"}},
		{"one_zero_is_int", []string{"1", "0"}, idemtype.Int64, []any{"1", "0"}},
		{"bool_and_int_is_string", []string{"true", "1"}, idemtype.String, []any{"true", "1"}},
		{"timestamp_z", []string{"2024-01-02T03:04:05Z"}, idemtype.Timestamp, []any{"2024-01-02T03:04:05.000000Z"}},
		{"timestamp_space", []string{"2024-01-02 03:04:05Z"}, idemtype.Timestamp, []any{"2024-01-02T03:04:05.000000Z"}},
		{"timestamp_no_zone_is_utc", []string{"2024-01-02T03:04:05"}, idemtype.Timestamp, []any{"2024-01-02T03:04:05.000000Z"}},
		{"timestamp_space_no_zone_is_utc", []string{"2024-01-02 03:04:05"}, idemtype.Timestamp, []any{"2024-01-02T03:04:05.000000Z"}},
		{"timestamp_offset", []string{"2024-01-02T03:04:05+02:00", "2024-01-02T03:04:05-0130"}, idemtype.Timestamp, []any{"2024-01-02T01:04:05.000000Z", "2024-01-02T04:34:05.000000Z"}},
		{"timestamp_fraction", []string{"2024-01-02T03:04:05.5Z", "2024-01-02 03:04:05.123456", "2024-01-02T03:04:05.123456000+00:00"}, idemtype.Timestamp, []any{"2024-01-02T03:04:05.500000Z", "2024-01-02T03:04:05.123456Z", "2024-01-02T03:04:05.123456Z"}},
		{"timestamp_lower_case", []string{"2024-01-02t03:04:05z"}, idemtype.Timestamp, []any{"2024-01-02T03:04:05.000000Z"}},
		{"timestamp_offset_crosses_day", []string{"2024-01-01T23:30:00-01:00"}, idemtype.Timestamp, []any{"2024-01-02T00:30:00.000000Z"}},
		{"timestamp_leap_day", []string{"2024-02-29T00:00:00Z"}, idemtype.Timestamp, []any{"2024-02-29T00:00:00.000000Z"}},
		{"timestamp_with_nulls", []string{"", "2024-01-02T03:04:05Z"}, idemtype.Timestamp, []any{nil, "2024-01-02T03:04:05.000000Z"}},
		{"date_only_is_string", []string{"2024-01-02"}, idemtype.String, []any{"2024-01-02"}},
		{"date_and_timestamp_is_string", []string{"2024-01-02T03:04:05Z", "2024-01-02"}, idemtype.String, []any{"2024-01-02T03:04:05Z", "2024-01-02"}},
		{"impossible_date_is_string", []string{"2025-02-29T00:00:00Z"}, idemtype.String, []any{"2025-02-29T00:00:00Z"}},
		{"bad_hour_is_string", []string{"2024-01-02T24:00:00Z"}, idemtype.String, []any{"2024-01-02T24:00:00Z"}},
		{"sub_microsecond_is_string", []string{"2024-01-02T03:04:05.1234567Z"}, idemtype.String, []any{"2024-01-02T03:04:05.1234567Z"}},
		{"no_seconds_is_string", []string{"2024-01-02T03:04Z"}, idemtype.String, []any{"2024-01-02T03:04Z"}},
		{"bad_zone_is_string", []string{"2024-01-02T03:04:05 UTC"}, idemtype.String, []any{"2024-01-02T03:04:05 UTC"}},
		{"timestamp_and_int_is_string", []string{"2024-01-02T03:04:05Z", "5"}, idemtype.String, []any{"2024-01-02T03:04:05Z", "5"}},
		{"string", []string{"hello", "world"}, idemtype.String, []any{"hello", "world"}},
		{"int_then_text", []string{"1", "2", "x"}, idemtype.String, []any{"1", "2", "x"}},
		{"all_empty", []string{"", ""}, idemtype.String, []any{nil, nil}},
		{"quoted_empty_is_string", []string{`""`, "1"}, idemtype.String, []any{"", "1"}},
		{"quoted_empty_after_ints", []string{"1", "2", `""`}, idemtype.String, []any{"1", "2", ""}},
		{"quoted_empty_and_null", []string{`""`, ""}, idemtype.String, []any{"", nil}},
		{"unquoted_empty_is_null", []string{"", "1", ""}, idemtype.Int64, []any{nil, "1", nil}},
		{"escaped_quotes", []string{`"a ""b"""`}, idemtype.String, []any{`a "b"`}},
		{"quote_inside_unquoted_field", []string{`ab"c`, `5"`, ` "x"`}, idemtype.String, []any{`ab"c`, `5"`, ` "x"`}},
		{"utf8_text", []string{"café", "日本"}, idemtype.String, []any{"café", "日本"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "v.csv", csvColumn(tc.fields))
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

func TestForcedTypes(t *testing.T) {
	type want struct {
		value any    // read back when code is ""
		code  string // reject code
	}
	ok := func(v any) want { return want{value: v} }
	bad := func(code string) want { return want{code: code} }
	for _, tc := range []struct {
		name   string
		typ    idemtype.Type
		fields []string
		want   []want
	}{
		{"int64", idemtype.Int64,
			[]string{"5", "+5", "-0", "007", `""`, "", "1.5", "abc", "1e3", "99999999999999999999", " 1", "0x10"},
			[]want{ok("5"), ok("5"), ok("0"), bad(CodeInexact), ok(nil), ok(nil), bad(value.CodeType), bad(value.CodeType), bad(value.CodeType), bad(value.CodeRange), bad(value.CodeType), bad(value.CodeType)}},
		{"float64", idemtype.Float64,
			[]string{"1.5", ".5", "+2", "1e3", "08.5", "5", `""`, "NaN", "inf", "1e999", "1_000", "1.2.3", "e5", "9007199254740993", "1e-400", "-0"},
			[]want{ok("1.5"), ok("0.5"), ok("2"), ok("1000"), bad(CodeInexact), ok("5"), ok(nil), bad(value.CodeType), bad(value.CodeType), bad(CodeInexact), bad(value.CodeType), bad(value.CodeType), bad(value.CodeType), bad(CodeInexact), bad(CodeInexact), ok("-0")}},
		{"decimal", idemtype.Decimal,
			[]string{"1.50", "1.5e3", "-0", "+2", ".5", "007", `""`, "", "abc", "1e200000", "12345678901234567890.123456789"},
			[]want{ok("1.50"), ok("1500"), ok("0"), ok("2"), ok("0.5"), bad(CodeInexact), ok(nil), ok(nil), bad(value.CodeType), bad(value.CodeRange), ok("12345678901234567890.123456789")}},
		{"bool", idemtype.Bool,
			[]string{"true", "FALSE", "yes", "No", "1", "0", "T", "f", "Y", "n", "", "maybe", "2", "truee"},
			[]want{ok("true"), ok("false"), ok("true"), ok("false"), ok("true"), ok("false"), ok("true"), ok("false"), ok("true"), ok("false"), ok(nil), bad(value.CodeType), bad(value.CodeType), bad(value.CodeType)}},
		{"timestamp", idemtype.Timestamp,
			[]string{"2024-01-02", "2024-01-02T03:04:05+01:00", "2024-01-02 03:04:05.25", "", "yesterday", "2024-13-01", "2024-01-02T03:04:05.0000001Z", "1704164645"},
			[]want{ok("2024-01-02T00:00:00.000000Z"), ok("2024-01-02T02:04:05.000000Z"), ok("2024-01-02T03:04:05.250000Z"), ok(nil), bad(value.CodeType), bad(value.CodeType), bad(value.CodeType), bad(value.CodeType)}},
		{"string", idemtype.String,
			[]string{"08123", "1", `""`, "", "true", "\xff", "a\x00b"},
			[]want{ok("08123"), ok("1"), ok(""), ok(nil), ok("true"), bad(CodeUTF8), bad(value.CodeNUL)}},
		{"json", idemtype.JSON,
			[]string{"abc", `"say ""hi"""`, "", `""`, "\xff", `"{""a"":{""b"":[1,null]}}"`, `"""s"""`, "12", `"[1,2]"`, `"{""a"":1"`},
			[]want{bad(CodeJSON), bad(CodeJSON), ok(nil), ok(nil), bad(CodeUTF8), ok(`{"a":{"b":[1,null]}}`), ok(`"s"`), ok("12"), ok("[1,2]"), bad(CodeJSON)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.fields) != len(tc.want) {
				t.Fatal("bad test: fields and want differ in length")
			}
			path := writeFile(t, "f.csv", csvColumn(tc.fields))
			f, plan := scanChecked(t, path, Options{Types: map[string]idemtype.Type{"v": tc.typ}}, ScanOptions{PartitionRows: 3, KeepRejects: 100})
			if got := schemaString(plan.Schema); got != "k:int64,v:"+tc.typ.String() {
				t.Fatalf("schema %s", got)
			}
			var wantVals []any
			var wantOrds []int64
			var wantRejects []Reject
			data := string(csvColumn(tc.fields))
			for i, w := range tc.want {
				ord := int64(i + 1)
				if w.code == "" {
					wantVals = append(wantVals, w.value)
					wantOrds = append(wantOrds, ord)
					continue
				}
				line := fmt.Sprintf("%d,%s\n", ord, tc.fields[i])
				wantRejects = append(wantRejects, Reject{Ordinal: ord, Offset: int64(strings.Index(data, "\n"+line) + 1), Column: "v", Value: tc.fields[i], Code: w.code})
			}
			if plan.Rows != int64(len(tc.fields)) || plan.Rejected != int64(len(wantRejects)) || len(plan.Rejects) != len(wantRejects) {
				t.Fatalf("rows %d rejected %d: %+v", plan.Rows, plan.Rejected, plan.Rejects)
			}
			for i, w := range wantRejects {
				g := plan.Rejects[i]
				g.Message = ""
				if want := fmt.Sprintf("%d,%s\n", w.Ordinal, w.Value); g.Row != want {
					t.Fatalf("reject %d keeps the row %q, want %q", i, g.Row, want)
				}
				g.Row = ""
				// The value kept is the field's text, without CSV quoting.
				w.Value = strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(w.Value, `"`), `"`), `""`, `"`)
				cols, extra, err := RejectFields(g.Fields, CSV, plan.Schema)
				if err != nil || len(extra) != 0 || cols[0] != (Field{Text: fmt.Sprint(w.Ordinal)}) || cols[1] != (Field{Text: w.Value}) {
					t.Fatalf("reject %d keeps the fields %q (%v, %v, %v), want %d and %q", i, g.Fields, cols, extra, err, w.Ordinal, w.Value)
				}
				g.Fields = ""
				if g != w {
					t.Fatalf("reject %d: %+v, want %+v", i, g, w)
				}
			}
			rows, ords := readPlan(t, f, plan, 2)
			var got []any
			for _, r := range rows {
				got = append(got, r[1])
			}
			if !reflect.DeepEqual(got, wantVals) || !reflect.DeepEqual(ords, wantOrds) {
				t.Fatalf("got  %q %v\nwant %q %v", got, ords, wantVals, wantOrds)
			}
		})
	}
}

// TestTypesUnknownColumn checks that a forced type for a column the file
// does not have changes nothing.
func TestTypesUnknownColumn(t *testing.T) {
	path := writeFile(t, "u.csv", []byte("a\n1\n"))
	_, plan := scanChecked(t, path, Options{Types: map[string]idemtype.Type{"zzz": idemtype.Bool}}, ScanOptions{})
	if got := schemaString(plan.Schema); got != "a:int64" {
		t.Fatalf("schema %s", got)
	}
}
