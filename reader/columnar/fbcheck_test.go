package columnar

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/idemport/idemport/reader/internal/input"
)

// bytesSource is a Source over bytes in memory.
type bytesSource struct {
	name string
	*bytes.Reader
}

func (s bytesSource) Name() string       { return s.name }
func (s bytesSource) ModTime() time.Time { return time.Time{} }
func (s bytesSource) Version() string    { return "" }
func (s bytesSource) Close() error       { return nil }
func (s bytesSource) Open(_ context.Context, off int64) (io.ReadCloser, error) {
	return io.NopCloser(io.NewSectionReader(s.Reader, off, s.Size()-off)), nil
}

// testFile is the shared file of data, named name, as the reader's Open
// makes it for a Parquet or Arrow file.
func testFile(t *testing.T, name string, data []byte) *input.File {
	t.Helper()
	format := input.Parquet
	switch {
	case strings.HasSuffix(name, ".arrows"):
		format = input.Arrows
	case strings.HasSuffix(name, ".arrow"):
		format = input.Arrow
	}
	return &input.File{In: bytesSource{name, bytes.NewReader(data)}, Path: name, Format: format,
		Opts: input.Options{MaxRowBytes: input.DefaultMaxRowBytes, Allocator: memory.DefaultAllocator}}
}

// hostileSchema returns an IPC stream whose schema claims a vector of
// 2^28 fields in a few hundred bytes, and the position of that length.
func hostileSchema(t *testing.T) []byte {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(sc))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	meta, err := messageMeta(data)
	if err != nil {
		t.Fatal(err)
	}
	c := &fbCheck{buf: meta}
	m, err := c.root()
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := m.sub(2)
	if err != nil {
		t.Fatal(err)
	}
	at, ok, err := s.ref(1)
	if err != nil || !ok {
		t.Fatal("no fields vector", err)
	}
	metaStart := bytes.Index(data, meta)
	out := append([]byte(nil), data...)
	binary.LittleEndian.PutUint32(out[metaStart+at:], 1<<28)
	return out
}

// TestHostileSchema checks that schemas whose lengths would make the
// decoder allocate without bound are refused before it sees them, in an
// Arrow stream and as the Arrow schema stored in a Parquet footer.
func TestHostileSchema(t *testing.T) {
	hostile := hostileSchema(t)
	t.Run("stream", func(t *testing.T) {
		_, err := Open(testFile(t, "h.arrows", hostile))
		var pe *input.ParseError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "does not fit") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("parquet", func(t *testing.T) {
		var out bytes.Buffer
		sc := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
		fw, err := pqarrow.NewFileWriter(sc, &out, parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties())
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.AppendKeyValueMetadata("ARROW:schema", base64.StdEncoding.EncodeToString(hostile)); err != nil {
			t.Fatal(err)
		}
		if err := fw.Close(); err != nil {
			t.Fatal(err)
		}
		_, err = Open(testFile(t, "h.parquet", out.Bytes()))
		var pe *input.ParseError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "stored Arrow schema") {
			t.Fatalf("got %v", err)
		}
	})
}
