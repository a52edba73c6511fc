package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/internal/testkit"
)

// arrowRangeRows is the rows of TestArrowRangesKilledThenRerun's file, one
// record batch cut by --partition-rows 7000 into 8 ranges of 7,500 rows
// (more than a PostgreSQL batch of 7,000, less than a SQLite one).
const arrowRangeRows = 60_000

// TestArrowRangesKilledThenRerun kills the binary importing an Arrow IPC
// file of one record batch, cut into 8 partitions of ranges of its rows,
// inside the fourth range (3 committed, the fourth's rows written), then
// kills its rerun inside the range after the one it resumes from (read
// alone, decoding the batch's rows before it; the next read on from the
// same decoder). The last rerun resumes from the fifth range: the table,
// every value compared as text with each row's lineage (file and row), is
// the one the same file makes imported as one partition into another
// table; each row once; the operation completed with its counts adding
// up. In ordinal mode and by key, on every target.
func TestArrowRangesKilledThenRerun(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, mode := range []string{"ordinal", "key"} {
			t.Run(mode, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				writeArrowRanges(t, filepath.Join(dir, "data.arrow"), arrowRangeRows)
				var keyed []string
				if mode == "key" {
					keyed = []string{"--key", "id"}
				}
				args := append(append([]string{"import", "--table", "t", "--partition-rows", "7000"}, keyed...), "data.arrow")
				done := func() int64 {
					return testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("partitions")+` WHERE done = 1`)
				}
				killAlong(t, tg, dir, []string{"inside-partition:4", "inside-partition:2"}, args, func(i int) {
					if n, want := done(), []int64{3, 4}[i]; n != want {
						t.Fatalf("killed inside a range after the kill %d: %d ranges done, want %d", i+1, n, want)
					}
					if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM t`); n != done()*7500 {
						t.Fatalf("killed inside a range: t holds %d rows, its %d done ranges %d", n, done(), done()*7500)
					}
				})
				res := importTo(t, tg, dir, nil, 0, args[1:]...)
				if res.Outcome != "resumed" || res.Partitions.Total != 8 || res.Partitions.Skipped != 4 || res.Partitions.Committed != 4 {
					t.Fatalf("the last rerun: %s, partitions %+v; want resumed, 4 of 8 ranges skipped", res.Outcome, res.Partitions)
				}
				if n := testkit.Int(t, tg.DB, `SELECT count(DISTINCT id) FROM t`); n != arrowRangeRows {
					t.Fatalf("%d distinct ids, want %d", n, arrowRangeRows)
				}
				checkOverlapCounts(t, tg, arrowRangeRows)
				ref := append(append([]string{"--table", "ref", "--partition-rows", fmt.Sprint(arrowRangeRows)}, keyed...), "data.arrow")
				if r := importTo(t, tg, dir, nil, 0, ref...); r.Outcome != "imported" || r.Partitions.Total != 1 {
					t.Fatalf("the import as one partition: %s %+v", r.Outcome, r.Partitions)
				}
				got, want := arrowRangesText(t, tg, "t"), arrowRangesText(t, tg, "ref")
				if len(want) != arrowRangeRows {
					t.Fatalf("ref holds %d rows, want %d", len(want), arrowRangeRows)
				}
				for i := range max(len(got), len(want)) {
					if i >= len(got) || i >= len(want) || got[i] != want[i] {
						t.Fatalf("t holds %d rows, the import as one partition %d; they differ at row %d:\n%q\n%q",
							len(got), len(want), i, got[min(i, len(got)-1)], want[min(i, len(want)-1)])
					}
				}
			})
		}
	})
}

// arrowRangesText returns every row of table, a file of writeArrowRanges
// imported, as its columns' text (the timestamp as fixed-width UTC text)
// and its lineage, the file and the row that wrote it, in file order.
func arrowRangesText(t *testing.T, tg *testkit.Target, table string) []string {
	t.Helper()
	var cols []string
	for _, c := range []string{"id", "price", "sku", "note", "f", "_idemport_file", "_idemport_row"} {
		cols = append(cols, tg.Text(c))
	}
	cols = append(cols, tg.TimeText("at"))
	var out []string
	for _, r := range testkit.Query(t, tg.DB, `SELECT `+strings.Join(cols, ", ")+` FROM `+table+` ORDER BY _idemport_row`) {
		out = append(out, fmt.Sprint(r...))
	}
	return out
}

// writeArrowRanges writes an Arrow IPC file of one record batch of n rows
// (as Arrow JS writes a table): id (1..n), price (a decimal, some NULL), at
// (a millisecond timestamp in UTC, some NULL), sku (a dictionary), note
// (text with NULLs, empty strings and more than ASCII) and f (a float64).
func writeArrowRanges(t *testing.T, path string, n int) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 12, Scale: 2}, Nullable: true},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "sku", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := int64(1); i <= int64(n); i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		if i%9 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Decimal128Builder).Append(decimal128.FromI64((i*1234567)%1_000_000_000_000 - 500_000_000_000))
		}
		if i%7 == 0 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp((i - 30_000) * 86_399_123))
		}
		if err := b.Field(3).(*array.BinaryDictionaryBuilder).AppendString(fmt.Sprintf("SKU-%03d", i%50)); err != nil {
			t.Fatal(err)
		}
		switch {
		case i%11 == 0:
			b.Field(4).AppendNull()
		case i%13 == 0:
			b.Field(4).(*array.StringBuilder).Append("")
		default:
			b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("note %d ünïcødé, %x", i, uint32(i*2654435761)))
		}
		b.Field(5).(*array.Float64Builder).Append(float64(i) / 8)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	testkit.WriteArrowFile(t, path, rec)
}
