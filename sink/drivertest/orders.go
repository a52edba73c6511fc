package drivertest

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Orders is the shape of testkit.Orders, the end-to-end tests' file, for
// the sinks' benchmarks.
var Orders = Schema(I64("order_id"), I64("customer_id"), Str("sku"), I64("quantity"),
	F64("unit_price"), Str("status"), TS("created_at"), Str("note"))

// OrderBatches builds Orders rows first..first+n-1 in batches of size rows;
// tag changes the note of every row.
func OrderBatches(first, n, size int, tag string) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	b := array.NewRecordBuilder(memory.DefaultAllocator, Orders)
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
