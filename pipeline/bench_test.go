package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// BenchmarkImportCSV imports a 200,000-row orders CSV into a new SQLite
// file: the whole pipeline, first load, ordinal keys.
func BenchmarkImportCSV(b *testing.B) {
	const rows = 200_000
	dir := b.TempDir()
	path := filepath.Join(dir, "orders.csv")
	testkit.Orders(b, path, rows, 1)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e, err := Open(ctx, filepath.Join(dir, fmt.Sprintf("b%d.db", i)), Options{})
		if err != nil {
			b.Fatal(err)
		}
		res := e.Import(ctx, Request{Path: path})
		if res.Err != nil || res.Rows.Inserted != rows {
			b.Fatalf("%+v %v", res.Rows, res.Err)
		}
		e.Close()
	}
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
}
