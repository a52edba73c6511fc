package pipeline

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// exactValue is a value as a file writes it, and the text a decimal
// column holds for it (PostgreSQL's numeric, and idemport's decimal text
// on SQLite: no exponent, zero unsigned, the scale kept).
type exactValue struct{ file, decimal string }

// floatExact are values a text file's column is read as float64 for (each
// means the number its float64 means), written in forms a float64 does not
// keep: the scale (4.0, 4.50), an exponent, a signed zero, and digits a
// float64 prints with an exponent.
var floatExact = []exactValue{
	{"4", "4"}, {"4.0", "4.0"}, {"4.50", "4.50"}, {"-0", "0"}, {"1e3", "1000"}, {"2.5E-3", "0.0025"},
	{"476316062747.79", "476316062747.79"}, {"418225651099.50", "418225651099.50"}, {"0.1", "0.1"},
	{"-12345678901.25", "-12345678901.25"}, {"9007199254740992", "9007199254740992"}, {"123456789012345", "123456789012345"},
}

// tableText returns, by id, the text of column v of table (as text on
// either database).
func tableText(t *testing.T, f *fx, table string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, r := range f.rows(t, `SELECT `+f.tg.Text("id")+`, `+f.tg.Text("v")+` FROM `+table) {
		got[asText(r[0])] = asText(r[1])
	}
	return got
}

func wantTable(t *testing.T, f *fx, table string, want map[string]string) {
	t.Helper()
	got := tableText(t, f, table)
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: row %s holds %q, the file wrote %q", table, id, got[id], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, want %d: %v", table, len(got), len(want), got)
	}
}

// TestWidenKeepsTheFileDigits: an int64 column widened (--evolve widen) by
// a file whose column is read as float64 becomes decimal, and holds each
// of the file's numbers as the file wrote it (4 stays 4, never 4.0; 4.50
// keeps its scale), as CSV and as JSONL, and with --atomic (through the
// staging table); a decimal column takes such a file the same way, and a
// text column the file's text itself.
func TestWidenKeepsTheFileDigits(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := newFx(t, name)
		ctx := context.Background()
		for _, format := range []string{"csv", "jsonl"} {
			for _, into := range []string{"int64", "decimal", "text", "int64_atomic", "text_atomic"} {
				table := "w_" + format + "_" + into
				atomic := strings.HasSuffix(into, "_atomic")
				into := strings.TrimSuffix(into, "_atomic")
				t.Run(table, func(t *testing.T) {
					seed, first := "1", "1"
					switch into {
					case "decimal":
						seed, first = "123456789012345678901234567890.5", "123456789012345678901234567890.5"
					case "text":
						seed, first = "abc", "abc"
					}
					f.write(t, table+"_seed.csv", "id,v\n1,"+seed+"\n")
					res := f.e.Import(ctx, Request{Path: f.dir + "/" + table + "_seed.csv", Mapping: Mapping{Table: table, Key: []string{"id"}}})
					wantImported(t, res, 1)
					var b strings.Builder
					want := map[string]string{"1": first}
					if format == "csv" {
						b.WriteString("id,v\n")
					}
					for i, v := range floatExact {
						id := fmt.Sprint(i + 2)
						if format == "csv" {
							fmt.Fprintf(&b, "%s,%s\n", id, v.file)
						} else {
							fmt.Fprintf(&b, "{\"id\": %s, \"v\": %s}\n", id, v.file)
						}
						want[id] = v.decimal
						if into == "text" {
							want[id] = v.file
						}
					}
					path := f.write(t, table+"."+format, b.String())
					res = f.e.Import(ctx, Request{Path: path, Mapping: Mapping{Table: table, Key: []string{"id"}, Evolve: EvolveWiden, Atomic: atomic}})
					wantImported(t, res, int64(len(floatExact)))
					wantTable(t, f, table, want)
				})
			}
		}
	})
}

// TestWidenedUnderAPartitionKeepsTheFileText: another import widens the
// column a file's partitions write (int64 → decimal → text) after the
// file's first partition committed and while its next is already read for
// the column as it was. The partitions after it write the file's text
// into the text column, never a float64's digits nor a decimal's
// canonical text.
func TestWidenedUnderAPartitionKeepsTheFileText(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := newFx(t, name)
		ctx := context.Background()
		res := f.e.Import(ctx, Request{Path: f.write(t, "seed.csv", "id,v\n1,7\n"), Mapping: Mapping{Table: "u", Key: []string{"id"}}})
		wantImported(t, res, 1)
		// The first partition's values are written alike whatever reads
		// them; the later ones are not.
		var b strings.Builder
		b.WriteString("id,v\n10,1.5\n11,2\n")
		want := map[string]string{"1": "7", "10": "1.5", "11": "2", "1000": "abc"}
		// Each partition of two rows has a value whose decimal text is not
		// the file's (1e3 is 1000), so that a partition read for the
		// decimal column is told from one read for the text column.
		decimalNotText := []string{"1e3", "-0", "2.5E-3", "1E2", "-0.0", "5e0"}
		for i, v := range floatExact {
			id := fmt.Sprint(i + 20)
			d := decimalNotText[i%len(decimalNotText)]
			fmt.Fprintf(&b, "%s,%s\n%s,%s\n", id, d, fmt.Sprint(i+100), v.file)
			want[id], want[fmt.Sprint(i+100)] = d, v.file
		}
		other := f.open(t, Options{})
		text := f.write(t, "text.csv", "id,v\n1000,abc\n")
		hook := &atPoint{at: "after-partition-commit", do: func() {
			res := other.Import(ctx, Request{Path: text, Mapping: Mapping{Table: "u", Key: []string{"id"}, Evolve: EvolveWiden}})
			if res.Err != nil || len(res.ColumnsWidened) != 1 {
				t.Errorf("the widening import: %s %v %v", res.Outcome, res.ColumnsWidened, res.Err)
			}
		}}
		e := f.open(t, Options{Failpoints: hook})
		res = e.Import(ctx, Request{Path: f.write(t, "floats.csv", b.String()), PartitionRows: 2, Workers: 1,
			Mapping: Mapping{Table: "u", Key: []string{"id"}, Evolve: EvolveWiden}})
		wantImported(t, res, int64(2+2*len(floatExact)))
		wantTable(t, f, "u", want)
	})
}

// TestParquetFloatIntoExactColumns: a Parquet float64 has no text of its
// own; into a decimal or text column it lands as the shortest plain
// decimal that reads back as it (476316062747.79, never
// 4.7631606274779e+11, and 4, never 4.0).
func TestParquetFloatIntoExactColumns(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := newFx(t, name)
		ctx := context.Background()
		prices := []float64{4, 4.5, 476316062747.79, 418225651099.5, 0.1, 1e21, 2.5e-7, -12345678901.25}
		plain := []string{"4", "4.5", "476316062747.79", "418225651099.5", "0.1", "1000000000000000000000", "0.00000025", "-12345678901.25"}
		ids := make([]int64, len(prices))
		for i := range ids {
			ids[i] = int64(i + 1)
		}
		for _, into := range []string{"decimal", "text"} {
			t.Run(into, func(t *testing.T) {
				table := "p_" + into
				seed := map[string]string{"decimal": "123456789012345678901234567890.5", "text": "abc"}[into]
				res := f.e.Import(ctx, Request{Path: f.write(t, table+".csv", "id,price\n100,"+seed+"\n"), Mapping: Mapping{Table: table, Key: []string{"id"}}})
				wantImported(t, res, 1)
				path := f.writeParquet(t, table+".parquet", ids, prices)
				res = f.e.Import(ctx, Request{Path: path, Mapping: Mapping{Table: table, Key: []string{"id"}}})
				wantImported(t, res, int64(len(prices)))
				want := map[string]string{"100": seed}
				for i, p := range plain {
					want[fmt.Sprint(i+1)] = p
				}
				got := map[string]string{}
				for _, r := range f.rows(t, `SELECT `+f.tg.Text("id")+`, `+f.tg.Text("price")+` FROM `+table) {
					got[asText(r[0])] = asText(r[1])
				}
				for id, w := range want {
					if got[id] != w {
						t.Errorf("%s: row %s holds %q, want %q", table, id, got[id], w)
					}
				}
			})
		}
	})
}

func asText(v any) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	if v == nil {
		return "NULL"
	}
	return fmt.Sprint(v)
}
