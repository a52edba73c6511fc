package testkit

import (
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
)

// Null stands for SQL NULL in the expectations of Tricky.
const Null = "<NULL>"

// TrickyColumn is one column of the tricky-values files: what each row
// holds, as the stored value's text (Null for NULL). A float column is
// compared as float64, since databases print floats in their own ways.
type TrickyColumn struct {
	Name  string
	Float bool
	// JSON: compared without the whitespace between tokens, which jsonb
	// re-spaces and the JSONL reader drops; every token (numbers' digits
	// and scale, strings, key order) must be the file's.
	JSON bool
	Want []string
}

// Tricky returns a file of values that break lossy imports, as CSV and as
// JSONL (numbers as JSON numbers), and what the target must hold for each
// row (ordinal order), the same for both files and every database:
// integers at and beyond the int64 edges, 2^53±1, long decimals, 1e-400,
// 1e400, -0, leading zeros, empty text versus NULL, and (JSONL only, the
// column j) nested JSON. The JSON is written as PostgreSQL's jsonb prints
// it, so that its stored text is the file's on both databases.
func Tricky() (csv, jsonl string, cols []TrickyColumn) {
	zeros := func(n int) string { return strings.Repeat("0", n) }
	csv = "id,big,edge,f53,flt,zip,s\n" +
		`1,9223372036854775807,9223372036854775807,9007199254740993,0.1,02134,""` + "\n" +
		"2,-9223372036854775808,-9223372036854775808,9007199254740992,1.5,00501,\n" +
		`3,9223372036854775808,9007199254740993,0.5,-0,12345,"a,b"` + "\n" +
		`4,-9223372036854775809,9007199254740992,1e-400,2.5e-3,007,"  spaced  "` + "\n" +
		"5,1234567890123456789,9007199254740991,1e400,9007199254740992,7,\"line\nbreak\"\n" +
		`6,12345678901234567890.123456789,0,-0,1e300,"",x` + "\n" +
		"7,,,,,,\n"
	jsonl = `{"id": 1, "big": 9223372036854775807, "edge": 9223372036854775807, "f53": 9007199254740993, "flt": 0.1, "zip": "02134", "s": "", "j": {"a": {"b": [1, 2.50, "x"]}}}` + "\n" +
		`{"id": 2, "big": -9223372036854775808, "edge": -9223372036854775808, "f53": 9007199254740992, "flt": 1.5, "zip": "00501", "s": null, "j": [1, "two", null, {"c": false}]}` + "\n" +
		`{"id": 3, "big": 9223372036854775808, "edge": 9007199254740993, "f53": 0.5, "flt": -0, "zip": "12345", "s": "a,b", "j": {"n": 12345678901234567890.123456789}}` + "\n" +
		`{"id": 4, "big": -9223372036854775809, "edge": 9007199254740992, "f53": 1e-400, "flt": 2.5e-3, "zip": "007", "s": "  spaced  ", "j": "just a string"}` + "\n" +
		`{"id": 5, "big": 1234567890123456789, "edge": 9007199254740991, "f53": 1e400, "flt": 9007199254740992, "zip": "7", "s": "line\nbreak", "j": 12345678901234567890}` + "\n" +
		`{"id": 6, "big": 12345678901234567890.123456789, "edge": 0, "f53": -0, "flt": 1e300, "zip": "", "s": "x", "j": []}` + "\n" +
		`{"id": 7}` + "\n"
	cols = []TrickyColumn{
		{Name: "id", Want: []string{"1", "2", "3", "4", "5", "6", "7"}},
		{Name: "big", Want: []string{"9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
			"1234567890123456789", "12345678901234567890.123456789", Null}},
		{Name: "edge", Want: []string{"9223372036854775807", "-9223372036854775808", "9007199254740993", "9007199254740992",
			"9007199254740991", "0", Null}},
		{Name: "f53", Want: []string{"9007199254740993", "9007199254740992", "0.5", "0." + zeros(399) + "1", "1" + zeros(400), "0", Null}},
		{Name: "flt", Float: true, Want: []string{"0.1", "1.5", "-0", "0.0025", "9007199254740992", "1e300", Null}},
		{Name: "zip", Want: []string{"02134", "00501", "12345", "007", "7", "", Null}},
		{Name: "s", Want: []string{"", Null, "a,b", "  spaced  ", "line\nbreak", "x", Null}},
	}
	return csv, jsonl, cols
}

// TrickyJSON is the column j of the JSONL file of Tricky, as stored.
var TrickyJSON = TrickyColumn{Name: "j", JSON: true, Want: []string{`{"a": {"b": [1, 2.50, "x"]}}`, `[1, "two", null, {"c": false}]`,
	`{"n": 12345678901234567890.123456789}`, `"just a string"`, "12345678901234567890", "[]", Null}}

// CheckTricky compares column c of table (rows in ordinal order, by the
// column order) on db, a target of the named kind, with c.Want: exactly,
// as text, or as float64 for a float column (where -0 is 0: SQLite does
// not keep the sign of a zero).
func CheckTricky(t testing.TB, db *sql.DB, target, table, order string, c TrickyColumn) {
	t.Helper()
	expr := `CAST("` + c.Name + `" AS TEXT)`
	switch {
	case c.Float:
		expr = `"` + c.Name + `"` // read as a float64: SQLite prints 15 digits
	case target == Postgres:
		expr = `"` + c.Name + `"::text`
	case target == MariaDB:
		expr = `CAST("` + c.Name + `" AS CHAR)`
	}
	rows, err := db.Query(`SELECT ` + expr + ` FROM "` + table + `" ORDER BY ` + order)
	if err != nil {
		t.Fatalf("read %s.%s: %v", table, c.Name, err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var v sql.NullString
		if c.Float {
			var f sql.NullFloat64
			if err := rows.Scan(&f); err != nil {
				t.Fatal(err)
			}
			v = sql.NullString{String: strconv.FormatFloat(f.Float64, 'g', -1, 64), Valid: f.Valid}
		} else if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		if !v.Valid {
			got = append(got, Null)
		} else {
			got = append(got, v.String)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(c.Want) {
		t.Fatalf("%s.%s: %d rows, want %d", table, c.Name, len(got), len(c.Want))
	}
	for i, w := range c.Want {
		if c.Float && w != Null && got[i] != Null {
			g, err1 := strconv.ParseFloat(got[i], 64)
			x, err2 := strconv.ParseFloat(w, 64)
			if err1 != nil || err2 != nil || g != x || math.IsNaN(g) {
				t.Errorf("%s.%s row %d: %q, want the float64 %s", table, c.Name, i+1, got[i], w)
			}
			continue
		}
		if c.JSON {
			got[i], w = compactJSON(got[i]), compactJSON(w)
		}
		if got[i] != w {
			t.Errorf("%s.%s row %d: %s, want %s", table, c.Name, i+1, short(got[i]), short(w))
		}
	}
}

// compactJSON drops the whitespace between the tokens of the JSON text s.
func compactJSON(s string) string {
	var b strings.Builder
	in, esc := false, false
	for _, c := range []byte(s) {
		switch {
		case in:
			in = esc || c != '"'
			esc = !esc && c == '\\'
		case c == '"':
			in = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func short(s string) string {
	if len(s) > 60 {
		return fmt.Sprintf("%q… (%d bytes)", s[:60], len(s))
	}
	return strconv.Quote(s)
}
