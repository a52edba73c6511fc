package columnar

import (
	"context"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/idemport/idemport/reader/internal/partition"
)

// TestPartitionDecodesLargeBatches checks that a Parquet partition reader
// decodes decodeRows rows at a time however few its batches hold, and
// hands them out as slices of at most its batch size, every good row once
// and in order (textParquet's id is the row's ordinal less one).
func TestPartitionDecodesLargeBatches(t *testing.T) {
	const rows, batch = 150_000, 1000
	f, err := Open(testFile(t, "t.parquet", textParquet(t, rows, rows)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	plan, _, err := f.Scan(context.Background(), partition.ScanOptions{PartitionRows: rows})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Partitions) != 1 {
		t.Fatalf("%d partitions, want 1", len(plan.Partitions))
	}
	r, err := f.Partition(plan, plan.Partitions[0], batch)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	next, read := int64(1), int64(0)
	for {
		b, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if read == 0 && (r.cur == nil || r.cur.NumRows() != decodeRows) {
			n := int64(0)
			if r.cur != nil {
				n = r.cur.NumRows()
			}
			t.Errorf("the first batch decoded holds %d rows, want %d", n, decodeRows)
		}
		if b.Record.NumRows() > batch {
			t.Errorf("a batch of %d rows, more than %d", b.Record.NumRows(), batch)
		}
		ids := b.Record.Column(0).(*array.Int64)
		for i := range ids.Len() {
			o := b.Ordinals[i]
			if o < next || ids.Value(i) != o-1 {
				t.Fatalf("row of ordinal %d after %d: id %d", o, next-1, ids.Value(i))
			}
			next = o + 1
		}
		read += int64(ids.Len())
		b.Release()
	}
	if want := rows - plan.Rejected; read != want || read < rows/3 {
		t.Errorf("%d rows read, want %d (%d bad)", read, want, plan.Rejected)
	}
}
