package reader

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/reader/internal/input"
)

// Columnar files that lie about their size: a Parquet or Arrow IPC file
// declares the length of its footer, and an IPC message the lengths of
// its metadata and body; a Parquet footer's lists declare their element
// counts. A file can be sparse, so a length that fits in the file can
// still be gigabytes that cost nothing on disk.

// hostileColumnar is a hostile columnar file: its path and a part of the
// error that refuses it.
type hostileColumnar struct {
	name, path, want string
}

// sparseFile writes a file of size bytes (a hole, on file systems that
// have them) holding head at its start and tail at its end.
func sparseFile(t testing.TB, path string, size int64, head, tail []byte) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(head, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(tail, size-int64(len(tail))); err != nil {
		t.Fatal(err)
	}
	return path
}

func le32(n uint32) []byte { return binary.LittleEndian.AppendUint32(nil, n) }

// hostileColumnarFiles writes the hostile files into dir; with edge, also
// one just inside the bounds, which is read whole before it is refused.
func hostileColumnarFiles(t testing.TB, dir string, edge bool) []hostileColumnar {
	t.Helper()
	path := func(name string) string { return filepath.Join(dir, name) }
	var out []hostileColumnar
	add := func(name, path, want string) { out = append(out, hostileColumnar{name, path, want}) }

	// Parquet: PAR1, then (at the end) the footer's length and PAR1.
	parquetTail := func(n uint32) []byte { return append(le32(n), "PAR1"...) }
	add("parquet footer of 2 GB in a sparse file",
		sparseFile(t, path("footer2g.parquet"), 2_000_000_100, []byte("PAR1"), parquetTail(2_000_000_000)), "footer")
	add("parquet footer just over the bound",
		sparseFile(t, path("footerbound.parquet"), 80<<20, []byte("PAR1"), parquetTail(64<<20+1)), "footer")
	// A footer of 10 bytes whose thrift declares a schema of 100 million
	// elements (FileMetaData field 2, a list of structs), then ends.
	footer := []byte{0x15, 0x02, 0x19, 0xfc}
	footer = binary.AppendUvarint(footer, 100_000_000)
	small := append(append([]byte("PAR1"), footer...), parquetTail(uint32(len(footer)))...)
	if err := os.WriteFile(path("biglist.parquet"), small, 0o644); err != nil {
		t.Fatal(err)
	}
	add("parquet footer declaring a list of 100 million elements", path("biglist.parquet"), "footer")
	// Many small structs: 4 million row groups of 7 bytes each (no column
	// chunk, a byte size and a row count) decode to far more memory than
	// their bytes.
	rowGroups := []byte{0x15, 0x02, 0x19, 0x0c, 0x16, 0x00, 0x19, 0xfc}
	rowGroups = binary.AppendUvarint(rowGroups, 4_000_000)
	rowGroups = append(rowGroups, bytes.Repeat([]byte{0x19, 0x0c, 0x16, 0x00, 0x16, 0x00, 0x00}, 4_000_000)...)
	rowGroups = append(rowGroups, 0)
	empty := append(append([]byte("PAR1"), rowGroups...), parquetTail(uint32(len(rowGroups)))...)
	if err := os.WriteFile(path("rowgroups.parquet"), empty, 0o644); err != nil {
		t.Fatal(err)
	}
	add("parquet footer of 4 million small row groups", path("rowgroups.parquet"), "memory")

	if edge {
		// Just inside the memory bound: decoded, then refused for having no
		// schema.
		rowGroups := []byte{0x15, 0x02, 0x19, 0x0c, 0x16, 0x00, 0x19, 0xfc}
		rowGroups = binary.AppendUvarint(rowGroups, 540_000)
		rowGroups = append(rowGroups, bytes.Repeat([]byte{0x19, 0x0c, 0x16, 0x00, 0x16, 0x00, 0x00}, 540_000)...)
		rowGroups = append(rowGroups, 0)
		edge := append(append([]byte("PAR1"), rowGroups...), parquetTail(uint32(len(rowGroups)))...)
		if err := os.WriteFile(path("edge.parquet"), edge, 0o644); err != nil {
			t.Fatal(err)
		}
		add("parquet footer of 540,000 small row groups, inside the bounds", path("edge.parquet"), "schema")
	}

	// Arrow IPC file: ARROW1 and padding, then the footer's length and ARROW1.
	arrowHead := []byte("ARROW1\x00\x00")
	arrowTail := func(n uint32) []byte { return append(le32(n), "ARROW1"...) }
	add("arrow footer of 1.4 GB in a sparse file",
		sparseFile(t, path("footer.arrow"), 1_400_000_100, arrowHead, arrowTail(1_400_000_000)), "footer")
	add("arrow footer just over the bound",
		sparseFile(t, path("footerbound.arrow"), 80<<20, arrowHead, arrowTail(64<<20+1)), "footer")

	// Arrow IPC stream: a message declaring 64 MiB of metadata, in a file
	// of 20 bytes.
	meta := append(le32(0xFFFFFFFF), le32(64<<20)...)
	meta = append(meta, bytes.Repeat([]byte{0x10}, 12)...)
	if err := os.WriteFile(path("meta.arrows"), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	add("arrow stream message of 64 MiB of metadata in 20 bytes", path("meta.arrows"), "metadata")
	// A real stream whose record batch declares a body of almost 1 GiB,
	// cut after that declaration.
	if err := os.WriteFile(path("body.arrows"), hugeBodyStream(t), 0o644); err != nil {
		t.Fatal(err)
	}
	add("arrow stream record batch of 1 GiB of body in a small file", path("body.arrows"), "body")
	return out
}

// hugeBodyStream returns an Arrow IPC stream of one record batch whose
// metadata says its body is 1 GiB - 64 bytes long, cut 100 bytes into its
// body.
func hugeBodyStream(t testing.TB) []byte {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewStringBuilder(memory.DefaultAllocator)
	b.Append(string(bytes.Repeat([]byte("z"), 4000)))
	col := b.NewArray()
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, 1)
	defer rec.Release()
	defer col.Release()
	data, _ := ipcBytes(t, "x.arrows", schema, []arrow.RecordBatch{rec})
	// The schema message, then the record batch's: marker, length, metadata.
	at := 8 + int(binary.LittleEndian.Uint32(data[4:]))
	n := int(binary.LittleEndian.Uint32(data[at+4:]))
	meta := data[at+8 : at+8+n]
	body := int64(len(data) - (at + 8 + n) - 8) // the end-of-stream marker follows
	i := bytes.Index(meta, binary.LittleEndian.AppendUint64(nil, uint64(body)))
	if i < 0 {
		t.Fatalf("no bodyLength %d in the record batch's metadata", body)
	}
	binary.LittleEndian.PutUint64(meta[i:], 1<<30-64)
	return data[:at+8+n+100]
}

// TestHostileColumnarLengths: every declared length is checked against the
// file's size and a bound before anything is allocated for it, so each
// hostile file is refused with a *ParseError in a few megabytes, whatever
// it declares. (BenchmarkHostileColumnarRSS measures the whole process.)
func TestHostileColumnarLengths(t *testing.T) {
	for _, h := range hostileColumnarFiles(t, t.TempDir(), false) {
		t.Run(h.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			f, err := OpenPath(h.path, Options{})
			if err == nil {
				_, err = f.Scan(t.Context(), ScanOptions{})
			}
			runtime.ReadMemStats(&after)
			// Beyond a few megabytes, what is allocated is the footer read,
			// which the file holds.
			limit := uint64(16 << 20)
			if st, err := os.Stat(h.path); err == nil && st.Size() < 1<<30 {
				limit += uint64(st.Size())
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > limit {
				t.Fatalf("allocated %d MiB to refuse it: %v", n>>20, err)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, input.ErrFormat) || !bytes.Contains([]byte(err.Error()), []byte(h.want)) {
				t.Fatalf("err %v, want a *ParseError (ErrFormat) about the %s", err, h.want)
			}
		})
	}
}
