package pipeline

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/testkit"
)

// TestRestatedTypesAreTheSameMapping: a column type given that is how the
// column is read anyway changes nothing, so the runs with and without it
// are one mapping, whichever came first: for a text file, the type of the
// existing table's column (JSONL here; CSV in the CLI's tests); for a
// Parquet file, the type the file gives the column. The fingerprint shown
// stays that of the flags given. A type that changes how the column is
// read is still another mapping, and the conflict names only it.
func TestRestatedTypesAreTheSameMapping(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		f := newFx(t, name)
		ctx := context.Background()
		run := func(path string, cols map[string]idemtype.Type) *Result {
			t.Helper()
			return f.e.Import(ctx, Request{Path: path, Mapping: Mapping{Table: strings.Split(path[len(f.dir)+1:], ".")[0], Key: []string{"id"}, Columns: cols}})
		}
		pq := f.writeParquet(t, "pq.parquet", []int64{1, 2}, []float64{2.5, 3})
		js := f.write(t, "js.jsonl", `{"id":1,"qty":2,"at":"2026-11-28T09:30:00Z"}`+"\n"+`{"id":2,"qty":3,"at":"2026-11-29T09:30:00Z"}`+"\n")
		for _, c := range []struct {
			path        string
			first       map[string]idemtype.Type
			same        []map[string]idemtype.Type
			other       map[string]idemtype.Type
			differences string
		}{
			{pq, map[string]idemtype.Type{"price": idemtype.Float64},
				[]map[string]idemtype.Type{nil, {"id": idemtype.Int64}, {"id": idemtype.Int64, "price": idemtype.Float64}},
				map[string]idemtype.Type{"price": idemtype.String, "id": idemtype.Int64}, `columns was {"price":"float64"}, now {"price":"string"}`},
			{js, map[string]idemtype.Type{"qty": idemtype.Float64},
				[]map[string]idemtype.Type{nil, {"id": idemtype.Int64, "at": idemtype.Timestamp}, {"qty": idemtype.Float64, "at": idemtype.Timestamp}},
				map[string]idemtype.Type{"qty": idemtype.Decimal, "at": idemtype.Timestamp}, `columns was {"qty":"float64"}, now {"qty":"decimal"}`},
		} {
			first := run(c.path, c.first)
			f.wantOutcome(t, first, Imported)
			for _, cols := range c.same {
				res := run(c.path, cols)
				if res.Outcome != Duplicate || res.FileID != first.FileID {
					t.Errorf("%s with %v after %v: %s (%v), want a duplicate", c.path, cols, c.first, res.Outcome, res.Err)
				}
				if res.MappingDigest == first.MappingDigest {
					t.Errorf("%s with %v: mapping digest %s, the first's: the digest is the flags'", c.path, cols, res.MappingDigest)
				}
			}
			other := run(c.path, c.other)
			if other.Outcome != Conflict || !strings.Contains(fmt.Sprint(other.Err), "mapping differs") || !strings.Contains(fmt.Sprint(other.Err), c.differences) {
				t.Errorf("%s with %v: %s (%v), want a conflict saying %s", c.path, c.other, other.Outcome, other.Err, c.differences)
			}
		}
	})
}
