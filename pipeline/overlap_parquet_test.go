package pipeline

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/idemport/idemport/internal/testkit"
)

// overlapParquetRows is the rows of writeOverlapParquet's files: over
// overlapBytes of Parquet data, uncompressed.
const overlapParquetRows = 120_000

// writeOverlapParquet writes a Parquet file of overlapParquetRows rows in
// row groups of groupRows, of the values other writers' files carry: int64
// edges, uint64, decimals stored as INT64 and as fixed-length bytes,
// millisecond timestamps in UTC, a dictionary of strings, text with
// nulls, empty strings and more than ASCII, int32, booleans and floats.
// The row at ordinal bad (0: none) has a uint64 past the int64 maximum, a
// bad row. It returns the file's path.
func writeOverlapParquet(t *testing.T, dir, name string, groupRows int64, bad int) string {
	t.Helper()
	rec := overlapRecord(t, bad)
	defer rec.Release()
	tbl := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	defer tbl.Release()
	path := filepath.Join(dir, name)
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	props := parquet.NewWriterProperties(parquet.WithStoreDecimalAsInteger(true), parquet.WithMaxRowGroupLength(groupRows))
	if err := pqarrow.WriteTable(tbl, out, groupRows, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema())); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() < overlapBytes {
		t.Fatalf("the Parquet file is less than an overlap serves: %v %v", st, err)
	}
	return path
}

// overlapRecord returns the rows of writeOverlapParquet's files as one
// record batch, the row at ordinal bad (0: none) a bad row.
func overlapRecord(t *testing.T, bad int) arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "edge", Type: arrow.PrimitiveTypes.Int64},
		{Name: "big", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 12, Scale: 2}, Nullable: true},
		{Name: "wide", Type: &arrow.Decimal128Type{Precision: 38, Scale: 10}},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "sku", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "qty", Type: arrow.PrimitiveTypes.Int32},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	edges := []int64{math.MinInt64, math.MaxInt64, 1<<53 + 1, -(1<<53 + 1), 0, -1}
	floats := []float64{0.1, math.Copysign(0, -1), 1e300, 5e-324, -2.5}
	for i := int64(1); i <= overlapParquetRows; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		if e := i % 10; e < int64(len(edges)) {
			b.Field(1).(*array.Int64Builder).Append(edges[e])
		} else {
			b.Field(1).(*array.Int64Builder).Append(i * 7919)
		}
		switch {
		case i == int64(bad):
			b.Field(2).(*array.Uint64Builder).Append(math.MaxUint64)
		case i%1000 == 0:
			b.Field(2).(*array.Uint64Builder).Append(math.MaxInt64)
		default:
			b.Field(2).(*array.Uint64Builder).Append(uint64(i) * 104729)
		}
		if i%9 == 0 {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.Decimal128Builder).Append(decimal128.FromI64((i*1234567)%1_000_000_000_000 - 500_000_000_000))
		}
		b.Field(4).(*array.Decimal128Builder).Append(decimal128.FromI64(i * 99991).Mul(decimal128.FromI64(1_000_000_007)).Negate())
		if i%7 == 0 {
			b.Field(5).AppendNull()
		} else {
			b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp((i - 60_000) * 86_399_123))
		}
		if err := b.Field(6).(*array.BinaryDictionaryBuilder).AppendString(fmt.Sprintf("SKU-%03d", i%50)); err != nil {
			t.Fatal(err)
		}
		switch {
		case i%11 == 0:
			b.Field(7).AppendNull()
		case i%13 == 0:
			b.Field(7).(*array.StringBuilder).Append("")
		default:
			b.Field(7).(*array.StringBuilder).Append(fmt.Sprintf("note %d ünïcødé \"quoted\", %x", i, uint32(i*2654435761)))
		}
		b.Field(8).(*array.Int32Builder).Append(int32(i%2001) - 1000)
		if i%5 == 0 {
			b.Field(9).AppendNull()
		} else {
			b.Field(9).(*array.BooleanBuilder).Append(i%2 == 0)
		}
		b.Field(10).(*array.Float64Builder).Append(floats[i%int64(len(floats))])
	}
	return b.NewRecordBatch()
}

// parquetTableText returns every row of table as its columns' text (timestamps
// as fixed-width UTC text), and the row of the file that wrote it, in the
// order of those rows.
func parquetTableText(t *testing.T, f *fx, table string) []string {
	t.Helper()
	var cols []string
	for _, c := range []string{"id", "edge", "big", "price", "wide", "sku", "note", "qty", "ok", "f", "_idemport_row"} {
		cols = append(cols, f.tg.Text(c))
	}
	cols = append(cols, f.tg.TimeText("at"))
	var out []string
	for _, r := range f.rows(t, fmt.Sprintf(`SELECT %s FROM %s ORDER BY _idemport_row`, strings.Join(cols, ", "), table)) {
		out = append(out, fmt.Sprint(r...))
	}
	return out
}

// TestOverlapLandsParquet imports Parquet files of over 8 MiB whose row
// groups are partitions (in ordinal mode, by key, and with one bad row
// within --max-rejects, which the pass that leaves columns undecoded meets
// in the third partition and plans again: on SQLite; on PostgreSQL the
// pass decodes every column of this file), the overlap holding partitions
// written before the plan is known (passHold), and one of a single row
// group cut into partitions, which the overlap does not write. The
// overlap is kept, or not used, and the whole table, value by value as
// text with each row's lineage, is the table the same file makes imported
// with two workers, which never overlap; the counts are the plan's.
func TestOverlapLandsParquet(t *testing.T) {
	t.Parallel()
	const partRows = 10_000
	cases := []struct {
		name      string
		groupRows int64
		key       []string
		bad       int
		max       RejectLimit
	}{
		{name: "groups", groupRows: partRows},
		{name: "key", groupRows: partRows, key: []string{"id"}},
		{name: "rescan", groupRows: partRows, bad: 2*partRows + 17, max: RejectLimit{Count: 1}},
		{name: "one-group", groupRows: overlapParquetRows},
	}
	testkit.Each(t, func(t *testing.T, name string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				f := newFx(t, name)
				path := writeOverlapParquet(t, f.dir, "data.parquet", c.groupRows, c.bad)
				overlaps := c.groupRows < overlapParquetRows
				hold := newPassHold(3)
				e, log := f.openHeld(t, hold)
				req := Request{Path: path, Mapping: Mapping{Table: "t", Key: c.key}, PartitionRows: partRows, MaxRejects: c.max,
					Lease: time.Minute}
				if overlaps {
					req.Progress = hold.progress
				}
				res := e.Import(context.Background(), req)
				if res.Err != nil || res.Outcome != Imported {
					t.Fatalf("%s: %v", res.Outcome, res.Err)
				}
				if n := hold.atHold.Load(); overlaps && n < 3 {
					t.Fatalf("the overlap wrote %d partitions before the plan was known, want 3: this test proves less than it says\n%s", n, log)
				}
				if log.has(overlapKeptLog) != overlaps || log.has(overlapRolledLog) || !overlaps && hold.written.Load() > 0 {
					t.Fatalf("the overlap was kept: %v, want %v; it wrote %d partitions\n%s", log.has(overlapKeptLog), overlaps, hold.written.Load(), log)
				}
				var rejected int64
				if c.bad > 0 {
					rejected = 1
				}
				n := int64(overlapParquetRows)
				if got := res.Rows; got.Read != n || got.Inserted != n-rejected || got.Rejected != rejected || got.Updated != 0 || got.Unchanged != 0 {
					t.Fatalf("rows %+v, want %d read, %d inserted, %d rejected", got, n, n-rejected, rejected)
				}
				if res.Partitions.Committed != res.Partitions.Total || res.Partitions.Total != n/partRows {
					t.Fatalf("partitions %+v, want %d, every one committed by this run", res.Partitions, n/partRows)
				}

				ref := f.open(t, Options{})
				refReq := Request{Path: path, Mapping: Mapping{Table: "ref", Key: c.key}, PartitionRows: partRows, MaxRejects: c.max,
					Lease: time.Minute, Workers: 2}
				if r := ref.Import(context.Background(), refReq); r.Err != nil || r.Outcome != Imported || r.Rows != res.Rows {
					t.Fatalf("the import with two workers: %s %+v (%v), want imported as %+v", r.Outcome, r.Rows, r.Err, res.Rows)
				}
				got, want := parquetTableText(t, f, "t"), parquetTableText(t, f, "ref")
				if int64(len(got)) != n-rejected {
					t.Fatalf("t holds %d rows, want %d", len(got), n-rejected)
				}
				for i := range max(len(got), len(want)) {
					if i >= len(got) || i >= len(want) || got[i] != want[i] {
						t.Fatalf("t holds %d rows, the import with two workers %d; they differ at row %d:\n%q\n%q",
							len(got), len(want), i, got[min(i, len(got)-1)], want[min(i, len(want)-1)])
					}
				}

				again := e.Import(context.Background(), req)
				if again.Outcome != Duplicate {
					t.Fatalf("rerun: %s (%v), want a duplicate", again.Outcome, again.Err)
				}
			})
		}
	})
}

// TestOverlapOfARefusedParquetFile imports a Parquet file over 8 MiB whose
// last partition (a row group) holds a bad row (a uint64 past the int64 maximum), its
// first partitions written by the overlap before the plan is known
// (passHold): the file is refused and leaves no trace, and the overlap was
// dropped by settle as the plan bars the file.
func TestOverlapOfARefusedParquetFile(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		t.Parallel()
		f := newFx(t, name)
		path := writeOverlapParquet(t, f.dir, "data.parquet", 10_000, overlapParquetRows-3)
		before := f.catalog(t)
		hold := newPassHold(1)
		e, log := f.openHeld(t, hold)
		req := Request{Path: path, Mapping: Mapping{Table: "t"}, PartitionRows: 10_000, Lease: time.Minute, Progress: hold.progress}
		res := e.Import(context.Background(), req)
		reason := fmt.Sprintf(`1 of %d rows is bad (at most 0 allowed); row %d column "big"`, overlapParquetRows, overlapParquetRows-3)
		if res.Outcome != Refused || res.Refusal == nil || !strings.Contains(refusalText(res.Refusal), reason) {
			t.Fatalf("%s %+v (%v), want refused: %s", res.Outcome, res.Refusal, res.Err, reason)
		}
		if n := hold.atHold.Load(); n < 1 {
			t.Fatalf("the overlap wrote no partition before the plan was known: this test proves nothing\n%s", log)
		}
		checkNoTrace(t, f, before)
		if !log.has(overlapDroppedLog) || !log.has(overlapRolledLog) || log.has(overlapKeptLog) {
			t.Fatalf("the overlap was not dropped as the plan bars the file:\n%s", log)
		}
	})
}
