package value

import (
	"errors"
	"math"
	"strconv"
	"unsafe"

	"github.com/valyala/fastjson"
)

// CellKind says what a scanner knows about a cell before conversion.
type CellKind uint8

const (
	CellNull   CellKind = iota // unquoted empty CSV field, JSON null, missing JSON key
	CellText                   // CSV text: any type may be read from it
	CellString                 // JSON string: a string or a timestamp
	CellNumber                 // JSON number
	CellBool                   // JSON true or false
	CellJSON                   // JSON object or array, kept as its text
)

// Cell is one field of a row as a scanner produced it. b aliases the
// scanner's buffer and is valid until the scanner's next call.
type Cell struct {
	B    []byte
	Kind CellKind
}

// Value is a converted cell, typed by its column.
type Value struct {
	Null bool
	I    int64 // Int64, Timestamp and LocalTimestamp (µs since epoch), Date (days since epoch), Bool (0 or 1)
	F    float64
	B    []byte // String, JSON; aliases the cell
}

func Str(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// Convert turns c into a value of type t, or returns a reason code and a
// message saying why it cannot.
func Convert(c Cell, t Type) (Value, string, string) { return ConvertText(c, t, false) }

// ConvertText is convert for a cell whose text is known to be valid UTF-8
// without NUL bytes when clean is true (its whole row was checked at once).
//
// A value converts only when the column keeps what it means: 02134 is not
// an int64 (its zeros would be lost), 9007199254740993 is not a float64
// (the nearest is 9007199254740992), and CSV text in a json column must be
// a JSON document.
func ConvertText(c Cell, t Type, clean bool) (Value, string, string) {
	var v Value
	code, msg := ConvertTextTo(&v, c, t, clean)
	return v, code, msg
}

// ConvertTextTo is ConvertText converting into *dst, which it sets
// whatever it returns. A Value is too large for registers: one returned
// is stored field by field to a temporary and copied from it 16 bytes at
// a time, a copy that stalls (the loads wait for the stores), which a
// loop converting every cell of a file pays on each.
func ConvertTextTo(dst *Value, c Cell, t Type, clean bool) (string, string) {
	if c.Kind == CellNull {
		*dst = Value{Null: true}
		return "", ""
	}
	switch t {
	case String:
		if c.Kind == CellText && len(c.B) == 0 {
			*dst = Value{B: c.B}
			return "", ""
		}
		if !clean {
			if code, msg := CheckText(c.B); code != "" {
				*dst = Value{}
				return code, msg
			}
		}
		*dst = Value{B: c.B}
		return "", ""
	case JSON:
		if c.Kind == CellText && len(c.B) == 0 {
			*dst = Value{Null: true}
			return "", "" // an empty quoted CSV field, as for every non-text type
		}
		if !clean {
			if code, msg := CheckText(c.B); code != "" {
				*dst = Value{}
				return code, msg
			}
		}
		switch c.Kind {
		case CellString:
			// A JSON string in a json column stays a JSON string.
			*dst = Value{B: AppendJSONString(nil, c.B)}
			return "", ""
		case CellText:
			// CSV text in a json column is the JSON document itself.
			if err := fastjson.ValidateBytes(c.B); err != nil {
				*dst = Value{}
				return CodeJSON, "not a JSON document: " + err.Error()
			}
		}
		*dst = Value{B: c.B}
		return "", ""
	}
	if len(c.B) == 0 { // an empty quoted CSV field is null for every non-text type
		*dst = Value{Null: true}
		return "", ""
	}
	switch t {
	case Int64:
		if c.Kind != CellText && c.Kind != CellNumber && c.Kind != CellString {
			break
		}
		n, ok := shortInt(c.B)
		var err error
		if !ok {
			n, err = strconv.ParseInt(Str(c.B), 10, 64)
		}
		if err != nil {
			if c.Kind == CellNumber { // 3.0 is a JSON number that is an integer
				if f, ferr := strconv.ParseFloat(Str(c.B), 64); ferr == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
					*dst = Value{I: int64(f)}
					return "", ""
				}
			}
			if errors.Is(err, strconv.ErrRange) {
				*dst = Value{}
				return CodeRange, "beyond the range of an int64"
			}
			break
		}
		if leadingZero(c.B) {
			*dst = Value{}
			return CodeInexact, "leading zeros would be lost"
		}
		*dst = Value{I: n}
		return "", ""
	case Float64:
		if c.Kind != CellText && c.Kind != CellNumber && c.Kind != CellString {
			break
		}
		f, code, msg := floatValue(c.B)
		if code != "" {
			*dst = Value{}
			return code, msg
		}
		*dst = Value{F: f}
		return "", ""
	case Decimal:
		if c.Kind != CellText && c.Kind != CellNumber && c.Kind != CellString {
			break
		}
		b, code, msg := DecimalValue(c.B)
		if code != "" {
			*dst = Value{}
			return code, msg
		}
		*dst = Value{B: b}
		return "", ""
	case Bool:
		if v, ok := ParseBool(c.B, c.Kind != CellBool); ok {
			*dst = Value{I: v}
			return "", ""
		}
	case Timestamp:
		if c.Kind != CellText && c.Kind != CellString {
			break
		}
		if us, ok := ParseTimestamp(c.B, true); ok {
			*dst = Value{I: us}
			return "", ""
		}
		*dst = Value{}
		return CodeType, "not a valid timestamptz (want RFC 3339: YYYY-MM-DDTHH:MM:SS[.ffffff] and Z or ±HH:MM; a value without a zone is UTC)"
	case LocalTimestamp:
		if c.Kind != CellText && c.Kind != CellString {
			break
		}
		if us, ok := ParseTimestamp(c.B, true); ok && !hasZone(c.B) {
			*dst = Value{I: us}
			return "", ""
		}
		if hasZone(c.B) {
			*dst = Value{}
			return CodeType, "a timestamp (without time zone) has no zone, and this value has one: fix the column as timestamptz"
		}
		*dst = Value{}
		return CodeType, "not a valid timestamp (want ISO 8601 without a zone: YYYY-MM-DD HH:MM:SS[.ffffff], or with a T)"
	case Date:
		if c.Kind != CellText && c.Kind != CellString {
			break
		}
		if y, m, d, ok := dateFields(c.B); ok {
			*dst = Value{I: daysFromCivil(y, m, d)}
			return "", ""
		}
		*dst = Value{}
		return CodeType, "not a valid date (want ISO 8601: YYYY-MM-DD)"
	}
	*dst = Value{}
	return CodeType, "not a valid " + t.String()
}

// FromText returns v, a value c converted to type t, as a value of type as
// taken from c's text rather than through t: as string, an int64, float64
// or decimal is the text the file wrote (4.50, 1e3, -0); as decimal, an
// int64 or float64 is the canonical text of the number written
// (DecimalValue: 4.50, 1000, 0), never a float64's digits. Any other
// pair, and a null, returns v unchanged.
func FromText(c Cell, v Value, t, as Type) Value {
	if v.Null || t == as {
		return v
	}
	switch {
	case as == String && (t == Int64 || t == Float64 || t == Decimal):
		return Value{B: c.B}
	case as == Decimal && (t == Int64 || t == Float64):
		if b, code, _ := DecimalValue(c.B); code == "" {
			return Value{B: b}
		}
	}
	return v
}

// shortInt reads b as strconv.ParseInt(b, 10, 64) does when b is a sign
// and at most 18 digits, which no int64 overflows; otherwise, or when b
// holds anything else, it reports false and leaves b to ParseInt.
func shortInt(b []byte) (int64, bool) {
	i := 0
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		i = 1
	}
	if n := len(b) - i; n == 0 || n > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b[i:] {
		d := c - '0'
		if d > 9 {
			return 0, false
		}
		n = n*10 + int64(d)
	}
	if b[0] == '-' {
		n = -n
	}
	return n, true
}

// leadingZero reports whether the integer b, after its sign, starts with a
// zero that is not its only digit.
func leadingZero(b []byte) bool {
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		b = b[1:]
	}
	return len(b) > 1 && b[0] == '0'
}

// AppendJSONString appends the UTF-8 text s to dst as a JSON string literal.
// (strconv.AppendQuote is Go syntax: \a, \x7f and \U0001xxxx are not JSON.)
func AppendJSONString(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// ParseBool reads true or false, in any case, as 1 or 0; lenient also
// reads 1, t, y, yes, 0, f, n and no as CSV and sheets write them.
func ParseBool(b []byte, lenient bool) (int64, bool) {
	switch len(b) {
	case 4:
		if (b[0]|0x20) == 't' && (b[1]|0x20) == 'r' && (b[2]|0x20) == 'u' && (b[3]|0x20) == 'e' {
			return 1, true
		}
	case 5:
		if (b[0]|0x20) == 'f' && (b[1]|0x20) == 'a' && (b[2]|0x20) == 'l' && (b[3]|0x20) == 's' && (b[4]|0x20) == 'e' {
			return 0, true
		}
	}
	if !lenient {
		return 0, false
	}
	switch string(b) {
	case "1", "t", "T", "y", "Y", "yes", "YES", "Yes":
		return 1, true
	case "0", "f", "F", "n", "N", "no", "NO", "No":
		return 0, true
	}
	return 0, false
}

// Integer returns the integer b is when IsInteger(b) reports it one, and
// whether it is: the key of an integer column of a plan pass, read as
// strconv.ParseInt reads it, without its cost for the short integers most
// keys are.
func Integer(b []byte) (int64, bool) {
	if !IsInteger(b) {
		return 0, false
	}
	if n, ok := shortInt(b); ok {
		return n, true
	}
	n, err := strconv.ParseInt(Str(b), 10, 64)
	return n, err == nil
}

// IsInteger reports whether b is an integer as inference accepts it:
// -?(0|[1-9][0-9]*), within int64.
func IsInteger(b []byte) bool {
	i := 0
	if len(b) > 0 && b[0] == '-' {
		i++
	}
	if i == len(b) || len(b)-i > 19 {
		return false
	}
	if b[i] == '0' && len(b)-i > 1 {
		return false
	}
	for _, c := range b[i:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	if len(b)-i == 19 {
		_, err := strconv.ParseInt(Str(b), 10, 64)
		return err == nil
	}
	return true
}
