package reader

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/idemtype"
)

// memSource is a file's bytes held in memory under a name that is no
// path on disk: a reader that reached for the disk would fail.
type memSource struct {
	name  string
	data  []byte
	reads atomic.Int64 // bytes handed out
}

var _ idemtype.Source = (*memSource)(nil)

func (m *memSource) Name() string       { return m.name }
func (m *memSource) Size() int64        { return int64(len(m.data)) }
func (m *memSource) ModTime() time.Time { return time.Time{} }
func (m *memSource) Version() string    { return "v1" }
func (m *memSource) Close() error       { return nil }

func (m *memSource) ReadAt(p []byte, off int64) (int, error) {
	n, err := bytes.NewReader(m.data).ReadAt(p, off)
	m.reads.Add(int64(n))
	return n, err
}

func (m *memSource) Open(_ context.Context, off int64) (io.ReadCloser, error) {
	r := bytes.NewReader(m.data)
	if _, err := r.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	return io.NopCloser(&countRead{r: r, n: &m.reads}), nil
}

type countRead struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countRead) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestOpenReadsOnlyTheSource reads files of every format from a Source
// that is not on disk (the file is deleted first, and the source's name
// is no path): the plan, the rows and the digests are those of the same
// file read from disk, so every byte the reader reads comes through the
// Source.
func TestOpenReadsOnlyTheSource(t *testing.T) {
	dir := t.TempDir()
	csv := "id,name,amount\n1,a,1.5\n2,\"b\nc\",2\n3,d,\n4,e,x\n5,f,7\n"
	files := map[string]string{}
	for _, name := range []string{"t.csv", "t.csv.gz", "t.csv.zst"} {
		path := filepath.Join(dir, name)
		writeCompressed(t, path, []byte(csv))
		files[name] = path
	}
	jsonl := filepath.Join(dir, "t.jsonl.gz")
	writeCompressed(t, jsonl, []byte("{\"id\":1,\"v\":{\"a\":[1,2]}}\n{\"id\":2,\"v\":null}\n{\"id\":3}\n"))
	files["t.jsonl.gz"] = jsonl
	specs := commonSpecs()
	files["t.parquet"] = writeParquet(t, "t.parquet", specs, 50, 20, true)
	files["t.arrow"] = writeIPC(t, "t.arrow", specs, 50, 20)
	files["t.arrows.zst"] = writeIPC(t, "t.arrows.zst", specs, 50, 20)

	for name, path := range files {
		t.Run(name, func(t *testing.T) {
			so := ScanOptions{PartitionRows: 2, KeepRejects: 10}
			wantPlan, wantRows, wantOrds := readAll(t, path, Options{}, so)
			disk, err := OpenFileSource(path)
			if err != nil {
				t.Fatal(err)
			}
			wantDigest, err := Digest(context.Background(), disk, nil)
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			src := &memSource{name: "mem://bucket/" + name, data: data}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			f, err := Open(src, Options{Allocator: mem})
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			if f.Path() != src.name || f.Source() != idemtype.Source(src) {
				t.Fatalf("path %q, source %v", f.Path(), f.Source())
			}
			plan, rows, ords := readFile(t, f, so)
			if src.reads.Load() == 0 || f.Stats().BytesRead == 0 {
				t.Fatalf("the source was read for %d bytes, stats say %d", src.reads.Load(), f.Stats().BytesRead)
			}
			if !reflect.DeepEqual(plan.Partitions, wantPlan.Partitions) || plan.Rows != wantPlan.Rows || plan.Rejected != wantPlan.Rejected {
				t.Fatalf("plan from memory %+v, from disk %+v", plan, wantPlan)
			}
			if !reflect.DeepEqual(rows, wantRows) || !reflect.DeepEqual(ords, wantOrds) {
				t.Fatalf("rows from memory differ from disk:\n%v\n%v", rows, wantRows)
			}
			if len(rows) == 0 {
				t.Fatal("no rows read")
			}
			d, err := Digest(context.Background(), src, nil)
			if err != nil || d != wantDigest {
				t.Fatalf("digests from memory %+v %v, from disk %+v", d, err, wantDigest)
			}
			if strings.HasSuffix(name, ".gz") && d.Content == d.Stored {
				t.Fatalf("compressed file's digests are equal: %+v", d)
			}
		})
	}
}
