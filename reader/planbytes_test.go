package reader

import (
	"errors"
	"os"
	"reflect"
	"testing"
)

// TestPlanPassBytes checks that the partition of the plan pass's last unit
// (here a Parquet file's only row group, an IPC file's only record batch)
// is read from the bytes the plan pass loaded and checksummed, which it
// leaves for that partition's reader: the file is not read again (an IPC
// partition reads its record batch's metadata alone), even when it changed
// since (the pipeline's check of the file before each commit sees that).
// A second reader of the partition reads the file, and so does a reader
// after File.Close, and one whose plan has another CRC than the pass
// computed (another attempt's plan, of other bytes), which fails as the
// bytes on disk are not the plan's either; the bytes stay for the reader
// of the pass's own plan.
func TestPlanPassBytes(t *testing.T) {
	specs := commonSpecs() // decimals, timestamps, dictionaries, lists…
	const n = 250
	for _, name := range []string{"one.parquet", "one.arrow"} {
		t.Run(name, func(t *testing.T) {
			path := writeIPC(t, name, specs, n, n)
			if name == "one.parquet" {
				path = writeParquet(t, name, specs, n, n, true)
			}
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			size := int64(len(orig))
			want := wantRows(specs, n, nil)
			read := func(f *File, plan *Plan, p Partition) (int64, error) {
				t.Helper()
				before := f.Stats().BytesRead
				rows, _, _, err := readPart(f, plan, p, 300)
				if err == nil && !reflect.DeepEqual(rows, want) {
					for i := range rows {
						if !reflect.DeepEqual(rows[i], want[i]) {
							t.Fatalf("row %d: %#v, want %#v", i, rows[i], want[i])
						}
					}
					t.Fatalf("%d rows, want %d", len(rows), len(want))
				}
				return f.Stats().BytesRead - before, err
			}
			write := func(b []byte) {
				t.Helper()
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}

			f, plan := scanChecked(t, path, Options{}, ScanOptions{})
			if len(plan.Partitions) != 1 {
				t.Fatalf("%d partitions", len(plan.Partitions))
			}
			p := plan.Partitions[0]
			edited := append([]byte(nil), orig...)
			edited[size/2] ^= 0x10 // inside the record batch, or row group
			write(edited)
			if got, err := read(f, plan, p); err != nil || got > size/20 {
				t.Fatalf("the pass's partition: read %d of %d bytes, %v; want its bytes from the pass", got, size, err)
			}
			if got, err := read(f, plan, p); !errors.Is(err, ErrSourceChanged) {
				t.Fatalf("read again: read %d bytes, %v; want ErrSourceChanged", got, err)
			}
			write(orig)

			f, plan = scanChecked(t, path, Options{}, ScanOptions{})
			other := *plan
			other.Partitions = []Partition{p}
			other.Partitions[0].CRC++
			if got, err := read(f, &other, other.Partitions[0]); !errors.Is(err, ErrSourceChanged) {
				t.Fatalf("a plan of other bytes: read %d bytes, %v; want ErrSourceChanged", got, err)
			}
			if got, err := read(f, plan, p); err != nil || got > size/20 {
				t.Fatalf("after a plan of other bytes: read %d of %d bytes, %v; want the pass's bytes", got, size, err)
			}

			f, plan = scanChecked(t, path, Options{}, ScanOptions{})
			f.Close()
			if got, err := read(f, plan, p); err != nil || got < size/2 {
				t.Fatalf("after Close: read %d of %d bytes, %v; want the file's", got, size, err)
			}
		})
	}
}
