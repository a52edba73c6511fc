package reader

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/reader/internal/keys"
	"github.com/idemport/idemport/reader/internal/value"
)

// BenchmarkPlan measures the plan pass (parse, infer, validate, checksum)
// over the same 200,000 orders rows as CSV and as JSONL, in ordinal mode
// and keyed by order_id (no key repeats).
func BenchmarkPlan(b *testing.B) {
	const n = 200_000
	dir := b.TempDir()
	csvPath := filepath.Join(dir, "orders.csv")
	rows := testkit.Orders(b, csvPath, n, 1)
	jsonlPath := filepath.Join(dir, "orders.jsonl")
	writeOrdersJSONL(b, jsonlPath, rows)
	for _, path := range []string{csvPath, jsonlPath} {
		for _, key := range [][]string{nil, {"order_id"}} {
			name := filepath.Ext(path)[1:]
			if key != nil {
				name += "-key"
			}
			b.Run(name, func(b *testing.B) {
				st, err := os.Stat(path)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(st.Size())
				benchPlan(b, path, n, keyOptions(key))
			})
		}
	}
}

// benchPlan runs the plan pass over path, a file of n good rows, b.N
// times, and reports rows/s.
func benchPlan(b *testing.B, path string, n int64, o Options) {
	before := cpuTime()
	defer func() {
		// CPU time, which other processes on the machine disturb less
		// than wall time.
		cpu := cpuTime() - before
		b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	}()
	for range b.N {
		f, err := OpenPath(path, o)
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

// keyOptions are the reader options of an import keyed by key: the plan
// pass then also finds the rows a later row with the same key supersedes.
func keyOptions(key []string) Options { return Options{NotNull: key, Key: key} }

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

// BenchmarkKeyIndex measures what the plan pass spends on keys: keying and
// hashing a million distinct int64 values and finding that none repeats.
// It reports the heap the index holds per key during the pass (bytes/key)
// and the time per key of the end-of-pass search alone (search-ns/key).
func BenchmarkKeyIndex(b *testing.B) {
	const n = 1_000_000
	var perKey float64
	var search time.Duration
	for range b.N {
		b.StopTimer()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		k := keys.NewIndex("", 0)
		var buf []byte
		for i := range int64(n) {
			buf = keys.AppendValue(buf[:0], value.Value{I: i * 7919}, idemtype.Int64)
			k.Add(i+1, buf)
		}
		b.StopTimer()
		runtime.ReadMemStats(&after)
		perKey = float64(after.HeapAlloc-before.HeapAlloc) / n
		b.StartTimer()
		t0 := time.Now()
		if c, err := k.Candidates(); err != nil || len(c) != 0 {
			b.Fatalf("%d candidates among distinct keys", len(c))
		}
		search += time.Since(t0)
	}
	b.ReportMetric(perKey, "bytes/key")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/key")
	b.ReportMetric(float64(search.Nanoseconds())/float64(b.N)/n, "search-ns/key")
}

// BenchmarkRead measures the read pass of an import: every partition of a
// plan read into batches, over the same 200,000 orders rows as CSV, JSONL
// and Parquet (the plan is made once, outside the timing).
func BenchmarkRead(b *testing.B) {
	const n = 200_000
	dir := b.TempDir()
	csvPath := filepath.Join(dir, "orders.csv")
	rows := testkit.Orders(b, csvPath, n, 1)
	jsonlPath := filepath.Join(dir, "orders.jsonl")
	writeOrdersJSONL(b, jsonlPath, rows)
	for _, path := range []string{csvPath, jsonlPath} {
		b.Run(filepath.Ext(path)[1:], func(b *testing.B) {
			f, err := OpenPath(path, Options{})
			if err != nil {
				b.Fatal(err)
			}
			plan, err := f.Scan(context.Background(), ScanOptions{})
			if err != nil || plan.Rows != n {
				b.Fatalf("%v %+v", err, plan)
			}
			before := cpuTime()
			b.ResetTimer()
			for range b.N {
				var got int64
				for batch, err := range f.Batches(plan, plan.Partitions, 0) {
					if err != nil {
						b.Fatal(err)
					}
					got += batch.Record.NumRows()
					batch.Release()
				}
				if got != n {
					b.Fatalf("read %d rows, want %d", got, n)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64((cpuTime()-before).Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkFiles measures the plan pass and the read pass over the files
// that IDEMPORT_BENCH_FILES names (comma-separated: the same data as CSV,
// Parquet and Arrow from other writers, say), to set the readers side by
// side on data bench/gen did not write. Without the variable it skips.
// IDEMPORT_BENCH_KEY, if set, names key columns (comma-separated) for a
// keyed plan pass of each file as well (plan-key).
func BenchmarkFiles(b *testing.B) {
	list := os.Getenv("IDEMPORT_BENCH_FILES")
	if list == "" {
		b.Skip("IDEMPORT_BENCH_FILES names no files")
	}
	for _, path := range strings.Split(list, ",") {
		f, err := OpenPath(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		plan, err := f.Scan(context.Background(), ScanOptions{})
		if err != nil {
			b.Fatal(err)
		}
		name := filepath.Base(path)
		b.Run(name+"/plan", func(b *testing.B) { benchPlan(b, path, plan.Rows, Options{}) })
		if key := os.Getenv("IDEMPORT_BENCH_KEY"); key != "" {
			b.Run(name+"/plan-key", func(b *testing.B) { benchPlan(b, path, plan.Rows, keyOptions(strings.Split(key, ","))) })
		}
		f.Close()
		b.Run(name+"/read", func(b *testing.B) {
			before := cpuTime()
			for range b.N {
				// A File of its own each time, as each import opens
				// one: a File marks the row ranges its readers started,
				// and a range read again is decoded from its group's
				// first row (and Batches closes the File).
				f, err := OpenPath(path, Options{})
				if err != nil {
					b.Fatal(err)
				}
				var got int64
				for batch, err := range f.Batches(plan, plan.Partitions, 0) {
					if err != nil {
						b.Fatal(err)
					}
					got += batch.Record.NumRows()
					batch.Release()
				}
				if got != plan.Rows {
					b.Fatalf("read %d rows, want %d", got, plan.Rows)
				}
			}
			b.ReportMetric(float64(plan.Rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64((cpuTime()-before).Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
}
