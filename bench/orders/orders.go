// Package orders describes the benchmark's data set, the "orders" table,
// for the commands that write it (bench/gen) and read it (bench/anchor).
package orders

import "github.com/apache/arrow-go/v18/arrow"

// Columns are the table's columns, in file order.
var Columns = []string{"order_id", "customer_id", "sku", "quantity", "unit_price", "status", "created_at", "note"}

// Schema is the table as Arrow, with created_at in the given unit (UTC);
// only note may be null.
func Schema(unit arrow.TimeUnit) *arrow.Schema {
	types := []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String,
		arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64, arrow.BinaryTypes.String,
		&arrow.TimestampType{Unit: unit, TimeZone: "UTC"}, arrow.BinaryTypes.String}
	fields := make([]arrow.Field, len(Columns))
	for i, name := range Columns {
		fields[i] = arrow.Field{Name: name, Type: types[i], Nullable: name == "note"}
	}
	return arrow.NewSchema(fields, nil)
}
