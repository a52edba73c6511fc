package reject

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/value"
)

// A reject keeps every field of its row, so that an export can give back
// exactly what the file said: a JSON array with one element per field, in
// file order (for JSONL, in the order of the columns as they were known
// when the row was read), extra fields included. Each element is null for
// a null field, or a JSON string whose first byte says what the field was,
// followed by its text:
//
//	t  CSV or TSV text
//	s  a JSON string (JSONL), or the text of a Parquet or Arrow value
//	n  a JSON number     b  a JSON true or false
//	j  JSON text: a JSON object or array, or a Parquet or Arrow nested value
//	r  a row that could not be split into fields (a stray quote, a JSONL
//	   line that is not an object), as read, without its line break
//	x  text that is not valid UTF-8: x, the kind, and hex of its bytes
//
// Every element being a string keeps the payload valid UTF-8 without NUL
// bytes whatever the row held, so every database can store it.
const (
	fieldText   = 't'
	FieldString = 's'
	fieldNumber = 'n'
	fieldBool   = 'b'
	FieldJSON   = 'j'
	fieldRaw    = 'r'
	fieldBytes  = 'x'
)

// AppendFields appends the payload of a row's cells to dst.
func AppendFields(dst []byte, cells []value.Cell) []byte {
	dst = append(dst, '[')
	for i, c := range cells {
		if i > 0 {
			dst = append(dst, ',')
		}
		kind := byte(fieldText)
		switch c.Kind {
		case value.CellNull:
			dst = append(dst, "null"...)
			continue
		case value.CellString:
			kind = FieldString
		case value.CellNumber:
			kind = fieldNumber
		case value.CellBool:
			kind = fieldBool
		case value.CellJSON:
			kind = FieldJSON
		}
		dst = AppendField(dst, kind, c.B)
	}
	return append(dst, ']')
}

// RawFields returns the payload of a row that could not be split.
func RawFields(raw []byte) string {
	raw = bytes.TrimSuffix(raw, []byte("\n"))
	raw = bytes.TrimSuffix(raw, []byte("\r"))
	return string(append(AppendField([]byte{'['}, fieldRaw, raw), ']'))
}

// AppendField appends one field of the payload: kind and text as a JSON
// string, or hex when the text is not UTF-8.
func AppendField(dst []byte, kind byte, b []byte) []byte {
	if !utf8.Valid(b) {
		return value.AppendJSONString(dst, append([]byte{fieldBytes, kind}, hex.EncodeToString(b)...))
	}
	return value.AppendJSONString(dst, append([]byte{kind}, b...))
}

// Field is one field of a quarantined row as text, or null.
type Field struct {
	Text string
	Null bool
}

// DecodeFields decodes the fields a reject kept (Reject.Fields) of a file
// of format f, read with schema: one Field per column, holding the text a
// reader of that format would read the value from again (for JSON
// columns, the JSON document the import stores), and the fields the row
// had beyond the schema's columns. A quoted empty CSV field is an empty
// Text, an unquoted one Null, as the reader reads them.
func DecodeFields(fields string, f input.Format, schema value.Schema) (cols, extra []Field, err error) {
	var elems []*string
	if err := json.Unmarshal([]byte(fields), &elems); err != nil {
		return nil, nil, fmt.Errorf("read the fields of a reject: %w", err)
	}
	cols = make([]Field, len(schema))
	for i := range cols {
		cols[i].Null = true
	}
	for i, e := range elems {
		var fd Field
		if e == nil {
			fd.Null = true
		} else if len(*e) == 0 {
			return nil, nil, fmt.Errorf("read the fields of a reject: field %d has no kind", i+1)
		} else {
			kind, text := (*e)[0], []byte((*e)[1:])
			if kind == fieldBytes && len(text) > 0 {
				kind = text[0]
				if text, err = hex.DecodeString(string(text[1:])); err != nil {
					return nil, nil, fmt.Errorf("read the fields of a reject: field %d: %w", i+1, err)
				}
			}
			if kind == fieldRaw { // the row as read: no column has a value
				extra = append(extra, Field{Text: string(text)})
				continue
			}
			fd.Text = string(text)
			if i < len(schema) && schema[i].Type == value.JSON {
				fd.Text = jsonText(kind, text, f)
			}
		}
		if i < len(schema) {
			cols[i] = fd
		} else {
			extra = append(extra, fd)
		}
	}
	return cols, extra, nil
}

// jsonText returns what a JSON column stores for a field of the given kind:
// what the import's conversion makes of it, or, for a value it cannot
// convert, the text as it was.
func jsonText(kind byte, text []byte, f input.Format) string {
	if f.Typed() {
		return string(text) // kept as the import rendered it
	}
	c := value.Cell{B: text, Kind: value.CellText}
	switch kind {
	case FieldString:
		c.Kind = value.CellString
	case fieldNumber:
		c.Kind = value.CellNumber
	case fieldBool:
		c.Kind = value.CellBool
	case FieldJSON:
		c.Kind = value.CellJSON
	}
	v, code, _ := value.Convert(c, value.JSON)
	if code != "" || v.Null {
		return string(text)
	}
	return string(v.B)
}

// MaxValue bounds the raw value kept with a reject, and MaxRow
// the raw row: longer rows are not kept (the reject keeps its identity).
const (
	MaxValue = 1024
	MaxRow   = 64 << 10
)

// RawRow is a row as the file holds it, for a reject found after the plan
// pass (a row the database refused).
type RawRow struct {
	Offset int64  // where the row starts; -1 in Parquet and Arrow files
	Text   string // the row's text (text formats); empty when over 64 KiB
	Fields string // every field of the row, as Reject.Fields; empty when over 64 KiB
}
