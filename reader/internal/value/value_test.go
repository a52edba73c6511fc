package value

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestParseTimestamp(t *testing.T) {
	utc := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			panic(err)
		}
		return tm.UnixMicro()
	}
	for _, tc := range []struct {
		in       string
		dateOnly bool
		want     int64
		ok       bool
	}{
		{"2024-01-02T03:04:05Z", false, utc("2024-01-02T03:04:05Z"), true},
		{"2024-01-02 03:04:05", false, utc("2024-01-02T03:04:05Z"), true},
		{"2024-01-02T03:04:05.000001Z", false, utc("2024-01-02T03:04:05.000001Z"), true},
		{"2024-01-02T03:04:05.1+05:30", false, utc("2024-01-02T03:04:05.1+05:30"), true},
		{"2024-01-02T03:04:05+0530", false, utc("2024-01-02T03:04:05+05:30"), true},
		{"1969-12-31T23:59:59.5Z", false, -500000, true},
		{"1970-01-01T00:00:00Z", false, 0, true},
		{"2024-01-02", true, utc("2024-01-02T00:00:00Z"), true},
		{"2024-01-02", false, 0, false},
		{"2024-01-02T", false, 0, false},
		{"2024-01-02T03:04:05.", false, 0, false},
		{"2024-01-02T03:04:05+24:00", false, 0, false},
		{"2024-01-02T03:04:05+05", false, 0, false},
		{"2024-01-02T03:04:60Z", false, 0, false},
		{"2024-00-02T03:04:05Z", false, 0, false},
		{"2024-01-32T03:04:05Z", false, 0, false},
		{"2023-02-29", true, 0, false},
		{"2024/01/02 03:04:05", false, 0, false},
		{"24-01-02T03:04:05Z", false, 0, false},
		{"", true, 0, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := ParseTimestamp([]byte(tc.in), tc.dateOnly)
			if ok != tc.ok || (ok && got != tc.want) {
				t.Fatalf("got %d %v, want %d %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestDecimalText checks the canonical decimal text (PostgreSQL's numeric
// output form), the decimal limits, and which numbers a float64 keeps.
func TestDecimalText(t *testing.T) {
	for _, tc := range []struct {
		in        string
		canonical string // "" when not a decimal a column holds
		float     bool   // its float64 means the same number
		integer   bool   // isInteger: a canonical int64
	}{
		{"0", "0", true, true},
		{"-0", "0", true, true},
		{"-0.00", "0.00", true, false},
		{"-12", "-12", true, true},
		{"+12", "12", true, false},
		{"1.50", "1.50", true, false},
		{".5", "0.5", true, false},
		{"5.", "5", true, false},
		{"1.5e3", "1500", true, false},
		{"1.50e1", "15.0", true, false},
		{"1E-3", "0.001", true, false},
		{"-1.25e-2", "-0.0125", true, false},
		{"0.1", "0.1", true, false},
		{"9007199254740992", "9007199254740992", true, true},
		{"9007199254740993", "9007199254740993", false, true},
		{"9223372036854775807", "9223372036854775807", false, true},
		{"9223372036854775808", "9223372036854775808", false, false}, // 2^63 is a float64, but it prints as 9.223372036854776e+18
		{"-9223372036854775809", "-9223372036854775809", false, false},
		{"1234567890123456789", "1234567890123456789", false, true},
		{"12345678901234567890.123456789", "12345678901234567890.123456789", false, false},
		{"0.30000000000000004", "0.30000000000000004", true, false},
		{"0.300000000000000041", "0.300000000000000041", false, false},
		{"1e308", "1" + strings.Repeat("0", 308), true, false},
		{"1e309", "1" + strings.Repeat("0", 309), false, false},
		{"1e-400", "0." + strings.Repeat("0", 399) + "1", false, false},
		{"1e400", "1" + strings.Repeat("0", 400), false, false},
		{"1e131071", "1" + strings.Repeat("0", 131071), false, false},
		{"1e131072", "", false, false},
		{"1e-16383", "0." + strings.Repeat("0", 16382) + "1", false, false},
		{"1e-16384", "", false, false},
		{"1e99999999999999999999", "", false, false},
	} {
		name := tc.in
		if len(name) > 24 {
			name = name[:24]
		}
		t.Run(name, func(t *testing.T) {
			b := []byte(tc.in)
			got, code, msg := DecimalValue(b)
			if tc.canonical == "" {
				if code != CodeRange {
					t.Fatalf("decimalValue = %.40q %q %q, want a range error", got, code, msg)
				}
			} else if code != "" || string(got) != tc.canonical {
				t.Fatalf("decimalValue = %.60q %q %q, want %.60q", got, code, msg, tc.canonical)
			}
			d, ok := ParseDecimal(b)
			if !ok {
				t.Fatal("parseDecimal failed")
			}
			if got := ExactFloat(&d, b); got != tc.float {
				f, _ := strconv.ParseFloat(tc.in, 64)
				t.Fatalf("exactFloat = %v (float64 %v)", got, f)
			}
			if got := IsInteger(b); got != tc.integer {
				t.Fatalf("isInteger = %v", got)
			}
		})
	}
	for _, bad := range []string{"", "-", ".", "1e", "1e+", "1.5.5", "1,5", "0x10", "NaN", "inf", " 1", "1 "} {
		if _, ok := ParseDecimal([]byte(bad)); ok {
			t.Errorf("parseDecimal(%q) accepted it", bad)
		}
	}
}

// TestConvertKeepsMeaning checks that a value converts to a fixed type
// only when the type keeps it: leading zeros, floats that round, and text
// that is not JSON are bad values with their reason.
func TestConvertKeepsMeaning(t *testing.T) {
	for _, tc := range []struct {
		in   string
		kind CellKind
		typ  Type
		code string // "" when it converts
		want string // the converted value's text (String, JSON, Decimal)
	}{
		{"02134", CellText, Int64, CodeInexact, ""},
		{"-007", CellText, Int64, CodeInexact, ""},
		{"0", CellText, Int64, "", ""},
		{"+7", CellText, Int64, "", ""},
		{"9223372036854775808", CellText, Int64, CodeRange, ""},
		{"9007199254740993", CellText, Float64, CodeInexact, ""},
		{"1e-400", CellText, Float64, CodeInexact, ""},
		{"1e400", CellText, Float64, CodeInexact, ""},
		{"0.1", CellText, Float64, "", ""},
		{"007.5", CellText, Float64, CodeInexact, ""},
		{"007.5", CellText, Decimal, CodeInexact, ""},
		{"1.5e3", CellText, Decimal, "", "1500"},
		{"1.50", CellNumber, Decimal, "", "1.50"},
		{"12345678901234567890.123456789", CellText, Decimal, "", "12345678901234567890.123456789"},
		{`{"a":[1,{"b":null}]}`, CellText, JSON, "", `{"a":[1,{"b":null}]}`},
		{`"quoted"`, CellText, JSON, "", `"quoted"`},
		{`not json`, CellText, JSON, CodeJSON, ""},
		{`{"a":1`, CellText, JSON, CodeJSON, ""},
		{`x`, CellString, JSON, "", `"x"`},
		// Every short form with zeros or a sign (as testkit.ZeroForms,
		// which the end-to-end tests use): a zero before other digits is
		// kept by no number; +7 and -0 mean 7 and 0; 0.0 is an integer
		// only as a JSON number.
		{"0", CellText, Int64, "", "0"},
		{"00", CellText, Int64, CodeInexact, ""},
		{"07", CellText, Int64, CodeInexact, ""},
		{"07", CellString, Int64, CodeInexact, ""},
		{"-07", CellText, Int64, CodeInexact, ""},
		{"+07", CellText, Int64, CodeInexact, ""},
		{"+7", CellString, Int64, "", "7"},
		{"-0", CellText, Int64, "", "0"},
		{"-0", CellNumber, Int64, "", "0"},
		{"0.0", CellText, Int64, CodeType, ""},
		{"0.0", CellNumber, Int64, "", "0"},
		{"00.5", CellText, Int64, CodeType, ""},
		{"0", CellText, Decimal, "", "0"},
		{"00", CellText, Decimal, CodeInexact, ""},
		{"07", CellText, Decimal, CodeInexact, ""},
		{"-07", CellString, Decimal, CodeInexact, ""},
		{"+7", CellText, Decimal, "", "7"},
		{"-0", CellText, Decimal, "", "0"},
		{"0.0", CellText, Decimal, "", "0.0"},
		{"00.5", CellText, Decimal, CodeInexact, ""},
		{"0", CellText, Float64, "", "0"},
		{"00", CellText, Float64, CodeInexact, ""},
		{"07", CellString, Float64, CodeInexact, ""},
		{"-07", CellText, Float64, CodeInexact, ""},
		{"+7", CellText, Float64, "", "7"},
		{"-0", CellText, Float64, "", "-0"},
		{"0.0", CellNumber, Float64, "", "0"},
		{"00.5", CellText, Float64, CodeInexact, ""},
	} {
		t.Run(tc.typ.String()+"/"+tc.in, func(t *testing.T) {
			v, code, msg := Convert(Cell{B: []byte(tc.in), Kind: tc.kind}, tc.typ)
			if code != tc.code {
				t.Fatalf("code %q (%s), want %q", code, msg, tc.code)
			}
			got := string(v.B)
			switch tc.typ {
			case Int64:
				got = strconv.FormatInt(v.I, 10)
			case Float64:
				got = strconv.FormatFloat(v.F, 'g', -1, 64)
			}
			if tc.want != "" && got != tc.want {
				t.Fatalf("value %q, want %q", got, tc.want)
			}
		})
	}
}

// TestInferenceIsLossless checks the type inferred for columns of tricky
// values: never a type that would change one of them.
func TestInferenceIsLossless(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		kind   CellKind
		exact  bool // a key column
		want   Type
	}{
		{"int64 edges", []string{"9223372036854775807", "-9223372036854775808"}, CellText, false, Int64},
		{"beyond int64", []string{"9223372036854775808", "1"}, CellText, false, Decimal},
		{"int beside decimal", []string{"1234567890123456789", "1.5"}, CellText, false, Decimal},
		{"2^53+1 beside decimal", []string{"9007199254740993", "0.5"}, CellText, false, Decimal},
		{"2^53 beside decimal", []string{"9007199254740992", "0.5"}, CellText, false, Float64},
		{"short decimals", []string{"1.5", "-0.25", "1e5", "-0"}, CellText, false, Float64},
		{"short decimals as key", []string{"1.5", "-0.25"}, CellText, true, Decimal},
		{"long decimal", []string{"0.1", "3.14159265358979323846"}, CellText, false, Decimal},
		{"tiny", []string{"1e-400"}, CellText, false, Decimal},
		{"huge", []string{"1e400"}, CellText, false, Decimal},
		{"beyond decimal", []string{"1e200000"}, CellText, false, String},
		{"leading zeros", []string{"02134", "12345"}, CellText, false, String},
		{"json numbers", []string{"9007199254740993", "1.5"}, CellNumber, false, Decimal},
		{"json ints", []string{"9007199254740993", "-1"}, CellNumber, false, Int64},
		{"json tiny", []string{"1e-400"}, CellNumber, false, Decimal},
		{"zero", []string{"0"}, CellText, true, Int64},
		{"zeros", []string{"00"}, CellText, false, String},
		{"leading zero", []string{"07"}, CellText, true, String},
		{"negative leading zero", []string{"-07"}, CellText, false, String},
		{"plus sign", []string{"+7"}, CellText, false, String},
		{"minus zero", []string{"-0"}, CellText, true, Int64},
		{"zero point zero", []string{"0.0"}, CellText, false, Float64},
		{"zero point zero as key", []string{"0.0"}, CellNumber, true, Decimal},
		{"leading zero fraction", []string{"00.5"}, CellText, false, String},
		{"json strings", []string{"0", "7"}, CellString, false, String},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in Inference
			for _, v := range tc.values {
				in.Observe(Cell{B: []byte(v), Kind: tc.kind})
			}
			if got := in.Result(tc.exact); got != tc.want {
				t.Fatalf("inferred %s, want %s", got, tc.want)
			}
			for _, v := range tc.values {
				if _, code, msg := Convert(Cell{B: []byte(v), Kind: tc.kind}, tc.want); code != "" {
					t.Fatalf("%s does not convert to %s: %s", v, tc.want, msg)
				}
			}
		})
	}
}

// TestInferenceMatchesConvert checks the promise the partition reader relies
// on: every value Inference accepts for a type converts to that type, so the
// reader rejects exactly the rows the plan rejected.
func TestInferenceMatchesConvert(t *testing.T) {
	texts := []string{
		"0", "-0", "1", "-1", "42", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"1.5", "0.5", "-0.0", "1e5", "1E-3", "1e308", "1e309", "1e-400", "-1e999", "NaN", "inf",
		"true", "FALSE", "tRuE", "yes", "1.", "00", "08123",
		"2024-01-02T03:04:05Z", "2024-01-02 03:04:05", "2024-01-02T03:04:05.123456+01:00", "2024-01-02",
		"2024-02-30T00:00:00Z", "9999-12-31T23:59:59.999999Z", "0000-01-01T00:00:00Z",
		strings.Repeat("9", 400), "abc", "",
	}
	var cells []Cell
	for _, s := range texts {
		cells = append(cells, Cell{B: []byte(s), Kind: CellText})
	}
	for _, s := range []string{"0", "3", "3.5", "-2e3", "1e999", "-1e999", "12345678901234567890", "1.0"} {
		cells = append(cells, Cell{B: []byte(s), Kind: CellNumber})
	}
	for _, s := range []string{"2024-01-02T03:04:05Z", "2024-01-02", "x", ""} {
		cells = append(cells, Cell{B: []byte(s), Kind: CellString})
	}
	cells = append(cells, Cell{B: []byte("true"), Kind: CellBool}, Cell{B: []byte("false"), Kind: CellBool}, Cell{B: []byte(`{"a":1}`), Kind: CellJSON})
	for _, c := range cells {
		var in Inference
		in.Observe(c)
		for _, exact := range []bool{false, true} {
			typ := in.Result(exact)
			if _, code, msg := Convert(c, typ); code != "" {
				t.Errorf("%q (kind %d) infers %s but does not convert to it: %s", c.B, c.Kind, typ, msg)
			}
		}
	}
}

// FuzzDecimal checks the canonical decimal text and the float round trip
// against math/big: the canonical text is the same number, canonical
// again is itself, and a number exactFloat accepts prints back as itself.
func FuzzDecimal(f *testing.F) {
	for _, s := range []string{"0", "-0", "-0.00", "1.50", ".5", "5.", "1.5e3", "1.50e1", "-1.25e-2", "9007199254740993",
		"0.30000000000000004", "1e-400", "1e400", "+7", "007.5", "123456789012345678901234567890e-15"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		d, ok := ParseDecimal(b)
		if !ok || len(s) > 200 {
			return
		}
		if strings.ContainsAny(s, "eE") {
			if _, e, _ := strings.Cut(strings.ToLower(s), "e"); len(strings.TrimLeft(strings.TrimLeft(e, "+-"), "0")) > 3 {
				return // big.Rat would build a huge number
			}
		}
		want, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("big.Rat does not read %q", s)
		}
		got, code, msg := DecimalValue(b)
		if code != "" {
			if code == CodeInexact && d.zeros || code == CodeRange && !d.fitsDecimal() {
				return
			}
			t.Fatalf("decimalValue(%q): %s %s", s, code, msg)
		}
		r, ok := new(big.Rat).SetString(string(got))
		if !ok || r.Cmp(want) != 0 {
			t.Fatalf("canonical %q of %q is another number", got, s)
		}
		if again, _, _ := DecimalValue(got); string(again) != string(got) {
			t.Fatalf("canonical %q of %q is %q canonical again", got, s, again)
		}
		fl, _ := strconv.ParseFloat(s, 64)
		back, ok := new(big.Rat).SetString(strconv.FormatFloat(fl, 'g', -1, 64))
		same := ok && back.Cmp(want) == 0
		if exact := ExactFloat(&d, b); exact != same && want.Sign() != 0 {
			t.Fatalf("exactFloat(%q) = %v, but the float64 prints %s", s, exact, strconv.FormatFloat(fl, 'g', -1, 64))
		}
	})
}

// intEdges are texts around the ends of what shortInt reads and of an
// int64, and near-integers ParseInt refuses.
var intEdges = []string{
	"", "-", "+", "0", "-0", "+0", "7", "-7", "+7", "00", "007", "-007",
	"999999999999999999", "-999999999999999999", "+999999999999999999",
	"1000000000000000000", "-1000000000000000000",
	"9223372036854775807", "-9223372036854775808", "+9223372036854775807",
	"9223372036854775808", "-9223372036854775809", "99999999999999999999",
	"0000000000000000001", "1_000", "1,000", " 1", "1 ", "1\n", "0x10", "1e3", "1.0",
	"+-1", "-+1", "--1", "12a", "a12", "/", ":", "1/", "1:", "١٢", "\x00", "1\x00",
}

// TestShortIntIsParseInt checks that the int64 fast path of ConvertText
// reads what strconv.ParseInt reads, and nothing it refuses.
func TestShortIntIsParseInt(t *testing.T) {
	for _, s := range intEdges {
		checkShortInt(t, s)
	}
}

func FuzzShortInt(f *testing.F) {
	for _, s := range intEdges {
		f.Add(s)
	}
	f.Fuzz(checkShortInt)
}

func checkShortInt(t *testing.T, s string) {
	want, err := strconv.ParseInt(s, 10, 64)
	got, ok := shortInt([]byte(s))
	if ok && (err != nil || got != want) {
		t.Errorf("shortInt(%q) = %d, ParseInt = %d, %v", s, got, want, err)
	}
	if !ok && err == nil && len(strings.TrimLeft(s, "+-")) <= 18 {
		t.Errorf("shortInt(%q) refused what ParseInt reads as %d", s, want)
	}
	// Through ConvertText, as the plan and read passes call it.
	v, code, _ := ConvertText(Cell{B: []byte(s), Kind: CellText}, Int64, false)
	switch {
	case s == "":
		if !v.Null {
			t.Errorf("ConvertText(%q) = %+v, want null", s, v)
		}
	case err != nil && code == "":
		t.Errorf("ConvertText(%q) = %d, ParseInt refuses it: %v", s, v.I, err)
	case err == nil && !leadingZero([]byte(s)) && (code != "" || v.I != want):
		t.Errorf("ConvertText(%q) = %d %q, want %d", s, v.I, code, want)
	}
}

// TestTwoDigits checks the timestamp fields' reader on every pair of
// bytes: two digits are their number, anything else is refused.
func TestTwoDigits(t *testing.T) {
	for a := range 256 {
		for b := range 256 {
			in := []byte{byte(a), byte(b)}
			got, ok := two(in)
			want, err := strconv.Atoi(string(in))
			wantOK := err == nil && in[0] >= '0' && in[0] <= '9' && in[1] >= '0' && in[1] <= '9'
			if ok != wantOK || (ok && got != want) {
				t.Fatalf("two(%q) = %d, %v; want %d, %v", in, got, ok, want, wantOK)
			}
		}
	}
}

// floatEdges are decimals around the ends of shortFloat's reach (15
// digits, no exponent) and the ones whose nearest float64 is a rounding.
var floatEdges = []string{
	"0", "-0", "+0", "0.0", "-0.00", ".5", "-.5", "+.5", "5.", "-5.", "0.1", "0.2", "0.3", "1.1",
	"2.675", "4.35", "77.06", "696.86", "-123.456", "0.000000000000001", "0.00000000000001",
	"999999999999999", "-999999999999999", "9999999999999999", "123456789012345",
	"1234567.89012345", "12345678.9012345", "9007199254740993", "1e3", "1.5e-3", "100000000000000.0",
	"99999999999999.9", "0.999999999999999", "00.5", "1.2.3", "", "-", ".", "1_0.5",
}

// TestShortFloatIsParseFloat checks that floatValue's fast path gives the
// float64 strconv.ParseFloat gives, bit for bit.
func TestShortFloatIsParseFloat(t *testing.T) {
	for _, s := range floatEdges {
		checkShortFloat(t, s)
	}
}

func FuzzShortFloat(f *testing.F) {
	for _, s := range floatEdges {
		f.Add(s)
	}
	f.Fuzz(checkShortFloat)
}

func checkShortFloat(t *testing.T, s string) {
	d, ok := ParseDecimal([]byte(s))
	if !ok {
		return
	}
	got, fast := shortFloat(&d)
	if !fast {
		return
	}
	want, err := strconv.ParseFloat(s, 64)
	if err != nil || math.Float64bits(got) != math.Float64bits(want) || !ExactFloat(&d, []byte(s)) {
		t.Errorf("shortFloat(%q) = %v (%x), ParseFloat = %v (%x), %v", s, got, math.Float64bits(got), want, math.Float64bits(want), err)
	}
}

// TestTextCleanIsValidWithoutNUL checks TextClean's ASCII fast path against
// utf8.Valid and a search for NUL, with the byte that matters at every
// place of rows around the 16 bytes it reads at a time.
func TestTextCleanIsValidWithoutNUL(t *testing.T) {
	for _, odd := range []string{"\x00", "\x7f", "\x80", "\xff", "é", "\xc3", "€", "\xe2\x82", "𝄞", "\xf0\x9d\x84"} {
		for n := range 40 {
			for at := 0; at <= n; at++ {
				b := []byte(strings.Repeat("a,1\r\n\"", 7)[:n])
				b = append(b[:at], append([]byte(odd), b[at:]...)...)
				checkTextClean(t, b)
			}
		}
	}
}

func FuzzTextClean(f *testing.F) {
	for _, s := range []string{"", "abc", "1,2,3\n", "a\x00b", "caf\xc3\xa9", "\xff" + strings.Repeat("x", 20), strings.Repeat("x", 17) + "\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkTextClean(t, b) })
}

func checkTextClean(t *testing.T, b []byte) {
	want := utf8.Valid(b) && !bytes.Contains(b, []byte{0})
	if got := TextClean(b); got != want {
		t.Errorf("TextClean(%q) = %v, want %v", b, got, want)
	}
}

// settledColumns are columns whose first values settle an inference
// (integers, decimals, dates) followed by values at the edges of what
// Inference.settled tells without parsing: each must leave the inference
// where Observe's parsing would.
var settledColumns = []string{
	"1,2,123456789012345,-12345678901234,1.5", // 15 characters, then a decimal: float64
	"1,9007199254740993,0.5",                  // 16 digits no float64 keeps: decimal
	"1,-900719925474099,0.5",                  // 15 digits and a sign: float64
	"1,-9007199254740993,0.5",                 // 16 digits and a sign: decimal
	"1,007",                                   // a leading zero: text
	"1,-0,0,-07",                              // a negative leading zero: text
	"1,+7",                                    // a plus sign: text
	"1.5,2,0.25,-0.125,123456789012.345,1.5",  // decimals of at most 15 digits: float64
	"1.5,1234567890123.456",                   // 16 digits: decimal, the float64 rounds it
	"1.5,01.5",                                // a leading zero: text
	"1.5,.5",                                  // no integer part: text
	"1.5,1.",                                  // a point without digits after it
	"1.5,1e3,-0.0",                            // an exponent
	"1.5,1.5.5",                               // two points: text
	"1.5,-",                                   // a sign alone: text
	"2024-01-02,2024-02-29,2023-02-29",        // no such day: text
	"2024-01-02,2024-1-02",                    // not a date: text
	"2024-01-02,2024-01-02T03:04:05",          // a timestamp after dates: text
	"2024-01-02,,2024-12-31",                  // a null between
	"1,," + strings.Repeat("9", 15) + "," + "1" + strings.Repeat("0", 15), // 15 and 16 digits
}

// TestInferenceSettled checks that Observe, which tells the values that
// leave a settled column as it is without parsing them, leaves every
// inference of settledColumns where observe, which parses every value,
// leaves it, with and without Dates.
func TestInferenceSettled(t *testing.T) {
	for _, col := range settledColumns {
		for _, dates := range []bool{false, true} {
			checkSettled(t, strings.Split(col, ","), dates)
		}
	}
}

// FuzzInferenceSettled is TestInferenceSettled for columns of fuzzed
// values, comma-separated.
func FuzzInferenceSettled(f *testing.F) {
	for _, col := range settledColumns {
		f.Add(col, true)
	}
	f.Fuzz(func(t *testing.T, col string, dates bool) {
		checkSettled(t, strings.Split(col, ","), dates)
	})
}

func checkSettled(t *testing.T, values []string, dates bool) {
	t.Helper()
	fast, slow := Inference{Dates: dates}, Inference{Dates: dates}
	for _, v := range values {
		c := Cell{B: []byte(v), Kind: CellText}
		if v == "" {
			c.Kind = CellNull
		}
		fast.Observe(c)
		slow.observe(c)
		if fast != slow {
			t.Fatalf("dates %v, after %q of %q: Observe leaves %+v, observe %+v", dates, v, values, fast, slow)
		}
	}
}

// TestConvertTextToSetsEveryField checks ConvertTextTo on a destination
// that holds another value (a reader converts every row's cells into the
// same values): each cell, of each type, whatever it returns, leaves the
// value ConvertText returns, none of the value before it.
func TestConvertTextToSetsEveryField(t *testing.T) {
	types := []Type{Bool, Int64, Float64, Decimal, Timestamp, LocalTimestamp, Date, String, JSON}
	cells := []Cell{{Kind: CellNull}, {Kind: CellText}, {Kind: CellString}}
	for _, s := range []string{"0", "7", "-12", "07", "1.5", "1e3", "true", "t", "2024-02-29", "2024-02-30",
		"2024-02-29T10:00:00Z", "2024-02-29 10:00:00", `{"a":1}`, "text", "9223372036854775808"} {
		for _, k := range []CellKind{CellText, CellString, CellNumber, CellBool, CellJSON} {
			cells = append(cells, Cell{B: []byte(s), Kind: k})
		}
	}
	for _, typ := range types {
		for _, c := range cells {
			want, wantCode, wantMsg := ConvertText(c, typ, false)
			for _, dirty := range []Value{{Null: true}, {I: 99, F: 9.5, B: []byte("before")}} {
				got := dirty
				code, msg := ConvertTextTo(&got, c, typ, false)
				if code != wantCode || msg != wantMsg {
					t.Errorf("%s %q (kind %d): code %q %q, ConvertText's %q %q", typ, c.B, c.Kind, code, msg, wantCode, wantMsg)
				}
				if code == "" && (got.Null != want.Null || got.I != want.I || got.F != want.F ||
					string(got.B) != string(want.B) || (got.B == nil) != (want.B == nil)) {
					t.Errorf("%s %q (kind %d) into %+v: %+v, want %+v", typ, c.B, c.Kind, dirty, got, want)
				}
			}
		}
	}
}

// TestIntegerIsParseInt checks Integer against IsInteger and ParseInt.
func TestIntegerIsParseInt(t *testing.T) {
	for _, s := range append(intEdges, "0", "-0", "00", "+7", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "1234567890123456789") {
		n, ok := Integer([]byte(s))
		want, err := strconv.ParseInt(s, 10, 64)
		if ok != IsInteger([]byte(s)) || (ok && (err != nil || n != want)) {
			t.Errorf("Integer(%q) = %d %v; IsInteger %v, ParseInt %d %v", s, n, ok, IsInteger([]byte(s)), want, err)
		}
	}
}

// TestDateFieldsIsParseTimestamp checks the date columns' reader against
// ParseTimestamp of a date alone: every day of years around the leap
// rules' edges, the days just past each month's end, and malformed dates.
func TestDateFieldsIsParseTimestamp(t *testing.T) {
	check := func(s string) {
		t.Helper()
		us, want := ParseTimestamp([]byte(s), true)
		want = want && len(s) == 10 // a date column's values are dates alone
		y, m, d, ok := dateFields([]byte(s))
		if ok != want || (ok && daysFromCivil(y, m, d)*86_400_000_000 != us) {
			t.Errorf("dateFields(%q) = %d-%d-%d %v, ParseTimestamp %d %v", s, y, m, d, ok, us, want)
		}
	}
	for _, year := range []int{0, 1, 4, 99, 100, 400, 1582, 1899, 1900, 1969, 1970, 1999, 2000, 2023, 2024, 2100, 9999} {
		for month := 0; month <= 13; month++ {
			for day := 0; day <= 32; day++ {
				check(fmt.Sprintf("%04d-%02d-%02d", year, month, day))
			}
		}
	}
	for _, s := range []string{"", "2024-1-01", "2024-01-1", "2024/01/01", "2024-01-01T", "2024-01-01 00:00:00",
		"2024-01-0a", "a024-01-01", "2024-0:-01", "-024-01-01", "+2024-01-01", "2024-01-01Z", " 2024-01-1", "２０２４-01-01"} {
		check(s)
	}
}
