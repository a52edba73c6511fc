package pipeline

import (
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/sink"
)

// TestRecordedMappingRoundTrips: the mapping parseMapping reads back from
// an operation's canonical text has that same canonical text (so the same
// mapping digest), for every option the canonical form spells, and leaves
// at their defaults the format options the file's name already gives.
func TestRecordedMappingRoundTrips(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		path string
		m    Mapping
	}{
		{"default", "orders.csv", Mapping{Table: "orders"}},
		{"key and version", "orders.csv", Mapping{Table: "orders", Key: []string{"a", "b,c"}, Version: "v"}},
		{"types", "orders.csv", Mapping{Table: "t", Columns: map[string]idemtype.Type{"a": idemtype.Decimal, "b": idemtype.Timestamp, "c": idemtype.LocalTimestamp, "d": idemtype.Date, "e": idemtype.JSON, "f": idemtype.String}}},
		{"reading", "report.txt", Mapping{Table: "r", Format: reader.TSV, Delimiter: ';', Quotes: true, SkipLines: 2, NoHeader: true,
			Names: []string{"x", "y"}, Select: []string{"y"}, Rename: map[string]string{"y": "z"}, Null: []string{`\N`, "NA"}, Encoding: "windows-1252"}},
		{"tsv default", "a.tsv", Mapping{Table: "a"}},
		{"sheet", "book.xlsx", Mapping{Table: "b", Sheet: "Q3"}},
		{"write modes", "s.csv", Mapping{Table: "s", Key: []string{"id"}, Evolve: EvolveWiden, Atomic: true,
			Snapshot: &Snapshot{Soft: true, Scope: []sink.Term{{Column: "region", Value: "a=x&b"}, {Column: "day", Value: "1%"}}}}},
		{"jsonl", "e.jsonl.gz", Mapping{Table: "e", Key: []string{"id"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, digest := canonicalOf(tc.m, tc.path)
			got, err := parseMapping(text, tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if again, d := canonicalOf(got, tc.path); d != digest {
				t.Fatalf("read back as\n%s\nwant\n%s", again, text)
			}
			if f, _, _ := reader.Detect(tc.path); got.Format != "" && got.Format == f {
				t.Errorf("format %s spelt, though the name gives it", got.Format)
			}
		})
	}
}

// canonicalOf is the canonical mapping of m for a file at path, as
// identify makes it.
func canonicalOf(m Mapping, path string) (string, string) {
	f, _, _ := reader.Detect(path)
	if m.Format != "" {
		f = m.Format
	}
	delim := m.Delimiter
	if delim == 0 {
		delim = ','
		if f == reader.TSV {
			delim = '\t'
		}
	}
	return m.canonical(MappingVersion, f, delim, f == reader.CSV || m.Quotes)
}
