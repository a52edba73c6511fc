package idemtype

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Type is the logical type of a column. The zero value, Unknown, is only used
// while inferring a column that has held nothing but nulls so far.
type Type uint8

// The column types. Their names are what --column name:type accepts.
const (
	Unknown Type = iota
	Bool
	Int64
	Float64
	Timestamp // UTC, microsecond precision
	String
	JSON    // a JSON document kept as text
	Decimal // an exact decimal number kept as its canonical text (see reader.MaxDecimalDigits)
)

var typeNames = [...]string{
	Unknown:   "unknown",
	Bool:      "bool",
	Int64:     "int64",
	Float64:   "float64",
	Timestamp: "timestamp",
	String:    "string",
	JSON:      "json",
	Decimal:   "decimal",
}

// String returns the canonical name of t.
func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", t)
}

// ParseType parses a type name as written by users. It accepts the canonical
// names and the common SQL spellings (int, integer, bigint, float, double,
// real, numeric, boolean, text, varchar, datetime).
func ParseType(s string) (Type, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "bool", "boolean":
		return Bool, nil
	case "int", "int64", "integer", "bigint":
		return Int64, nil
	case "float", "float64", "double", "real":
		return Float64, nil
	case "timestamp", "datetime", "timestamptz":
		return Timestamp, nil
	case "string", "text", "varchar":
		return String, nil
	case "json", "jsonb":
		return JSON, nil
	case "decimal", "numeric":
		return Decimal, nil
	}
	return Unknown, fmt.Errorf("unknown column type %q (want bool, int64, float64, decimal, timestamp, string or json)", s)
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
	default:
		return arrow.BinaryTypes.String
	}
}

// MarshalText encodes t by name, so stored plans and JSON output read well.
func (t Type) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText decodes a name written by MarshalText.
func (t *Type) UnmarshalText(b []byte) error {
	if string(b) == "unknown" {
		*t = Unknown
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
		if t, err := ParseType(v); err == nil {
			return t
		}
	}
	switch f.Type.ID() {
	case arrow.BOOL:
		return Bool
	case arrow.INT64:
		return Int64
	case arrow.FLOAT64:
		return Float64
	case arrow.TIMESTAMP:
		return Timestamp
	}
	return String
}
