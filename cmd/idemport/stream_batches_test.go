package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/internal/testkit"
)

// TestStreamOfSmallBatchesResumes imports the orders data as Arrow JS
// wrote it (decimals, timestamps of seconds, dictionaries), re-encoded as
// an Arrow IPC stream of record batches of 7 rows, in partitions of about
// 50 rows: killed after its third partition committed, the rerun resumes,
// reads the stream once more from its start to its end (each partition
// taking it up where the one before left it) and decodes only the record
// batches of the partitions left; the table then holds, value by value,
// what the import of the same rows as CSV holds.
func TestStreamOfSmallBatchesResumes(t *testing.T) {
	t.Parallel()
	smallBatchesResume(t, "orders.arrows")
}

// TestFileOfSmallBatchesResumes is TestStreamOfSmallBatchesResumes for an
// Arrow IPC file of the same record batches, whose partitions gather them
// as a stream's do: the rerun decodes only the record batches of the
// partitions left, reads none of the bytes of those before, and the table
// holds exactly the CSV file's rows.
func TestFileOfSmallBatchesResumes(t *testing.T) {
	t.Parallel()
	smallBatchesResume(t, "orders.arrow")
}

// smallBatchesResume runs TestStreamOfSmallBatchesResumes for name, an IPC
// stream (.arrows) or file (.arrow).
func smallBatchesResume(t *testing.T, name string) {
	dir := t.TempDir()
	src := "../../testdata/otherwriters"
	csv, err := os.ReadFile(filepath.Join(src, "orders.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "orders.csv"), csv, 0o644); err != nil {
		t.Fatal(err)
	}
	isFile := filepath.Ext(name) == ".arrow"
	stream, batches := streamOfBatches(t, filepath.Join(src, "orders-arrowjs.arrow"), 7, isFile)
	if err := os.WriteFile(filepath.Join(dir, name), stream, 0o644); err != nil {
		t.Fatal(err)
	}
	// Partitions end with the batch that brings them to 50 rows: 8 batches
	// of 7, or 7 and the one of 1 row that ends each of the file's batches.
	var parts, partRows []int // record batches and rows of each partition
	for _, n := range batches {
		if len(parts) == 0 || partRows[len(parts)-1] >= 50 {
			parts, partRows = append(parts, 0), append(partRows, 0)
		}
		parts[len(parts)-1]++
		partRows[len(parts)-1] += n
	}
	if len(batches) != 47 || len(parts) != 6 {
		t.Fatalf("%d record batches, %d partitions", len(batches), len(parts))
	}

	args := []string{"--table", "s", "--partition-rows", "50", name}
	killed := testkit.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit:3"}, append([]string{"import"}, args...)...)
	if killed.Signal != syscall.SIGKILL {
		t.Fatalf("not killed: %d %s", killed.Code, killed.Stderr)
	}
	res, read := importRead(t, dir, 0, args...)
	if res.Outcome != "resumed" || res.Partitions.Skipped != 3 || res.Partitions.Total != int64(len(parts)) || res.Rows.Read != int64(300-partRows[0]-partRows[1]-partRows[2]) {
		t.Fatalf("rerun: %+v", res)
	}
	left := parts[3] + parts[4] + parts[5]
	if read.RowGroupsRead != int64(left) {
		t.Fatalf("the resumed run decoded %d record batches, want the %d of the partitions left", read.RowGroupsRead, left)
	}
	if !isFile && read.BytesRead > int64(len(stream))+4<<10 { // the stream once, and its schema to open it
		t.Fatalf("the resumed run read %d bytes of a %d-byte stream: the stream was read again for a partition", read.BytesRead, len(stream))
	}
	if isFile && read.BytesRead >= int64(len(stream)) { // a partition of a file reads its own batches alone
		t.Fatalf("the resumed run read %d bytes of a %d-byte file: it read the batches of the partitions done", read.BytesRead, len(stream))
	}
	importRead(t, dir, 0, "--table", "c", "--column", "unit_price:decimal", "orders.csv")

	db := testkit.Open(t, filepath.Join(dir, "idemport.db"))
	q := `SELECT order_id, customer_id, sku, quantity, CAST(unit_price AS TEXT), status, created_at, note FROM %s ORDER BY order_id`
	got, want := testkit.Query(t, db, fmt.Sprintf(q, "s")), testkit.Query(t, db, fmt.Sprintf(q, "c"))
	if len(want) != 300 || len(got) != len(want) {
		t.Fatalf("%d rows from %s, %d from the CSV file", len(got), name, len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("row %d: %s's %v, the CSV file's %v", i+1, name, got[i], want[i])
		}
	}
}

// streamOfBatches re-encodes the IPC file at path as an IPC stream (an
// IPC file if asFile) of record batches of n rows (copies, not slices),
// and returns it and the rows of each record batch.
func streamOfBatches(t *testing.T, path string, n int, asFile bool) ([]byte, []int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	fr, err := ipc.NewFileReader(bytes.NewReader(raw), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	var buf bytes.Buffer
	var w interface {
		Write(arrow.RecordBatch) error
		Close() error
	} = ipc.NewWriter(&buf, ipc.WithSchema(fr.Schema()), ipc.WithAllocator(mem))
	if asFile {
		if w, err = ipc.NewFileWriter(&buf, ipc.WithSchema(fr.Schema()), ipc.WithAllocator(mem)); err != nil {
			t.Fatal(err)
		}
	}
	var sizes []int
	for k := 0; k < fr.NumRecords(); k++ {
		rec, err := fr.RecordBatchAt(k)
		if err != nil {
			t.Fatal(err)
		}
		for from := int64(0); from < rec.NumRows(); from += int64(n) {
			to := min(rec.NumRows(), from+int64(n))
			cols := make([]arrow.Array, rec.NumCols())
			for c := range cols {
				part := array.NewSlice(rec.Column(c), from, to)
				if cols[c], err = array.Concatenate([]arrow.Array{part}, mem); err != nil {
					t.Fatal(err)
				}
				part.Release()
			}
			batch := array.NewRecordBatch(rec.Schema(), cols, to-from)
			if err := w.Write(batch); err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, int(to-from))
			batch.Release()
			for _, c := range cols {
				c.Release()
			}
		}
		rec.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), sizes
}
