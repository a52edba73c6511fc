package mysql

import "github.com/idemport/idemport/idemtype"

// DECIMAL holds at most 65 digits, of which at most 30 after the decimal
// point (the documentation's "DECIMAL"). Strict mode refuses a value too
// large for a column, but rounds one with more digits after the point
// than the column's scale, with a note and no error: the plan pass must
// refuse those (valueRules).
const (
	decimalMaxDigits = 65
	decimalMaxScale  = 30
)

// valueRules are the value rules of MariaDB's types (sink.Limits.Rules):
// DECIMAL, which rounds a value beyond a column's scale; DATE and
// DATETIME, which refuse 0000-02-29 (error 1292: its calendar has no leap
// year 0). Its JSON, a LONGTEXT that json_valid checks, takes any valid
// JSON as its text.
var valueRules = idemtype.ValueRules{
	Decimal: idemtype.DecimalRule{Name: "DECIMAL", Code: "decimal", MaxDigits: decimalMaxDigits, MaxScale: decimalMaxScale},
	Date:    idemtype.DateRule{NoLeapDayInYearZero: true, Reason: "MariaDB has no 29 February in the year 0000 (its DATE and DATETIME refuse it)"},
}
