package columnar

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/value"
)

// arrowMode says how the values of an Arrow column become reader values.
type arrowMode uint8

const (
	modeNull      arrowMode = iota // the null type: every value is null (String)
	modeBool                       // bool, bool8 → Bool
	modeInt                        // int8..int64, uint8..uint32 → Int64
	modeUint64                     // uint64 → Int64; above MaxInt64 is CodeRange
	modeFloat                      // float16/32/64 → Float64
	modeTimestamp                  // timestamp, any unit and zone → Timestamp (µs, UTC)
	modeString                     // text bytes → String; invalid UTF-8 or NUL is a bad row
	modeJSONText                   // text bytes holding a JSON document → JSON; invalid JSON is a bad row
	modeQuote                      // text bytes → JSON, as a JSON string
	modeText                       // any value rendered as text → String (decimals → Decimal)
	modeJSON                       // any value rendered as JSON → JSON
)

// arrowColumn is one column of a Parquet or Arrow file and how its values
// become the reader's.
type arrowColumn struct {
	name     string
	src      arrow.DataType // the type in the file
	typ      value.Type
	mode     arrowMode
	required bool // Options.NotNull names it
}

// Names of the canonical Arrow extension types the reader understands.
const (
	extJSON  = "arrow.json"
	extUUID  = "arrow.uuid"
	extBool8 = "arrow.bool8"
)

// naturalType returns the reader type of values of Arrow type dt, and how to
// convert them. Types it cannot map, at any depth, return an error naming
// them.
func naturalType(dt arrow.DataType) (value.Type, arrowMode, error) {
	switch t := dt.(type) {
	case arrow.ExtensionType:
		switch t.ExtensionName() {
		case extJSON:
			return value.JSON, modeJSONText, nil
		case extUUID:
			return value.String, modeText, nil
		case extBool8:
			return value.Bool, modeBool, nil
		}
		return value.Unknown, 0, fmt.Errorf("extension type %s", t.ExtensionName())
	case *arrow.DictionaryType:
		return naturalType(t.ValueType)
	}
	switch dt.ID() {
	case arrow.NULL:
		return value.String, modeNull, nil
	case arrow.BOOL:
		return value.Bool, modeBool, nil
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32:
		return value.Int64, modeInt, nil
	case arrow.UINT64:
		return value.Int64, modeUint64, nil
	case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
		return value.Float64, modeFloat, nil
	case arrow.TIMESTAMP:
		return value.Timestamp, modeTimestamp, nil
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return value.String, modeString, nil
	case arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256:
		// Rendered exactly, in the canonical decimal text (see
		// MaxDecimalDigits): 1250 with scale 2 is 12.50.
		return value.Decimal, modeText, nil
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW, arrow.FIXED_SIZE_BINARY,
		arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.DURATION,
		arrow.INTERVAL_MONTHS, arrow.INTERVAL_DAY_TIME, arrow.INTERVAL_MONTH_DAY_NANO:
		return value.String, modeText, nil
	case arrow.LIST, arrow.LARGE_LIST, arrow.FIXED_SIZE_LIST, arrow.LIST_VIEW, arrow.LARGE_LIST_VIEW,
		arrow.STRUCT, arrow.MAP:
		if err := renderable(dt); err != nil {
			return value.Unknown, 0, err
		}
		return value.JSON, modeJSON, nil
	}
	return value.Unknown, 0, fmt.Errorf("type %s", dt)
}

// renderable checks that every type nested in dt can be rendered as JSON.
func renderable(dt arrow.DataType) error {
	switch t := dt.(type) {
	case arrow.ExtensionType:
		switch t.ExtensionName() {
		case extJSON, extUUID, extBool8:
			return nil
		}
		return fmt.Errorf("extension type %s", t.ExtensionName())
	case *arrow.DictionaryType:
		return renderable(t.ValueType)
	case *arrow.MapType:
		if err := renderable(t.KeyType()); err != nil {
			return err
		}
		return renderable(t.ItemType())
	case arrow.ListLikeType:
		return renderable(t.Elem())
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if err := renderable(f.Type); err != nil {
				return err
			}
		}
		return nil
	}
	_, _, err := naturalType(dt)
	return err
}

// arrowColumnOf decides how the values of field f become reader values,
// honouring a type forced by Options.Types: a column may be forced to its
// own type, to string (its values' text) or to json (their JSON).
func arrowColumnOf(f arrow.Field, natural value.Type, mode arrowMode, want value.Type) (arrowColumn, error) {
	c := arrowColumn{name: f.Name, src: f.Type, typ: natural, mode: mode}
	switch {
	case want == value.Unknown || want == natural:
	case want == value.String:
		c.typ, c.mode = value.String, modeText
		if mode == modeJSONText {
			c.mode = modeString // the document's own text
		}
	case want == value.JSON:
		c.typ, c.mode = value.JSON, modeJSON
		if mode == modeString {
			c.mode = modeQuote
		}
	default:
		only := "string or json"
		switch natural {
		case value.String:
			only = "string or json"
		case value.JSON:
			only = "json or string"
		default:
			only = natural.String() + ", string or json"
		}
		return c, fmt.Errorf("%w: the file's %s values cannot be read as %s (only as %s)", input.ErrType, f.Type, want, only)
	}
	return c, nil
}

// arrowColumns maps a file's Arrow schema to reader columns: those
// Options.Select names, in its order, named as Options.Rename says. hints
// gives, per field, a type the file's own metadata implies for byte
// columns (Parquet's JSON and ENUM annotations), or Unknown. It sets
// f.proj to the positions of the fields read when Options.Select leaves
// some out. Options that do not fit the file return an error wrapping
// input.ErrOption.
func (f *File) arrowColumns(s *arrow.Schema, hints []value.Type) ([]arrowColumn, value.Schema, error) {
	if s.NumFields() == 0 {
		return nil, nil, &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: the file has no columns", input.ErrHeader)}
	}
	file := make([]string, s.NumFields())
	for i, fld := range s.Fields() {
		file[i] = fld.Name
	}
	proj, names, err := f.Opts.Project(file)
	if err != nil {
		return nil, nil, err
	}
	read := proj
	if read == nil {
		read = make([]int, len(file))
		for i := range read {
			read[i] = i
		}
	}
	seen := map[string]int{}
	var cols []arrowColumn
	var schema value.Schema
	for j, i := range read {
		fld := s.Field(i)
		if fld.Name == "" || strings.TrimSpace(fld.Name) != fld.Name {
			return nil, nil, &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: column %d is named %q", input.ErrHeader, i+1, fld.Name)}
		}
		if code, msg := value.CheckText([]byte(fld.Name)); code != "" {
			return nil, nil, &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: column %d: %s", input.ErrHeader, i+1, msg)}
		}
		if k, dup := seen[fld.Name]; dup {
			return nil, nil, &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: columns %d and %d are both named %q", input.ErrHeader, k+1, i+1, fld.Name)}
		}
		seen[fld.Name] = i
		name := names[j]
		natural, mode, err := naturalType(fld.Type)
		if i < len(hints) && hints[i] != value.Unknown && err == nil && mode == modeText && isBinaryType(fld.Type) {
			natural, mode = hints[i], modeString
			if natural == value.JSON {
				mode = modeJSONText
			}
		}
		if err != nil {
			return nil, nil, &input.ParseError{Path: f.Path, Offset: -1, Column: fld.Name,
				Err: fmt.Errorf("%w: %s cannot be imported (%v)", input.ErrType, fld.Type, err)}
		}
		c, err := arrowColumnOf(fld, natural, mode, f.Opts.Types[name])
		if err != nil {
			return nil, nil, &input.ParseError{Path: f.Path, Offset: -1, Column: fld.Name, Err: err}
		}
		c.name = name
		for _, n := range f.Opts.NotNull {
			if n == name {
				c.required = true
			}
		}
		cols = append(cols, c)
		schema = append(schema, value.Column{Name: name, Type: c.typ})
	}
	f.proj = proj
	return cols, schema, nil
}

func isBinaryType(dt arrow.DataType) bool {
	if d, ok := dt.(*arrow.DictionaryType); ok {
		dt = d.ValueType
	}
	switch dt.ID() {
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW:
		return true
	}
	return false
}
