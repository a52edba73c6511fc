package reader

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestHashReadYieldsTheFileExactly reads a file through a HashRead
// with a plan pass that keeps falling behind the hasher: the bytes it gets
// must be exactly the file's, and the digest the file's SHA-256.
func TestHashReadYieldsTheFileExactly(t *testing.T) {
	data := make([]byte, 9*sharedChunk+12345)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.IntN(256))
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := OpenFileSource(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, lag := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond} {
		sr, err := StartHashRead(context.Background(), src, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := sr.reader()
		var got bytes.Buffer
		buf := make([]byte, 300_000) // reads that straddle chunks
		for {
			n, err := r.Read(buf[:1+rng.IntN(len(buf))])
			got.Write(buf[:n])
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(lag)
		}
		r.Close()
		if !bytes.Equal(got.Bytes(), data) {
			t.Fatalf("lag %v: read %d bytes that differ from the file's %d", lag, got.Len(), len(data))
		}
		digest, err := sr.Digest()
		sum := sha256.Sum256(data)
		if err != nil || digest != "sha256:"+hex.EncodeToString(sum[:]) {
			t.Fatalf("digest %s %v", digest, err)
		}
	}
}

// TestHashReadHoldsLittle: the hasher of a local file of 8 MiB whose
// plan pass reads nothing (it lags far behind) hands over a few chunks of
// a fortieth of the file and makes no more buffers than those: about 2
// MiB, not the 9 MiB of 1 MiB chunks. A large file keeps 1 MiB chunks.
func TestHashReadHoldsLittle(t *testing.T) {
	for n, want := range map[int64]int{1000: 64 << 10, 10_000_000: 250_000, 107_000_000: sharedChunk} {
		if got := localChunk(n); got != want {
			t.Errorf("localChunk(%d) = %d, want %d", n, got, want)
		}
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, bytes.Repeat([]byte("0123456789abcdef"), 1<<19), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := OpenFileSource(path)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sr, err := StartHashRead(context.Background(), src, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := sr.reader()
	if _, err := sr.Digest(); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	r.Close()
	if made := after.TotalAlloc - before.TotalAlloc; made > 4<<20 {
		t.Fatalf("hashing 8 MiB allocated %d bytes", made)
	}
}
