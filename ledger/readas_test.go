package ledger

import "testing"

// TestSameMappingReadAs: mappings that differ only in column types naming
// how the column is read anyway (ReadAs) are the same mapping, in either
// direction; any other difference, a type naming something else, or no
// ReadAs at all, is not; a conflict names only the types that matter.
func TestSameMappingReadAs(t *testing.T) {
	doc := func(columns string) string {
		return `{"mapping_version":1,"table":"q","key":["id"],"version_column":"","columns":` + columns + `,"format":"csv","delimiter":",","quotes":true}`
	}
	readAs := map[string]string{"id": "int64", "qty": "float64", "note": "string"}
	for _, c := range []struct {
		name, was, now string
		readAs         map[string]string
		same           bool
		how            string
	}{
		{"restated by the rerun", doc(`{}`), doc(`{"id":"int64","qty":"float64"}`), readAs, true, ""},
		{"restated by the first", doc(`{"qty":"float64"}`), doc(`{}`), readAs, true, ""},
		{"restated by both, differently", doc(`{"qty":"float64"}`), doc(`{"id":"int64"}`), readAs, true, ""},
		{"another type", doc(`{"qty":"float64"}`), doc(`{"id":"int64","qty":"string"}`), readAs, false, `columns was {"qty":"float64"}, now {"qty":"string"}`},
		{"a type the table does not have", doc(`{}`), doc(`{"qty":"decimal"}`), readAs, false, `columns was {}, now {"qty":"decimal"}`},
		{"a column the table lacks", doc(`{}`), doc(`{"extra":"string"}`), readAs, false, `columns was {}, now {"extra":"string"}`},
		{"restated, but the key differs", doc(`{"qty":"float64"}`), `{"mapping_version":1,"table":"q","key":["qty"],"version_column":"","columns":{},"format":"csv","delimiter":",","quotes":true}`, readAs, false,
			`key was ["id"], now ["qty"]`},
		{"no table", doc(`{"qty":"float64"}`), doc(`{}`), nil, false, `columns was {"qty":"float64"}, now {}`},
		{"stored mapping garbled", `not json`, doc(`{}`), readAs, false, "stored mapping cannot be compared"},
	} {
		t.Run(c.name, func(t *testing.T) {
			op := &Operation{MappingDigest: digest(c.was), Mapping: c.was, ContentDigest: digest("content")}
			id := Identity{MappingDigest: digest(c.now), Mapping: c.now, ContentDigest: digest("content"), ReadAs: c.readAs}
			if got := id.SameMapping(op); got != c.same {
				t.Fatalf("SameMapping = %v, want %v", got, c.same)
			}
			what, how := Difference(op, id)
			if c.same && (what != "" || how != "") || !c.same && (what != "mapping" || how != c.how) {
				t.Fatalf("Difference = %q, %q; want %q", what, how, c.how)
			}
			if d, _ := Decide(Situation{Op: &Operation{State: Completed, MappingDigest: op.MappingDigest, Mapping: op.Mapping, ContentDigest: op.ContentDigest}, ID: id}); (d == Duplicate) != c.same {
				t.Fatalf("Decide = %s", d)
			}
		})
	}
}
