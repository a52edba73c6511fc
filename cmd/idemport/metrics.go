package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/idemport/idemport/internal/promtext"
	"github.com/idemport/idemport/pipeline"
)

// metricsJob is the job label of a metrics file: named by --metrics-job,
// or else the file's base name without its extension, so that two jobs
// writing their own files into one textfile directory never repeat a series.
func metricsJob(file, job string) (string, error) {
	if job == "" {
		base := filepath.Base(file)
		job = strings.TrimSuffix(base, filepath.Ext(base))
	}
	if job == "" {
		return "", usageError{fmt.Errorf("--metrics-file %q: cannot name the job after it; name it with --metrics-job", file)}
	}
	return job, nil
}

// runMetrics is what one run of import reports in its metrics file.
type runMetrics struct {
	job string
	// run counts the run's results; with run, by feed, whose samples of
	// the last run then carry a feed label.
	run  pipeline.RunMetrics
	code int
	took time.Duration
	end  time.Time
	// ledger holds the ledger's numbers and the deliveries the outbox
	// still owes; nil when the ledger could not be read (the run stopped
	// before it opened the database), in which case the ledger-wide gauges
	// are left out.
	ledger *pipeline.LedgerMetrics
}

// writeMetrics writes the Prometheus text format file for node_exporter's
// textfile collector: the last run's outcomes, rows and partitions by table,
// and from the ledger, per table, when an import last completed and the
// operations by state. Every sample carries the job label. It replaces path
// atomically: temp file, fsync, rename, fsync of the directory.
func writeMetrics(path string, m runMetrics) error {
	var fams []*promtext.Gauge
	gauge := func(name, help string) *promtext.Gauge {
		f := &promtext.Gauge{Name: name, Help: help}
		fams = append(fams, f)
		return f
	}
	sample := func(f *promtext.Gauge, v float64, labels ...string) {
		pairs := []promtext.Label{{Name: "job", Value: m.job}}
		for i := 0; i+1 < len(labels); i += 2 {
			pairs = append(pairs, promtext.Label{Name: labels[i], Value: labels[i+1]})
		}
		f.Samples = append(f.Samples, promtext.Sample{Labels: pairs, Value: v})
	}
	byTable := func(name, label, help string, values map[pipeline.MetricKey]int64) {
		f := gauge(name, help)
		for _, k := range sortedMetricKeys(values) {
			sample(f, float64(values[k]), metricLabels(k, label)...)
		}
	}
	byTable("idemport_last_run_files", "outcome", "Files of the last run by outcome (imported, resumed, duplicate, conflict, busy, refused, failed).", m.run.Files)
	byTable("idemport_last_run_rows", "kind", "Rows the last run read, inserted, updated, left unchanged, found stale, superseded or rejected, and deleted by snapshot sweeps.", m.run.Rows)
	byTable("idemport_last_run_partitions", "kind", "Partitions of the last run's files: total, skipped (done before) and committed.", m.run.Partitions)
	byTable("idemport_last_run_recovered_leases", "", "Leases of dead or stalled attempts the last run took over.", m.run.RecoveredLeases)
	sample(gauge("idemport_last_run_duration_seconds", "How long the last run took."), m.took.Seconds())
	sample(gauge("idemport_last_run_exit_code", "The last run's exit code."), float64(m.code))
	sample(gauge("idemport_last_run_timestamp_seconds", "When the last run ended, as a Unix time."), float64(m.end.UnixMilli())/1000)

	if l := m.ledger; l != nil {
		f := gauge("idemport_last_success_timestamp_seconds", "When an import into the table last completed, as a Unix time (from the ledger).")
		for _, t := range sortedKeys(l.LastSuccess) {
			sample(f, float64(l.LastSuccess[t])/1000, "table", t)
		}
		byTable("idemport_operations", "state", "Operations in the ledger by table and state.", l.Operations)
		sample(gauge("idemport_outbox_pending", "Event deliveries the outbox still owes to a sink (after this run's delivery)."), float64(l.OutboxPending))
	}

	var b []byte
	for _, f := range fams {
		b = promtext.AppendGauge(b, *f) // a family without samples writes nothing
	}
	return writeAtomic(path, b)
}

// metricLabels are the labels of a sample: feed (when the run had feeds),
// table and, when the family has one (label), its own label.
func metricLabels(k pipeline.MetricKey, label string) []string {
	var l []string
	if k.Feed != "" {
		l = append(l, "feed", k.Feed)
	}
	l = append(l, "table", k.Table)
	if label != "" {
		l = append(l, label, k.Label)
	}
	return l
}

// sortedMetricKeys is the keys of values by feed, table and label.
func sortedMetricKeys(values map[pipeline.MetricKey]int64) []pipeline.MetricKey {
	keys := make([]pipeline.MetricKey, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Feed != keys[j].Feed {
			return keys[i].Feed < keys[j].Feed
		}
		if keys[i].Table != keys[j].Table {
			return keys[i].Table < keys[j].Table
		}
		return keys[i].Label < keys[j].Label
	})
	return keys
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// writeAtomic replaces path with data so that a reader sees the old file or
// the new one, never part of one, even across a crash.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
