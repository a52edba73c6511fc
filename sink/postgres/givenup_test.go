package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// TestCopyEndedByTheServerStopsReadingTheBatch: a COPY whose connection
// the server ends (pg_terminate_backend, as an administrator or a failover
// would) returns from pgconn's CopyFrom without waiting for the goroutine
// that reads the COPY stream, and the caller then releases the batch.
// Nothing may read the batch after Write returns: run with -race, or
// without it a read of a released column panics (a nil *array.String's
// data in String.Value).
func TestCopyEndedByTheServerStopsReadingTheBatch(t *testing.T) {
	env := open(t)
	f := drivertest.Open(t, env)
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("note"))
	tg := sink.Target{Table: "ended"}
	f.MustEnsure(tg, s)
	const n = 200_000
	note := strings.Repeat("x", 200)
	for round := range 3 {
		conn, err := env.DB.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var pid int
		if err := conn.QueryRowContext(context.Background(), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		w, err := Driver{}.Writer(context.Background(), conn, tg, s)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := conn.BeginTx(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		mem := memory.NewGoAllocator()
		b := array.NewRecordBuilder(mem, s)
		ordinals := make([]int64, n)
		for i := range n {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.StringBuilder).Append(note)
			ordinals[i] = int64(i + 1)
		}
		rec := b.NewRecordBatch()
		b.Release()
		done := make(chan error, 1)
		go func() {
			_, err := w.Write(context.Background(), tx, 1, rec, ordinals)
			rec.Release() // as the pipeline does once Write returns
			done <- err
		}()
		// End the backend once its COPY is under way.
		deadline := time.Now().Add(30 * time.Second)
		for {
			var copying bool
			if err := env.DB.QueryRowContext(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND query LIKE 'COPY%' AND state = 'active')`, pid).Scan(&copying); err != nil {
				t.Fatal(err)
			}
			if copying {
				break
			}
			select {
			case err := <-done:
				t.Fatalf("round %d: the write ended before its COPY was seen: %v", round, err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatal("no COPY seen")
			}
			time.Sleep(time.Millisecond)
		}
		if _, err := env.DB.ExecContext(context.Background(), `SELECT pg_terminate_backend($1)`, pid); err != nil {
			t.Fatal(err)
		}
		err = <-done
		if err == nil {
			t.Logf("round %d: the COPY completed before the backend ended", round)
		}
		time.Sleep(50 * time.Millisecond) // a reader left running would read the released batch now
		tx.Rollback()
		w.Close()
		conn.Close()
	}
}
