package mysql

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/go-sql-driver/mysql"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
)

// loader writes rows into one table with LOAD DATA LOCAL INFILE, the
// server's bulk path, reading them from a buffer in memory through a
// reader handler of the driver (mysql.RegisterReaderHandler) registered
// under a name of its own for the statement and deregistered after it.
//
// The rows go as tab-separated lines in utf8mb4, each value as the INSERT
// path binds it (field.value) in text: NULL as \N, and a backslash, tab,
// newline, carriage return and NUL escaped, so that a string keeps every
// byte and the empty string stays apart from NULL.
//
// With LOCAL the server cannot stop the client's stream, so it turns
// what strict mode makes an error of an INSERT (a value out of range or
// too long, a duplicate key, a failed CHECK) into a warning and cuts,
// clamps or skips the row. A load therefore counts only when it wrote
// every row with no warning and no note; otherwise load reports false
// and the caller undoes what it wrote and takes the INSERT path, which
// stops at the failing statement with the server's error. It is not safe
// for concurrent use.
type loader struct {
	head  string // LOAD DATA … INTO TABLE table, up to the file's name
	tail  string // the format, the columns, and a SET clause to end
	name  string // a prefix of the handler's names, unique to the loader
	calls int
	data  []byte
}

// newLoader returns a loader into table (quoted) of lines of the columns
// (quoted). name makes the handlers' names unique among the process's
// loaders.
func newLoader(table string, columns []string, name string) *loader {
	// The session's NO_BACKSLASH_ESCAPES keeps a backslash in a string as
	// it is: the tab and the newline are written into the statement, and
	// '\' is one backslash.
	tail := " INTO TABLE " + table + " CHARACTER SET utf8mb4" +
		" FIELDS TERMINATED BY '\t' ENCLOSED BY '' ESCAPED BY '\\' LINES STARTING BY '' TERMINATED BY '\n'" +
		" (" + strings.Join(columns, ", ") + ")"
	return &loader{head: "LOAD DATA LOCAL INFILE ", tail: tail, name: name}
}

// load writes n rows inside tx, row r's line appended by row(r, b) (each
// field ended by a tab, the last by a newline), and set, when not empty,
// is a SET clause's assignments of literals (LOAD DATA takes no
// placeholders). It reports whether the server
// took every row as it was sent; when it did not, some of the rows may
// be stored, cut or clamped, and the caller must undo them. err is a
// failure of the statement itself (loadRefused tells whether the server
// takes no LOAD DATA LOCAL at all), which wrote nothing.
func (l *loader) load(ctx context.Context, tx *sql.Tx, n int, row func(r int, b []byte) []byte, set string) (ok bool, err error) {
	l.data = l.data[:0]
	for r := range n {
		l.data = row(r, l.data)
	}
	l.calls++
	name := l.name + "_" + strconv.Itoa(l.calls)
	data := l.data
	mysql.RegisterReaderHandler(name, func() io.Reader { return bytes.NewReader(data) })
	defer mysql.DeregisterReaderHandler(name)
	query := l.head + "'Reader::" + name + "'" + l.tail
	if set != "" {
		query += " SET " + set
	}
	res, err := tx.ExecContext(ctx, query)
	if err != nil {
		return false, err
	}
	loaded, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	var warnings int64
	if err := tx.QueryRowContext(ctx, `SELECT @@warning_count`).Scan(&warnings); err != nil {
		return false, fmt.Errorf("count the load's warnings: %w", err)
	}
	return loaded == int64(n) && warnings == 0, nil
}

// loadRefused reports whether err says the server takes no LOAD DATA
// LOCAL INFILE (local_infile is off).
func loadRefused(err error) bool {
	var me *mysql.MySQLError
	// 1148: ER_NOT_ALLOWED_COMMAND; 3948: ER_CLIENT_LOCAL_FILES_DISABLED
	// (MySQL); 4166: ER_LOAD_INFILE_CAPABILITY_DISABLED (MariaDB).
	return errors.As(err, &me) && (me.Number == 1148 || me.Number == 3948 || me.Number == 4166)
}

// appendLoad appends row i of a, as f's target column takes it, to a
// line of a load: the text of what value binds (integers, floats and
// booleans as the server parses them back to the same number), escaped,
// or \N for NULL.
func (f *field) appendLoad(b []byte, a arrow.Array, i int) []byte {
	if a.IsNull(i) {
		return append(b, '\\', 'N')
	}
	switch a := a.(type) {
	case *array.Int64:
		return strconv.AppendInt(b, a.Value(i), 10)
	case *array.Float64:
		if f.target == idemtype.Float64 {
			return strconv.AppendFloat(b, a.Value(i), 'g', -1, 64)
		}
		return appendEscaped(b, sink.FormatFloat(a.Value(i), f.target == idemtype.Decimal))
	case *array.Boolean:
		if f.target == idemtype.Bool {
			if a.Value(i) {
				return append(b, '1')
			}
			return append(b, '0')
		}
		return strconv.AppendBool(b, a.Value(i))
	case *array.Timestamp:
		if f.target != idemtype.String {
			t := a.DataType().(*arrow.TimestampType)
			return appendDatetime(b, a.Value(i).ToTime(t.Unit).UnixMicro())
		}
	case *array.String:
		return appendEscaped(b, a.Value(i))
	}
	return appendEscaped(b, fmt.Sprint(f.value(a, i)))
}

// appendDatetime appends the point in time us microseconds after the
// Unix epoch as DATETIME text in UTC, the text
// time.UnixMicro(us).UTC().AppendFormat(b, datetimeLayout) makes, without
// reading the layout for every value: a line of a load spends its time on
// its timestamps otherwise. A year outside 0 through 9999, which no
// DATETIME holds, is left to AppendFormat, so that the server refuses
// the same text as before.
func appendDatetime(b []byte, us int64) []byte {
	t := time.UnixMicro(us).UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, datetimeLayout)
	}
	hour, minute, second := t.Clock()
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, ' ')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, minute, 2)
	b = append(b, ':')
	b = appendDigits(b, second, 2)
	b = append(b, '.')
	return appendDigits(b, t.Nanosecond()/1000, 6)
}

// appendDigits appends v, which is not negative and has at most width
// digits, in exactly width digits, zeros first.
func appendDigits(b []byte, v, width int) []byte {
	b = append(b, "000000"[:width]...)
	for i := len(b) - 1; v > 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return b
}

// appendEscaped appends s to a line of a load, its backslashes, tabs,
// newlines, carriage returns and NULs escaped with a backslash.
func appendEscaped(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		var e byte
		switch s[i] {
		case '\\':
			e = '\\'
		case '\t':
			e = 't'
		case '\n':
			e = 'n'
		case '\r':
			e = 'r'
		case 0:
			e = '0'
		default:
			continue
		}
		b = append(b, s[start:i]...)
		b = append(b, '\\', e)
		start = i + 1
	}
	return append(b, s[start:]...)
}
