package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/idemport/idemport/ledger"
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
	job     string
	results []*pipeline.Result
	// feeds names the feed of each result, with run: its samples of the
	// last run then carry a feed label.
	feeds map[*pipeline.Result]string
	code  int
	took  time.Duration
	end   time.Time
	// ops are the ledger's operations; nil when the ledger could not be
	// read (the run stopped before it opened the database), in which case
	// the ledger-wide gauges are left out.
	ops []ledger.Operation
	// outboxPending is the event deliveries the outbox still owes, read
	// with ops.
	outboxPending int64
}

// writeMetrics writes the Prometheus text format file for node_exporter's
// textfile collector: the last run's outcomes, rows and partitions by table,
// and from the ledger, per table, when an import last completed and the
// operations by state. Every sample carries the job label. It replaces path
// atomically: temp file, fsync, rename, fsync of the directory.
func writeMetrics(path string, m runMetrics) error {
	var fams []*dto.MetricFamily
	gauge := func(name, help string) *dto.MetricFamily {
		f := &dto.MetricFamily{Name: &name, Help: &help, Type: dto.MetricType_GAUGE.Enum()}
		fams = append(fams, f)
		return f
	}
	sample := func(f *dto.MetricFamily, v float64, labels ...string) {
		pairs := []*dto.LabelPair{{Name: new("job"), Value: new(m.job)}}
		for i := 0; i+1 < len(labels); i += 2 {
			pairs = append(pairs, &dto.LabelPair{Name: new(labels[i]), Value: new(labels[i+1])})
		}
		f.Metric = append(f.Metric, &dto.Metric{Label: pairs, Gauge: &dto.Gauge{Value: new(v)}})
	}

	type key struct{ feed, table, what string }
	files := map[key]float64{}
	rows := map[key]float64{}
	parts := map[key]float64{}
	recovered := map[key]float64{}
	for _, r := range m.results {
		feed := m.feeds[r]
		files[key{feed, r.Table, string(r.Outcome)}]++
		for kind, n := range map[string]int64{"read": r.Rows.Read, "inserted": r.Rows.Inserted, "updated": r.Rows.Updated,
			"unchanged": r.Rows.Unchanged, "stale": r.Rows.Stale, "superseded": r.Rows.Superseded, "rejected": r.Rows.Rejected, "deleted": r.Deleted} {
			rows[key{feed, r.Table, kind}] += float64(n) // what this run did: zero for a duplicate
		}
		for kind, n := range map[string]int64{"total": r.Partitions.Total, "skipped": r.Partitions.Skipped, "committed": r.Partitions.Committed} {
			parts[key{feed, r.Table, kind}] += float64(n)
		}
		recovered[key{feed, r.Table, ""}] += float64(len(r.RecoveredFrom))
	}
	// labels are a key's labels: feed (when the run had feeds), table and,
	// when it has one, the family's own label.
	labels := func(k key, label string) []string {
		var l []string
		if k.feed != "" {
			l = append(l, "feed", k.feed)
		}
		l = append(l, "table", k.table)
		if label != "" {
			l = append(l, label, k.what)
		}
		return l
	}
	sortKeys := func(values map[key]float64) []key {
		keys := make([]key, 0, len(values))
		for k := range values {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if keys[i].feed != keys[j].feed {
				return keys[i].feed < keys[j].feed
			}
			if keys[i].table != keys[j].table {
				return keys[i].table < keys[j].table
			}
			return keys[i].what < keys[j].what
		})
		return keys
	}
	byTable := func(name, label, help string, values map[key]float64) {
		f := gauge(name, help)
		for _, k := range sortKeys(values) {
			sample(f, values[k], labels(k, label)...)
		}
	}
	byTable("idemport_last_run_files", "outcome", "Files of the last run by outcome (imported, resumed, duplicate, conflict, busy, refused, failed).", files)
	byTable("idemport_last_run_rows", "kind", "Rows the last run read, inserted, updated, left unchanged, found stale, superseded or rejected, and deleted by snapshot sweeps.", rows)
	byTable("idemport_last_run_partitions", "kind", "Partitions of the last run's files: total, skipped (done before) and committed.", parts)
	f := gauge("idemport_last_run_recovered_leases", "Leases of dead or stalled attempts the last run took over.")
	for _, k := range sortKeys(recovered) {
		sample(f, recovered[k], labels(k, "")...)
	}
	sample(gauge("idemport_last_run_duration_seconds", "How long the last run took."), m.took.Seconds())
	sample(gauge("idemport_last_run_exit_code", "The last run's exit code."), float64(m.code))
	sample(gauge("idemport_last_run_timestamp_seconds", "When the last run ended, as a Unix time."), float64(m.end.UnixMilli())/1000)

	if m.ops != nil {
		last := map[string]float64{}
		states := map[key]float64{}
		for _, op := range m.ops {
			states[key{"", op.Table, string(op.State)}]++
			if op.State == ledger.Completed && float64(op.CompletedAt)/1000 > last[op.Table] {
				last[op.Table] = float64(op.CompletedAt) / 1000
			}
		}
		f := gauge("idemport_last_success_timestamp_seconds", "When an import into the table last completed, as a Unix time (from the ledger).")
		for _, t := range sortedKeys(last) {
			sample(f, last[t], "table", t)
		}
		byTable("idemport_operations", "state", "Operations in the ledger by table and state.", states)
		sample(gauge("idemport_outbox_pending", "Event deliveries the outbox still owes to a sink (after this run's delivery)."), float64(m.outboxPending))
	}

	var b bytes.Buffer
	for _, f := range fams {
		if len(f.Metric) == 0 {
			continue // expfmt refuses a family without samples
		}
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			return fmt.Errorf("encode %s: %w", f.GetName(), err)
		}
	}
	return writeAtomic(path, b.Bytes())
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
