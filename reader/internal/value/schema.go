package value

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
)

// Type is the logical type of a column (see idemtype.Type).
type Type = idemtype.Type

// The column types, as idemtype names them.
const (
	Unknown   = idemtype.Unknown
	Bool      = idemtype.Bool
	Int64     = idemtype.Int64
	Float64   = idemtype.Float64
	Timestamp = idemtype.Timestamp
	String    = idemtype.String
	JSON      = idemtype.JSON
	Decimal   = idemtype.Decimal
	Date      = idemtype.Date
	// LocalTimestamp is a date and time without a zone (timestamp).
	LocalTimestamp = idemtype.LocalTimestamp
)

// Column is one column of a file's schema.
type Column struct {
	Name string `json:"name"`
	Type Type   `json:"type"`
}

// Schema is the ordered list of a file's columns.
type Schema []Column

// Arrow returns the Arrow schema of s. Every field is nullable.
func (s Schema) Arrow() *arrow.Schema {
	fields := make([]arrow.Field, len(s))
	for i, c := range s {
		fields[i] = c.Type.Field(c.Name)
	}
	return arrow.NewSchema(fields, nil)
}

// Index returns the position of the column named name, or -1.
func (s Schema) Index(name string) int {
	for i, c := range s {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// SchemaText lists columns as name:type for messages.
func SchemaText(s Schema) string {
	parts := make([]string, len(s))
	for i, c := range s {
		parts[i] = c.Name + ":" + c.Type.String()
	}
	return strings.Join(parts, ", ")
}
