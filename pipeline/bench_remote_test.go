package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/remotetest"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/reader/remote"
)

// BenchmarkImportRemoteCSV imports the same orders CSV from disk and from
// an in-process S3 server, into a new SQLite file each time. The file is
// IDEMPORT_BENCH_CSV when set (go run ./bench/gen -rows 1000000), else a
// generated 200,000-row one.
func BenchmarkImportRemoteCSV(b *testing.B) {
	dir := b.TempDir()
	path := os.Getenv("IDEMPORT_BENCH_CSV")
	if path == "" {
		path = filepath.Join(dir, "orders.csv")
		testkit.Orders(b, path, 200_000, 1)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	s3 := remotetest.NewS3(b, "bkt")
	for _, kv := range s3.Env(dir) {
		k, v, _ := strings.Cut(kv, "=")
		b.Setenv(k, v)
	}
	s3.Put(b, "bkt", "orders.csv", data, time.Time{})
	ctx := context.Background()
	n := 0
	for _, src := range []string{"disk", "s3"} {
		b.Run(src, func(b *testing.B) {
			var rows int64
			s3.Reset()
			for i := 0; i < b.N; i++ {
				n++
				e, err := Open(ctx, filepath.Join(dir, fmt.Sprintf("%s%d.db", src, n)), Options{})
				if err != nil {
					b.Fatal(err)
				}
				req := Request{Path: path, Mapping: Mapping{Table: "orders"}, SpoolDir: filepath.Join(dir, "spool")}
				if src == "s3" {
					req.Path = "s3://bkt/orders.csv"
					req.Remote = remote.New(remote.Options{Endpoint: s3.URL, PathStyle: true})
				}
				res := e.Import(ctx, req)
				if res.Err != nil {
					b.Fatal(res.Err)
				}
				rows = res.Rows.Inserted
				e.Close()
				os.Remove(filepath.Join(dir, fmt.Sprintf("%s%d.db", src, n)))
			}
			b.ReportMetric(float64(rows*int64(b.N))/b.Elapsed().Seconds(), "rows/s")
			if src == "s3" {
				b.ReportMetric(float64(s3.Counts().Bytes)/float64(b.N)/float64(len(data)), "fetched/size")
			}
		})
	}
}

// BenchmarkRemotePrefixRerun reruns the import of an S3 prefix of small
// objects, all imported before, into SQLite, each rerun with a new client
// as a new process has: IDEMPORT_BENCH_OBJECTS objects (default 1,000). It
// reports each rerun's requests by kind.
func BenchmarkRemotePrefixRerun(b *testing.B) {
	n := 1000
	if v := os.Getenv("IDEMPORT_BENCH_OBJECTS"); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil {
			b.Fatal(err)
		}
	}
	dir := b.TempDir()
	s3 := remotetest.NewS3(b, "bkt")
	for _, kv := range s3.Env(dir) {
		k, v, _ := strings.Cut(kv, "=")
		b.Setenv(k, v)
	}
	for i := range n {
		s3.Put(b, "bkt", fmt.Sprintf("many/k%05d.csv", i), []byte(fmt.Sprintf("id,v\n%d,x\n", i)), time.Time{})
	}
	ctx := context.Background()
	e, err := Open(ctx, filepath.Join(dir, "t.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	pass := func(want Outcome) {
		c := remote.New(remote.Options{Endpoint: s3.URL, PathStyle: true})
		urls, err := c.List(ctx, "s3://bkt/many/", "")
		if err != nil || len(urls) != n {
			b.Fatalf("list: %d objects, %v", len(urls), err)
		}
		for _, u := range urls {
			res := e.Import(ctx, Request{Path: u, Mapping: Mapping{Table: "many"}, Remote: c, SpoolDir: filepath.Join(dir, "spool")})
			if res.Err != nil || res.Outcome != want {
				b.Fatalf("%s: %s, want %s: %v", u, res.Outcome, want, res.Err)
			}
		}
	}
	pass(Imported)
	s3.Reset()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pass(Duplicate)
	}
	c := s3.Counts()
	b.ReportMetric(float64(c.List)/float64(b.N), "LIST/rerun")
	b.ReportMetric(float64(c.Head)/float64(b.N), "HEAD/rerun")
	b.ReportMetric(float64(c.Get)/float64(b.N), "GET/rerun")
}
