package idemtype

import (
	"encoding/json"
	"unicode/utf8"
)

// Partition is a contiguous run of a file's rows, as a plan cuts the file:
// ordinals First..First+Rows-1. Offset and Length locate its bytes in the
// decompressed stream and CRC is their CRC-32C, so a reader can seek to it
// and prove the bytes are unchanged.
//
// For Parquet and Arrow files a partition is one row group or record batch:
// Offset is its index in the file and Length is 1 (plus, for the unit
// that holds the first row of the table, the rows before it that are not
// part of the table: --skip-lines), and CRC is the CRC-32C
// of the bytes it is decoded from (the row group's column chunks; the
// record batch's message, after the file's dictionaries or the stream's
// messages since the previous record batch).
type Partition struct {
	Index    int    `json:"index"`
	First    int64  `json:"first"`
	Rows     int64  `json:"rows"`
	Rejected int64  `json:"rejected"`
	Offset   int64  `json:"offset"`
	Length   int64  `json:"length"`
	CRC      uint32 `json:"crc"`
	// Superseded lists, in order, the ordinals of the partition's rows
	// that a later row of the file supersedes; its reader skips them.
	Superseded []int64 `json:"-"`
}

// Reject is one bad row: where it is in its file, the value and column at
// fault, and why (Code, one of reader's Code constants, and Message).
type Reject struct {
	Ordinal int64  `json:"ordinal"`
	Offset  int64  `json:"offset"` // -1 in Parquet and Arrow files, whose rows have no byte offset
	Column  string `json:"column,omitempty"`
	Value   string `json:"value,omitempty"` // at most 1 KiB of the raw value (its text, for typed formats)
	Row     string `json:"-"`               // the whole row as read (text formats), when at most 64 KiB
	// Fields are every field of the row (extra ones too), kinds and nulls
	// kept, for reader.RejectFields to decode; empty when the row is over 64 KiB.
	Fields  string `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// rejectJSON is Reject's JSON form: as its fields' tags say, and, when
// Value is not UTF-8 (which JSON text cannot hold: encoding/json writes
// U+FFFD for each such byte), its bytes exactly in value_bytes (base64),
// so that a report stored as JSON and read back shows the value the
// first refusal showed.
type rejectJSON struct {
	plainReject
	ValueBytes []byte `json:"value_bytes,omitempty"`
}

type plainReject Reject // Reject without its methods

// MarshalJSON writes r with value_bytes when its Value is not UTF-8.
func (r Reject) MarshalJSON() ([]byte, error) {
	v := rejectJSON{plainReject: plainReject(r)}
	if !utf8.ValidString(r.Value) {
		v.ValueBytes = []byte(r.Value)
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads what MarshalJSON writes: value_bytes, when present,
// is the Value.
func (r *Reject) UnmarshalJSON(b []byte) error {
	var v rejectJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = Reject(v.plainReject)
	if v.ValueBytes != nil {
		r.Value = string(v.ValueBytes)
	}
	return nil
}
