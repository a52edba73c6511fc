package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// BenchmarkWrite runs drivertest.BenchWrite in a fresh database per case,
// in batches of 1024 rows (the pipeline's default) and 16384.
//
//	IDEMPORT_TEST_MARIADB=… go test ./sink/mysql -run '^$' -bench Write -benchtime 5x
func BenchmarkWrite(b *testing.B) {
	for _, size := range []int{1024, 16384} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			drivertest.BenchWrite(b, Driver{}, size, func(b *testing.B) *sql.DB {
				db, _ := openTarget(b, sink.Settings{})
				return db
			})
		})
	}
}

// BenchmarkFirstKeyLoadVsClient times the first load of 100,000 Orders rows
// into a table keyed by order_id (made by Ensure, lineage columns and all)
// two ways, in turn in each round: the Writer, in batches of 1024 rows in
// one transaction, and the mariadb client's LOAD DATA LOCAL INFILE of a
// file of the same lines the Writer sends (the row's ordinal, then its
// values), started as a process, as a user would run it. It reports both
// rows/s and the median of the rounds' ratios (the Writer's time over the
// client's). It skips without the mariadb client on the PATH.
//
//	IDEMPORT_TEST_MARIADB=… go test ./sink/mysql -run '^$' -bench FirstKeyLoadVsClient -benchtime 5x
func BenchmarkFirstKeyLoadVsClient(b *testing.B) {
	client, err := osexec.LookPath("mariadb")
	if err != nil {
		b.Skip("no mariadb client on the PATH")
	}
	const rows, size = 100_000, 1024
	ctx := context.Background()
	db, dsn := openTarget(b, sink.Settings{})
	cfg, err := parseDSN(dsn)
	if err != nil {
		b.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	batches := drivertest.OrderBatches(1, rows, size, "a")
	tg := sink.Target{Table: "orders", Key: []string{"order_id"}}
	var w sink.Writer
	defer func() {
		if w != nil {
			w.Close()
		}
	}()
	fresh := func() *writer {
		b.Helper()
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
		if err := (Driver{}).Ensure(ctx, tx, tg, drivertest.Orders); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		if w, err = (Driver{}).Writer(ctx, conn, tg, drivertest.Orders); err != nil {
			b.Fatal(err)
		}
		return w.(*writer)
	}

	// The client's file: the lines the Writer's loads send.
	var data []byte
	fields := fresh().fields
	ord := int64(1)
	for _, rec := range batches {
		for r := range int(rec.NumRows()) {
			data = strconv.AppendInt(data, ord, 10)
			ord++
			for c := range fields {
				data = append(data, '\t')
				data = fields[c].appendLoad(data, rec.Column(c), r)
			}
			data = append(data, '\n')
		}
	}
	file := filepath.Join(b.TempDir(), "orders.tsv")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		b.Fatal(err)
	}
	cols := []string{"`" + sink.RowColumn + "`"}
	for _, f := range fields {
		cols = append(cols, "`"+f.name+"`")
	}
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		b.Fatal(err)
	}
	args := []string{"--local-infile=1", "-h", host, "-P", port, "-u", cfg.User, cfg.DBName, "-e",
		"LOAD DATA LOCAL INFILE '" + file + "' INTO TABLE orders CHARACTER SET utf8mb4 (" + strings.Join(cols, ", ") + ") SET `" + sink.FileColumn + "` = 1"}
	if cfg.Passwd != "" {
		args = append([]string{"--password=" + cfg.Passwd}, args...)
	}

	var ours, theirs time.Duration
	var ratios []float64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		fresh()
		b.StartTimer()
		start := time.Now()
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
		a := time.Since(start)
		b.StopTimer()
		fresh()
		start = time.Now()
		if out, err := osexec.CommandContext(ctx, client, args...).CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", client, err, out)
		}
		c := time.Since(start)
		var n int64
		if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM orders`).Scan(&n); err != nil || n != rows {
			b.Fatalf("the client loaded %d rows (%v), want %d", n, err, rows)
		}
		b.StartTimer()
		ours, theirs = ours+a, theirs+c
		ratios = append(ratios, a.Seconds()/c.Seconds())
	}
	b.StopTimer()
	slices.Sort(ratios)
	b.ReportMetric(float64(rows*b.N)/ours.Seconds(), "rows/s")
	b.ReportMetric(float64(rows*b.N)/theirs.Seconds(), "client-rows/s")
	b.ReportMetric(ratios[len(ratios)/2], "ratio")
}
