package promtext

import (
	"bytes"
	"math"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// expfmtText is what Prometheus's own encoder writes for g.
func expfmtText(t *testing.T, g Gauge) string {
	t.Helper()
	f := &dto.MetricFamily{Name: new(g.Name), Help: new(g.Help), Type: dto.MetricType_GAUGE.Enum()}
	for _, s := range g.Samples {
		m := &dto.Metric{Gauge: &dto.Gauge{Value: new(s.Value)}}
		for _, l := range s.Labels {
			m.Label = append(m.Label, &dto.LabelPair{Name: new(l.Name), Value: new(l.Value)})
		}
		f.Metric = append(f.Metric, m)
	}
	var b bytes.Buffer
	if len(f.Metric) == 0 {
		return "" // expfmt refuses a family without samples
	}
	if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
		t.Fatalf("expfmt: %v", err)
	}
	return b.String()
}

func TestAppendGaugeAsExpfmt(t *testing.T) {
	t.Parallel()
	one := func(v float64, labels ...Label) []Sample { return []Sample{{Labels: labels, Value: v}} }
	tests := []struct {
		name string
		g    Gauge
	}{
		{"plain", Gauge{Name: "idemport_last_run_rows", Help: "Rows.", Samples: one(42, Label{"job", "orders"}, Label{"table", "orders"}, Label{"kind", "inserted"})}},
		{"no labels", Gauge{Name: "idemport_outbox_pending", Help: "Pending.", Samples: one(3)}},
		{"no samples", Gauge{Name: "idemport_operations", Help: "Operations."}},
		{"several samples", Gauge{Name: "x", Help: "h", Samples: []Sample{{Labels: []Label{{"a", "1"}}, Value: 1}, {Labels: []Label{{"a", "2"}}, Value: 2}}}},
		{"value escapes", Gauge{Name: "x", Help: "h", Samples: one(1, Label{"table", "a\"b\\c\nd"}, Label{"feed", `\"\\n`})}},
		{"help escapes", Gauge{Name: "x", Help: "back\\slash \"quote\"\nnew line", Samples: one(1)}},
		{"empty help and value", Gauge{Name: "x", Samples: one(1, Label{"table", ""})}},
		{"utf-8 value", Gauge{Name: "x", Help: "ünïcode", Samples: one(1, Label{"table", "Bestellungen_ä_日本"})}},
		{"invalid utf-8", Gauge{Name: "x", Help: "\xff\xfe", Samples: one(1, Label{"table", "\xc3\x28"})}},
		{"carriage return and tab", Gauge{Name: "x", Help: "a\rb\tc", Samples: one(1, Label{"table", "a\rb\tc"})}},
		{"quoted metric name", Gauge{Name: "orders.rows", Help: "h", Samples: one(1, Label{"job", "j"})}},
		{"quoted metric name without labels", Gauge{Name: "9lives", Help: "h", Samples: one(1)}},
		{"quoted label name", Gauge{Name: "x", Help: "h", Samples: one(1, Label{"table name", "t"}, Label{"a:b", "c"}, Label{"0a", "d"}, Label{"", "e"})}},
		{"colon and digits", Gauge{Name: "ns:x_1", Help: "h", Samples: one(1, Label{"_a1", "v"})}},
		{"zero", Gauge{Name: "x", Help: "h", Samples: one(0)}},
		{"negative zero", Gauge{Name: "x", Help: "h", Samples: one(math.Copysign(0, -1))}},
		{"one and minus one", Gauge{Name: "x", Help: "h", Samples: []Sample{{Value: 1}, {Value: -1}}}},
		{"NaN", Gauge{Name: "x", Help: "h", Samples: one(math.NaN())}},
		{"infinities", Gauge{Name: "x", Help: "h", Samples: []Sample{{Value: math.Inf(1)}, {Value: math.Inf(-1)}}}},
		{"fractions", Gauge{Name: "x", Help: "h", Samples: []Sample{{Value: 0.1}, {Value: 1.5}, {Value: -2.25}, {Value: 1e-7}, {Value: 123456.789}}}},
		{"large", Gauge{Name: "x", Help: "h", Samples: []Sample{{Value: 1e21}, {Value: 1 << 53}, {Value: 1<<53 + 2}, {Value: math.MaxFloat64}, {Value: 1.7e9}}}},
		{"tiny", Gauge{Name: "x", Help: "h", Samples: []Sample{{Value: math.SmallestNonzeroFloat64}, {Value: -5e-324}}}},
		{"unix time in seconds", Gauge{Name: "x", Help: "h", Samples: one(1796549605.123)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, want := string(AppendGauge(nil, tt.g)), expfmtText(t, tt.g)
			if got != want {
				t.Errorf("AppendGauge wrote\n%q\nexpfmt writes\n%q", got, want)
			}
		})
	}
}

func TestAppendGaugeAppends(t *testing.T) {
	t.Parallel()
	g := Gauge{Name: "x", Help: "h", Samples: []Sample{{Value: 2}}}
	b := AppendGauge([]byte("before\n"), g)
	if want := "before\n" + expfmtText(t, g); string(b) != want {
		t.Errorf("got %q, want %q", b, want)
	}
}

// FuzzAppendGauge compares AppendGauge with expfmt on arbitrary names,
// help text, label values and values.
func FuzzAppendGauge(f *testing.F) {
	f.Add("idemport_last_run_rows", "Rows.", "table", "orders", 42.0)
	f.Add("a.b", "h\\\n", "l\"", "v\\\"\n", math.Inf(-1))
	f.Add("x", "", "9", "\xff", math.Copysign(0, -1))
	f.Fuzz(func(t *testing.T, name, help, label, value string, v float64) {
		if name == "" {
			t.Skip("a family has a name")
		}
		g := Gauge{Name: name, Help: help, Samples: []Sample{{Labels: []Label{{label, value}}, Value: v}, {Value: v / 3}}}
		if got, want := string(AppendGauge(nil, g)), expfmtText(t, g); got != want {
			t.Errorf("AppendGauge wrote\n%q\nexpfmt writes\n%q", got, want)
		}
	})
}
