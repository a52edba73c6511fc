package drivertest

import (
	"context"
	"database/sql"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/sink"
)

// BenchWrite measures driver d's Writer, without parsing: 100,000 Orders
// rows written in one transaction (the default partition), in batches of
// size rows, into a new table (first), again unchanged (reload), and again
// with every row changed (update), in ordinal and natural-key mode. It
// reports rows/s. open returns an empty database for each case.
func BenchWrite(b *testing.B, d sink.Driver, size int, open func(b *testing.B) *sql.DB) {
	const rows = 100_000
	base := OrderBatches(1, rows, size, "a")
	changed := OrderBatches(1, rows, size, "b")
	for _, mode := range []struct {
		name string
		tg   sink.Target
	}{
		{"ordinal", sink.Target{Table: "orders"}},
		{"natural", sink.Target{Table: "orders", Key: []string{"order_id"}}},
	} {
		for _, phase := range []string{"first", "reload", "update"} {
			b.Run(mode.name+"/"+phase, func(b *testing.B) {
				ctx := context.Background()
				conn, err := open(b).Conn(ctx)
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close()
				var w sink.Writer
				defer func() { w.Close() }()
				// fresh makes the table anew, and a writer on it.
				fresh := func() {
					if w != nil {
						w.Close()
					}
					if _, err := conn.ExecContext(ctx, `DROP TABLE IF EXISTS orders`); err != nil {
						b.Fatal(err)
					}
					tx, err := conn.BeginTx(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					if err := d.Ensure(ctx, tx, mode.tg, Orders); err != nil {
						b.Fatal(err)
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
					if w, err = d.Writer(ctx, conn, mode.tg, Orders); err != nil {
						b.Fatal(err)
					}
				}
				write := func(batches []arrow.RecordBatch) {
					tx, err := conn.BeginTx(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					ord := int64(1)
					for _, rec := range batches {
						ords := make([]int64, rec.NumRows())
						for i := range ords {
							ords[i] = ord
							ord++
						}
						if _, err := w.Write(ctx, tx, 1, rec, ords); err != nil {
							b.Fatal(err)
						}
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
				}
				fresh()
				if phase != "first" {
					write(base)
				}
				b.ResetTimer()
				for i := range b.N {
					switch {
					case phase == "first":
						b.StopTimer()
						fresh()
						b.StartTimer()
						write(base)
					case phase == "update" && i%2 == 0:
						write(changed)
					default:
						write(base)
					}
				}
				b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}
