package idemtype

// ValueRules are what a target database's own value types hold, beyond the
// limits of one column (its integer width, its length, its precision and
// scale): the bounds of its exact decimal type and what its JSON type
// refuses of valid JSON. The database's driver supplies them
// (sink.Limits.Rules) and reader's plan pass checks values against them
// (reader.Options.Rules), so that a value the database would refuse is a
// bad row found before any effect. The zero ValueRules check nothing.
type ValueRules struct {
	Decimal DecimalRule
	JSON    JSONRule
	Date    DateRule
}

// DateRule says which valid dates of the proleptic Gregorian calendar a
// database's DATE and timestamp types refuse.
type DateRule struct {
	// NoLeapDayInYearZero says the types refuse 0000-02-29 (MariaDB,
	// whose calendar does not make the year 0 a leap year).
	NoLeapDayInYearZero bool
	// Reason is the reason given for a date they refuse.
	Reason string
}

// DecimalRule describes a database's exact decimal type. A bound of 0 is
// no bound.
type DecimalRule struct {
	// Name names the type in messages (numeric(p,s), decimal(p,s)).
	Name string
	// Code is the reason code (reader.Reject.Code) of a value a column of
	// the type cannot hold or would round.
	Code string
	// MaxDigits bounds the digits before the decimal point, and MaxScale
	// those after it (as the value is written, trailing zeros too), of any
	// value of the type, whatever a column's own precision and scale.
	MaxDigits int
	MaxScale  int
	// MaxExp bounds the exponent of a number written with one: the
	// database's input refuses an exponent e with |e| >= MaxExp.
	MaxExp int64
}

// JSONRule says which valid JSON a database's JSON type refuses.
type JSONRule struct {
	// Name names the type in messages.
	Name string
	// Code is the reason code (reader.Reject.Code) of a value the type
	// refuses.
	Code string
	// NoNUL says the type refuses the escape \u0000 in a string.
	NoNUL bool
	// Decimal says the type refuses a number its Decimal rule cannot hold.
	Decimal bool
}

// Checks reports whether r refuses any valid JSON.
func (r JSONRule) Checks() bool { return r.NoNUL || r.Decimal }
