package reader

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"testing"
)

// failingSource is a memSource whose stream fails with err after its
// first n bytes.
type failingSource struct {
	memSource
	n   int64
	err error
}

func (f *failingSource) Open(ctx context.Context, off int64) (io.ReadCloser, error) {
	r, err := f.memSource.Open(ctx, off)
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(io.LimitReader(r, f.n), &errReader{f.err}), r}, nil
}

type errReader struct{ err error }

func (e *errReader) Read([]byte) (int, error) { return 0, e.err }

// TestDigestOfEverySize hashes uncompressed files of the sizes around the
// chunks Digest reads in (each is hashed while the next is read): the
// digest is the SHA-256 of every byte, in order, and progress ends at the
// size. A stream that fails, and a cancelled context, fail the digest.
func TestDigestOfEverySize(t *testing.T) {
	for _, size := range []int{0, 1, digestChunk - 1, digestChunk, digestChunk + 1, 3*digestChunk + 7} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(i*7 + i/digestChunk)
			}
			var last int64
			d, err := Digest(context.Background(), &memSource{name: "t.csv", data: data}, func(n int64) { last = n })
			want := fmt.Sprintf("sha256:%x", sha256.Sum256(data))
			if err != nil || d.Stored != want || d.Content != want {
				t.Fatalf("digest %+v %v, want %s", d, err, want)
			}
			if last != int64(size) {
				t.Fatalf("progress ended at %d of %d bytes", last, size)
			}
		})
	}
	data := make([]byte, 2*digestChunk+5)
	broken := errors.New("disk gone")
	for _, n := range []int64{0, digestChunk - 3, 2 * digestChunk} {
		src := &failingSource{memSource: memSource{name: "t.csv", data: data}, n: n, err: broken}
		if d, err := Digest(context.Background(), src, nil); !errors.Is(err, broken) {
			t.Fatalf("a stream failing after %d bytes: %+v %v", n, d, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d, err := Digest(ctx, &memSource{name: "t.csv", data: data}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %+v %v", d, err)
	}
}
