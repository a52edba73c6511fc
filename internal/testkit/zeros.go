package testkit

import (
	"database/sql"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"testing"
)

// ZeroForm is a short number whose zeros or sign a lossy import would
// drop (07 stored as 7), with what the contract makes of it in each kind
// of column. A wanted value is the stored value's text (a float64 as
// strconv's shortest 'g' form of the float read back), or "!" followed
// by the reject code of a bad row.
type ZeroForm struct {
	Text string // the form as a CSV field, and as a JSON string in JSONL
	// Number is true when Text is also a JSON number, which JSONL may
	// write bare; any other form written bare makes its line invalid
	// JSON, a bad row (json) whatever the column.
	Number bool
	// Type and KeyType are what a new column, and a new --key column, of
	// this value alone is inferred as, from CSV text or a bare JSON
	// number (a JSON string is text whatever it holds).
	Type, KeyType string
	// Int, Decimal and Float are what an int64, decimal or float64 column,
	// new or existing, holds for the form; IntNumber what an int64 column
	// holds for the bare JSON number, where that differs from Int.
	Int, Decimal, Float, IntNumber string
}

// ZeroForms returns every short form of a number with zeros or a sign,
// and the contract for each (DESIGN §4: inference never loses information;
// a value an existing column cannot hold without changing its meaning is a
// bad row):
//
//   - a zero before other digits (00, 07, -07, 00.5) is kept by no
//     number: a new column is text, and an int64, decimal or float64
//     column refuses the row (inexact; 00.5 is no integer at all: type);
//   - +7 means 7: a number column takes it as 7, but inference keeps it
//     text (its text is not a number's canonical text);
//   - -0 is the integer 0, and zero in a decimal (numeric has no negative
//     zero); a float64 keeps the sign where the database does
//     (PostgreSQL; SQLite stores 0);
//   - 0.0 is a float64 when inferred (a float keeps no scale), a decimal
//     0.0 as a key (a key is never float64) or in a decimal column; as CSV
//     text it is no integer, while the JSON number 0.0 is one, as 3.0 is.
func ZeroForms() []ZeroForm {
	zeros := func(text string) ZeroForm {
		return ZeroForm{Text: text, Type: "string", KeyType: "string", Int: "!inexact", Decimal: "!inexact", Float: "!inexact"}
	}
	fraction := zeros("00.5")
	fraction.Int = "!type"
	return []ZeroForm{
		{Text: "0", Number: true, Type: "int64", KeyType: "int64", Int: "0", Decimal: "0", Float: "0"},
		zeros("00"),
		zeros("07"),
		zeros("-07"),
		{Text: "+7", Type: "string", KeyType: "string", Int: "7", Decimal: "7", Float: "7"},
		{Text: "-0", Number: true, Type: "int64", KeyType: "int64", Int: "0", Decimal: "0", Float: "-0"},
		{Text: "0.0", Number: true, Type: "float64", KeyType: "decimal", Int: "!type", IntNumber: "0", Decimal: "0.0", Float: "0"},
		fraction,
	}
}

// The ways a test file writes a ZeroForm.
const (
	AsCSV    = "csv"    // a CSV field
	AsString = "string" // a JSON string in JSONL
	AsNumber = "number" // bare in JSONL: a JSON number, or not JSON at all
)

// Field returns the form as a file written as as holds it.
func (z ZeroForm) Field(as string) string {
	if as == AsString {
		return strconv.Quote(z.Text)
	}
	return z.Text
}

// Inferred returns the type a new column (a --key column when key) of
// this value alone gets, written as as.
func (z ZeroForm) Inferred(as string, key bool) string {
	switch {
	case as == AsString:
		return "string"
	case key:
		return z.KeyType
	}
	return z.Type
}

// Want returns what a column of type typ (int64, decimal, float64 or
// string) of the target named target holds for the form written as as:
// the value's text, or "!" and the reject code of a bad row.
func (z ZeroForm) Want(target, typ, as string) string {
	if as == AsNumber && !z.Number {
		return "!json"
	}
	switch typ {
	case "int64":
		if as == AsNumber && z.IntNumber != "" {
			return z.IntNumber
		}
		return z.Int
	case "decimal":
		return z.Decimal
	case "float64":
		if z.Float == "-0" && (target == SQLite || target == MariaDB) {
			return "0" // SQLite and MariaDB's DOUBLE keep no sign of a zero
		}
		return z.Float
	}
	return z.Text
}

// KeyOf returns what makes a key of type typ the same key as another: its
// value for a number (0, -0 and 0.0 are one key; +7 is 7), its text
// otherwise.
func KeyOf(typ, text string) string {
	if typ == "int64" || typ == "decimal" {
		if r, ok := new(big.Rat).SetString(text); ok {
			return r.RatString()
		}
	}
	return text
}

// ColumnType returns the type idemport reads column col of table as
// (int64, float64, decimal, string, ...), from its declared type.
func (tg *Target) ColumnType(t testing.TB, table, col string) string {
	t.Helper()
	var decl string
	var err error
	switch {
	case tg.IsPostgres():
		err = tg.DB.QueryRow(`SELECT data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name = $3`,
			tg.Schema, table, col).Scan(&decl)
	case tg.IsMariaDB():
		// A decimal beyond DECIMAL(65) is text the driver marks decimal.
		err = tg.DB.QueryRow(`SELECT CASE WHEN column_comment = 'idemport:decimal' THEN 'decimal' ELSE data_type END
			FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? AND column_name = ?`,
			table, col).Scan(&decl)
	default:
		err = tg.DB.QueryRow(`SELECT type FROM pragma_table_info(?) WHERE name = ?`, table, col).Scan(&decl)
	}
	if err != nil {
		t.Fatalf("type of %s.%s: %v", table, col, err)
	}
	switch strings.ToLower(decl) {
	case "integer", "bigint":
		return "int64"
	case "real", "double precision", "double":
		return "float64"
	case "decimal text", "numeric", "decimal":
		return "decimal"
	case "text", "mediumtext", "longtext", "varchar":
		return "string"
	}
	return decl
}

// Texts returns the values of column col of table, as the text the
// column's type typ gives them (Null for NULL; a float64 in strconv's
// shortest 'g' form of the float read back, the sign of a zero kept where
// the database keeps it), for the rows where (an SQL condition), in the
// order of order.
func (tg *Target) Texts(t testing.TB, table, col, typ, where, order string) []string {
	t.Helper()
	expr := tg.Text(QuoteOne(col))
	if typ == "float64" {
		expr = QuoteOne(col)
	}
	q := fmt.Sprintf(`SELECT %s FROM %s WHERE %s ORDER BY %s`, expr, tg.QuoteTable(t, table), where, order)
	rows, err := tg.DB.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		if typ == "float64" {
			var f sql.NullFloat64
			if err := rows.Scan(&f); err != nil {
				t.Fatal(err)
			}
			if !f.Valid {
				out = append(out, Null)
			} else {
				out = append(out, strconv.FormatFloat(f.Float64, 'g', -1, 64))
			}
			continue
		}
		var s sql.NullString
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		if !s.Valid {
			out = append(out, Null)
		} else {
			out = append(out, s.String)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
