package mysql

import (
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/internal/batchkey"
)

// field is a column of a file and the column of the target table of the
// same name that its values go into.
type field struct {
	name   string
	file   idemtype.Type // the file's kind
	target idemtype.Type // the target column's kind (Unknown: a type idemport does not know)
}

// datetimeLayout is how a point in time (in UTC, the session's zone) or
// a zone-less timestamp is bound to a DATETIME: the text the server
// parses in strict mode, to the microsecond, with no zone.
const datetimeLayout = "2006-01-02 15:04:05.000000"

// value returns row i of a as the argument bound to f's target column.
// The value goes exactly: integers as int64 into integer columns and as
// their digits elsewhere (a decimal's text column, text), floats as
// float64 into DOUBLE and as their shortest plain text elsewhere
// (sink.FormatFloat), decimals and strings as their text, and times as
// DATETIME text in UTC (datetimeLayout), or, into a text column, as
// idemport writes times in text (sink.FormatTimestamp). The server casts
// text to a column of another type, refusing in strict mode what does not
// fit. A string aliases a's buffer: the argument lives as long as a.
func (f *field) value(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.Int64:
		if f.target == idemtype.Int64 {
			return a.Value(i)
		}
		return strconv.FormatInt(a.Value(i), 10)
	case *array.Float64:
		if f.target == idemtype.Float64 {
			return a.Value(i)
		}
		return sink.FormatFloat(a.Value(i), f.target == idemtype.Decimal)
	case *array.Boolean:
		if f.target == idemtype.Bool {
			return a.Value(i)
		}
		return strconv.FormatBool(a.Value(i))
	case *array.Timestamp:
		t := a.DataType().(*arrow.TimestampType)
		us := a.Value(i).ToTime(t.Unit).UnixMicro()
		if f.target == idemtype.String {
			if t.TimeZone == "" {
				return sink.FormatLocalTimestamp(us)
			}
			return sink.FormatTimestamp(us)
		}
		return time.UnixMicro(us).UTC().Format(datetimeLayout)
	case *array.Date32:
		return sink.FormatDate(int32(a.Value(i)))
	case *array.String:
		return a.Value(i)
	}
	return fmt.Sprint(a.GetOneForMarshal(i))
}

// size is about how many bytes value v takes in a statement's packet,
// with its type and length.
func size(v any) int {
	if s, ok := v.(string); ok {
		return len(s) + 10
	}
	return 10
}

// key appends row i of a to a batch key (batchkey.Append): a decimal by
// its number, as keyExpr and KeyValue compare keys, and other values by
// their text. Text compares byte by byte, as in the tables Ensure makes
// (utf8mb4_nopad_bin); keys equal only under a looser collation of a
// table made otherwise are not found equal here, and such a batch fails
// on the table's key instead.
func (f *field) key(buf []byte, a arrow.Array, i int) []byte {
	cmp := batchkey.Text
	if f.target == idemtype.Decimal {
		cmp = batchkey.Number
	}
	return batchkey.Append(buf, a, i, cmp, f.text)
}

// text is row i of a as the text of the value bound to f's column.
func (f *field) text(a arrow.Array, i int) string {
	return fmt.Sprint(f.value(a, i))
}
