package reader

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/valyala/fastjson"
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
	fieldString = 's'
	fieldNumber = 'n'
	fieldBool   = 'b'
	fieldJSON   = 'j'
	fieldRaw    = 'r'
	fieldBytes  = 'x'
)

// appendFields appends the payload of a row's cells to dst.
func appendFields(dst []byte, cells []cell) []byte {
	dst = append(dst, '[')
	for i, c := range cells {
		if i > 0 {
			dst = append(dst, ',')
		}
		kind := byte(fieldText)
		switch c.kind {
		case cellNull:
			dst = append(dst, "null"...)
			continue
		case cellString:
			kind = fieldString
		case cellNumber:
			kind = fieldNumber
		case cellBool:
			kind = fieldBool
		case cellJSON:
			kind = fieldJSON
		}
		dst = appendField(dst, kind, c.b)
	}
	return append(dst, ']')
}

// rawFields returns the payload of a row that could not be split.
func rawFields(raw []byte) string {
	raw = bytes.TrimSuffix(raw, []byte("\n"))
	raw = bytes.TrimSuffix(raw, []byte("\r"))
	return string(append(appendField([]byte{'['}, fieldRaw, raw), ']'))
}

// appendField appends one field of the payload: kind and text as a JSON
// string, or hex when the text is not UTF-8.
func appendField(dst []byte, kind byte, b []byte) []byte {
	if !utf8.Valid(b) {
		return appendJSONString(dst, append([]byte{fieldBytes, kind}, hex.EncodeToString(b)...))
	}
	return appendJSONString(dst, append([]byte{kind}, b...))
}

// arrowFields returns the payload of row i of rec: each value as the text
// the import would store (nested values as their JSON).
func (c *converter) arrowFields(rec arrow.RecordBatch, schema Schema, i int) string {
	dst := []byte{'['}
	for k := range c.cols {
		if k > 0 {
			dst = append(dst, ',')
		}
		a := rec.Column(k)
		v := newView(a)
		if _, ok := v.at(i); !ok {
			dst = append(dst, "null"...)
			continue
		}
		var r renderer
		var b []byte
		kind := byte(fieldString)
		if schema[k].Type == JSON {
			if c.cols[k].mode == modeJSON || c.cols[k].mode == modeQuote {
				b = r.json(nil, a, i)
			} else {
				b = r.text(nil, a, i)
			}
			if r.code == "" && fastjson.ValidateBytes(b) == nil {
				kind = fieldJSON
			} else {
				r = renderer{}
				b = r.text(nil, a, i)
			}
		} else {
			b = r.text(nil, a, i)
		}
		dst = appendField(dst, kind, b)
	}
	return string(append(dst, ']'))
}

// Field is one field of a quarantined row as text, or null.
type Field struct {
	Text string
	Null bool
}

// RejectFields decodes the fields a reject kept (Reject.Fields) of a file
// of format f, read with schema: one Field per column, holding the text a
// reader of that format would read the value from again (for JSON
// columns, the JSON document the import stores), and the fields the row
// had beyond the schema's columns. A quoted empty CSV field is an empty
// Text, an unquoted one Null, as the reader reads them.
func RejectFields(fields string, f Format, schema Schema) (cols, extra []Field, err error) {
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
			if i < len(schema) && schema[i].Type == JSON {
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
func jsonText(kind byte, text []byte, f Format) string {
	if f.typed() {
		return string(text) // kept as the import rendered it
	}
	c := cell{b: text, kind: cellText}
	switch kind {
	case fieldString:
		c.kind = cellString
	case fieldNumber:
		c.kind = cellNumber
	case fieldBool:
		c.kind = cellBool
	case fieldJSON:
		c.kind = cellJSON
	}
	v, code, _ := convert(c, JSON)
	if code != "" || v.null {
		return string(text)
	}
	return string(v.b)
}

// CheckJSON returns a reason code and message when b is not a JSON
// document a json column can hold, or empty strings when it is.
func CheckJSON(b []byte) (string, string) {
	if code, msg := checkText(b); code != "" {
		return code, msg
	}
	if err := fastjson.ValidateBytes(b); err != nil {
		return CodeJSON, "invalid JSON: " + err.Error()
	}
	return "", ""
}
