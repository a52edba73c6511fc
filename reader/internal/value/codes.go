package value

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// The reason codes of bad rows, in Reject.Code: why a row is bad, for
// people and programs. They are stable: rejects store them.
const (
	// Found reading a row of any format.
	CodeType       = "type"        // the value does not parse as the column's type
	CodeFieldCount = "field_count" // the row has more or fewer fields than the header
	CodeQuote      = "quote"       // a quoted field is malformed
	CodeUTF8       = "utf8"        // text is not valid UTF-8
	CodeNUL        = "nul"         // text contains a NUL byte
	CodeJSON       = "json"        // a JSONL line is not a JSON object
	CodeNull       = "null"        // a column that must have a value is null
	CodeInexact    = "inexact"     // the column's type would store another value than the file's (02134 in an int64 column)

	// Values the target column cannot hold (Options.Limits). Those its
	// database's decimal or JSON type refuses take the codes of its
	// Options.Rules.
	CodeLength = "length" // text longer than the column's varchar(n) or char(n)

	// Found only in Parquet and Arrow files.
	CodeRange     = "range"     // the value is outside what the column's type holds (uint64 above int64, a year outside 0000-9999)
	CodePrecision = "precision" // a timestamp has a non-zero part finer than a microsecond
)

// InexactHint is the advice that goes with a CodeInexact reason for a value
// of column name, whose type is t: the type that would keep the value (for
// an existing table, its column must be of that type too).
func InexactHint(name string, t Type) string {
	if t == Float64 {
		return fmt.Sprintf("store the column as decimal or text (--column %s:decimal, into a numeric or text column)", name)
	}
	return fmt.Sprintf("store the column as text (--column %s:string, into a text column)", name)
}

// CheckText rejects text no target can store faithfully.
func CheckText(b []byte) (string, string) {
	if !utf8.Valid(b) {
		return CodeUTF8, "text is not valid UTF-8"
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return CodeNUL, "text contains a NUL byte"
	}
	return "", ""
}

// TextClean reports whether b is valid UTF-8 without NUL bytes. Every row
// of a CSV or TSV file is checked in both passes, and most are ASCII: it
// looks at 16 bytes a time for a byte that is not ASCII or is NUL, and
// only a row that has one is checked byte by byte.
func TextClean(b []byte) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+16 <= len(b); i += 16 {
		x := binary.LittleEndian.Uint64(b[i:])
		y := binary.LittleEndian.Uint64(b[i+8:])
		// (x-lo)&^x&hi is not zero when a byte of x is zero.
		if (x|y)&hi != 0 || ((x-lo)&^x|(y-lo)&^y)&hi != 0 {
			return textClean(b)
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == 0 || c >= utf8.RuneSelf {
			return textClean(b)
		}
	}
	return true
}

func textClean(b []byte) bool {
	return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0
}

// CheckJSON returns a reason code and message when b is not a JSON
// document a json column can hold, or empty strings when it is.
func CheckJSON(b []byte) (string, string) {
	if code, msg := CheckText(b); code != "" {
		return code, msg
	}
	if err := fastjson.ValidateBytes(b); err != nil {
		return CodeJSON, "invalid JSON: " + err.Error()
	}
	return "", ""
}
