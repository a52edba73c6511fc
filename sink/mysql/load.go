package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math"
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
// server's bulk path, reading them through a reader handler of the
// driver (mysql.RegisterReaderHandler) registered under a name of its own
// for the statement and deregistered after it; the handler's reader makes
// the lines a chunk at a time as the driver sends them (lines).
//
// The rows go as tab-separated lines in utf8mb4, each value as the INSERT
// path binds it (field.value) in text (a DATETIME less the zeros ending its
// fraction: loadDatetimeLayout): NULL as \N, and a backslash, tab,
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
	buf   []byte // the lines' buffer, kept for the next load
}

// linesChunk is how many bytes of lines a load makes at a time: the
// driver sends them 16 KiB a packet, and the server stores the rows of
// one chunk while the next is made.
const linesChunk = 64 << 10

// lines is the stream of a load's lines, made as the driver reads them
// rather than all before the statement: while the whole batch was made
// first, the server waited for it, and idemport waited for the server
// while it stored the rows. Row r's line is appended to buf by row(r, b).
type lines struct {
	row  func(r int, b []byte) []byte
	n, r int
	buf  []byte
	off  int // what of buf was read
}

// Read implements io.Reader.
func (s *lines) Read(p []byte) (int, error) {
	if s.off == len(s.buf) {
		if s.r == s.n {
			return 0, io.EOF
		}
		s.buf, s.off = s.buf[:0], 0
		for s.r < s.n && len(s.buf) < linesChunk {
			s.buf = s.row(s.r, s.buf)
			s.r++
		}
	}
	k := copy(p, s.buf[s.off:])
	s.off += k
	return k, nil
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
// placeholders). first, when not empty, is statements (each ended by
// "; ") sent before the load in its message, which the load runs after
// only when they succeed. It reports whether the server
// took every row as it was sent; when it did not, some of the rows may
// be stored, cut or clamped, and the caller must undo them. err is a
// failure of the statement itself (loadRefused tells whether the server
// takes no LOAD DATA LOCAL at all), which wrote nothing, or of first.
//
// The load's warnings and the rows it stored are read in the same
// message, by a query after it: go-sql-driver/mysql keeps no warning
// count of the load's reply, and a query of its own was a round trip of
// each batch.
func (l *loader) load(ctx context.Context, tx *sql.Tx, n int, row func(r int, b []byte) []byte, set, first string) (ok bool, err error) {
	l.calls++
	name := l.name + "_" + strconv.Itoa(l.calls)
	lines := &lines{row: row, n: n, buf: l.buf[:0]}
	defer func() { l.buf = lines.buf }()
	mysql.RegisterReaderHandler(name, func() io.Reader { return lines })
	defer mysql.DeregisterReaderHandler(name)
	query := first + l.head + "'Reader::" + name + "'" + l.tail
	if set != "" {
		query += " SET " + set
	}
	// The session runs several statements a message (the connector's
	// MultiStatements), and stops at the first that fails: the query
	// runs only after the load succeeded. ROW_COUNT() is the load's
	// rows stored, as its reply counts them.
	var warnings, loaded int64
	if err := tx.QueryRowContext(ctx, query+"; SELECT @@warning_count, ROW_COUNT()").Scan(&warnings, &loaded); err != nil {
		return false, err
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

// guardFound reports whether err is a storedGuard's refusal: it found a
// row (ER_SUBQUERY_NO_1_ROW), or it could not compare a key the batch
// holds with the key column (ER_CANT_AGGREGATE_2COLLATIONS, _3COLLATIONS,
// _NCOLLATIONS: a key of characters the column's character set lacks,
// such as 'ş' to a latin1 column, which no row of it holds). Either way
// the batch is staged, where the row the column cannot take is refused as
// a bad row of its own; failed, the load failed every rerun of the file,
// whatever --max-rejects allowed.
func guardFound(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1242 || me.Number == 1267 || me.Number == 1270 || me.Number == 1271)
}

// appendLoad appends row i of a, as f's target column takes it, to a
// line of a load: the text of what value binds (integers, floats and
// booleans as the server parses them back to the same number), escaped,
// or \N for NULL. A batch's lines are made with loadAppender, which is
// the same for every row of a column.
func (f *field) appendLoad(b []byte, a arrow.Array, i int) []byte {
	return f.loadAppender(a)(b, i)
}

// loadAppender returns the function that appends row i of a to a line of
// a load, as appendLoad does: it reads a's type, and whether a has nulls,
// once for all of its rows.
func (f *field) loadAppender(a arrow.Array) func(b []byte, i int) []byte {
	switch a := a.(type) {
	case *array.Int64:
		v := a.Int64Values()
		return withNulls(a, func(b []byte, i int) []byte { return strconv.AppendInt(b, v[i], 10) })
	case *array.Float64:
		v := a.Float64Values()
		if f.target == idemtype.Float64 {
			return withNulls(a, func(b []byte, i int) []byte { return appendFloat(b, v[i]) })
		}
		decimal := f.target == idemtype.Decimal
		return withNulls(a, func(b []byte, i int) []byte { return appendEscaped(b, sink.FormatFloat(v[i], decimal)) })
	case *array.Timestamp:
		if f.target == idemtype.String {
			break
		}
		unit := a.DataType().(*arrow.TimestampType).Unit
		v := a.TimestampValues()
		if unit == arrow.Microsecond {
			return withNulls(a, func(b []byte, i int) []byte { return appendDatetime(b, int64(v[i])) })
		}
		return withNulls(a, func(b []byte, i int) []byte { return appendDatetime(b, v[i].ToTime(unit).UnixMicro()) })
	case *array.Date32:
		v := a.Date32Values()
		return withNulls(a, func(b []byte, i int) []byte { return sink.AppendDate(b, int32(v[i])) })
	case *array.String:
		return withNulls(a, func(b []byte, i int) []byte { return appendEscaped(b, a.Value(i)) })
	case *array.Boolean:
		if f.target == idemtype.Bool {
			return withNulls(a, func(b []byte, i int) []byte {
				if a.Value(i) {
					return append(b, '1')
				}
				return append(b, '0')
			})
		}
		return withNulls(a, func(b []byte, i int) []byte { return strconv.AppendBool(b, a.Value(i)) })
	}
	return withNulls(a, func(b []byte, i int) []byte { return appendEscaped(b, fmt.Sprint(f.value(a, i))) })
}

// withNulls returns app, which appends a value of a, made to append \N
// for a's nulls, when it has any.
func withNulls(a arrow.Array, app func(b []byte, i int) []byte) func(b []byte, i int) []byte {
	if a.NullN() == 0 {
		return app
	}
	return func(b []byte, i int) []byte {
		if a.IsNull(i) {
			return append(b, '\\', 'N')
		}
		return app(b, i)
	}
}

// loadDatetimeLayout is the DATETIME text of a load's lines: that of
// datetimeLayout, the INSERTs', with the zeros that end the fraction of a
// second left out, and the point too when nothing is left of it. The
// server reads both texts as the same value (".5" as 500,000
// microseconds), and a DATETIME(6) column holds it to the microsecond
// either way; but each byte of a line is a byte the server's LOAD DATA
// reads one at a time, and whole seconds (a timestamp of most files) took
// 7 bytes each for nothing: 6% of a line of bench/gen's orders.
const loadDatetimeLayout = "2006-01-02 15:04:05.999999"

// appendDatetime appends the point in time us microseconds after the
// Unix epoch as DATETIME text in UTC, the text
// time.UnixMicro(us).UTC().AppendFormat(b, loadDatetimeLayout) makes,
// without reading the layout for every value, nor making a time.Time of
// it: a line of a load spends its time on its timestamps otherwise. A
// year outside 0 through 9999, which no DATETIME holds, is left to
// AppendFormat, and the server refuses it.
func appendDatetime(b []byte, us int64) []byte {
	const usPerDay = 86_400_000_000
	days, rest := us/usPerDay, us%usPerDay
	if rest < 0 {
		days, rest = days-1, rest+usPerDay
	}
	year, month, day := sink.Civil(days)
	if year < 0 || year > 9999 {
		return time.UnixMicro(us).UTC().AppendFormat(b, loadDatetimeLayout)
	}
	sec := rest / 1_000_000
	b = append(b, digits2[2*(year/100)], digits2[2*(year/100)+1], digits2[2*(year%100)], digits2[2*(year%100)+1])
	b = append(b, '-', digits2[2*month], digits2[2*month+1], '-', digits2[2*day], digits2[2*day+1], ' ')
	h, m, s := sec/3600, sec/60%60, sec%60
	b = append(b, digits2[2*h], digits2[2*h+1], ':', digits2[2*m], digits2[2*m+1], ':', digits2[2*s], digits2[2*s+1])
	frac := rest % 1_000_000
	if frac == 0 {
		return b
	}
	hi, lo := frac/1000, frac%1000
	b = append(b, '.', byte('0'+hi/100), digits2[2*(hi%100)], digits2[2*(hi%100)+1])
	b = append(b, byte('0'+lo/100), digits2[2*(lo%100)], digits2[2*(lo%100)+1])
	for b[len(b)-1] == '0' { // frac is not 0: a digit other than 0 ends the trimming
		b = b[:len(b)-1]
	}
	return b
}

// appendFloat appends v as strconv.AppendFloat(b, v, 'g', -1, 64) does,
// the shortest text the server parses back to v, without the search for
// the shortest digits where v is n/100 for an integer n of 1 to 8 digits
// (|v| from 0.01 to under 10^6: a price, an amount). The digits of n are
// then v's shortest: n/100's text parses to the float64 nearest it, the
// quotient float64(n)/100, which IEEE division rounds alike, and no two
// numbers of at most 15 significant digits are one float64. They are
// written without the zeros ending the fraction, in the plain notation
// 'g' uses for exponents -4 through 5. The prices of bench/gen's orders
// took a fifth of their lines' CPU time.
func appendFloat(b []byte, v float64) []byte {
	if m := v * 100; m > -1e8 && m < 1e8 {
		n := int64(math.Round(m))
		if n != 0 && float64(n)/100 == v { // n != 0: -0 is "-0"
			if n < 0 {
				b, n = append(b, '-'), -n
			}
			b = strconv.AppendInt(b, n/100, 10)
			switch cents := n % 100; {
			case cents == 0:
			case cents%10 == 0:
				b = append(b, '.', byte('0'+cents/10))
			default:
				b = append(b, '.', digits2[2*cents], digits2[2*cents+1])
			}
			return b
		}
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// digits2 is the numbers 0 through 99 in two digits, zeros first, back to
// back. A constant, not a table built at start: every run of the command
// would pay for it, a rerun that writes nothing too.
const digits2 = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// loadEscapes is the letter that follows a backslash in place of each
// byte a line of a load escapes (backslash, tab, newline, carriage
// return, NUL), and 0 for every other byte.
var loadEscapes = [256]byte{'\\': '\\', '\t': 't', '\n': 'n', '\r': 'r', 0: '0'}

// appendEscaped appends s to a line of a load, its backslashes, tabs,
// newlines, carriage returns and NULs escaped with a backslash.
func appendEscaped(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		if e := loadEscapes[s[i]]; e != 0 {
			b = append(b, s[start:i]...)
			b = append(b, '\\', e)
			start = i + 1
		}
	}
	return append(b, s[start:]...)
}
