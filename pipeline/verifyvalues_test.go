package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/testkit"
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

// TestVerifyComparesValues imports a file by key (last wins, and by a
// version column) whose keys repeat and whose values are at the edges
// (int64 limits, a long decimal, an empty string and NULL): verify finds
// it in order. Values changed behind idemport's back by SQL — a decimal's
// scale, an empty string made NULL, an integer — are each reported with
// key, column, stored and file values; rows another file wrote since are
// not. Applied again (--reapply), the file puts them back and verify is
// clean.
func TestVerifyComparesValues(t *testing.T) {
	t.Parallel()
	const file = "id,v,amount,big,note\n" +
		"1,1,1.50,9223372036854775807,x\n" +
		"2,1,2.25,-9223372036854775808,\"\"\n" +
		"1,3,3.10,0,winner\n" +
		"3,1,0.000000000000000000012345678901234567890,5,\n" +
		"1,2,4.00,1,last\n"
	for _, mode := range []struct {
		name    string
		version string
		winner  []string // id 1's row as stored: amount, big, note
	}{
		{"last wins", "", []string{"4.00", "1", "last"}},
		{"version", "v", []string{"3.10", "0", "winner"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			testkit.Each(t, func(t *testing.T, name string) {
				f := newFx(t, name)
				ctx := context.Background()
				req := Request{Path: f.write(t, "prices.csv", file), Mapping: Mapping{Table: "prices", Key: []string{"id"}, Version: mode.version,
					Columns: map[string]idemtype.Type{"amount": idemtype.Decimal}}}
				f.wantOutcome(t, f.e.Import(ctx, req), Imported)
				got := fmt.Sprint(f.rows(t, `SELECT CAST(amount AS TEXT), CAST(big AS TEXT), note FROM prices WHERE id = 1`))
				if want := fmt.Sprint([][]any{{mode.winner[0], mode.winner[1], mode.winner[2]}}); got != want {
					t.Fatalf("id 1 holds %s, want %s", got, want)
				}
				verify := func() *VerifyReport {
					t.Helper()
					rep, err := f.e.Verify(ctx, req)
					if err != nil {
						t.Fatal(err)
					}
					return rep
				}
				if rep := verify(); len(rep.Differences) != 0 || rep.DifferingRows != 0 {
					t.Fatalf("verify after the import: %+v", rep)
				}
				// Behind idemport's back.
				short := strings.TrimSuffix(mode.winner[0], "0")
				f.exec(t, `UPDATE prices SET amount = '`+short+`' WHERE id = 1`)
				f.exec(t, `UPDATE prices SET note = NULL WHERE id = 2`)
				f.exec(t, `UPDATE prices SET big = 6 WHERE id = 3`)
				rep := verify()
				var diffs []string
				for _, d := range rep.Values {
					diffs = append(diffs, fmt.Sprintf("%s/%s: %s→%s", strings.Join(d.KeyValues, ","), d.Column, textOf(d.Stored), textOf(d.File)))
				}
				slices.Sort(diffs)
				want := []string{"1/amount: " + short + "→" + mode.winner[0], "2/note: NULL→", "3/big: 6→5"}
				if rep.DifferingRows != 3 || !slices.Equal(diffs, want) || !rep.Reapply || len(rep.Differences) != 1 {
					t.Fatalf("verify after changes by SQL: %d rows %q, want %q; %+v", rep.DifferingRows, diffs, want, rep)
				}
				// A row another file wrote since is that file's to answer for.
				f.wantOutcome(t, f.e.Import(ctx, Request{Path: f.write(t, "later.csv", "id,v,amount,big,note\n2,9,7.70,7,later\n"), Mapping: req.Mapping}), Imported)
				if rep := verify(); rep.DifferingRows != 2 {
					t.Fatalf("verify after another file wrote id 2: %+v", rep)
				}
				again := req
				again.Reapply = true
				f.wantOutcome(t, f.e.Import(ctx, again), Imported)
				if rep := verify(); len(rep.Differences) != 0 || rep.DifferingRows != 0 {
					t.Fatalf("verify after --reapply: %+v", rep)
				}
			})
		})
	}
}

func textOf(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}
