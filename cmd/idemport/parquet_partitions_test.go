package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/idemport/idemport/internal/testkit"
)

// TestParquetRowGroupPartitionsResume kills the import of a Parquet file of
// one row group of 1,000 rows, planned as 10 partitions of 100 rows, after
// 4 of them committed. The rerun must skip exactly those 4, commit the
// other 6, and leave the table row for row and value for value as an
// import that was never killed.
func TestParquetRowGroupPartitionsResume(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeOneGroup(t, filepath.Join(dir, "orders.parquet"), 1000)
	args := []string{"--partition-rows", "100", "orders.parquet"}
	full, _ := importRead(t, dir, 0, append([]string{"--into", filepath.Join(dir, "full.db")}, args...)...)
	if full.Partitions.Total != 10 || full.Partitions.Committed != 10 {
		t.Fatalf("full import: %+v, want 10 partitions", full.Partitions)
	}
	killed := testkit.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit:4"}, append([]string{"import"}, args...)...)
	if killed.Signal != syscall.SIGKILL {
		t.Fatalf("not killed: %d %s", killed.Code, killed.Stderr)
	}
	res, _ := importRead(t, dir, 0, args...)
	if res.Outcome != "resumed" || res.Partitions.Total != 10 || res.Partitions.Skipped != 4 || res.Partitions.Committed != 6 {
		t.Fatalf("rerun: %+v", res)
	}
	rows := func(path string) [][3]string {
		db := testkit.Open(t, path)
		if n, d := testkit.Int(t, db, `SELECT count(*) FROM orders`), testkit.Int(t, db, `SELECT count(DISTINCT id) FROM orders`); n != 1000 || d != 1000 {
			t.Fatalf("%s: %d rows, %d distinct ids, want 1000 and 1000", filepath.Base(path), n, d)
		}
		q, err := db.Query(`SELECT id, label, quote(amount) FROM orders ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		var out [][3]string
		for q.Next() {
			var r [3]string
			if err := q.Scan(&r[0], &r[1], &r[2]); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		if err := q.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	got, want := rows(filepath.Join(dir, "idemport.db")), rows(filepath.Join(dir, "full.db"))
	if !reflect.DeepEqual(got, want) {
		for i := range want {
			if i >= len(got) || got[i] != want[i] {
				t.Fatalf("row %d: got %v, want %v", i+1, got[min(i, len(got)-1)], want[i])
			}
		}
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	if want[0] != [3]string{"1", "row-1", "0.25"} || want[999] != [3]string{"1000", "row-1000", "250.0"} {
		t.Fatalf("first and last rows %v %v", want[0], want[999])
	}
}

// writeOneGroup writes a Parquet file of n rows in one row group: id
// (1..), label ("row-<id>") and amount (id/4).
func writeOneGroup(t *testing.T, path string, n int) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "label", Type: arrow.BinaryTypes.String},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(int64(n))), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for id := 1; id <= n; id++ {
		b.Field(0).(*array.Int64Builder).Append(int64(id))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("row-%d", id))
		b.Field(2).(*array.Float64Builder).Append(float64(id) / 4)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
