package postgres

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// BenchmarkStream encodes a batch of 40,000 rows of bench/gen's orders
// columns for a binary COPY, as a first import's COPY reads it (no
// database).
//
//	go test ./sink/postgres -run '^$' -bench Stream
func BenchmarkStream(b *testing.B) {
	s := drivertest.Schema(drivertest.I64("order_id"), drivertest.I64("customer_id"), drivertest.Str("sku"), drivertest.I64("quantity"),
		drivertest.F64("unit_price"), drivertest.Str("status"), drivertest.TS("created_at"), drivertest.Str("note"))
	typ := map[idemtype.Type]string{idemtype.Int64: "int8", idemtype.Float64: "float8", idemtype.String: "text", idemtype.Timestamp: "timestamptz"}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	rb := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer rb.Release()
	for i := range 40000 {
		rb.Field(0).(*array.Int64Builder).Append(int64(i + 1))
		rb.Field(1).(*array.Int64Builder).Append(int64(i * 7 % 100000))
		rb.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("SKU-%06d", i%5000))
		rb.Field(3).(*array.Int64Builder).Append(int64(i%9 + 1))
		rb.Field(4).(*array.Float64Builder).Append(float64(i%10000) / 100)
		rb.Field(5).(*array.StringBuilder).Append("shipped")
		rb.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(at + int64(i)*60_000_000))
		if i%3 == 0 {
			rb.Field(7).(*array.StringBuilder).Append(fmt.Sprintf("gift wrap please, order %d", i))
		} else {
			rb.Field(7).AppendNull()
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	var fields []field
	for _, f := range s.Fields() {
		k := idemtype.TypeOf(f)
		fields = append(fields, field{name: f.Name, file: k, target: sink.Column{Name: f.Name, Kind: k, TypeName: typ[k]}})
	}
	enc := newEncoder(fields)
	lead := func(p []byte, i int) []byte { return appendInt8(appendInt8(p, 42), int64(i)) }
	p := make([]byte, 65536)
	b.ResetTimer()
	for range b.N {
		st := enc.stream(rec, 2, lead)
		for {
			if _, err := st.Read(p); err == io.EOF {
				break
			}
		}
	}
}
