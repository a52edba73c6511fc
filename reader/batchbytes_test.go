package reader

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/reader/internal/partition"
)

// wideText is row i's text: width bytes, different for each row.
func wideText(i, width int) string {
	return fmt.Sprintf("%08d", i) + strings.Repeat(string(rune('a'+i%26)), width-8)
}

// batchesOf reads every partition of plan and returns each batch's row
// count and the rows' texts (column 1) in order.
func batchesOf(t *testing.T, f *File, plan *Plan) (sizes []int, texts []string) {
	t.Helper()
	for b, err := range f.Batches(plan, plan.Partitions, 1<<20) {
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, int(b.Record.NumRows()))
		col := b.Record.Column(1).(*array.String)
		for i := range col.Len() {
			texts = append(texts, col.Value(i))
		}
		b.Release()
	}
	return sizes, texts
}

// TestBatchesBoundedByBytes checks that however many rows a batch may
// hold, a partition of wide rows is read in batches of about BatchBytes:
// a CSV partition's batch ends with the row that reaches it, a Parquet row
// group is decoded a few rows at a time, and every row comes back exactly.
func TestBatchesBoundedByBytes(t *testing.T) {
	const width, n = 300 << 10, 40 // 12 MiB in all
	perBatch := int(partition.BatchBytes/width) + 1

	var csv strings.Builder
	csv.WriteString("id,text\n")
	for i := range n {
		fmt.Fprintf(&csv, "%d,%s\n", i, wideText(i, width))
	}
	path := filepath.Join(t.TempDir(), "wide.csv")
	if err := os.WriteFile(path, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionBytes: -1})
	if len(plan.Partitions) != 1 {
		t.Fatalf("%d partitions, want the whole file in one", len(plan.Partitions))
	}
	sizes, texts := batchesOf(t, f, plan)
	checkWideBatches(t, "csv", sizes, texts, perBatch, n, width)

	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "text", Type: arrow.BinaryTypes.String}}, nil))
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(wideText(i, width))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	pq := writeParquetRecord(t, "wide.parquet", rec, n, false)
	f, plan = scanChecked(t, pq, Options{}, ScanOptions{})
	if len(plan.Partitions) != 1 || plan.Partitions[0].Rows != n {
		t.Fatalf("parquet partitions %+v, want its one row group", plan.Partitions)
	}
	sizes, texts = batchesOf(t, f, plan)
	checkWideBatches(t, "parquet", sizes, texts, perBatch, n, width)
}

func checkWideBatches(t *testing.T, format string, sizes []int, texts []string, perBatch, n, width int) {
	t.Helper()
	if len(sizes) < 3 {
		t.Errorf("%s: batches of %v rows: not bounded by bytes", format, sizes)
	}
	for i, s := range sizes {
		if s > perBatch {
			t.Errorf("%s: batch %d holds %d rows of %d bytes, over %d bytes", format, i, s, width, partition.BatchBytes)
		}
	}
	if len(texts) != n {
		t.Fatalf("%s: %d rows read, want %d", format, len(texts), n)
	}
	for i, s := range texts {
		if s != wideText(i, width) {
			t.Fatalf("%s: row %d's text differs", format, i)
		}
	}
}
