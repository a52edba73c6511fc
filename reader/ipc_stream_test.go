package reader

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/idemtype"
)

// smallBatches re-encodes the IPC file at path as an IPC stream (or file,
// by name, as ipcBytes) of record batches of n rows (each a copy, not a
// slice, of the file's rows), as a writer flushing rows as they arrive
// leaves them. It returns the bytes, the offset at which each record batch
// of a stream ends, and the rows of each.
func smallBatches(t testing.TB, path, name string, n int) ([]byte, []int, []int64) {
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
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
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
			recs = append(recs, array.NewRecordBatch(rec.Schema(), cols, to-from))
			for _, c := range cols {
				c.Release()
			}
		}
		rec.Release()
	}
	data, ends := ipcBytes(t, name, fr.Schema(), recs)
	rows := make([]int64, len(recs))
	for k, r := range recs {
		rows[k] = r.NumRows()
	}
	return data, ends, rows
}

// TestIPCStreamOfSmallBatches reads the orders data as Arrow JS wrote it
// (decimals, timestamps of seconds, dictionaries) re-encoded as a stream,
// and as an IPC file, of record batches of 7 rows: the plan gathers them into partitions of
// about PartitionRows rows, each ending with the batch that brings it
// there; every value of every row reads as the CSV file's text, whether
// the partitions are read in order (the stream read once, each partition
// taking it up where the one before left it; a file's read by random
// access), in reverse, or one alone (as a resumed import reads them: a
// stream from its start); and a changed byte in the middle of one
// partition fails that partition only.
func TestIPCStreamOfSmallBatches(t *testing.T) {
	dir := "../testdata/otherwriters"
	_, want := readRows(t, filepath.Join(dir, "orders.csv"), Options{Types: map[string]idemtype.Type{"unit_price": idemtype.Decimal}}, 0)
	data, ends, sizes := smallBatches(t, filepath.Join(dir, "orders-arrowjs.arrow"), "s.arrows", 7)
	file, _, _ := smallBatches(t, filepath.Join(dir, "orders-arrowjs.arrow"), "s.arrow", 7)
	batches := len(ends) // the file's batches of 64 rows make 9 of 7 and one of 1
	if len(want) != 300 || batches != 47 {
		t.Fatalf("%d rows, %d record batches", len(want), batches)
	}
	// The partitions: Offset (the first batch), Rows.
	var shape [][2]int64
	for k, n := range sizes {
		if len(shape) == 0 || shape[len(shape)-1][1] >= 50 {
			shape = append(shape, [2]int64{int64(k), 0})
		}
		shape[len(shape)-1][1] += n
	}
	for _, name := range []string{"o.arrows", "o.arrows.zst", "o.arrow"} {
		path := filepath.Join(t.TempDir(), name)
		if name == "o.arrow" {
			writeCompressed(t, path, file)
		} else {
			writeCompressed(t, path, data)
		}
		for _, order := range []string{"in_order", "reversed", "alone"} {
			t.Run(name+"/"+order, func(t *testing.T) {
				f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 50})
				var got [][2]int64
				for _, p := range plan.Partitions {
					if p.Length != 1 {
						t.Fatalf("partition %+v", p)
					}
					got = append(got, [2]int64{p.Offset, p.Rows})
				}
				if !reflect.DeepEqual(got, shape) {
					t.Fatalf("partitions (first batch, rows) %v, want %v", got, shape)
				}
				parts := plan.Partitions
				switch order {
				case "reversed":
					parts = nil
					for k := len(plan.Partitions) - 1; k >= 0; k-- {
						parts = append(parts, plan.Partitions[k])
					}
				case "alone":
					parts = plan.Partitions[3:4]
				}
				before := f.Stats()
				for _, p := range parts {
					for _, batchRows := range []int{3, 0} {
						rows, ords, _, err := readPart(f, plan, p, batchRows)
						if err != nil {
							t.Fatalf("partition %d: %v", p.Index, err)
						}
						if !reflect.DeepEqual(ords, seq(p.First, p.Rows)) {
							t.Fatalf("partition %d: ordinals %v…", p.Index, ords[:min(len(ords), 5)])
						}
						for i, row := range rows {
							if w := want[int(p.First)-1+i]; !reflect.DeepEqual(row, w) {
								t.Fatalf("partition %d, ordinal %d: got %v, the CSV has %v", p.Index, ords[i], row, w)
							}
						}
						if order == "in_order" {
							break // read twice, a partition would start over
						}
					}
				}
				if order == "in_order" {
					after := f.Stats()
					if d := after.RowGroupsRead - before.RowGroupsRead; d != int64(batches) {
						t.Fatalf("reading the partitions in order decoded %d record batches, the stream has %d", d, batches)
					}
					if name == "o.arrows" && after.BytesRead-before.BytesRead > int64(len(data)) {
						t.Fatalf("reading the partitions in order read %d bytes of a %d-byte stream", after.BytesRead-before.BytesRead, len(data))
					}
				}
			})
		}
	}
	for _, name := range []string{"c.arrows", "c.arrow"} {
		t.Run("changed/"+name, func(t *testing.T) {
			raw, at := data, 0
			if name == "c.arrow" {
				// A file holds the messages of a stream after its 8 bytes
				// of magic and padding.
				raw, at = file, 8
				if !bytes.Equal(file[8:8+ends[len(ends)-1]], data[:ends[len(ends)-1]]) {
					t.Fatal("the file's record batches are not the stream's")
				}
			}
			path := writeFile(t, name, raw)
			f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 50})
			p := plan.Partitions[2]
			inside := p.Offset + 3 // the fourth of its record batches
			edited := append([]byte(nil), raw...)
			edited[at+ends[inside]-9] ^= 0x10 // inside its body
			if err := os.WriteFile(path, edited, 0o644); err != nil {
				t.Fatal(err)
			}
			changed(t, f, plan)
		})
	}
	for name, raw := range map[string][]byte{"k.arrows": data, "k.arrow": file} {
		t.Run("skip_lines/"+name, func(t *testing.T) {
			// 60 rows before the table: the first partition starts in the
			// ninth record batch, 4 rows into it.
			f, plan := scanChecked(t, writeFile(t, name, raw), Options{SkipLines: 60}, ScanOptions{PartitionRows: 50})
			if p := plan.Partitions[0]; p.Offset != 8 || p.Length != 5 {
				t.Fatalf("first partition %+v", p)
			}
			rows, _ := readPlan(t, f, plan, 0)
			if !reflect.DeepEqual(rows, want[60:]) {
				t.Fatalf("%d rows, want the CSV's last %d", len(rows), len(want)-60)
			}
		})
	}
}

// changed reads every partition of plan: partition 2, whose bytes changed,
// must fail with ErrSourceChanged, and the others read.
func changed(t *testing.T, f *File, plan *Plan) {
	t.Helper()
	for k, p := range plan.Partitions {
		_, _, _, err := readPart(f, plan, p, 0)
		if k == 2 {
			if !errors.Is(err, ErrSourceChanged) {
				t.Fatalf("partition 2: got %v, want ErrSourceChanged", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("partition %d: %v", k, err)
		}
	}
}
