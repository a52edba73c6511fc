package mysql

import (
	"database/sql"
	"fmt"
	"testing"

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
