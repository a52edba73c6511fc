package reader

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// BenchmarkPlan measures the plan pass (parse, infer, validate, checksum)
// over the same 200,000 orders rows as CSV and as JSONL.
func BenchmarkPlan(b *testing.B) {
	const n = 200_000
	dir := b.TempDir()
	csvPath := filepath.Join(dir, "orders.csv")
	rows := testkit.Orders(b, csvPath, n, 1)
	jsonlPath := filepath.Join(dir, "orders.jsonl")
	writeOrdersJSONL(b, jsonlPath, rows)
	for _, path := range []string{csvPath, jsonlPath} {
		b.Run(filepath.Ext(path)[1:], func(b *testing.B) {
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(st.Size())
			benchPlan(b, path, n)
		})
	}
}

// benchPlan runs the plan pass over path, a file of n good rows, b.N
// times, and reports rows/s.
func benchPlan(b *testing.B, path string, n int64) {
	for range b.N {
		f, err := Open(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		plan, err := f.Scan(context.Background(), ScanOptions{})
		if err != nil || plan.Rows != n || plan.Rejected != 0 {
			b.Fatalf("%v %+v", err, plan)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// writeOrdersJSONL writes the orders rows as JSON objects, numbers as
// numbers and the rest as strings (an empty note as null).
func writeOrdersJSONL(b *testing.B, path string, rows [][]string) {
	names := []string{"order_id", "customer_id", "sku", "quantity", "unit_price", "status", "created_at", "note"}
	numeric := []bool{true, true, false, true, true, false, false, false}
	var out []byte
	for _, row := range rows {
		out = append(out, '{')
		for i, v := range row {
			if i > 0 {
				out = append(out, ',')
			}
			k, _ := json.Marshal(names[i])
			out = append(out, k...)
			out = append(out, ':')
			switch {
			case numeric[i]:
				out = append(out, v...)
			case v == "":
				out = append(out, "null"...)
			default:
				s, _ := json.Marshal(v)
				out = append(out, s...)
			}
		}
		out = append(out, "}\n"...)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		b.Fatal(err)
	}
}
