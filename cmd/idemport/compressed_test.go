package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/idemport/idemport/internal/testkit"
)

// writeCompressed writes data to path compressed by enc.
func writeCompressed(t *testing.T, path string, data []byte, enc func(*bytes.Buffer) interface {
	Write([]byte) (int, error)
	Close() error
}) {
	t.Helper()
	var buf bytes.Buffer
	w := enc(&buf)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCompressedCopyIsTheSameFile imports a gzip file, then the same rows
// uncompressed, gzipped at another level and zstd-compressed: each copy has
// the first one's content digest (the SHA-256 of the decoded data) and file
// ID, is a duplicate, and the table holds every row once. An unchanged
// compressed file is then identified by the quick check, without hashing,
// and `plan` (which hashes without planning) agrees.
func TestCompressedCopyIsTheSameFile(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		plain := filepath.Join(dir, "orders.csv")
		rows := testkit.Orders(t, plain, 3000, 5)
		data, err := os.ReadFile(plain)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		want := fmt.Sprintf("sha256:%x", sum)
		type writer = interface {
			Write([]byte) (int, error)
			Close() error
		}
		gz := func(level int) func(*bytes.Buffer) writer {
			return func(b *bytes.Buffer) writer {
				w, err := gzip.NewWriterLevel(b, level)
				if err != nil {
					t.Fatal(err)
				}
				return w
			}
		}
		writeCompressed(t, filepath.Join(dir, "fast.csv.gz"), data, gz(gzip.BestSpeed))
		writeCompressed(t, filepath.Join(dir, "best.csv.gz"), data, gz(gzip.BestCompression))
		writeCompressed(t, filepath.Join(dir, "orders.csv.zst"), data, func(b *bytes.Buffer) writer {
			w, err := zstd.NewWriter(b)
			if err != nil {
				t.Fatal(err)
			}
			return w
		})

		first := importTo(t, tg, dir, nil, 0, "--table", "orders", "--partition-rows", "1000", "fast.csv.gz")
		if first.Outcome != "imported" || first.ContentDigest != want || first.FileID != want {
			t.Fatalf("first import: %+v; want content digest and file ID %s (the decoded data's)", first, want)
		}
		for _, f := range []string{"orders.csv", "best.csv.gz", "orders.csv.zst"} {
			res := importTo(t, tg, dir, nil, 0, "--table", "orders", "--partition-rows", "1000", f)
			if res.Outcome != "duplicate" || res.ContentDigest != want || res.FileID != want || res.Rows.Inserted != 0 || res.Previous == nil || res.Previous.Rows.Inserted != 3000 {
				t.Fatalf("%s: %+v; want a duplicate of the first import", f, res)
			}
		}
		checkOrders(t, tg, "orders", rows)

		again := importTo(t, tg, dir, nil, 0, "--table", "orders", "fast.csv.gz")
		if !again.QuickCheck || again.Outcome != "duplicate" || again.ContentDigest != want {
			t.Fatalf("unchanged compressed file: %+v; want a duplicate from the quick check", again)
		}
		rehashed := importTo(t, tg, dir, nil, 0, "--table", "orders", "--rehash", "best.csv.gz")
		if rehashed.QuickCheck || rehashed.Outcome != "duplicate" || rehashed.ContentDigest != want {
			t.Fatalf("--rehash of a compressed file: %+v; want a duplicate", rehashed)
		}
		plan := tg.Exec(t, dir, nil, "plan", "--table", "orders", "best.csv.gz")
		if plan.Code != 0 || !strings.Contains(plan.Stdout, "content:     "+want) || !strings.Contains(plan.Stdout, "duplicate") {
			t.Fatalf("plan: %d %s %s", plan.Code, plan.Stdout, plan.Stderr)
		}
	})
}

// TestCompressedFileOfAnOlderLedgerIsStillADuplicate sets the ledger up as
// earlier versions left it after importing a gzip file (the operation's
// file ID and content digest are the digest of the stored bytes, the quick
// check knows no decoded digest): importing the same file again is a
// duplicate of that operation, and so, once it has been, is its
// uncompressed copy. (Earlier versions pass the first part by construction;
// they import the copy again.)
func TestCompressedFileOfAnOlderLedgerIsStillADuplicate(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		plain := filepath.Join(dir, "orders.csv")
		rows := testkit.Orders(t, plain, 500, 8)
		data, _ := os.ReadFile(plain)
		writeCompressed(t, filepath.Join(dir, "orders.csv.gz"), data, func(b *bytes.Buffer) interface {
			Write([]byte) (int, error)
			Close() error
		} {
			return gzip.NewWriter(b)
		})
		stored := "sha256:" + fileSum(t, filepath.Join(dir, "orders.csv.gz"))
		first := importTo(t, tg, dir, nil, 0, "--file-id", stored, "orders.csv.gz")
		if first.Outcome != "imported" || first.ContentDigest == stored {
			t.Fatalf("first import: %+v", first)
		}
		for _, q := range []string{`UPDATE ` + tg.Ledger("operations") + ` SET content_digest = '` + stored + `'`,
			`UPDATE ` + tg.Ledger("quickcheck") + ` SET content_digest = NULL`} {
			if _, err := tg.DB.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		// The gzip file first (this version records its decoded digest),
		// then its uncompressed copy.
		for _, args := range [][]string{{"orders.csv.gz"}, {"--rehash", "orders.csv.gz"}, {"orders.csv"}} {
			res := importTo(t, tg, dir, nil, 0, args...)
			if res.Outcome != "duplicate" || res.FileID != stored || res.ContentDigest != stored {
				t.Fatalf("%v: %+v; want a duplicate of the operation recorded under the stored digest", args, res)
			}
		}
		checkOrders(t, tg, "orders", rows)
	})
}
