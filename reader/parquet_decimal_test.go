package reader

import (
	"fmt"
	"math/big"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
)

// TestParquetDecimalsStoredAsIntegers reads decimals of the widest and
// narrowest precisions a Parquet INT32 or INT64 holds (9 and 18 digits, at
// scales 0, 3 and 18), both signs, zero and nulls, stored as integers and
// as fixed-length bytes, beside a 38-digit decimal, which bytes alone
// hold: each value must read as its exact text, whole and with the columns
// selected in another order than the file's (the first left out).
func TestParquetDecimalsStoredAsIntegers(t *testing.T) {
	mem := memory.NewGoAllocator()
	num := func(s string) decimal128.Num {
		b, ok := new(big.Int).SetString(s, 10)
		if !ok {
			t.Fatal(s)
		}
		return decimal128.FromBigInt(b)
	}
	cols := []struct {
		name         string
		prec, scale  int32
		vals, wanted []string // "" is null
	}{
		{"d9", 9, 3,
			[]string{"0", "1", "-1", "999999999", "-999999999", "", "123456", "-5"},
			[]string{"0.000", "0.001", "-0.001", "999999.999", "-999999.999", "", "123.456", "-0.005"}},
		{"d9s0", 9, 0,
			[]string{"0", "-7", "999999999", "", "-999999999", "10", "2147483", "1"},
			[]string{"0", "-7", "999999999", "", "-999999999", "10", "2147483", "1"}},
		{"d18", 18, 0,
			[]string{"0", "999999999999999999", "-999999999999999999", "", "42", "-42", "7", "9223372036854775"},
			[]string{"0", "999999999999999999", "-999999999999999999", "", "42", "-42", "7", "9223372036854775"}},
		{"d18s18", 18, 18,
			[]string{"1", "-1", "100000000000000000", "", "999999999999999999", "-999999999999999999", "0", "5"},
			[]string{"0.000000000000000001", "-0.000000000000000001", "0.100000000000000000", "", "0.999999999999999999", "-0.999999999999999999", "0.000000000000000000", "0.000000000000000005"}},
		{"d38", 38, 10,
			[]string{"99999999999999999999999999999999999999", "-99999999999999999999999999999999999999", "", "1", "0", "-10000000000", "12345678901234567890", "5"},
			[]string{"9999999999999999999999999999.9999999999", "-9999999999999999999999999999.9999999999", "", "0.0000000001", "0.0000000000", "-1.0000000000", "1234567890.1234567890", "0.0000000005"}},
	}
	fields := []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}
	arrs := []arrow.Array{}
	ids := array.NewInt64Builder(mem)
	for i := range cols[0].vals {
		ids.Append(int64(i + 1))
	}
	arrs = append(arrs, ids.NewArray())
	ids.Release()
	for _, c := range cols {
		dt := &arrow.Decimal128Type{Precision: c.prec, Scale: c.scale}
		fields = append(fields, arrow.Field{Name: c.name, Type: dt, Nullable: true})
		b := array.NewDecimal128Builder(mem, dt)
		for _, v := range c.vals {
			if v == "" {
				b.AppendNull()
			} else {
				b.Append(num(v))
			}
		}
		arrs = append(arrs, b.NewArray())
		b.Release()
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(len(cols[0].vals)))
	defer rec.Release()
	for _, a := range arrs {
		a.Release()
	}
	for _, asInt := range []bool{true, false} {
		path := writeParquetRecord(t, fmt.Sprintf("d-%v.parquet", asInt), rec, 3, false, parquet.WithStoreDecimalAsInteger(asInt))
		for _, sel := range [][]string{nil, {"d38", "d18s18", "d9", "d18", "d9s0"}} {
			t.Run(fmt.Sprintf("integers-%v/select-%v", asInt, sel != nil), func(t *testing.T) {
				rows, err := readSelected(t, path, Options{Select: sel})
				if err != nil {
					t.Fatal(err)
				}
				names := sel
				if names == nil {
					names = []string{"id"}
					for _, c := range cols {
						names = append(names, c.name)
					}
				}
				for i, row := range rows {
					for k, name := range names {
						want := any(fmt.Sprint(i + 1))
						for _, c := range cols {
							if c.name == name {
								want = c.wanted[i]
								if want == "" {
									want = nil
								}
							}
						}
						if row[k] != want {
							t.Errorf("row %d, %s: %#v, want %#v", i+1, name, row[k], want)
						}
					}
				}
				if len(rows) != len(cols[0].vals) {
					t.Fatalf("%d rows", len(rows))
				}
			})
		}
	}
}
