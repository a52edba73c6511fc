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
				req := Request{Path: path, Mapping: Mapping{Table: "orders"}}
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
