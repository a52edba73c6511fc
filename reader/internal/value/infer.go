package value

import "github.com/idemport/idemport/idemtype"

// Inference tracks the narrowest type that every non-null value of a column
// seen so far can be read as without losing what it means.
type Inference struct {
	// Dates makes the inference of mapping version 2: ISO dates are
	// dates, and timestamps without a zone are timestamps (without time
	// zone) rather than points in time taken as UTC.
	Dates bool
	// Rules, when not nil, are the value rules of the target's database:
	// a date or timestamp they refuse (CheckDate) is no date nor
	// timestamp, as an invalid date is not.
	Rules    *idemtype.ValueRules
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
	if in.Rules != nil && in.Rules.Date.NoLeapDayInYearZero {
		if us, ok := ParseTimestamp(b, true); ok {
			if code, _ := CheckDate(in.Rules, Value{I: us}, Timestamp); code != "" {
				in.possible &^= canTimestamp | canDate | canLocal
				return
			}
		}
	}
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

// Observe narrows in by the value c. The plan pass observes every value of
// every column whose type is inferred: a value that leaves a settled column
// as it is (settled) is told so without the parsing observe does.
func (in *Inference) Observe(c Cell) {
	if c.Kind == CellText && in.settled(c.B) {
		return
	}
	in.observe(c)
}

// observe narrows in by the value c, whatever in's state.
func (in *Inference) observe(c Cell) {
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
			if _, ok := ParseBool(c.B, false); !ok {
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

// settled reports whether the text b leaves in as it is, in the states a
// column of integers, of decimals or of dates settles in after its first
// value, told without parsing b as Observe would: in a column of integers,
// an integer of at most 15 digits (no sign but '-', no leading zero),
// which is an int64, a float64 and a decimal; in a column of decimals, such
// an integer or one with a point and digits after it, of at most 15 digits
// in all and no exponent, which is a float64 and a decimal; in a column
// that can only be dates, a date. Anything else is left to Observe, which
// may narrow in.
func (in *Inference) settled(b []byte) bool {
	switch in.possible {
	case canInt | canFloat | canDecimal:
		return plainNumber(b, false)
	case canFloat | canDecimal:
		return plainNumber(b, true)
	case canDate:
		_, _, _, ok := dateFields(b)
		return ok
	}
	return false
}

// plainNumber reports whether b is -?(0|[1-9][0-9]*), followed when point
// is true by an optional \.[0-9]+, of at most 15 digits in all.
func plainNumber(b []byte, point bool) bool {
	i := 0
	if len(b) > 0 && b[0] == '-' {
		i = 1
	}
	start := i
	for i < len(b) && b[i]-'0' <= 9 {
		i++
	}
	digits := i - start
	if digits == 0 || (digits > 1 && b[start] == '0') {
		return false
	}
	if point && i < len(b) && b[i] == '.' {
		i++
		fs := i
		for i < len(b) && b[i]-'0' <= 9 {
			i++
		}
		if i == fs {
			return false
		}
		digits += i - fs
	}
	return i == len(b) && digits <= 15
}
