package sink_test

import (
	"testing"

	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/sinktest"
)

// A json column keeps its kind through the Arrow field metadata.
func TestKindOf(t *testing.T) {
	for _, c := range []struct {
		name string
		kind string
		got  string
	}{
		{"json", sink.KindJSON, sink.KindOf(sinktest.JSON("doc"))},
		{"string", sink.KindString, sink.KindOf(sinktest.Str("s"))},
		{"timestamp", sink.KindTimestamp, sink.KindOf(sinktest.TS("at"))},
		{"int64", sink.KindInt64, sink.KindOf(sinktest.I64("i"))},
		{"float64", sink.KindFloat64, sink.KindOf(sinktest.F64("f"))},
		{"bool", sink.KindBool, sink.KindOf(sinktest.Bool("b"))},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.kind {
				t.Errorf("kind %s, want %s", c.got, c.kind)
			}
		})
	}
}
