package mysql

import (
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink/drivertest"
)

// BenchmarkLines times making the lines of a load of 100,000 Orders rows
// (the row's ordinal, then its values), as the Writer makes them for a
// first load: no database, the process's own CPU alone.
//
//	go test ./sink/mysql -run '^$' -bench Lines
func BenchmarkLines(b *testing.B) {
	const rows = 100_000
	rec := drivertest.OrderBatches(1, rows, rows, "a line of text\twith a tab")[0]
	defer rec.Release()
	var fields []field
	for _, f := range drivertest.Orders.Fields() {
		fields = append(fields, field{name: f.Name, file: idemtype.TypeOf(f), target: idemtype.TypeOf(f)})
	}
	var data []byte
	b.ReportAllocs()
	for b.Loop() {
		data = appendLines(data[:0], fields, rec.Columns(), rows)
	}
	b.SetBytes(int64(len(data)))
}

// appendLines appends the lines of n rows of cols to data, as
// BenchmarkFirstKeyLoadVsClient writes its file.
func appendLines(data []byte, fields []field, cols []arrow.Array, n int) []byte {
	appenders := make([]func([]byte, int) []byte, len(fields))
	for c := range fields {
		appenders[c] = fields[c].loadAppender(cols[c])
	}
	for r := range n {
		data = strconv.AppendInt(data, int64(r+1), 10)
		for _, app := range appenders {
			data = append(data, '\t')
			data = app(data, r)
		}
		data = append(data, '\n')
	}
	return data
}
