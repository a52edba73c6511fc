package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/sink"
)

// TestMissingColumnIsAUsageErrorForPlanAndImport maps, for each format, a
// column the file does not have (by --key, --version-col, --column and
// --snapshot-scope), on SQLite and PostgreSQL: plan (and import --dry-run,
// the same call) and import each say so as a usage error naming the flag
// and the file's columns. A file whose header (CSV) or schema (Parquet)
// names its columns is refused before the claim: no claim, nothing
// written. JSONL names its columns only in its rows, found by the plan
// pass: the import claims, then retracts the claim, leaving no operation
// and no attempt (only the file's digests, remembered at the claim).
func TestMissingColumnIsAUsageErrorForPlanAndImport(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		for _, m := range []struct {
			flag    string
			mapping Mapping
		}{
			{"--key missing", Mapping{Key: []string{"missing"}}},
			{"--version-col missing", Mapping{Key: []string{"id"}, Version: "missing"}},
			{"--column missing", Mapping{Columns: map[string]idemtype.Type{"missing": idemtype.Int64}}},
			{"--snapshot-scope missing", Mapping{Snapshot: &Snapshot{Scope: []sink.Term{{Column: "missing", Value: "x"}}}}},
		} {
			for _, format := range []string{"csv", "jsonl", "parquet"} {
				t.Run(m.flag+"/"+format, func(t *testing.T) {
					t.Parallel()
					f := newFx(t, name)
					var path string
					switch format {
					case "csv":
						path = f.write(t, "items.csv", "id,price\n1,2.5\n")
					case "jsonl":
						path = f.write(t, "items.jsonl", `{"id":1,"price":2.5}`+"\n")
					case "parquet":
						path = f.writeParquet(t, "items.parquet", []int64{1}, []float64{2.5})
					}
					m.mapping.Table = "items"
					req := Request{Path: path, Mapping: m.mapping}
					var skip []string // tables the import may write
					if format == "jsonl" {
						skip = []string{"files", "quickcheck"}
					}
					before := f.tg.Snapshot(t, skip...)
					check := func(who string, err error) {
						t.Helper()
						var ue *UsageError
						if !errors.As(err, &ue) || !strings.Contains(err.Error(), m.flag+": not a column of "+path+" (it has id, price)") {
							t.Errorf("%s: %v, want a usage error naming %s", who, err, m.flag)
						}
					}
					ro := f.open(t, Options{ReadOnly: true})
					_, err := PlanFile(context.Background(), ro, req)
					check("plan", err)
					res := f.e.Import(context.Background(), req)
					check("import", res.Err)
					if got := f.claimed.take(); len(got) > 0 && format != "jsonl" {
						t.Errorf("import claimed (%v) before finding the column missing", got)
					}
					if d := before.Diff(f.tg.Snapshot(t, skip...)); d != "" {
						t.Errorf("wrote to %s", d)
					}
				})
			}
		}
	})
}
