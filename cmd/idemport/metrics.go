package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline"
)

// writeMetrics writes the Prometheus text format file for node_exporter's
// textfile collector: the last run's outcomes, rows and partitions by table,
// and from the ledger, per table, when an import last completed and the
// operations by state. It replaces path atomically: temp file, fsync,
// rename, fsync of the directory.
func writeMetrics(path string, results []*pipeline.Result, code int, took time.Duration, ops []ledger.Operation) error {
	var b strings.Builder
	family := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	sample := func(name string, labels [][2]string, v float64) {
		b.WriteString(name)
		if len(labels) > 0 {
			b.WriteByte('{')
			for i, l := range labels {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%s=%q", l[0], l[1])
			}
			b.WriteByte('}')
		}
		fmt.Fprintf(&b, " %v\n", v)
	}

	type key struct{ table, what string }
	files := map[key]float64{}
	rows := map[key]float64{}
	parts := map[key]float64{}
	recovered := map[string]float64{}
	for _, r := range results {
		files[key{r.Table, string(r.Outcome)}]++
		for kind, n := range map[string]int64{"read": r.Rows.Read, "inserted": r.Rows.Inserted, "updated": r.Rows.Updated,
			"unchanged": r.Rows.Unchanged, "stale": r.Rows.Stale, "rejected": r.Rows.Rejected} {
			if r.Outcome != pipeline.Duplicate { // a duplicate returns the stored counts; this run wrote nothing
				rows[key{r.Table, kind}] += float64(n)
			}
		}
		for kind, n := range map[string]int64{"total": r.Partitions.Total, "skipped": r.Partitions.Skipped, "committed": r.Partitions.Committed} {
			parts[key{r.Table, kind}] += float64(n)
		}
		recovered[r.Table] += float64(len(r.RecoveredFrom))
	}
	emit := func(name, label, help string, m map[key]float64) {
		family(name, "gauge", help)
		keys := make([]key, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if keys[i].table != keys[j].table {
				return keys[i].table < keys[j].table
			}
			return keys[i].what < keys[j].what
		})
		for _, k := range keys {
			sample(name, [][2]string{{"table", k.table}, {label, k.what}}, m[k])
		}
	}
	emit("idemport_last_run_files", "outcome", "Files of the last run by outcome (imported, resumed, duplicate, conflict, busy, refused, failed).", files)
	emit("idemport_last_run_rows", "kind", "Rows the last run read, inserted, updated, left unchanged, found stale or rejected.", rows)
	emit("idemport_last_run_partitions", "kind", "Partitions of the last run's files: total, skipped (done before) and committed.", parts)
	family("idemport_last_run_recovered_leases", "gauge", "Leases of dead or stalled attempts the last run took over.")
	for _, t := range sortedKeys(recovered) {
		sample("idemport_last_run_recovered_leases", [][2]string{{"table", t}}, recovered[t])
	}
	family("idemport_last_run_duration_seconds", "gauge", "How long the last run took.")
	sample("idemport_last_run_duration_seconds", nil, took.Seconds())
	family("idemport_last_run_exit_code", "gauge", "The last run's exit code.")
	sample("idemport_last_run_exit_code", nil, float64(code))
	family("idemport_last_run_timestamp_seconds", "gauge", "When the last run ended, as a Unix time.")
	sample("idemport_last_run_timestamp_seconds", nil, float64(time.Now().UnixMilli())/1000)

	last := map[string]float64{}
	states := map[key]float64{}
	for _, op := range ops {
		states[key{op.Table, string(op.State)}]++
		if op.State == ledger.Completed && float64(op.CompletedAt)/1000 > last[op.Table] {
			last[op.Table] = float64(op.CompletedAt) / 1000
		}
	}
	family("idemport_last_success_timestamp_seconds", "gauge", "When an import into the table last completed, as a Unix time (from the ledger).")
	for _, t := range sortedKeys(last) {
		sample("idemport_last_success_timestamp_seconds", [][2]string{{"table", t}}, last[t])
	}
	emit("idemport_operations", "state", "Operations in the ledger by table and state.", states)
	return writeAtomic(path, []byte(b.String()))
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
