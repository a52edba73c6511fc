package postgres

import "github.com/idemport/idemport/idemtype"

// numeric holds at most 131072 digits before the decimal point and 16383
// after it (the documentation's "Arbitrary Precision Numbers"), and its
// input refuses an exponent whose size is INT_MAX/2 or more.
const (
	numericMaxDigits = 131072
	numericMaxScale  = 16383
	numericMaxExp    = 1<<30 - 1
)

// valueRules are the value rules of PostgreSQL's types (sink.Limits.Rules):
// numeric, which rounds a value beyond a column's scale and refuses one
// beyond its precision or its range, and jsonb, which refuses a \u0000
// escape and a number numeric cannot hold.
var valueRules = idemtype.ValueRules{
	Decimal: idemtype.DecimalRule{Name: "numeric", Code: "numeric", MaxDigits: numericMaxDigits, MaxScale: numericMaxScale, MaxExp: numericMaxExp},
	JSON:    idemtype.JSONRule{Name: "PostgreSQL's jsonb", Code: "jsonb", NoNUL: true, Decimal: true},
}
