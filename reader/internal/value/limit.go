package value

import (
	"fmt"
	"unicode/utf8"
)

// Limit is what a target column can hold beyond its type: the plan pass
// checks each value against it, so that a value the table cannot store is a
// bad row found before any effect, not a write that fails halfway through
// an import. The zero Limit checks nothing.
type Limit struct {
	// MinInt and MaxInt bound integer values when MaxInt > MinInt
	// (PostgreSQL smallint and integer).
	MinInt int64 `json:"min_int,omitempty"`
	MaxInt int64 `json:"max_int,omitempty"`
	// MaxChars bounds the length of text values in characters
	// (varchar(n), char(n)).
	MaxChars int `json:"max_chars,omitempty"`
	// Numeric says the column is PostgreSQL numeric; Precision and Scale are
	// its typmod, or 0 when it has none. A number it would round (a
	// non-zero digit beyond the scale) or cannot hold is a bad row.
	Numeric   bool `json:"numeric,omitempty"`
	Precision int  `json:"precision,omitempty"`
	Scale     int  `json:"scale,omitempty"`
	// JSONB says the column is PostgreSQL jsonb (see Options.JSONB).
	JSONB bool `json:"jsonb,omitempty"`
	// NotNull says the column refuses nulls.
	NotNull bool `json:"not_null,omitempty"`
	// Table names the table in messages.
	Table string `json:"table,omitempty"`
}

// check returns why cell c, converted to v of type t, does not fit l, or
// "" when it does. Only a null cell is checked against NotNull, so that the
// plan pass decides the same before a column's type is inferred.
func (l *Limit) check(c Cell, v Value, t Type) (string, string) {
	if c.Kind == CellNull {
		if l.NotNull {
			return CodeNull, fmt.Sprintf("column is NOT NULL in table %s", l.Table)
		}
		return "", ""
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
	if l.Numeric && (t == Int64 || t == Float64 || t == Decimal || t == String) && (c.Kind == CellText || c.Kind == CellNumber || c.Kind == CellString) {
		if msg := numericFits(c.B, l.Precision, l.Scale); msg != "" {
			return CodeNumeric, "value is " + msg + " (table " + l.Table + ")"
		}
	}
	return "", ""
}

// CheckLimits returns why cell c of a column limited by l (nil: none),
// converted to v of type t (Unknown: not converted yet), cannot be stored,
// or "" when it can. jsonb says JSON goes to PostgreSQL's jsonb.
func CheckLimits(l *Limit, jsonb bool, c Cell, v Value, t Type) (string, string) {
	if l != nil {
		if code, msg := l.check(c, v, t); code != "" {
			return code, msg
		}
	}
	if (jsonb || (l != nil && l.JSONB)) && !v.Null {
		b := c.B
		if t == JSON {
			b = v.B
		}
		if t == JSON || c.Kind == CellJSON {
			if msg := JsonbRefuses(b); msg != "" {
				return CodeJSONB, msg
			}
		}
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

// numericMaxExp bounds the exponent PostgreSQL's numeric input accepts.
// The digits it holds before and after the point are MaxDecimalDigits and
// MaxDecimalScale.
const numericMaxExp = 1<<30 - 1

// numericFits says why the decimal text b does not fit a numeric column of
// precision p and scale s (p == 0: unconstrained), or "" when it does, or
// when b is not a plain decimal (the column's type check decides those).
func numericFits(b []byte, p, s int) string {
	d, ok := ParseDecimal(b)
	if !ok {
		return ""
	}
	if exp := d.point - int64(len(d.ip)); exp >= numericMaxExp || exp <= -numericMaxExp {
		return "a number beyond numeric's range"
	}
	// The scale PostgreSQL gives the value as written.
	if d.scale > MaxDecimalScale {
		return "a number with more digits after the decimal point than numeric holds"
	}
	lo, hi, mag := d.significant()
	if lo == hi { // zero
		return ""
	}
	// Digits before the point from the first non-zero one, and the place
	// of the last non-zero digit after the point.
	intDigits, lastPlace := mag, hi-d.point
	if intDigits > MaxDecimalDigits {
		return "a number beyond numeric's range"
	}
	if p == 0 {
		return ""
	}
	if lastPlace > int64(s) {
		return fmt.Sprintf("a number with digits beyond numeric(%d,%d)'s scale, which would round it", p, s)
	}
	if intDigits > int64(p-s) {
		return fmt.Sprintf("a number too large for numeric(%d,%d)", p, s)
	}
	return ""
}

// JsonbRefuses returns why PostgreSQL's jsonb refuses the JSON text b, or
// "" when it takes it: a \u0000 escape, or a number beyond what numeric
// holds. b must be valid JSON.
func JsonbRefuses(b []byte) string {
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] != '\\' {
					continue
				}
				i++
				if i+4 < len(b) && b[i] == 'u' && string(b[i+1:i+5]) == "0000" {
					return "JSON holds \\u0000, which PostgreSQL's jsonb refuses"
				}
			}
		case c == '-' || (c >= '0' && c <= '9'):
			j := i
			for j < len(b) && (b[j] == '-' || b[j] == '+' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || (b[j] >= '0' && b[j] <= '9')) {
				j++
			}
			if msg := numericFits(b[i:j], 0, 0); msg != "" {
				return "JSON holds " + msg + ", which PostgreSQL's jsonb refuses: " + string(b[i:min(j, i+40)])
			}
			i = j - 1
		}
	}
	return ""
}
