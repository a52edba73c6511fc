package core

import (
	"bytes"
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
	if c.Kind == CellNull {
		return Value{Null: true}, "", ""
	}
	switch t {
	case String:
		if c.Kind == CellText && len(c.B) == 0 {
			return Value{B: c.B}, "", ""
		}
		if !clean {
			if code, msg := CheckText(c.B); code != "" {
				return Value{}, code, msg
			}
		}
		return Value{B: c.B}, "", ""
	case JSON:
		if c.Kind == CellText && len(c.B) == 0 {
			return Value{Null: true}, "", "" // an empty quoted CSV field, as for every non-text type
		}
		if !clean {
			if code, msg := CheckText(c.B); code != "" {
				return Value{}, code, msg
			}
		}
		switch c.Kind {
		case CellString:
			// A JSON string in a json column stays a JSON string.
			return Value{B: appendJSONString(nil, c.B)}, "", ""
		case CellText:
			// CSV text in a json column is the JSON document itself.
			if err := fastjson.ValidateBytes(c.B); err != nil {
				return Value{}, CodeJSON, "not a JSON document: " + err.Error()
			}
		}
		return Value{B: c.B}, "", ""
	}
	if len(c.B) == 0 { // an empty quoted CSV field is null for every non-text type
		return Value{Null: true}, "", ""
	}
	switch t {
	case Int64:
		if c.Kind != CellText && c.Kind != CellNumber && c.Kind != CellString {
			break
		}
		n, err := strconv.ParseInt(Str(c.B), 10, 64)
		if err != nil {
			if c.Kind == CellNumber { // 3.0 is a JSON number that is an integer
				if f, ferr := strconv.ParseFloat(Str(c.B), 64); ferr == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
					return Value{I: int64(f)}, "", ""
				}
			}
			if errors.Is(err, strconv.ErrRange) {
				return Value{}, CodeRange, "beyond the range of an int64"
			}
			break
		}
		if leadingZero(c.B) {
			return Value{}, CodeInexact, "leading zeros would be lost"
		}
		return Value{I: n}, "", ""
	case Float64:
		if c.Kind != CellText && c.Kind != CellNumber && c.Kind != CellString {
			break
		}
		f, code, msg := floatValue(c.B)
		if code != "" {
			return Value{}, code, msg
		}
		return Value{F: f}, "", ""
	case Decimal:
		if c.Kind != CellText && c.Kind != CellNumber && c.Kind != CellString {
			break
		}
		b, code, msg := DecimalValue(c.B)
		if code != "" {
			return Value{}, code, msg
		}
		return Value{B: b}, "", ""
	case Bool:
		if v, ok := parseBool(c.B, c.Kind != CellBool); ok {
			return Value{I: v}, "", ""
		}
	case Timestamp:
		if c.Kind != CellText && c.Kind != CellString {
			break
		}
		if us, ok := ParseTimestamp(c.B, true); ok {
			return Value{I: us}, "", ""
		}
		return Value{}, CodeType, "not a valid timestamptz (want RFC 3339: YYYY-MM-DDTHH:MM:SS[.ffffff] and Z or ±HH:MM; a value without a zone is UTC)"
	case LocalTimestamp:
		if c.Kind != CellText && c.Kind != CellString {
			break
		}
		if us, ok := ParseTimestamp(c.B, true); ok && !hasZone(c.B) {
			return Value{I: us}, "", ""
		}
		if hasZone(c.B) {
			return Value{}, CodeType, "a timestamp (without time zone) has no zone, and this value has one: fix the column as timestamptz"
		}
		return Value{}, CodeType, "not a valid timestamp (want ISO 8601 without a zone: YYYY-MM-DD HH:MM:SS[.ffffff], or with a T)"
	case Date:
		if c.Kind != CellText && c.Kind != CellString {
			break
		}
		if len(c.B) == 10 {
			if us, ok := ParseTimestamp(c.B, true); ok {
				return Value{I: us / 86_400_000_000}, "", ""
			}
		}
		return Value{}, CodeType, "not a valid date (want ISO 8601: YYYY-MM-DD)"
	}
	return Value{}, CodeType, "not a valid " + t.String()
}

// hasZone reports whether the timestamp text b ends in a zone: Z or an
// offset after its time of day.
func hasZone(b []byte) bool {
	if len(b) <= 19 {
		return false
	}
	last := b[len(b)-1]
	if last == 'Z' || last == 'z' {
		return true
	}
	rest := b[19:]
	return bytes.IndexByte(rest, '+') >= 0 || bytes.IndexByte(rest, '-') >= 0
}

// leadingZero reports whether the integer b, after its sign, starts with a
// zero that is not its only digit.
func leadingZero(b []byte) bool {
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		b = b[1:]
	}
	return len(b) > 1 && b[0] == '0'
}

// appendJSONString appends the UTF-8 text s to dst as a JSON string literal.
// (strconv.AppendQuote is Go syntax: \a, \x7f and \U0001xxxx are not JSON.)
func appendJSONString(dst, s []byte) []byte {
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

func parseBool(b []byte, lenient bool) (int64, bool) {
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

func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// ParseTimestamp reads YYYY-MM-DD[(T| )HH:MM:SS[.fraction]][Z|±HH:MM|±HHMM]
// into microseconds since the Unix epoch, UTC. A value without a zone is
// UTC. A date alone is accepted only when dateOnly is true (midnight UTC).
// A fraction finer than a microsecond must be zeros.
func ParseTimestamp(b []byte, dateOnly bool) (int64, bool) {
	if len(b) < 10 || b[4] != '-' || b[7] != '-' {
		return 0, false
	}
	year, ok1 := digits(b[0:4])
	month, ok2 := digits(b[5:7])
	day, ok3 := digits(b[8:10])
	if !ok1 || !ok2 || !ok3 || month < 1 || month > 12 || day < 1 || day > 31 {
		return 0, false
	}
	var hour, minute, sec, micro int
	offset := 0
	rest := b[10:]
	if len(rest) == 0 {
		if !dateOnly {
			return 0, false
		}
	} else {
		if len(rest) < 9 || (rest[0] != 'T' && rest[0] != ' ' && rest[0] != 't') || rest[3] != ':' || rest[6] != ':' {
			return 0, false
		}
		var ok4, ok5, ok6 bool
		hour, ok4 = digits(rest[1:3])
		minute, ok5 = digits(rest[4:6])
		sec, ok6 = digits(rest[7:9])
		if !ok4 || !ok5 || !ok6 || hour > 23 || minute > 59 || sec > 59 {
			return 0, false
		}
		rest = rest[9:]
		if len(rest) > 0 && rest[0] == '.' {
			i := 1
			for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
				if i <= 6 {
					micro = micro*10 + int(rest[i]-'0')
				} else if rest[i] != '0' {
					return 0, false
				}
				i++
			}
			if i == 1 {
				return 0, false
			}
			for n := i; n <= 6; n++ {
				micro *= 10
			}
			rest = rest[i:]
		}
		switch {
		case len(rest) == 0:
		case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
		case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':',
			len(rest) == 5 && (rest[0] == '+' || rest[0] == '-'):
			hh, okh := digits(rest[1:3])
			mm, okm := digits(rest[len(rest)-2:])
			if !okh || !okm || hh > 23 || mm > 59 {
				return 0, false
			}
			offset = hh*3600 + mm*60
			if rest[0] == '-' {
				offset = -offset
			}
		default:
			return 0, false
		}
	}
	if day > daysIn(year, month) { // 2025-02-30
		return 0, false
	}
	secs := daysFromCivil(year, month, day)*86400 + int64(hour*3600+minute*60+sec)
	return (secs-int64(offset))*1e6 + int64(micro), true
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian
// date (Howard Hinnant's algorithm), without time.Date's normalisation,
// which the plan pass would pay for every timestamp it reads.
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// Inference tracks the narrowest type that every non-null value of a column
// seen so far can be read as without losing what it means.
type Inference struct {
	// Dates makes the inference of mapping version 2: ISO dates are
	// dates, and timestamps without a zone are timestamps (without time
	// zone) rather than points in time taken as UTC.
	Dates    bool
	seen     bool // a non-null value was seen
	possible uint8
	json     bool // a JSON object or array was seen
	text     bool // a JSON string that is not a timestamp was seen
}

const (
	canBool uint8 = 1 << iota
	canInt
	canFloat
	canDecimal
	canTimestamp // a timestamp, with a zone (Dates) or any (before)
	canDate      // Dates only: YYYY-MM-DD
	canLocal     // Dates only: a timestamp without a zone
)

// observeTime narrows in by the text b as a date or timestamp.
func (in *Inference) observeTime(b []byte) {
	if !in.Dates {
		if _, ok := ParseTimestamp(b, false); !ok {
			in.possible &^= canTimestamp
		}
		return
	}
	_, ts := ParseTimestamp(b, false)
	zone := ts && hasZone(b)
	if !zone {
		in.possible &^= canTimestamp
	}
	if !ts || zone {
		in.possible &^= canLocal
	}
	if len(b) != 10 {
		in.possible &^= canDate
	} else if _, ok := ParseTimestamp(b, true); !ok {
		in.possible &^= canDate
	}
}

// observeNumber narrows in by the number b (CSV text or a JSON number):
// int64 when it is a canonical int64, float64 when its float64 means the
// same number, decimal when a decimal holds it. Inference takes no '+'
// sign, no leading zeros and no empty integer part (.5), so that codes like
// 08123 stay text.
func (in *Inference) observeNumber(b []byte) {
	if in.possible&canInt != 0 {
		if IsInteger(b) {
			// Up to 15 digits an int64 is exactly a float64, and always a decimal.
			if in.possible&canFloat != 0 && len(b) > 15 {
				if d, ok := ParseDecimal(b); !ok || !ExactFloat(&d, b) {
					in.possible &^= canFloat
				}
			}
			return
		}
		in.possible &^= canInt
	}
	if in.possible&(canFloat|canDecimal) == 0 {
		return
	}
	d, ok := ParseDecimal(b)
	if !ok || d.plus || d.zeros || d.bare {
		in.possible &^= canFloat | canDecimal
		return
	}
	if in.possible&canFloat != 0 && !ExactFloat(&d, b) {
		in.possible &^= canFloat
	}
	if in.possible&canDecimal != 0 && !d.fitsDecimal() {
		in.possible &^= canDecimal
	}
}

func (in *Inference) Observe(c Cell) {
	if c.Kind == CellNull {
		return
	}
	if !in.seen {
		in.seen = true
		in.possible = canBool | canInt | canFloat | canDecimal | canTimestamp
		if in.Dates {
			in.possible |= canDate | canLocal
		}
	}
	switch c.Kind {
	case CellText:
		if len(c.B) == 0 {
			in.possible = 0 // a quoted empty string is text
			return
		}
		if in.possible&(canInt|canFloat|canDecimal) != 0 {
			in.observeNumber(c.B)
		}
		if in.possible&canBool != 0 {
			if _, ok := parseBool(c.B, false); !ok {
				in.possible &^= canBool
			}
		}
		if in.possible&(canTimestamp|canDate|canLocal) != 0 {
			in.observeTime(c.B)
		}
	case CellString:
		in.possible &= canTimestamp | canDate | canLocal
		if in.possible != 0 {
			in.observeTime(c.B)
		}
		if in.possible == 0 {
			in.text = true
		}
	case CellNumber:
		in.possible &= canInt | canFloat | canDecimal
		if in.possible != 0 {
			in.observeNumber(c.B)
		}
	case CellBool:
		in.possible &= canBool
	case CellJSON:
		in.json = true
		in.possible = 0
	}
}

// result returns the inferred type. A column of nulls only is a string. A
// key column (exact) is never float64: it is a decimal, or text.
func (in *Inference) Result(exact bool) Type {
	switch {
	case in.json:
		return JSON
	case !in.seen || in.possible == 0:
		return String
	case in.possible&canInt != 0:
		return Int64
	case in.possible&canFloat != 0 && !exact:
		return Float64
	case in.possible&canDecimal != 0:
		return Decimal
	case in.possible&canBool != 0:
		return Bool
	case in.possible&canDate != 0:
		return Date
	case in.possible&canLocal != 0:
		return LocalTimestamp
	case in.possible&canTimestamp != 0:
		return Timestamp
	}
	return String
}
