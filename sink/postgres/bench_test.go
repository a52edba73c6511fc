package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/sinktest"
)

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
				if err := (Dialect{}).Ensure(ctx, tx, mode.tg, sinktest.Orders); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				w, err := (Dialect{}).Writer(ctx, conn, mode.tg, sinktest.Orders)
				if err != nil {
					b.Fatal(err)
				}
				defer w.Close()
				base := sinktest.OrderBatches(1, rows, size, "a")
				changed := sinktest.OrderBatches(1, rows, size, "b")
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
