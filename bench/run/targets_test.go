package main

import (
	"strings"
	"testing"
)

// TestParseBenchOutput reads go test -bench output as the remote section
// gets it: sub-benchmarks by their path, the -GOMAXPROCS suffix cut (but
// not a name's own dash and digits), custom metrics by unit, log lines
// and a benchmark's name printed alone skipped.
func TestParseBenchOutput(t *testing.T) {
	out := `goos: linux
goarch: amd64
pkg: github.com/idemport/idemport/pipeline
BenchmarkImportRemoteCSV/disk-2         	       1	1234567890 ns/op	    810000 rows/s
BenchmarkImportRemoteCSV/s3
    bench_remote_test.go:40: a log line 1 2
BenchmarkImportRemoteCSV/s3-2           	       1	1334567890 ns/op	         1.000 fetched/size	    749000 rows/s
BenchmarkRemotePrefixRerun-16         	       1	28400000000 ns/op	         0 GET/rerun	         0 HEAD/rerun	        10.00 LIST/rerun
BenchmarkWith-dash-7
BenchmarkWith-dash-7-2 	       3	 15 ns/op
PASS
ok  	github.com/idemport/idemport/pipeline	31.2s
`
	got, err := parseBenchOutput(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]benchMetrics{
		"BenchmarkImportRemoteCSV/disk": {"ns/op": 1234567890, "rows/s": 810000},
		"BenchmarkImportRemoteCSV/s3":   {"ns/op": 1334567890, "fetched/size": 1, "rows/s": 749000},
		"BenchmarkRemotePrefixRerun":    {"ns/op": 28400000000, "GET/rerun": 0, "HEAD/rerun": 0, "LIST/rerun": 10},
		"BenchmarkWith-dash-7":          {"ns/op": 15},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d benchmarks %v, want %d", len(got), got, len(want))
	}
	for name, w := range want {
		g := got[name]
		if len(g) != len(w) {
			t.Errorf("%s: got %v, want %v", name, g, w)
		}
		for unit, v := range w {
			if gv, ok := g[unit]; !ok || gv != v {
				t.Errorf("%s %s: got %v (%v), want %v", name, unit, gv, ok, v)
			}
		}
	}
	if _, err := parseBenchOutput(strings.NewReader("BenchmarkX-2 1 12x ns/op\n")); err == nil {
		t.Error("a metric that is not a number: no error")
	}
}

// TestThousands checks the grouping of the byte counts the remote rows
// print.
func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 107255311: "107,255,311", -1234567: "-1,234,567", -100: "-100"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestRemoteRowsInTheReadme checks the rows the remote section adds as
// the -readme table prints them: the bytes fetched beside the object's
// size with their ratio, and the rerun's requests beside one LIST pass.
func TestRemoteRowsInTheReadme(t *testing.T) {
	md := newMarkdown()
	md.add(anchor("the object's size", row{name: "the CSV file on disk, imported → SQLite", wall: 1.5, rows: 1000, note: "107,255,311 bytes read"}))
	md.add(withRatio(row{name: "idemport first import of it from S3 → SQLite, bytes fetched", wall: 1.6, rows: 1000, note: "107,255,311 bytes fetched"}, "the object's size", 1))
	md.add(anchor("one LIST pass", row{name: "one LIST pass of 10,000 keys, 1,000 a page", note: "10 LIST requests"}))
	md.add(withRatio(row{name: "idemport rerun of an S3 prefix of 10,000 imported objects", wall: 28.4, note: "10 LIST, 0 HEAD, 0 GET requests"}, "one LIST pass", 1))
	var b strings.Builder
	md.print(&b)
	for _, want := range []string{
		"| idemport first import of it from S3 → SQLite, bytes fetched | 1.60 s, 625 rows/s, 107,255,311 bytes fetched | the CSV file on disk, imported → SQLite, 1.50 s, 107,255,311 bytes read | 1.00× |",
		"| idemport rerun of an S3 prefix of 10,000 imported objects | 28.40 s, 10 LIST, 0 HEAD, 0 GET requests | one LIST pass of 10,000 keys, 1,000 a page, 10 LIST requests | 1.00× |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing row\n%s\nin\n%s", want, b.String())
		}
	}
}
