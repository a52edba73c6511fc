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

// TestBatchTakesAShortRest: a CSV partition a little over BatchBytes is
// read as one batch, not as a batch of BatchBytes and a rest of a few
// rows (each batch a COPY and a savepoint of its own on PostgreSQL); one
// whose rows past BatchBytes are more than a sixteenth of the batch's, or
// few but wide (100 KiB each), is cut at BatchBytes, or a sixteenth past
// it. Every row comes back exactly.
func TestBatchTakesAShortRest(t *testing.T) {
	const width = 1000
	at := int(partition.BatchBytes/width) + 1 // the row that reaches BatchBytes ends a batch
	for _, c := range []struct {
		name  string
		rows  int
		wide  int // the rows from at on are 100 KiB wide, not width
		sizes []int
	}{
		{"short rest", at + at/20, 0, []int{at + at/20}},
		{"long rest", at + at/8, 0, []int{at, at / 8}},
		{"wide rest", at + 5, 100 << 10, []int{at + 3, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := func(i int) string {
				w := width
				if i >= at && c.wide > 0 {
					w = c.wide
				}
				return wideText(i, w-len(fmt.Sprint(i))-2)
			}
			var csv strings.Builder
			csv.WriteString("id,text\n")
			for i := range c.rows {
				fmt.Fprintf(&csv, "%d,%s\n", i, text(i))
			}
			path := filepath.Join(t.TempDir(), "rest.csv")
			if err := os.WriteFile(path, []byte(csv.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionBytes: -1})
			if len(plan.Partitions) != 1 {
				t.Fatalf("%d partitions, want the whole file in one", len(plan.Partitions))
			}
			sizes, texts := batchesOf(t, f, plan)
			if fmt.Sprint(sizes) != fmt.Sprint(c.sizes) {
				t.Errorf("batches of %v rows, want %v", sizes, c.sizes)
			}
			if len(texts) != c.rows {
				t.Fatalf("%d rows read, want %d", len(texts), c.rows)
			}
			for i, s := range texts {
				if s != text(i) {
					t.Fatalf("row %d's text differs", i)
				}
			}
		})
	}
}
