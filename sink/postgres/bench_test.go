package postgres

import (
	"database/sql"
	"fmt"
	"testing"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/sink/drivertest"
)

// BenchmarkWrite runs drivertest.BenchWrite in a fresh schema per case, in
// batches of 1024 rows (the pipeline's default) and 16384.
//
//	IDEMPORT_TEST_POSTGRES=… go test ./sink/postgres -run '^$' -bench Write -benchtime 5x
func BenchmarkWrite(b *testing.B) {
	for _, size := range []int{1024, 16384} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			drivertest.BenchWrite(b, Driver{}, size, func(b *testing.B) *sql.DB {
				db, _ := pgtest.Open(b)
				return db
			})
		})
	}
}
