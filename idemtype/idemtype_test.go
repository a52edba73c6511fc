package idemtype_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
)

var all = []idemtype.Type{idemtype.Bool, idemtype.Int64, idemtype.Float64, idemtype.Timestamp, idemtype.String, idemtype.JSON, idemtype.Decimal, idemtype.Date, idemtype.LocalTimestamp}

// TestFieldTypeOf checks the contract between whoever makes Arrow batches
// (reader) and whoever stores them (sink): a field made for a type is read
// back as that type, and a field from elsewhere by its Arrow type alone.
func TestFieldTypeOf(t *testing.T) {
	for _, typ := range all {
		f := typ.Field("c")
		if got := idemtype.TypeOf(f); got != typ || !f.Nullable || f.Name != "c" || !arrow.TypeEqual(f.Type, typ.ArrowType()) {
			t.Errorf("%s: field %v reads back as %s", typ, f, got)
		}
		_, marked := f.Metadata.GetValue(idemtype.MetadataType)
		if want := typ == idemtype.JSON || typ == idemtype.Decimal; marked != want {
			t.Errorf("%s: metadata %v", typ, f.Metadata)
		}
	}
	for _, c := range []struct {
		f    arrow.Field
		want idemtype.Type
	}{
		{arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32}, idemtype.String},
		{arrow.Field{Name: "x", Type: &arrow.TimestampType{Unit: arrow.Second, TimeZone: "UTC"}}, idemtype.Timestamp},
		{arrow.Field{Name: "x", Type: &arrow.TimestampType{Unit: arrow.Second}}, idemtype.LocalTimestamp},
		{arrow.Field{Name: "x", Type: arrow.FixedWidthTypes.Date32}, idemtype.Date},
		{arrow.Field{Name: "x", Type: arrow.BinaryTypes.String, Metadata: arrow.NewMetadata([]string{"idemport.type"}, []string{"json"})}, idemtype.JSON},
		{arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata([]string{"idemport.type"}, []string{"nonsense"})}, idemtype.Int64},
	} {
		if got := idemtype.TypeOf(c.f); got != c.want {
			t.Errorf("TypeOf(%v) = %s, want %s", c.f, got, c.want)
		}
	}
}

// TestTypeNames checks that every type's name parses back to it, in JSON
// too (stored plans hold the names), and the SQL spellings users write.
func TestTypeNames(t *testing.T) {
	for _, typ := range append(all, idemtype.Unknown) {
		b, err := json.Marshal(typ)
		if err != nil {
			t.Fatal(err)
		}
		var back idemtype.Type
		if err := json.Unmarshal(b, &back); err != nil || back != typ || string(b) != `"`+typ.StoredName()+`"` {
			t.Errorf("%s: %s reads back as %s (%v)", typ, b, back, err)
		}
	}
	for s, want := range map[string]idemtype.Type{"integer": idemtype.Int64, " TEXT ": idemtype.String, "numeric": idemtype.Decimal, "jsonb": idemtype.JSON, "timestamptz": idemtype.Timestamp,
		"timestamp": idemtype.LocalTimestamp, "date": idemtype.Date, "bigint": idemtype.Int64, "numeric(12,2)": idemtype.Decimal,
		"double precision": idemtype.Float64, "varchar(20)": idemtype.String, "boolean": idemtype.Bool, "real": idemtype.Float64,
		"timestamp with time zone": idemtype.Timestamp, "timestamp without time zone": idemtype.LocalTimestamp} {
		if got, err := idemtype.ParseType(s); err != nil || got != want {
			t.Errorf("ParseType(%q) = %s, %v", s, got, err)
		}
	}
	if _, err := idemtype.ParseType("uuid"); err == nil || !strings.Contains(err.Error(), "uuid") {
		t.Errorf("ParseType(uuid): %v", err)
	}
}

// TestPlanJSON pins the JSON of a partition and a reject: stored plans and
// refusals hold it.
func TestPlanJSON(t *testing.T) {
	p := idemtype.Partition{Index: 1, First: 2, Rows: 3, Rejected: 4, Offset: 5, Length: 6, CRC: 7, Superseded: []int64{2}}
	r := idemtype.Reject{Ordinal: 1, Offset: -1, Column: "c", Value: "v", Row: "row", Fields: "f", Code: "type", Message: "m"}
	for v, want := range map[any]string{
		&p: `{"index":1,"first":2,"rows":3,"rejected":4,"offset":5,"length":6,"crc":7}`,
		&r: `{"ordinal":1,"offset":-1,"column":"c","value":"v","code":"type","message":"m"}`,
	} {
		b, err := json.Marshal(v)
		if err != nil || string(b) != want {
			t.Errorf("%s (%v), want %s", b, err, want)
		}
	}
}

// TestRejectJSONKeepsBytes: a bad row's value that is not UTF-8 comes back
// from its JSON form byte for byte (value_bytes), a UTF-8 one as it was,
// with no value_bytes written for it; every other field survives.
func TestRejectJSONKeepsBytes(t *testing.T) {
	for _, v := range []string{"\xff\xfe", "a\x00b\xc3", "plain", "", "é\u2028"} {
		r := idemtype.Reject{Ordinal: 3, Offset: 17, Column: "name", Value: v, Row: "3,7\n", Fields: "f", Code: "utf8", Message: "text is not valid UTF-8"}
		b, err := json.Marshal([]idemtype.Reject{r})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "value_bytes") == utf8.ValidString(v) {
			t.Errorf("%q: value_bytes in %s", v, b)
		}
		var back []idemtype.Reject
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		r.Row, r.Fields = "", "" // not part of the JSON form
		if len(back) != 1 || back[0] != r {
			t.Errorf("%q: read back %+v from %s, want %+v", v, back, b, r)
		}
	}
}
