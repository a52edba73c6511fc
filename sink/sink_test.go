package sink_test

import (
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// A json column keeps its kind through the Arrow field metadata.
func TestKindOf(t *testing.T) {
	for _, c := range []struct {
		name string
		kind idemtype.Type
		got  idemtype.Type
	}{
		{"json", idemtype.JSON, idemtype.TypeOf(drivertest.JSON("doc"))},
		{"string", idemtype.String, idemtype.TypeOf(drivertest.Str("s"))},
		{"timestamp", idemtype.Timestamp, idemtype.TypeOf(drivertest.TS("at"))},
		{"int64", idemtype.Int64, idemtype.TypeOf(drivertest.I64("i"))},
		{"float64", idemtype.Float64, idemtype.TypeOf(drivertest.F64("f"))},
		{"bool", idemtype.Bool, idemtype.TypeOf(drivertest.Bool("b"))},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.kind {
				t.Errorf("kind %s, want %s", c.got, c.kind)
			}
		})
	}
}

func TestRowSpan(t *testing.T) {
	for _, c := range []struct {
		ordinals []int64
		want     string
	}{
		{[]int64{1, 2, 3}, "rows 1-3"},
		{[]int64{7, 3, 9, 5}, "rows 3-9"}, // a batch in key order
		{[]int64{9, 4}, "rows 4-9"},
		{[]int64{4}, "row 4"},
		{nil, "no rows"},
	} {
		if got := sink.RowSpan(c.ordinals); got != c.want {
			t.Errorf("RowSpan(%v) = %q, want %q", c.ordinals, got, c.want)
		}
	}
}
