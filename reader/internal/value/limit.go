package value

import (
	"fmt"
	"unicode/utf8"

	"github.com/idemport/idemport/idemtype"
)

// Limit is what a target column can hold beyond its type: the plan pass
// checks each value against it, so that a value the table cannot store is a
// bad row found before any effect, not a write that fails halfway through
// an import. The zero Limit checks nothing.
type Limit struct {
	// MinInt and MaxInt bound integer values when MaxInt > MinInt
	// (smallint and integer).
	MinInt int64 `json:"min_int,omitempty"`
	MaxInt int64 `json:"max_int,omitempty"`
	// MaxChars bounds the length of text values in characters
	// (varchar(n), char(n)).
	MaxChars int `json:"max_chars,omitempty"`
	// Decimal says the column is of the database's exact decimal type
	// (Rules.Decimal); Precision and Scale are its own, or 0 when it has
	// none. A number it would round (a non-zero digit beyond the scale) or
	// cannot hold is a bad row. (The JSON names are those of stored plans.)
	Decimal   bool `json:"numeric,omitempty"`
	Precision int  `json:"precision,omitempty"`
	Scale     int  `json:"scale,omitempty"`
	// JSON says the column is of the database's JSON type, whose
	// Rules.JSON its JSON values must pass.
	JSON bool `json:"jsonb,omitempty"`
	// TimeUnit, when not 0, is the step in microseconds of a timestamp
	// column that keeps fewer digits of a second than a microsecond's: a
	// key is what the column makes of it (Time), so that two keys it
	// stores as one are one key to the plan. TimeTruncates says it
	// truncates (MariaDB), not rounds (PostgreSQL).
	TimeUnit      int64 `json:"time_unit,omitempty"`
	TimeTruncates bool  `json:"time_truncates,omitempty"`
	// NotNull says the column refuses nulls.
	NotNull bool `json:"not_null,omitempty"`
	// Key says the column is part of the natural key of a table the
	// driver will create, whose text MaxChars bounds whatever kind the
	// plan pass infers for it (a number's text, too: a decimal key is
	// stored as its text), since the key's index holds no more.
	Key bool `json:"key,omitempty"`
	// Table names the table in messages.
	Table string `json:"table,omitempty"`
}

// check returns why cell c, converted to v of type t, does not fit l in a
// database of rules r, or "" when it does. Only a null cell is checked
// against NotNull, so that the plan pass decides the same before a
// column's type is inferred.
func (l *Limit) check(r *idemtype.ValueRules, c Cell, v Value, t Type) (string, string) {
	if c.Kind == CellNull {
		if l.NotNull {
			return CodeNull, fmt.Sprintf("column is NOT NULL in table %s", l.Table)
		}
		return "", ""
	}
	if l.Key && l.MaxChars > 0 && !v.Null && (t == Unknown || t == String || t == Decimal || t == JSON) {
		b := c.B // the text written: a decimal key is stored as it
		if t == String || t == JSON {
			b = v.B
		}
		if len(b) > l.MaxChars && utf8.RuneCount(b) > l.MaxChars {
			return CodeLength, fmt.Sprintf("key text is %d characters, more than the %d each column of the key holds in table %s (the database's index of a key is bounded)", utf8.RuneCount(b), l.MaxChars, l.Table)
		}
	}
	if v.Null || t == Unknown {
		return "", ""
	}
	if l.MaxInt > l.MinInt && t == Int64 && (v.I < l.MinInt || v.I > l.MaxInt) {
		return CodeRange, fmt.Sprintf("value is outside the column's range %d..%d in table %s", l.MinInt, l.MaxInt, l.Table)
	}
	if l.MaxChars > 0 && (t == String || t == JSON) && len(v.B) > l.MaxChars && utf8.RuneCount(v.B) > l.MaxChars {
		return CodeLength, fmt.Sprintf("text is %d characters, more than the column's %d in table %s", utf8.RuneCount(v.B), l.MaxChars, l.Table)
	}
	if l.Decimal && (t == Int64 || t == Float64 || t == Decimal || t == String) && (c.Kind == CellText || c.Kind == CellNumber || c.Kind == CellString) {
		if msg := decimalFits(&r.Decimal, c.B, l.Precision, l.Scale); msg != "" {
			return r.Decimal.Code, "value is " + msg + " (table " + l.Table + ")"
		}
	}
	return "", ""
}

// pgEpoch is PostgreSQL's epoch, 2000-01-01, in microseconds since
// 1970-01-01: it rounds a timestamp's microseconds since it, half away
// from it.
const pgEpoch = 946684800 * 1000000

// Time returns us, microseconds since 1970-01-01 of a timestamp, as a
// column limited by l stores it: rounded to l.TimeUnit as PostgreSQL's
// timestamp(p) rounds (AdjustTimestampForTypmod: half away from its
// epoch), or truncated, as MariaDB's DATETIME(p) does (towards the past:
// it drops digits of the second's fraction).
func (l *Limit) Time(us int64) int64 {
	if l == nil || l.TimeUnit <= 1 {
		return us
	}
	u := l.TimeUnit
	if l.TimeTruncates {
		r := us % u
		if r < 0 {
			r += u
		}
		return us - r
	}
	rel := us - pgEpoch
	if rel >= 0 {
		return (rel+u/2)/u*u + pgEpoch
	}
	return -((-rel + u/2) / u * u) + pgEpoch
}

// CheckLimits returns why cell c of a column limited by l (nil: none),
// converted to v of type t (Unknown: not converted yet), cannot be stored
// in a database of rules r, or "" when it can. allJSON says every JSON
// value goes to the database's JSON type (Options.AllJSON).
func CheckLimits(r *idemtype.ValueRules, l *Limit, allJSON bool, c Cell, v Value, t Type) (string, string) {
	if l != nil {
		if code, msg := l.check(r, c, v, t); code != "" {
			return code, msg
		}
	}
	if (allJSON || (l != nil && l.JSON)) && !v.Null && r.JSON.Checks() {
		b := c.B
		if t == JSON {
			b = v.B
		}
		if t == JSON || c.Kind == CellJSON {
			if msg := JSONRefuses(r, b); msg != "" {
				return r.JSON.Code, msg
			}
		}
	}
	return "", ""
}

// leapDayOfYearZero is 0000-02-29 in days since 1970-01-01.
var leapDayOfYearZero = daysFromCivil(0, 2, 29)

// ChecksDates reports whether rules r refuse some valid date or timestamp
// of type t, which CheckDate checks.
func ChecksDates(r *idemtype.ValueRules, t Type) bool {
	return r.Date.NoLeapDayInYearZero && (t == Date || t == Timestamp || t == LocalTimestamp)
}

// CheckDate returns why v, a value of type t, is a date or timestamp a
// database of rules r refuses though the calendar has it (CodeType, as an
// invalid date), or "" when it takes it.
func CheckDate(r *idemtype.ValueRules, v Value, t Type) (string, string) {
	if !ChecksDates(r, t) || v.Null {
		return "", ""
	}
	day := v.I
	if t != Date {
		day = v.I / 86400000000
		if v.I%86400000000 < 0 {
			day--
		}
	}
	if day == leapDayOfYearZero {
		return CodeType, r.Date.Reason
	}
	return "", ""
}

// LimitsOf returns the limit of each of names, nil where there is none.
func LimitsOf(limits map[string]Limit, names []string) []*Limit {
	out := make([]*Limit, len(names))
	for i, n := range names {
		if l, ok := limits[n]; ok {
			out[i] = &l
		}
	}
	return out
}

// decimalFits says why the decimal text b does not fit a column of the
// decimal type d of precision p and scale s (p == 0: unconstrained), or ""
// when it does, or when b is not a plain decimal (the column's type check
// decides those).
func decimalFits(d *idemtype.DecimalRule, b []byte, p, s int) string {
	x, ok := ParseDecimal(b)
	if !ok {
		return ""
	}
	if exp := x.point - int64(len(x.ip)); d.MaxExp > 0 && (exp >= d.MaxExp || exp <= -d.MaxExp) {
		return "a number beyond " + d.Name + "'s range"
	}
	// The scale the database gives the value as written.
	if d.MaxScale > 0 && x.scale > int64(d.MaxScale) {
		return "a number with more digits after the decimal point than " + d.Name + " holds"
	}
	lo, hi, mag := x.significant()
	if lo == hi { // zero
		return ""
	}
	// Digits before the point from the first non-zero one, and the place
	// of the last non-zero digit after the point.
	intDigits, lastPlace := mag, hi-x.point
	if d.MaxDigits > 0 && intDigits > int64(d.MaxDigits) {
		return "a number beyond " + d.Name + "'s range"
	}
	if p == 0 {
		return ""
	}
	if lastPlace > int64(s) {
		return fmt.Sprintf("a number with digits beyond %s(%d,%d)'s scale, which would round it", d.Name, p, s)
	}
	if intDigits > int64(p-s) {
		return fmt.Sprintf("a number too large for %s(%d,%d)", d.Name, p, s)
	}
	return ""
}

// JSONRefuses returns why the JSON type of a database of rules r refuses
// the JSON text b, or "" when it takes it: a \u0000 escape, or a number
// beyond what its decimal type holds, as r.JSON says. b must be valid JSON.
func JSONRefuses(r *idemtype.ValueRules, b []byte) string {
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] != '\\' {
					continue
				}
				i++
				if r.JSON.NoNUL && i+4 < len(b) && b[i] == 'u' && string(b[i+1:i+5]) == "0000" {
					return "JSON holds \\u0000, which " + r.JSON.Name + " refuses"
				}
			}
		case c == '-' || (c >= '0' && c <= '9'):
			j := i
			for j < len(b) && (b[j] == '-' || b[j] == '+' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || (b[j] >= '0' && b[j] <= '9')) {
				j++
			}
			if r.JSON.Decimal {
				if msg := decimalFits(&r.Decimal, b[i:j], 0, 0); msg != "" {
					return "JSON holds " + msg + ", which " + r.JSON.Name + " refuses: " + string(b[i:min(j, i+40)])
				}
			}
			i = j - 1
		}
	}
	return ""
}
