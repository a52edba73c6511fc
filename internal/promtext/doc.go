// Package promtext writes gauges in Prometheus's text exposition format
// (version 0.0.4), the format node_exporter's textfile collector reads.
//
// It writes what Prometheus's own encoder (expfmt.MetricFamilyToText of
// github.com/prometheus/common) writes for a gauge family, byte for byte,
// without linking that encoder: expfmt brings Prometheus's protobuf model
// and Go's parser and printer packages into the command, which every run
// initialises whether it writes a metrics file or not. The tests compare
// the two on edge values.
package promtext
