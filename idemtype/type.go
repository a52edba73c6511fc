package idemtype

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Type is the logical type of a column. The zero value, Unknown, is only used
// while inferring a column that has held nothing but nulls so far.
type Type uint8

// The column types.
const (
	Unknown Type = iota
	Bool
	Int64
	Float64
	Timestamp // a point in time (timestamptz): UTC, microsecond precision
	String
	JSON           // a JSON document kept as text
	Decimal        // an exact decimal number kept as its canonical text (at most 131072 digits before the point and 16383 after, as numeric holds)
	Date           // a calendar date, as days since 1970-01-01
	LocalTimestamp // a date and time of day without a zone (timestamp), microsecond precision
)

// typeNames are the names types are stored and hashed by: in stored
// plans, mapping digests and JSON output. They never change (a point in
// time stays "timestamp", as it was named first).
var typeNames = [...]string{
	Unknown:        "unknown",
	Bool:           "bool",
	Int64:          "int64",
	Float64:        "float64",
	Timestamp:      "timestamp",
	String:         "string",
	JSON:           "json",
	Decimal:        "decimal",
	Date:           "date",
	LocalTimestamp: "localtimestamp",
}

// userNames are the names people read and type: SQL's.
var userNames = [...]string{
	Timestamp:      "timestamptz",
	LocalTimestamp: "timestamp",
}

// String returns the name of t as people use it: SQL's for times
// (timestamptz, timestamp, date), and bool, int64, float64, decimal,
// string and json.
func (t Type) String() string {
	if int(t) < len(userNames) && userNames[t] != "" {
		return userNames[t]
	}
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", t)
}

// StoredName returns the name t is stored and hashed by (see
// MarshalText), which never changes.
func (t Type) StoredName() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", t)
}

// TypeNames lists the names ParseType takes, for help texts.
const TypeNames = "bool (boolean), int64 (integer, bigint, int, smallint), float64 (double precision, real, float), decimal (numeric, numeric(12,2)), string (text, varchar, varchar(n), char(n)), json (jsonb), date, timestamp (a date and time without zone; datetime) and timestamptz (a point in time)"

// ParseType parses a type name as written by users: the names above and
// the SQL spellings people type (TypeNames). A precision or length in
// parentheses is taken and not kept: the type is what it says of values.
func ParseType(s string) (Type, error) {
	name := strings.Join(strings.Fields(strings.ToLower(s)), " ")
	if i := strings.IndexByte(name, '('); i > 0 && strings.HasSuffix(name, ")") {
		switch base := strings.TrimSpace(name[:i]); base {
		case "numeric", "decimal", "varchar", "char", "character", "character varying":
			name = base
		}
	}
	switch name {
	case "bool", "boolean":
		return Bool, nil
	case "int", "int64", "integer", "bigint", "smallint", "int2", "int4", "int8":
		return Int64, nil
	case "float", "float64", "double", "double precision", "real", "float4", "float8":
		return Float64, nil
	case "timestamptz", "timestamp with time zone":
		return Timestamp, nil
	case "timestamp", "datetime", "timestamp without time zone":
		return LocalTimestamp, nil
	case "date":
		return Date, nil
	case "string", "text", "varchar", "char", "character", "character varying":
		return String, nil
	case "json", "jsonb":
		return JSON, nil
	case "decimal", "numeric":
		return Decimal, nil
	}
	return Unknown, fmt.Errorf("unknown column type %q (want %s)", s, TypeNames)
}

// MetadataType is the Arrow field metadata key that records a column's
// logical type where the Arrow type alone does not (json and decimal are
// stored as utf8).
const MetadataType = "idemport.type"

// ArrowType returns the Arrow data type used for values of t.
func (t Type) ArrowType() arrow.DataType {
	switch t {
	case Bool:
		return arrow.FixedWidthTypes.Boolean
	case Int64:
		return arrow.PrimitiveTypes.Int64
	case Float64:
		return arrow.PrimitiveTypes.Float64
	case Timestamp:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	case LocalTimestamp:
		return &arrow.TimestampType{Unit: arrow.Microsecond}
	case Date:
		return arrow.FixedWidthTypes.Date32
	default:
		return arrow.BinaryTypes.String
	}
}

// MarshalText encodes t by its stored name (StoredName), so stored plans
// and JSON output read well and read back the same.
func (t Type) MarshalText() ([]byte, error) { return []byte(t.StoredName()), nil }

// UnmarshalText decodes a name written by MarshalText.
func (t *Type) UnmarshalText(b []byte) error {
	for i, n := range typeNames {
		if n == string(b) {
			*t = Type(i)
			return nil
		}
	}
	if string(b) == "timestamptz" {
		*t = Timestamp
		return nil
	}
	v, err := ParseType(string(b))
	*t = v
	return err
}

// Field returns the nullable Arrow field of a column named name holding
// values of t: of type t.ArrowType(), and with t's name under MetadataType
// where the Arrow type alone does not say it (JSON and Decimal).
func (t Type) Field(name string) arrow.Field {
	f := arrow.Field{Name: name, Type: t.ArrowType(), Nullable: true}
	if t == JSON || t == Decimal {
		f.Metadata = arrow.NewMetadata([]string{MetadataType}, []string{t.String()})
	}
	return f
}

// TypeOf returns the type of the values of an Arrow field as reader
// produces them: the type its MetadataType metadata names, else the one
// its Arrow type is for (String for any type but those of Bool, Int64,
// Float64 and Timestamp).
func TypeOf(f arrow.Field) Type {
	if v, ok := f.Metadata.GetValue(MetadataType); ok {
		var t Type
		if err := t.UnmarshalText([]byte(v)); err == nil {
			return t
		}
	}
	switch f.Type.ID() {
	case arrow.DATE32:
		return Date
	case arrow.BOOL:
		return Bool
	case arrow.INT64:
		return Int64
	case arrow.FLOAT64:
		return Float64
	case arrow.TIMESTAMP:
		if f.Type.(*arrow.TimestampType).TimeZone == "" {
			return LocalTimestamp
		}
		return Timestamp
	}
	return String
}
