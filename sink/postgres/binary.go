package postgres

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/idemport/idemport/idemtype"
)

// How a column's values are written in PostgreSQL's binary COPY format.
type wire uint8

const (
	wireInt4 wire = iota + 1 // the staging round
	wireInt8
	wireInt8AsFloat8 // an int64 into a double precision column
	wireFloat8
	wireBool
	wireTimestamp // timestamp or timestamptz: µs since 2000-01-01
	wireDate      // date: days since 2000-01-01
	wireText      // text, varchar, json: the bytes
	wireJSONB     // version 1, then the text
	wireNumeric   // a decimal's canonical text as numeric: base-10000 digits
	wireAsText    // a value staged as text: its text rendering
)

// encoder writes batches in the binary COPY format straight from the Arrow
// buffers: no value is boxed, and pgx's per-value encoding plans are not
// consulted. It covers the types idemport creates; a table with other
// column types is copied through pgx instead.
type encoder struct {
	fields []wire // one per field of the file, in COPY order after the lead columns
	buf    []byte
}

// newEncoder returns an encoder for fields, or nil when a field's target
// type is one it does not write.
func newEncoder(fields []field) *encoder {
	e := &encoder{}
	for _, f := range fields {
		w := wireFor(f)
		if w == 0 {
			return nil
		}
		e.fields = append(e.fields, w)
	}
	return e
}

func wireFor(f field) wire {
	if f.text {
		return wireAsText
	}
	switch t := f.target.TypeName; {
	case f.file == idemtype.Int64 && t == "int8":
		return wireInt8
	case f.file == idemtype.Int64 && t == "float8":
		return wireInt8AsFloat8
	case f.file == idemtype.Float64 && t == "float8":
		return wireFloat8
	case f.file == idemtype.Bool && t == "bool":
		return wireBool
	case (f.file == idemtype.Timestamp || f.file == idemtype.LocalTimestamp) && (t == "timestamptz" || t == "timestamp"):
		return wireTimestamp
	case f.file == idemtype.Date && t == "date":
		return wireDate
	case (f.file == idemtype.String || f.file == idemtype.JSON) && (t == "text" || t == "varchar" || t == "json"):
		return wireText
	case f.file == idemtype.JSON && t == "jsonb":
		return wireJSONB
	case f.file == idemtype.Decimal && t == "numeric":
		return wireNumeric
	}
	return 0
}

// pgEpochMicros is 2000-01-01T00:00:00Z, PostgreSQL's timestamp epoch, in
// microseconds since the Unix epoch.
const pgEpochMicros = 946684800 * 1_000_000

// pgEpochDays is 2000-01-01 in days since 1970-01-01.
const pgEpochDays = 10957

// streamChunk is about how many bytes of COPY data a stream encodes at a
// time: what pgconn sends in one message.
const streamChunk = 64 << 10

// stream returns rec as a binary COPY stream that encodes its rows as they
// are read, so that the server is storing the first rows while the rest
// are still being encoded (encoding the whole batch first left the server
// idle meanwhile). lead writes the leading columns of row i (file key,
// round, ordinal); nlead is how many. One stream of an encoder is read at
// a time; the stream takes the encoder's buffer and hands it back when it
// has been read to its end, so a stream given up halfway (a failed COPY)
// shares nothing with the next.
func (e *encoder) stream(rec arrow.RecordBatch, nlead int, lead func(b []byte, i int) []byte) *stream {
	s := &stream{fields: e.fields, cols: rec.Columns(), n: int(rec.NumRows()), nlead: nlead, lead: lead, back: e}
	s.vals = make([]colValues, len(s.cols))
	for c, col := range s.cols {
		s.vals[c] = valuesOf(e.fields[c], col)
	}
	s.buf, e.buf = e.buf[:0], nil
	s.buf = append(s.buf, "PGCOPY\n\xff\r\n\x00"...)
	s.buf = binary.BigEndian.AppendUint32(s.buf, 0) // flags
	s.buf = binary.BigEndian.AppendUint32(s.buf, 0) // header extension
	return s
}

// stream is a batch being encoded as it is read (encoder.stream).
type stream struct {
	// mu makes close wait for a Read under way. pgconn's CopyFrom reads
	// the stream in a goroutine of its own, and when the server ends the
	// connection it returns without waiting for that goroutine, which may
	// be encoding rows then, or Read again, after the caller has released
	// the batch.
	mu     sync.Mutex
	closed bool
	fields []wire
	cols   []arrow.Array
	vals   []colValues // one per column: its values, where they are read directly
	n      int         // rows
	nlead  int
	lead   func(b []byte, i int) []byte
	next   int    // the next row to encode
	buf    []byte // encoded and not yet read: buf[off:]
	off    int
	ended  bool     // the trailer is in buf
	back   *encoder // to hand buf back to at the end
}

// Read implements io.Reader. The stream holds about streamChunk bytes
// encoded at a time, whatever the batch's size.
func (s *stream) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, errStreamClosed
	}
	if s.off == len(s.buf) && s.ended {
		if s.back != nil {
			s.back.buf, s.back = s.buf, nil
		}
		return 0, io.EOF
	}
	if !s.ended && len(s.buf)-s.off < streamChunk {
		// What is left moves to the front, and more is encoded after it.
		s.buf, s.off = s.buf[:copy(s.buf, s.buf[s.off:])], 0
		for len(s.buf) < streamChunk {
			if s.next == s.n {
				s.buf = binary.BigEndian.AppendUint16(s.buf, math.MaxUint16) // -1: end of data
				s.ended = true
				break
			}
			s.buf = s.row(s.buf, s.next)
			s.next++
		}
	}
	n := copy(p, s.buf[s.off:])
	s.off += n
	return n, nil
}

// row appends row i.
func (s *stream) row(b []byte, i int) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(s.nlead+len(s.cols)))
	b = s.lead(b, i)
	for c := range s.vals {
		v := &s.vals[c]
		if v.nulls && v.col.IsNull(i) {
			b = binary.BigEndian.AppendUint32(b, math.MaxUint32) // -1: NULL
			continue
		}
		switch v.kind {
		case valuesWords:
			b = appendInt8(b, v.words[i]-v.sub)
		case valuesText:
			t := v.text.Value(i)
			b = append(binary.BigEndian.AppendUint32(b, uint32(len(t))), t...)
		default:
			b = appendValue(b, s.fields[c], v.col, i)
		}
	}
	return b
}

// colValues is one column of a batch as a stream reads it: the int64,
// float64 and microsecond timestamp values it writes as 8 bytes read
// straight from the column's buffer, and its text as a string column's,
// without a look at the value's type for each value (appendValue); the
// values of other columns are written by appendValue. nulls says the
// column has nulls, to look for.
type colValues struct {
	kind  uint8
	col   arrow.Array
	nulls bool
	words []int64 // valuesWords: the values as 8 bytes each (a float64's bits)
	sub   int64   // valuesWords: what is taken from each (PostgreSQL's epoch)
	text  *array.String
}

const (
	valuesOther = iota // written by appendValue
	valuesWords
	valuesText
)

// valuesOf returns col, a column written as w, as a stream reads it.
func valuesOf(w wire, col arrow.Array) colValues {
	v := colValues{col: col, nulls: col.NullN() > 0}
	switch a := col.(type) {
	case *array.Int64:
		if w == wireInt8 {
			v.kind, v.words = valuesWords, a.Int64Values()
		}
	case *array.Float64:
		if w == wireFloat8 {
			v.kind, v.words = valuesWords, arrow.Int64Traits.CastFromBytes(arrow.Float64Traits.CastToBytes(a.Float64Values()))
		}
	case *array.Timestamp:
		if w == wireTimestamp && a.DataType().(*arrow.TimestampType).Unit == arrow.Microsecond {
			v.kind, v.words, v.sub = valuesWords, arrow.Int64Traits.CastFromBytes(arrow.TimestampTraits.CastToBytes(a.TimestampValues())), pgEpochMicros
		}
	case *array.String:
		if w == wireText {
			v.kind, v.text = valuesText, a
		}
	}
	return v
}

// errStreamClosed is what a stream's Read returns once it is closed.
var errStreamClosed = errors.New("COPY stream closed: the COPY ended")

// close ends the stream: it waits for a Read under way, and a Read after
// it reads nothing of the batch. Once close returns, the batch may be
// released. A stream closed before its end does not hand its buffer back.
func (s *stream) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

func appendInt8(b []byte, v int64) []byte {
	b = binary.BigEndian.AppendUint32(b, 8)
	return binary.BigEndian.AppendUint64(b, uint64(v))
}

func appendInt4(b []byte, v int32) []byte {
	b = binary.BigEndian.AppendUint32(b, 4)
	return binary.BigEndian.AppendUint32(b, uint32(v))
}

func appendValue(b []byte, w wire, col arrow.Array, i int) []byte {
	switch w {
	case wireInt8:
		return appendInt8(b, col.(*array.Int64).Value(i))
	case wireInt8AsFloat8:
		return appendInt8(b, int64(math.Float64bits(float64(col.(*array.Int64).Value(i)))))
	case wireFloat8:
		return appendInt8(b, int64(math.Float64bits(col.(*array.Float64).Value(i))))
	case wireBool:
		v := byte(0)
		if col.(*array.Boolean).Value(i) {
			v = 1
		}
		return append(binary.BigEndian.AppendUint32(b, 1), v)
	case wireTimestamp:
		a := col.(*array.Timestamp)
		us := a.Value(i).ToTime(a.DataType().(*arrow.TimestampType).Unit).UnixMicro()
		return appendInt8(b, us-pgEpochMicros)
	case wireDate:
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(b, 4), uint32(int32(col.(*array.Date32).Value(i))-pgEpochDays))
	case wireText:
		s := col.(*array.String).Value(i)
		return append(binary.BigEndian.AppendUint32(b, uint32(len(s))), s...)
	case wireJSONB:
		s := col.(*array.String).Value(i)
		return append(append(binary.BigEndian.AppendUint32(b, uint32(len(s)+1)), 1), s...)
	case wireNumeric:
		return appendNumeric(b, col.(*array.String).Value(i))
	default:
		s := text(col, i)
		return append(binary.BigEndian.AppendUint32(b, uint32(len(s))), s...)
	}
}

// copySQL is the COPY statement for table and columns, binary format.
func copySQL(table string, cols []string) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = q(c)
	}
	return "COPY " + table + " (" + strings.Join(names, ", ") + ") FROM STDIN (FORMAT binary)"
}

// appendNumeric writes s, a decimal in the canonical text (an optional '-',
// digits, and a point followed by digits only when the scale is not 0), as
// a binary numeric: ndigits, weight, sign, dscale, then the base-10000
// digits, grouped from the decimal point, without leading or trailing zero
// groups. The scale is kept: 1.50 has dscale 2.
func appendNumeric(b []byte, s string) []byte {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	ip, fp, _ := strings.Cut(s, ".")
	// Pad the integer part on the left and the fraction on the right to
	// whole groups of 4 digits.
	lead := (4 - len(ip)%4) % 4
	trail := (4 - len(fp)%4) % 4
	n := (lead + len(ip) + len(fp) + trail) / 4
	digit := func(k int) int { // the k-th decimal digit of the padded text
		k -= lead
		switch {
		case k < 0:
			return 0
		case k < len(ip):
			return int(ip[k] - '0')
		case k-len(ip) < len(fp):
			return int(fp[k-len(ip)] - '0')
		}
		return 0
	}
	group := func(g int) uint16 {
		return uint16(digit(4*g)*1000 + digit(4*g+1)*100 + digit(4*g+2)*10 + digit(4*g+3))
	}
	first, last := 0, n
	for first < last && group(first) == 0 {
		first++
	}
	for last > first && group(last-1) == 0 {
		last--
	}
	ngroups := last - first
	weight := (lead+len(ip))/4 - 1 - first
	sign := uint16(0x0000)
	if neg && ngroups > 0 {
		sign = 0x4000
	}
	if ngroups == 0 {
		weight = 0
	}
	b = binary.BigEndian.AppendUint32(b, uint32(8+2*ngroups))
	b = binary.BigEndian.AppendUint16(b, uint16(ngroups))
	b = binary.BigEndian.AppendUint16(b, uint16(int16(weight)))
	b = binary.BigEndian.AppendUint16(b, sign)
	b = binary.BigEndian.AppendUint16(b, uint16(len(fp)))
	for g := first; g < last; g++ {
		b = binary.BigEndian.AppendUint16(b, group(g))
	}
	return b
}
