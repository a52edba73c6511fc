package columnar

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/big"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/valyala/fastjson"

	"github.com/idemport/idemport/reader/internal/keys"
	"github.com/idemport/idemport/reader/internal/value"
)

// renderer writes Arrow values as text or JSON. It remembers the first
// value it could not render faithfully (invalid UTF-8, an invalid JSON
// document, a time of day out of range) as a reason code and message.
type renderer struct {
	code, msg string
}

func (r *renderer) fail(code, msg string) {
	if r.code == "" {
		r.code, r.msg = code, msg
	}
}

// text appends the text of the value at i of a, which must not be null:
// strings as they are, binary as \x and lowercase hex, decimals exactly,
// dates as YYYY-MM-DD, times as HH:MM:SS[.fraction], timestamps as
// RFC 3339 in UTC (Z only when the type has a zone), durations and
// intervals in ISO 8601, and nested values as compact JSON.
func (r *renderer) text(dst []byte, a arrow.Array, i int) []byte {
	switch a := a.(type) {
	case array.ExtensionArray:
		switch a.ExtensionType().ExtensionName() {
		case extUUID:
			return appendUUID(dst, bytesOf(a.Storage(), i))
		case extBool8:
			return strconv.AppendBool(dst, bytesOf(a.Storage(), i)[0] != 0)
		}
		return r.text(dst, a.Storage(), i)
	case *array.Dictionary:
		return r.text(dst, a.Dictionary(), a.GetValueIndex(i))
	case *array.Boolean:
		return strconv.AppendBool(dst, a.Value(i))
	case *array.Int8:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int32:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int64:
		return strconv.AppendInt(dst, a.Value(i), 10)
	case *array.Uint8:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint16:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint32:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint64:
		return strconv.AppendUint(dst, a.Value(i), 10)
	case *array.Float16:
		return strconv.AppendFloat(dst, float64(a.Value(i).Float32()), 'g', -1, 32)
	case *array.Float32:
		return strconv.AppendFloat(dst, float64(a.Value(i)), 'g', -1, 32)
	case *array.Float64:
		return strconv.AppendFloat(dst, a.Value(i), 'g', -1, 64)
	case *array.Decimal32:
		return appendScaled(dst, int64(a.Value(i)), a.DataType().(arrow.DecimalType).GetScale())
	case *array.Decimal64:
		return appendScaled(dst, int64(a.Value(i)), a.DataType().(arrow.DecimalType).GetScale())
	case *array.Decimal128:
		return appendDecimal128(dst, a.Value(i), a.DataType().(arrow.DecimalType).GetScale())
	case *array.Decimal256:
		return appendDecimal256(dst, a.Value(i), a.DataType().(arrow.DecimalType).GetScale())
	case *array.Date32:
		return appendDate(dst, int64(a.Value(i)))
	case *array.Date64:
		return appendDate(dst, floorDiv(int64(a.Value(i)), 86_400_000))
	case *array.Time32:
		return r.appendTime(dst, int64(a.Value(i)), a.DataType().(*arrow.Time32Type).Unit)
	case *array.Time64:
		return r.appendTime(dst, int64(a.Value(i)), a.DataType().(*arrow.Time64Type).Unit)
	case *array.Timestamp:
		t := a.DataType().(*arrow.TimestampType)
		return appendTimestamp(dst, int64(a.Value(i)), t.Unit, t.TimeZone != "")
	case *array.Duration:
		dst = append(dst, "PT"...)
		dst = appendSeconds(dst, int64(a.Value(i)), a.DataType().(*arrow.DurationType).Unit)
		return append(dst, 'S')
	case *array.MonthInterval:
		dst = append(dst, 'P')
		dst = strconv.AppendInt(dst, int64(a.Value(i)), 10)
		return append(dst, 'M')
	case *array.DayTimeInterval:
		v := a.Value(i)
		dst = append(dst, 'P')
		dst = strconv.AppendInt(dst, int64(v.Days), 10)
		dst = append(dst, "DT"...)
		dst = appendSeconds(dst, int64(v.Milliseconds), arrow.Millisecond)
		return append(dst, 'S')
	case *array.MonthDayNanoInterval:
		v := a.Value(i)
		dst = append(dst, 'P')
		dst = strconv.AppendInt(dst, int64(v.Months), 10)
		dst = append(dst, 'M')
		dst = strconv.AppendInt(dst, int64(v.Days), 10)
		dst = append(dst, "DT"...)
		dst = appendSeconds(dst, v.Nanoseconds, arrow.Nanosecond)
		return append(dst, 'S')
	case *array.String, *array.LargeString, *array.StringView:
		return append(dst, bytesOf(a, i)...)
	case *array.Binary, *array.LargeBinary, *array.BinaryView, *array.FixedSizeBinary:
		dst = append(dst, `\x`...)
		return hex.AppendEncode(dst, bytesOf(a, i))
	case *array.Null:
		return dst
	}
	return r.json(dst, a, i)
}

// json appends the value at i of a as compact JSON: null for nulls,
// numbers for integers, floats and decimals (NaN and infinities as the
// strings "NaN", "Infinity", "-Infinity"), true and false, objects for
// structs and maps (keys as text), arrays for lists, and strings holding
// the text of every other value.
func (r *renderer) json(dst []byte, a arrow.Array, i int) []byte {
	if a.IsNull(i) {
		return append(dst, "null"...)
	}
	switch a := a.(type) {
	case array.ExtensionArray:
		switch a.ExtensionType().ExtensionName() {
		case extJSON:
			doc := bytesOf(a.Storage(), i)
			if err := fastjson.ValidateBytes(doc); err != nil {
				r.fail(value.CodeJSON, "invalid JSON: "+err.Error())
				return append(dst, "null"...)
			}
			return append(dst, doc...)
		case extBool8:
			return r.text(dst, a, i)
		}
		return r.quote(dst, r.text(nil, a, i))
	case *array.Dictionary:
		return r.json(dst, a.Dictionary(), a.GetValueIndex(i))
	case *array.Boolean, *array.Int8, *array.Int16, *array.Int32, *array.Int64,
		*array.Uint8, *array.Uint16, *array.Uint32, *array.Uint64,
		*array.Decimal32, *array.Decimal64, *array.Decimal128, *array.Decimal256:
		return r.text(dst, a, i)
	case *array.Float16, *array.Float32, *array.Float64:
		var f float64
		switch a := a.(type) {
		case *array.Float16:
			f = float64(a.Value(i).Float32())
		case *array.Float32:
			f = float64(a.Value(i))
		case *array.Float64:
			f = a.Value(i)
		}
		switch {
		case math.IsNaN(f):
			return append(dst, `"NaN"`...)
		case math.IsInf(f, 1):
			return append(dst, `"Infinity"`...)
		case math.IsInf(f, -1):
			return append(dst, `"-Infinity"`...)
		}
		return r.text(dst, a, i)
	case *array.String, *array.LargeString, *array.StringView:
		return r.quote(dst, bytesOf(a, i))
	case *array.Map:
		keys, items := a.Keys(), a.Items()
		start, end := a.ValueOffsets(i)
		dst = append(dst, '{')
		var key []byte
		for j := start; j < end; j++ {
			if j > start {
				dst = append(dst, ',')
			}
			key = key[:0]
			if !keys.IsNull(int(j)) {
				key = r.text(key, keys, int(j))
			}
			dst = r.quote(dst, key)
			dst = append(dst, ':')
			dst = r.json(dst, items, int(j))
		}
		return append(dst, '}')
	case array.ListLike:
		values := a.ListValues()
		start, end := a.ValueOffsets(i)
		dst = append(dst, '[')
		for j := start; j < end; j++ {
			if j > start {
				dst = append(dst, ',')
			}
			dst = r.json(dst, values, int(j))
		}
		return append(dst, ']')
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		dst = append(dst, '{')
		for k := 0; k < a.NumField(); k++ {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = r.quote(dst, []byte(st.Field(k).Name))
			dst = append(dst, ':')
			dst = r.json(dst, a.Field(k), i)
		}
		return append(dst, '}')
	case *array.Null:
		return append(dst, "null"...)
	}
	return r.quote(dst, r.text(nil, a, i))
}

// quote appends s as a JSON string. Invalid UTF-8 is a failure: a JSON
// document cannot hold it faithfully.
func (r *renderer) quote(dst, s []byte) []byte {
	const hexDigits = "0123456789abcdef"
	if !utf8.Valid(s) {
		r.fail(value.CodeUTF8, "text is not valid UTF-8")
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// bytesOf returns the bytes of the value at i of a string or binary array.
func bytesOf(a arrow.Array, i int) []byte {
	switch a := a.(type) {
	case *array.String:
		return sbytes(a.Value(i))
	case *array.LargeString:
		return sbytes(a.Value(i))
	case *array.StringView:
		return sbytes(a.Value(i))
	case *array.Binary:
		return a.Value(i)
	case *array.LargeBinary:
		return a.Value(i)
	case *array.BinaryView:
		return a.Value(i)
	case *array.FixedSizeBinary:
		return a.Value(i)
	case *array.Int8: // bool8 storage
		return []byte{byte(a.Value(i))}
	}
	return nil
}

// sbytes returns the bytes of s without copying them; they must not be
// modified.
func sbytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// appendUUID writes 16 bytes in the canonical 8-4-4-4-12 form.
func appendUUID(dst, b []byte) []byte {
	if len(b) != 16 {
		dst = append(dst, `\x`...)
		return hex.AppendEncode(dst, b)
	}
	dst = hex.AppendEncode(dst, b[0:4])
	dst = append(dst, '-')
	dst = hex.AppendEncode(dst, b[4:6])
	dst = append(dst, '-')
	dst = hex.AppendEncode(dst, b[6:8])
	dst = append(dst, '-')
	dst = hex.AppendEncode(dst, b[8:10])
	dst = append(dst, '-')
	return hex.AppendEncode(dst, b[10:16])
}

// appendScaled writes the decimal v × 10^-scale exactly: 1250 with scale 2
// is 12.50, 5 with scale -2 is 500.
func appendScaled(dst []byte, v int64, scale int32) []byte {
	var abs uint64
	neg := v < 0
	if neg {
		abs = uint64(-(v + 1)) + 1
	} else {
		abs = uint64(v)
	}
	if scale > 0 && scale <= 40 {
		// Written backwards into one buffer: the scale's digits (zeros
		// first as needed), the point, the whole part, the sign.
		var buf [64]byte
		i := len(buf)
		for range scale {
			i--
			buf[i] = byte('0' + abs%10)
			abs /= 10
		}
		i--
		buf[i] = '.'
		for {
			i--
			buf[i] = byte('0' + abs%10)
			abs /= 10
			if abs == 0 {
				break
			}
		}
		if neg {
			i--
			buf[i] = '-'
		}
		return append(dst, buf[i:]...)
	}
	var buf [24]byte
	return appendDigits(dst, strconv.AppendUint(buf[:0], abs, 10), neg, scale)
}

// appendDigits writes the decimal number whose absolute value has the
// given digits, shifted by scale.
func appendDigits(dst, digits []byte, neg bool, scale int32) []byte {
	if neg {
		dst = append(dst, '-')
	}
	if scale <= 0 {
		dst = append(dst, digits...)
		if len(digits) != 1 || digits[0] != '0' {
			for range -scale {
				dst = append(dst, '0')
			}
		}
		return dst
	}
	places := int(scale)
	if len(digits) <= places {
		dst = append(dst, '0', '.')
		for range places - len(digits) {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	at := len(digits) - places
	dst = append(dst, digits[:at]...)
	dst = append(dst, '.')
	return append(dst, digits[at:]...)
}

func appendDecimal128(dst []byte, n decimal128.Num, scale int32) []byte {
	hi, lo := n.HighBits(), n.LowBits()
	if (hi == 0 && lo < 1<<63) || (hi == -1 && lo >= 1<<63) {
		return appendScaled(dst, int64(lo), scale)
	}
	return appendBig(dst, n.BigInt(), scale)
}

func appendDecimal256(dst []byte, n decimal256.Num, scale int32) []byte {
	w := n.Array()
	if (w[1] == 0 && w[2] == 0 && w[3] == 0 && w[0] < 1<<63) ||
		(w[1] == math.MaxUint64 && w[2] == math.MaxUint64 && w[3] == math.MaxUint64 && w[0] >= 1<<63) {
		return appendScaled(dst, int64(w[0]), scale)
	}
	return appendBig(dst, n.BigInt(), scale)
}

func appendBig(dst []byte, b *big.Int, scale int32) []byte {
	neg := b.Sign() < 0
	return appendDigits(dst, b.Abs(b).Append(nil, 10), neg, scale)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// civil returns the proleptic Gregorian date of a day count since
// 1970-01-01 (Howard Hinnant's days_from_civil, inverted).
func civil(days int64) (year int64, month, day int) {
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	year = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	day = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		month = int(mp + 3)
	} else {
		month = int(mp - 9)
	}
	if month <= 2 {
		year++
	}
	return year, month, day
}

func appendPadded(dst []byte, v int64, width int) []byte {
	var buf [24]byte
	s := strconv.AppendInt(buf[:0], v, 10)
	for n := len(s); n < width; n++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// appendDate writes a day count since the epoch as YYYY-MM-DD; years
// before 0 get a minus sign.
func appendDate(dst []byte, days int64) []byte {
	y, m, d := civil(days)
	if y < 0 {
		dst = append(dst, '-')
		y = -y
	}
	dst = appendPadded(dst, y, 4)
	dst = append(dst, '-')
	dst = appendPadded(dst, int64(m), 2)
	dst = append(dst, '-')
	return appendPadded(dst, int64(d), 2)
}

// unitsPerSecond returns how many of unit make a second, and the digits of
// a fraction in that unit.
func unitsPerSecond(u arrow.TimeUnit) (int64, int) {
	switch u {
	case arrow.Millisecond:
		return 1e3, 3
	case arrow.Microsecond:
		return 1e6, 6
	case arrow.Nanosecond:
		return 1e9, 9
	}
	return 1, 0
}

// appendFraction writes "." and the fraction frac (0 <= frac < 10^digits)
// with trailing zeros dropped, or nothing when it is zero.
func appendFraction(dst []byte, frac int64, digits int) []byte {
	if frac == 0 {
		return dst
	}
	for digits > 0 && frac%10 == 0 {
		frac /= 10
		digits--
	}
	dst = append(dst, '.')
	return appendPadded(dst, frac, digits)
}

func appendClock(dst []byte, secs int64) []byte {
	dst = appendPadded(dst, secs/3600, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, secs/60%60, 2)
	dst = append(dst, ':')
	return appendPadded(dst, secs%60, 2)
}

// appendTime writes a time of day as HH:MM:SS[.fraction]. A value outside
// 00:00:00..24:00:00 is a failure.
func (r *renderer) appendTime(dst []byte, v int64, unit arrow.TimeUnit) []byte {
	per, digits := unitsPerSecond(unit)
	if v < 0 || v > 86400*per {
		r.fail(value.CodeRange, "time of day is outside 00:00:00..24:00:00")
		return strconv.AppendInt(dst, v, 10)
	}
	dst = appendClock(dst, v/per)
	return appendFraction(dst, v%per, digits)
}

// appendTimestamp writes a timestamp as YYYY-MM-DDTHH:MM:SS[.fraction],
// with a Z when its type has a time zone (values are then UTC instants).
func appendTimestamp(dst []byte, v int64, unit arrow.TimeUnit, zoned bool) []byte {
	per, digits := unitsPerSecond(unit)
	secs, frac := floorDiv(v, per), v-floorDiv(v, per)*per
	days := floorDiv(secs, 86400)
	dst = appendDate(dst, days)
	dst = append(dst, 'T')
	dst = appendClock(dst, secs-days*86400)
	dst = appendFraction(dst, frac, digits)
	if zoned {
		dst = append(dst, 'Z')
	}
	return dst
}

// appendSeconds writes a signed count of unit as seconds with a fraction,
// as ISO 8601 durations want: -1500 ms is -1.5.
func appendSeconds(dst []byte, v int64, unit arrow.TimeUnit) []byte {
	per, digits := unitsPerSecond(unit)
	var abs uint64
	if v < 0 {
		dst = append(dst, '-')
		abs = uint64(-(v + 1)) + 1
	} else {
		abs = uint64(v)
	}
	dst = strconv.AppendUint(dst, abs/uint64(per), 10)
	return appendFraction(dst, int64(abs%uint64(per)), digits)
}

// Bounds of the Timestamp type: the years text formats can write.
var (
	minMicros = int64(-62167219200) * 1e6           // 0000-01-01T00:00:00Z
	maxMicros = int64(253402300799)*1e6 + (1e6 - 1) // 9999-12-31T23:59:59.999999Z
)

// toMicros converts a timestamp in unit to microseconds, or returns why it
// cannot be a Timestamp.
func toMicros(v int64, unit arrow.TimeUnit) (int64, string, string) {
	switch unit {
	case arrow.Second:
		if v > maxMicros/1e6 || v < minMicros/1e6 {
			return 0, value.CodeRange, "timestamp is outside the years 0000-9999"
		}
		v *= 1e6
	case arrow.Millisecond:
		if v > maxMicros/1e3 || v < minMicros/1e3 {
			return 0, value.CodeRange, "timestamp is outside the years 0000-9999"
		}
		v *= 1e3
	case arrow.Nanosecond:
		if v%1000 != 0 {
			return 0, value.CodePrecision, "timestamp has a part finer than a microsecond"
		}
		v /= 1000
	}
	if v < minMicros || v > maxMicros {
		return 0, value.CodeRange, "timestamp is outside the years 0000-9999"
	}
	return v, "", ""
}

// appendArrowKey appends the key bytes of row i of a column of a Parquet or
// Arrow file, as the file types it: equal values append equal bytes.
func (r *renderer) appendArrowKey(dst []byte, a arrow.Array, i int) []byte {
	switch a := a.(type) {
	case *array.Int64:
		return binary.BigEndian.AppendUint64(append(dst, 'i'), uint64(a.Value(i)))
	case *array.Int32:
		return binary.BigEndian.AppendUint64(append(dst, 'i'), uint64(a.Value(i)))
	case *array.String:
		return keys.AppendLoose(dst, []byte(a.Value(i)))
	case *array.Float64:
		return keys.AppendFloat(dst, a.Value(i))
	}
	n := len(dst)
	dst = r.text(append(dst, 'x', 0, 0, 0, 0), a, i)
	binary.BigEndian.PutUint32(dst[n+1:], uint32(len(dst)-n-5))
	return dst
}
