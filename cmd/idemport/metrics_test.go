package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/idemport/idemport/internal/testenv"
	"github.com/idemport/idemport/internal/testkit"
)

// metrics are the metric families of a metrics file or a scrape.
type metrics map[string]*dto.MetricFamily

// parseMetrics parses the Prometheus text format, failing t if it does not
// parse.
func parseMetrics(t *testing.T, r io.Reader) metrics {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("the metrics do not parse: %v", err)
	}
	return fams
}

// readMetrics parses the metrics file at path.
func readMetrics(t *testing.T, path string) metrics {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parseMetrics(t, bytes.NewReader(b))
}

// value returns the value of the one sample of name whose labels include
// the given name, value pairs; it fails t if there is none or more than one.
func (m metrics) value(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	var found []float64
next:
	for _, s := range m[name].GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			if labelOf(s, labels[i]) != labels[i+1] || !hasLabel(s, labels[i]) {
				continue next
			}
		}
		if s.GetGauge() != nil {
			found = append(found, s.GetGauge().GetValue())
		} else {
			found = append(found, s.GetUntyped().GetValue())
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d samples of %s with %q, want 1; the families: %v", len(found), name, labels, m[name])
	}
	return found[0]
}

func labelOf(s *dto.Metric, name string) string {
	for _, l := range s.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func hasLabel(s *dto.Metric, name string) bool {
	for _, l := range s.GetLabel() {
		if l.GetName() == name {
			return true
		}
	}
	return false
}

// TestMetricsFileParses writes the metrics file and reads it back with the
// Prometheus text parser: every sample carries the job label, named after
// the file, and a table name with a tab, a quote and a backslash comes
// back exact.
func TestMetricsFileParses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testkit.Orders(t, filepath.Join(dir, "a.csv"), 120, 23)
	os.WriteFile(filepath.Join(dir, "b.csv"), []byte("order_id,quantity\n1,x\n"), 0o644)
	weird := "weird\ttable \"q\" \\"
	importJSON(t, dir, nil, 0, "--table", weird, "a.csv")
	run := testkit.Exec(t, dir, nil, "import", "--metrics-file", "nightly.prom", "--column", "quantity:int64", "a.csv", "b.csv")
	if run.Code != 5 {
		t.Fatalf("exit %d: %s %s", run.Code, run.Stdout, run.Stderr)
	}
	m := readMetrics(t, filepath.Join(dir, "nightly.prom"))
	for name, fam := range m {
		if !strings.HasPrefix(name, "idemport_") {
			t.Fatalf("metric %s lacks the idemport_ prefix", name)
		}
		for _, s := range fam.GetMetric() {
			if labelOf(s, "job") != "nightly" {
				t.Fatalf("a sample of %s without job=\"nightly\": %v", name, s)
			}
		}
	}
	if v := m.value(t, "idemport_last_run_files", "table", "a", "outcome", "imported"); v != 1 {
		t.Fatalf("imported files %v", v)
	}
	if v := m.value(t, "idemport_last_run_files", "table", "b", "outcome", "refused"); v != 1 {
		t.Fatalf("refused files %v", v)
	}
	if v := m.value(t, "idemport_last_run_rows", "table", "a", "kind", "inserted"); v != 120 {
		t.Fatalf("inserted rows %v", v)
	}
	if v := m.value(t, "idemport_last_run_exit_code"); v != 5 {
		t.Fatalf("exit code %v", v)
	}
	if v := m.value(t, "idemport_last_success_timestamp_seconds", "table", "a"); time.Since(time.Unix(int64(v), 0)) > time.Minute {
		t.Fatalf("last success %v", v)
	}
	if v := m.value(t, "idemport_operations", "table", weird, "state", "completed"); v != 1 {
		t.Fatalf("operations of the table %q: %v", weird, v)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 4 {
		t.Fatalf("a temporary file was left behind: %v", entries)
	}
}

// TestMetricsWrittenOnEveryExit checks that the metrics file records the
// exit code of every run that got as far as parsing its flags: a clean
// one, a usage error found after parsing, an unreachable database, an
// interrupted run; --metrics-job names the job.
func TestMetricsWrittenOnEveryExit(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		testkit.Orders(t, filepath.Join(dir, "orders.csv"), 20, 63)
		unreachable := []string{"--into", filepath.Join(dir, "no", "such", "dir", "x.db")}
		if tg.IsPostgres() {
			unreachable = []string{"--into", "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=5"}
		}
		os.Mkdir(filepath.Join(dir, "drop"), 0o755)
		// With no file to import, the ledger is only read for its gauges:
		// a missing SQLite file is an empty ledger (exit 0, no gauges), an
		// unreachable server a configuration error (exit 2).
		emptyUnreachable := 0
		if tg.IsPostgres() {
			emptyUnreachable = 2
		}
		for _, tc := range []struct {
			name   string
			args   []string
			code   int
			ledger bool // the ledger-wide gauges are in the file
		}{
			{"clean", tg.With("import", "orders.csv"), 0, true},
			{"no file argument", tg.With("import"), 2, false},
			{"bad trigger", tg.With("import", "--trigger", "nightly", "orders.csv"), 2, false},
			{"bad --wait", tg.With("import", "--wait", "orders.csv"), 2, false},
			{"no files", tg.With("import", "drop"), 0, true},
			{"unreachable database", append([]string{"import"}, append(unreachable, "orders.csv")...), 2, false},
			{"no files, unreachable database", append([]string{"import"}, append(unreachable, "drop")...), emptyUnreachable, false},
		} {
			// The previous file says 99: each run must replace it.
			os.WriteFile(filepath.Join(dir, "m.prom"), []byte("idemport_last_run_exit_code{job=\"hourly\"} 99\n"), 0o644)
			args := append(tc.args, "--metrics-file", "m.prom", "--metrics-job", "hourly")
			r := testkit.Exec(t, dir, nil, args...)
			if r.Code != tc.code {
				t.Fatalf("%s: exit %d, want %d\n%s%s", tc.name, r.Code, tc.code, r.Stdout, r.Stderr)
			}
			m := readMetrics(t, filepath.Join(dir, "m.prom"))
			if v := m.value(t, "idemport_last_run_exit_code", "job", "hourly"); v != float64(tc.code) {
				t.Fatalf("%s: the metrics file says exit code %v, the run exited %d", tc.name, v, tc.code)
			}
			if _, ok := m["idemport_operations"]; ok != tc.ledger {
				t.Fatalf("%s: ledger gauges present: %v, want %v", tc.name, ok, tc.ledger)
			}
		}
	})
}

// TestMetricsWriteErrorIsReported points --metrics-file into a directory
// that does not exist: a clean run exits 1 and says why; a refused run
// keeps its exit code 5 and still says why.
func TestMetricsWriteErrorIsReported(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testkit.Orders(t, filepath.Join(dir, "orders.csv"), 20, 64)
	os.WriteFile(filepath.Join(dir, "bad.csv"), []byte("id,qty\n1,x\n"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"orders.csv"}, 1},
		{[]string{"--column", "qty:int64", "bad.csv"}, 5},
	} {
		args := append([]string{"import", "--metrics-file", "missing/m.prom"}, tc.args...)
		r := testkit.Exec(t, dir, nil, args...)
		if r.Code != tc.code || !strings.Contains(r.Stderr, "idemport: metrics file: write missing/m.prom") ||
			!strings.Contains(r.Stderr, "no such file or directory") {
			t.Fatalf("%v: exit %d, want %d and the write error on stderr\nstdout: %s\nstderr: %s", tc.args, r.Code, tc.code, r.Stdout, r.Stderr)
		}
	}
}

// TestNodeExporterScrapesTwoJobs runs two jobs on one ledger, each writing
// its own metrics file into one textfile directory, one clean and one
// refused, and scrapes the real node_exporter with only its textfile
// collector enabled: both jobs' exit codes must be exposed, and the
// collector must report no error. Without node_exporter it skips, or fails
// when the run requires it (IDEMPORT_REQUIRE=node_exporter, as in CI).
func TestNodeExporterScrapesTwoJobs(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("prometheus-node-exporter")
	if err != nil {
		if bin, err = exec.LookPath("node_exporter"); err != nil {
			testenv.Unavailable(t, testenv.NodeExporter, "node_exporter is not installed (apt-get install prometheus-node-exporter): the metrics files are not scraped")
		}
	}
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		textfiles := filepath.Join(dir, "textfile")
		os.Mkdir(textfiles, 0o755)
		testkit.Orders(t, filepath.Join(dir, "orders.csv"), 30, 65)
		os.WriteFile(filepath.Join(dir, "items.csv"), []byte("id,qty\n1,5\n2,five\n"), 0o644)
		if r := tg.Exec(t, dir, nil, "import", "--metrics-file", "textfile/orders.prom", "--table", "weird\ttable", "orders.csv"); r.Code != 0 {
			t.Fatalf("orders job: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if r := tg.Exec(t, dir, nil, "import", "--metrics-file", "textfile/items.prom", "--column", "qty:int64", "items.csv"); r.Code != 5 {
			t.Fatalf("items job: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}

		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		var logs bytes.Buffer
		ne := exec.Command(bin, "--web.listen-address="+addr, "--collector.disable-defaults",
			"--collector.textfile", "--collector.textfile.directory="+textfiles)
		ne.Stdout, ne.Stderr = &logs, &logs
		if err := ne.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { ne.Process.Kill(); ne.Wait() }()

		var body []byte
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			resp, err := http.Get("http://" + addr + "/metrics")
			if err == nil {
				body, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode == http.StatusOK {
					break
				}
				err = fmt.Errorf("status %s: %s", resp.Status, body)
			}
			if time.Now().After(deadline) {
				t.Fatalf("scrape node_exporter at %s: %v\n%s", addr, err, logs.String())
			}
		}
		m := parseMetrics(t, bytes.NewReader(body))
		if v := m.value(t, "node_textfile_scrape_error"); v != 0 {
			t.Fatalf("node_textfile_scrape_error %v\n%s", v, logs.String())
		}
		if v := m.value(t, "idemport_last_run_exit_code", "job", "orders"); v != 0 {
			t.Fatalf("orders job's exit code %v", v)
		}
		if v := m.value(t, "idemport_last_run_exit_code", "job", "items"); v != 5 {
			t.Fatalf("items job's exit code %v\n%s", v, logs.String())
		}
		// Both files hold the ledger-wide gauges, each under its own job.
		for _, job := range []string{"orders", "items"} {
			if v := m.value(t, "idemport_operations", "job", job, "table", "weird\ttable", "state", "completed"); v != 1 {
				t.Fatalf("%s: operations %v", job, v)
			}
		}
		if strings.Contains(logs.String(), "collected before") {
			t.Fatalf("node_exporter saw a series twice:\n%s", logs.String())
		}
	})
}
