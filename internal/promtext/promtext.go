package promtext

import (
	"math"
	"strconv"
)

// Gauge is a family of gauge samples sharing a name, which must not be
// empty, and help text.
type Gauge struct {
	Name    string
	Help    string
	Samples []Sample
}

// Sample is one gauge sample: its labels, in the order they are written,
// and its value.
type Sample struct {
	Labels []Label
	Value  float64
}

// Label is a label's name and value.
type Label struct {
	Name, Value string
}

// AppendGauge appends g to b: its HELP and TYPE lines, then a line for each
// sample. A family without samples appends nothing (the text format has no
// way to say it). A name (metric or label) that is not a legacy Prometheus
// name ([a-zA-Z_:][a-zA-Z0-9_:]*) is quoted; help text escapes backslash and
// newline, label values those and the double quote.
func AppendGauge(b []byte, g Gauge) []byte {
	if len(g.Samples) == 0 {
		return b
	}
	b = append(b, "# HELP "...)
	b = appendName(b, g.Name)
	b = append(b, ' ')
	b = appendEscaped(b, g.Help, false)
	b = append(b, "\n# TYPE "...)
	b = appendName(b, g.Name)
	b = append(b, " gauge\n"...)
	for _, s := range g.Samples {
		b = appendSample(b, g.Name, s)
	}
	return b
}

func appendSample(b []byte, name string, s Sample) []byte {
	sep := byte('{')
	legacy := legacyName(name)
	if !legacy { // the name goes inside the braces
		b = append(b, sep)
		sep = ','
	}
	b = appendName(b, name)
	for _, l := range s.Labels {
		b = append(b, sep)
		sep = ','
		b = appendName(b, l.Name)
		b = append(b, `="`...)
		b = appendEscaped(b, l.Value, true)
		b = append(b, '"')
	}
	if len(s.Labels) > 0 || !legacy {
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = appendFloat(b, s.Value)
	return append(b, '\n')
}

// appendFloat writes f as Go's shortest 'g' form, but a zero of either
// sign as 0, and NaN, +Inf and -Inf as Prometheus spells them.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case f == 0:
		return append(b, '0')
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// appendName writes a legacy name as it is, any other quoted.
func appendName(b []byte, name string) []byte {
	if legacyName(name) {
		return append(b, name...)
	}
	b = append(b, '"')
	b = appendEscaped(b, name, true)
	return append(b, '"')
}

// legacyName reports whether name is a legacy Prometheus metric name:
// [a-zA-Z_:][a-zA-Z0-9_:]*, the test expfmt applies to label names too.
func legacyName(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':' || c >= '0' && c <= '9' && i > 0
		if !ok {
			return false
		}
	}
	return true
}

// appendEscaped writes s with backslash and newline escaped, and the
// double quote when quoted.
func appendEscaped(b []byte, s string, quoted bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quoted:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}
