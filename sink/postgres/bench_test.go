package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/sinktest"
)

// orders is the shape of testkit.Orders: the end-to-end tests' file.
var orders = sinktest.Schema(sinktest.I64("order_id"), sinktest.I64("customer_id"), sinktest.Str("sku"), sinktest.I64("quantity"),
	sinktest.F64("unit_price"), sinktest.Str("status"), sinktest.TS("created_at"), sinktest.Str("note"))

// orderBatches builds rows first..first+n-1 in batches of size rows; tag
// changes the note of every row.
func orderBatches(first, n, size int, tag string) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	b := array.NewRecordBuilder(memory.DefaultAllocator, orders)
	defer b.Release()
	statuses := []string{"pending", "paid", "shipped", "delivered", "cancelled"}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := first; i < first+n; i++ {
		x := (i * 7919) % 1000003
		b.Field(0).(*array.Int64Builder).Append(int64(1_000_000_000 + i*2))
		b.Field(1).(*array.Int64Builder).Append(int64(100000 + x%900000))
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("SKU-%06d", x%1000000))
		b.Field(3).(*array.Int64Builder).Append(int64(1 + x%20))
		b.Field(4).(*array.Float64Builder).Append(float64(x%100000) / 100)
		b.Field(5).(*array.StringBuilder).Append(statuses[x%5])
		b.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(start.Add(time.Duration(x) * time.Minute).UnixMicro()))
		b.Field(7).(*array.StringBuilder).Append(fmt.Sprintf("note %d %s", x%97, tag))
		if (i-first+1)%size == 0 || i == first+n-1 {
			out = append(out, b.NewRecordBatch())
		}
	}
	return out
}

// BenchmarkWrite writes 100,000 orders in one transaction (the default
// partition), in batches of 1024 rows (the pipeline's default) or 16384,
// into a fresh table (first), again unchanged (reload), and again with
// every row changed (update), and reports rows/s.
//
//	IDEMPORT_TEST_POSTGRES=… go test ./sink/postgres -run '^$' -bench Write -benchtime 5x
func BenchmarkWrite(b *testing.B) {
	for _, size := range []int{1024, 16384} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) { benchmarkWrite(b, size) })
	}
}

func benchmarkWrite(b *testing.B, size int) {
	const rows = 100_000
	for _, mode := range []struct {
		name string
		tg   sink.Target
	}{
		{"ordinal", sink.Target{Table: "orders"}},
		{"natural", sink.Target{Table: "orders", Key: []string{"order_id"}}},
	} {
		for _, phase := range []string{"first", "reload", "update"} {
			b.Run(mode.name+"/"+phase, func(b *testing.B) {
				db, _ := pgtest.Open(b)
				ctx := context.Background()
				conn, err := db.Conn(ctx)
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close()
				tx, err := conn.BeginTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := (Dialect{}).Ensure(ctx, tx, mode.tg, orders); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				w, err := (Dialect{}).Writer(ctx, conn, mode.tg, orders)
				if err != nil {
					b.Fatal(err)
				}
				defer w.Close()
				base := orderBatches(1, rows, size, "a")
				changed := orderBatches(1, rows, size, "b")
				write := func(fileKey int64, batches []arrow.RecordBatch, first int) {
					tx, err := conn.BeginTx(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					ord := int64(first)
					for _, rec := range batches {
						ords := make([]int64, rec.NumRows())
						for i := range ords {
							ords[i] = ord
							ord++
						}
						if _, err := w.Write(ctx, tx, fileKey, rec, ords); err != nil {
							b.Fatal(err)
						}
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
				}
				if phase != "first" {
					write(1, base, 1)
				}
				b.ResetTimer()
				for i := range b.N {
					switch phase {
					case "first":
						b.StopTimer()
						truncate(b, db, mode.tg.Table)
						b.StartTimer()
						write(int64(i+1), base, 1)
					case "reload":
						write(1, base, 1)
					case "update":
						if i%2 == 0 {
							write(1, changed, 1)
						} else {
							write(1, base, 1)
						}
					}
				}
				b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}

func truncate(b *testing.B, db *sql.DB, table string) {
	if _, err := db.Exec(`TRUNCATE ` + table); err != nil {
		b.Fatal(err)
	}
}
