package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/sinktest"
)

// BenchmarkWrite writes 100,000 orders in one transaction (the default
// partition), in batches of 1024 rows (the pipeline's default), into a new
// table (first), again unchanged (reload), and again with every row changed
// (update), and reports rows/s: the writer's hot loop, without parsing.
func BenchmarkWrite(b *testing.B) {
	const rows = 100_000
	base := sinktest.OrderBatches(1, rows, 1024, "a")
	changed := sinktest.OrderBatches(1, rows, 1024, "b")
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
				dir := b.TempDir()
				var db *sql.DB
				var conn *sql.Conn
				var w sink.Writer
				// open makes a new database with the table and a writer on it.
				open := func(i int) {
					if db != nil {
						w.Close()
						conn.Close()
						db.Close()
					}
					var err error
					db, err = sql.Open("sqlite3", "file:"+filepath.Join(dir, fmt.Sprintf("b%d.db", i))+
						"?_journal_mode=WAL&_synchronous=NORMAL&_cache_size=-65536&_txlock=immediate")
					if err != nil {
						b.Fatal(err)
					}
					if conn, err = db.Conn(ctx); err != nil {
						b.Fatal(err)
					}
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
					if w, err = (Dialect{}).Writer(ctx, conn, mode.tg, sinktest.Orders); err != nil {
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
				open(0)
				if phase != "first" {
					write(base)
				}
				b.ResetTimer()
				for i := range b.N {
					switch phase {
					case "first":
						b.StopTimer()
						open(i + 1)
						b.StartTimer()
						write(base)
					case "reload":
						write(base)
					case "update":
						if i%2 == 0 {
							write(changed)
						} else {
							write(base)
						}
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				w.Close()
				conn.Close()
				db.Close()
			})
		}
	}
}
