package value

import (
	"errors"
	"math"
	"strconv"
)

// The canonical decimal text. A decimal value is stored as the text
// PostgreSQL's numeric type prints for it, so that SQLite (which keeps it as
// TEXT, its numeric affinity being lossy) and PostgreSQL (numeric) hold the
// same text:
//
//   - positional notation, never an exponent: 1.5e3 is 1500, 1e-3 is 0.001;
//   - a '-' for a negative value, never a '+'; zero has no sign: -0 and
//     -0.00 are 0 and 0.00;
//   - the integer part without leading zeros, 0 when it is empty: .5 is 0.5;
//   - the scale kept: 1.50 stays 1.50, and an exponent moves the point
//     (1.50e1 is 15.0, 1.5e3 is 1500); a point with no digits after it is
//     dropped: 1. is 1.
//
// A decimal holds at most MaxDecimalDigits digits before the point and
// MaxDecimalScale after it, as numeric does; a number beyond that is text.
const (
	MaxDecimalDigits = 131072
	MaxDecimalScale  = 16383
)

// decimalText is a decimal number's text split into its parts: the value is
// ±0.digits × 10^point, where digits are the integer part's then the
// fraction's, and the first point of them (zeros past the end) form the
// integer part. The parts are views of the text: parsing allocates nothing.
type decimalText struct {
	neg    bool
	ip, fp []byte // the digits before and after the point, as written
	point  int64  // digits before the decimal point once the exponent is applied; may be negative or beyond the digits
	scale  int64  // digits after the point in the canonical text
	// zeros reports a value with a leading zero in a multi-digit integer
	// part (007, 00.5), whose zeros no number keeps.
	zeros bool
	exp   bool // written with an exponent
	plus  bool // written with a leading '+'
	bare  bool // written without an integer part (.5)
}

// maxExponent bounds the exponents parseDecimal reads: far beyond any
// decimal, float64 or int64, and far from overflowing an int64.
const maxExponent = 1 << 40

// ParseDecimal splits b, a decimal number in the syntax
// [+-]digits[.digits][(e|E)[+-]digits] (at least one digit before or after
// the point), into its parts. It is the reader's one decimal parser: values,
// natural keys and numeric limits all read numbers with it.
func ParseDecimal(b []byte) (decimalText, bool) {
	var d decimalText
	i := 0
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		d.neg, d.plus = b[i] == '-', b[i] == '+'
		i++
	}
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	d.ip = b[start:i]
	if i < len(b) && b[i] == '.' {
		i++
		fs := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		d.fp = b[fs:i]
	}
	if len(d.ip) == 0 && len(d.fp) == 0 {
		return d, false
	}
	d.bare = len(d.ip) == 0
	d.zeros = len(d.ip) > 1 && d.ip[0] == '0'
	var exp int64
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		d.exp = true
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		es := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			if exp < maxExponent {
				exp = exp*10 + int64(b[i]-'0')
			}
			i++
		}
		if i == es {
			return d, false
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(b) {
		return d, false
	}
	d.point = int64(len(d.ip)) + exp
	d.scale = max(0, int64(len(d.fp))-exp)
	return d, true
}

// digit returns the i-th of d's digits, '0' outside them.
func (d *decimalText) digit(i int64) byte {
	switch n := int64(len(d.ip)); {
	case i < 0:
	case i < n:
		return d.ip[i]
	case i-n < int64(len(d.fp)):
		return d.fp[i-n]
	}
	return '0'
}

// significant returns the range [lo, hi) of d's digits without leading and
// trailing zeros, and the exponent of the first of them: d is
// ±0.(digits lo..hi) × 10^mag. A zero has lo == hi.
func (d *decimalText) significant() (lo, hi, mag int64) {
	ni, nf := int64(len(d.ip)), int64(len(d.fp))
	for lo < ni && d.ip[lo] == '0' {
		lo++
	}
	if lo == ni {
		for lo-ni < nf && d.fp[lo-ni] == '0' {
			lo++
		}
	}
	hi = ni + nf
	for hi > ni && hi > lo && d.fp[hi-ni-1] == '0' {
		hi--
	}
	if hi <= ni {
		for hi > lo && d.ip[hi-1] == '0' {
			hi--
		}
	}
	return lo, hi, d.point - lo
}

// fitsDecimal reports whether d is within what a decimal holds.
func (d *decimalText) fitsDecimal() bool {
	if !d.exp && len(d.fp) <= MaxDecimalScale && len(d.ip) <= MaxDecimalDigits {
		return true // no exponent: the digits as written are the decimal's
	}
	lo, hi, mag := d.significant()
	return d.scale <= MaxDecimalScale && (lo == hi || mag <= MaxDecimalDigits)
}

// canonical reports whether b, the text d was parsed from, is already the
// canonical text of d.
func (d *decimalText) canonical(b []byte) bool {
	if d.exp || d.plus || d.zeros || d.bare || b[len(b)-1] == '.' {
		return false
	}
	if d.neg {
		if lo, hi, _ := d.significant(); lo == hi {
			return false // -0
		}
	}
	return true
}

// appendDecimal appends the canonical text of d to dst.
func appendDecimal(dst []byte, d *decimalText) []byte {
	if lo, hi, _ := d.significant(); d.neg && lo < hi {
		dst = append(dst, '-')
	}
	// The integer part: digits [0, point), zeros past the end, without
	// leading zeros.
	wrote := false
	for i := int64(0); i < d.point; i++ {
		c := d.digit(i)
		if c == '0' && !wrote {
			continue
		}
		wrote = true
		dst = append(dst, c)
	}
	if !wrote {
		dst = append(dst, '0')
	}
	if d.scale == 0 {
		return dst
	}
	dst = append(dst, '.')
	for i := d.point; i < d.point+d.scale; i++ {
		dst = append(dst, d.digit(i))
	}
	return dst
}

// CanonicalDecimal returns the canonical text of the decimal number b when
// it fits a decimal column and is written without a leading zero in a
// multi-digit integer part, a plus sign or a bare point (.5): the numbers
// a natural key compares by value.
func CanonicalDecimal(b []byte) ([]byte, bool) {
	if d, ok := ParseDecimal(b); ok && !d.zeros && !d.plus && !d.bare && d.fitsDecimal() {
		return appendDecimal(nil, &d), true
	}
	return nil, false
}

// DecimalValue converts b to a decimal: its canonical text (b itself when
// it is canonical already), or a reason code and message.
func DecimalValue(b []byte) ([]byte, string, string) {
	d, ok := ParseDecimal(b)
	switch {
	case !ok:
		return nil, CodeType, "not a valid decimal"
	case d.zeros:
		return nil, CodeInexact, "leading zeros would be lost"
	case !d.fitsDecimal():
		return nil, CodeRange, "beyond what a decimal holds (131072 digits before the point, 16383 after)"
	case d.canonical(b):
		return b, "", ""
	}
	return appendDecimal(make([]byte, 0, len(b)+8), &d), "", ""
}

// ExactFloat reports whether the float64 nearest to d (b's number) means
// the same number as d: whether its shortest formatting is d's number. Up
// to 15 significant digits within the normal range always do, without
// parsing b; longer or extreme numbers are parsed and compared digit by
// digit.
func ExactFloat(d *decimalText, b []byte) bool {
	lo, hi, mag := d.significant()
	if lo == hi {
		return true // a zero: 0 and -0 keep their sign in a float64
	}
	if hi-lo <= 15 && mag > -290 && mag < 300 {
		return true
	}
	f, err := strconv.ParseFloat(Str(b), 64)
	if err != nil || math.IsInf(f, 0) {
		return false
	}
	var buf [32]byte
	s := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	e, ok := ParseDecimal(s)
	if !ok {
		return false
	}
	elo, ehi, emag := e.significant()
	if e.neg != d.neg || emag != mag || ehi-elo != hi-lo {
		return false
	}
	for i := int64(0); i < hi-lo; i++ {
		if e.digit(elo+i) != d.digit(lo+i) {
			return false
		}
	}
	return true
}

// floatValue converts b to a float64, or returns a reason code and message
// when it is not a number or its float64 would not mean the same number.
func floatValue(b []byte) (float64, string, string) {
	d, ok := ParseDecimal(b)
	if !ok {
		return 0, CodeType, "not a valid float64"
	}
	if d.zeros {
		return 0, CodeInexact, "leading zeros would be lost"
	}
	if f, ok := shortFloat(&d); ok {
		return f, "", ""
	}
	f, err := strconv.ParseFloat(Str(b), 64)
	if err != nil && !isRange(err) {
		return 0, CodeType, "not a valid float64"
	}
	if !ExactFloat(&d, b) {
		if math.IsInf(f, 0) || (f == 0 && err == nil) || isRange(err) {
			return 0, CodeInexact, "beyond the range of a float64"
		}
		return 0, CodeInexact, "a float64 would store it as " + strconv.FormatFloat(f, 'g', -1, 64)
	}
	return f, "", ""
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// shortFloat returns the float64 of d, written without an exponent in at
// most 15 digits, as strconv.ParseFloat would: its digits are an integer
// below 2^53 and a power of ten up to 10^15, both exact in a float64, and
// one division of exact operands is correctly rounded (ParseFloat's own
// exact path). Such a number is always exact (ExactFloat). Otherwise it
// reports false.
func shortFloat(d *decimalText) (float64, bool) {
	if d.exp || len(d.ip)+len(d.fp) > 15 {
		return 0, false
	}
	var m int64
	for _, c := range d.ip {
		m = m*10 + int64(c-'0')
	}
	for _, c := range d.fp {
		m = m*10 + int64(c-'0')
	}
	f := float64(m) / pow10[len(d.fp)]
	if d.neg {
		f = -f
	}
	return f, true
}

func isRange(err error) bool { return errors.Is(err, strconv.ErrRange) }
