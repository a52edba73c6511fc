package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/reader"
)

// TestSharedReadYieldsTheFileExactly reads a file through the shared read
// with a plan pass that keeps falling behind the hasher: the bytes it gets
// must be exactly the file's, and the digest the file's SHA-256.
func TestSharedReadYieldsTheFileExactly(t *testing.T) {
	data := make([]byte, 9*sharedChunk+12345)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.IntN(256))
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := reader.OpenFileSource(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, lag := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond} {
		sr, err := startSharedRead(context.Background(), src, nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := sr.reader()
		if err != nil {
			t.Fatal(err)
		}
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

// TestImportPlansWhileHashing imports in-process (run it with -race): the
// plan made on the shared read is used, and a rerun with --rehash is a
// duplicate that stops the speculative plan.
func TestImportPlansWhileHashing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "orders.csv")
	testkit.Orders(t, path, 5000, 9)
	ctx := context.Background()
	e, err := Open(ctx, filepath.Join(dir, "t.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// Identifying a new file starts the plan pass on the hash's read, and
	// its plan is the one planning uses.
	r := &run{e: e, req: Request{Path: path, PartitionRows: 1000}, sharesRead: true}
	r.defaults()
	r.res = &Result{}
	if err := r.identify(ctx); err != nil {
		t.Fatal(err)
	}
	in, _, err := r.planInputs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, plan, err := r.spec.result(in, nil)
	if err != nil || f == nil || plan.Rows != 5000 || len(plan.Partitions) != 5 {
		t.Fatalf("speculative plan: %v %v", plan, err)
	}
	res := e.Import(ctx, Request{Path: path, PartitionRows: 1000})
	if res.Err != nil || res.Outcome != Imported || res.Rows.Inserted != 5000 {
		t.Fatalf("import: %+v %v", res, res.Err)
	}
	again := e.Import(ctx, Request{Path: path, PartitionRows: 1000, Rehash: true})
	if again.Err != nil || again.Outcome != Duplicate || again.QuickCheck {
		t.Fatalf("rehashed rerun: %+v %v", again, again.Err)
	}
}
