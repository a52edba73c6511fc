package mysql

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/idemport/idemport/sink"
)

// rowCodes are the server's errors that a row's values cause, by the
// reason code of the reject: a constraint (a key, a foreign key, a CHECK,
// NOT NULL, a trigger's SIGNAL) or a value the column cannot hold, which
// strict mode makes an error instead of a truncation.
var rowCodes = map[uint16]string{
	1048: sink.CodeConstraint, // ER_BAD_NULL_ERROR
	1062: sink.CodeConstraint, // ER_DUP_ENTRY
	1216: sink.CodeConstraint, // ER_NO_REFERENCED_ROW
	1217: sink.CodeConstraint, // ER_ROW_IS_REFERENCED
	1451: sink.CodeConstraint, // ER_ROW_IS_REFERENCED_2
	1452: sink.CodeConstraint, // ER_NO_REFERENCED_ROW_2
	1644: sink.CodeConstraint, // ER_SIGNAL_EXCEPTION: a trigger refused the row
	3819: sink.CodeConstraint, // ER_CHECK_CONSTRAINT_VIOLATED (MySQL)
	4025: sink.CodeConstraint, // ER_CONSTRAINT_FAILED (MariaDB's CHECK)
	1118: sink.CodeRefused,    // ER_TOO_BIG_ROWSIZE
	1264: sink.CodeRefused,    // ER_WARN_DATA_OUT_OF_RANGE
	1265: sink.CodeRefused,    // WARN_DATA_TRUNCATED
	1292: sink.CodeRefused,    // ER_TRUNCATED_WRONG_VALUE
	1366: sink.CodeRefused,    // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD
	1367: sink.CodeRefused,    // ER_ILLEGAL_VALUE_FOR_TYPE
	1406: sink.CodeRefused,    // ER_DATA_TOO_LONG
	1411: sink.CodeRefused,    // ER_WRONG_VALUE_FOR_TYPE
	1690: sink.CodeRefused,    // ER_DATA_OUT_OF_RANGE
	3140: sink.CodeRefused,    // ER_INVALID_JSON_TEXT (MySQL)
}

// rowError returns err as a *sink.RowError when the server refused the
// rows' values (rowCodes), naming the column where its message does.
// InnoDB undoes the failed statement alone: the transaction goes on.
func rowError(err error) error {
	var re *sink.RowError
	if errors.As(err, &re) {
		return re // already told (Merge's oneKey)
	}
	var me *mysql.MySQLError
	if err == nil || !errors.As(err, &me) {
		return err
	}
	code, ok := rowCodes[me.Number]
	if !ok {
		return err
	}
	return &sink.RowError{Code: code, Column: column(me.Message), Reason: fmt.Sprintf("%s (error %d)", me.Message, me.Number), Err: err}
}

// column returns the column a server's message names ("… for column 'x'
// at row 1", "… for column `db`.`t`.`x` at row 1", "Column 'x' cannot be
// null"), or "".
func column(msg string) string {
	i := strings.Index(strings.ToLower(msg), "column ")
	if i < 0 {
		return ""
	}
	rest := msg[i+len("column "):]
	if rest == "" {
		return ""
	}
	switch quote := rest[0]; quote {
	case '\'':
		if j := strings.IndexByte(rest[1:], quote); j >= 0 {
			return rest[1 : 1+j]
		}
	case '`':
		var last string
		for len(rest) > 0 && rest[0] == '`' {
			j := strings.IndexByte(rest[1:], '`')
			if j < 0 {
				return ""
			}
			last, rest = rest[1:1+j], rest[2+j:]
			rest = strings.TrimPrefix(rest, ".")
		}
		return last
	}
	return ""
}

// RowError implements sink.RowErrorer: an error of rowCodes (a CHECK, a
// foreign key, a duplicate key, NOT NULL, a trigger's SIGNAL, a value the
// column cannot hold) is a *sink.RowError (rowError).
func (Driver) RowError(err error) error { return rowError(err) }
