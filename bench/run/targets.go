package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// The sections of this file time the targets that are not a command
// beside a command: what a remote import fetches and requests, the
// imports of Parquet and Arrow files other programs wrote, and the peak
// memory of a 100M-row keyed import.

// benchMetrics are the metrics of one benchmark of go test's output, by
// unit (ns/op, rows/s, fetched/size, LIST/rerun…).
type benchMetrics map[string]float64

// parseBenchOutput reads go test -bench output and returns each
// benchmark's metrics by its name, the -GOMAXPROCS suffix cut off
// (BenchmarkImportRemoteCSV/s3). A benchmark that ran more than once keeps
// its last line.
func parseBenchOutput(r io.Reader) (map[string]benchMetrics, error) {
	out := map[string]benchMetrics{}
	s := bufio.NewScanner(r)
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // not a result line: N iterations come second
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		m := benchMetrics{}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark %s: metric %q: %v", name, f[i]+" "+f[i+1], err)
			}
			m[f[i+1]] = v
		}
		out[name] = m
	}
	return out, s.Err()
}

// goBench runs the benchmarks of pkg that pattern matches, once each
// (-benchtime 1x), with env added, and returns their metrics. Its output
// goes to the terminal as well, the report's rows are made of it.
func goBench(pkg, pattern string, env ...string) (map[string]benchMetrics, error) {
	x := exec.Command("go", "test", pkg, "-run", "^$", "-bench", pattern, "-benchtime", "1x", "-count", "1", "-timeout", "3h")
	x.Env = append(os.Environ(), env...)
	var out strings.Builder
	x.Stdout, x.Stderr = io.MultiWriter(&out, os.Stderr), os.Stderr
	if err := x.Run(); err != nil {
		return nil, fmt.Errorf("go test %s -bench %s: %v", pkg, pattern, err)
	}
	return parseBenchOutput(strings.NewReader(out.String()))
}

// remoteCmd is the command section remote runs, as a user would type it.
func (e *env) remoteCmd() (argv, env []string) {
	return []string{"go", "test", "./pipeline", "-run", "^$", "-bench", "^(BenchmarkImportRemoteCSV|BenchmarkRemotePrefixRerun)$", "-benchtime", "1x"},
		[]string{"IDEMPORT_BENCH_CSV=" + e.csv, "IDEMPORT_BENCH_OBJECTS=" + strconv.Itoa(e.objects)}
}

// remote reports the targets of remote inputs, measured against an S3
// server in the benchmark's process (pipeline's BenchmarkImportRemoteCSV
// and BenchmarkRemotePrefixRerun, once each): the bytes a first import of
// the data set's CSV from S3 into SQLite fetches, against the object's
// size (wanted: ≤ 1.1×), and the requests a rerun of an S3 prefix of
// e.objects imported objects makes (wanted: one LIST pass, 1,000 keys a
// page, and no HEAD or GET).
func (e *env) remote() {
	argv, env := e.remoteCmd()
	ms, err := goBench("./pipeline", argv[6], env...)
	check(err)
	disk, s3, rerun := ms["BenchmarkImportRemoteCSV/disk"], ms["BenchmarkImportRemoteCSV/s3"], ms["BenchmarkRemotePrefixRerun"]
	if disk == nil || s3 == nil || rerun == nil {
		check(fmt.Errorf("go test ./pipeline -bench: the remote benchmarks' results are missing (got %v)", ms))
	}
	st, err := os.Stat(e.csv)
	check(err)
	e.add(anchor("the object's size", row{name: "the CSV file on disk, imported → SQLite", wall: disk["ns/op"] / 1e9, rows: e.rows,
		note: fmt.Sprintf("%s bytes read", thousands(st.Size()))}))
	e.add(withRatio(row{name: "idemport first import of it from S3 → SQLite, bytes fetched", wall: s3["ns/op"] / 1e9, rows: e.rows,
		note: fmt.Sprintf("%s bytes fetched", thousands(int64(s3["fetched/size"]*float64(st.Size())+0.5)))}, "the object's size", s3["fetched/size"]))
	e.show(append(env, argv...), "")
	pages := float64((e.objects + 999) / 1000)
	e.add(anchor("one LIST pass", row{name: fmt.Sprintf("one LIST pass of %s keys, 1,000 a page", thousands(int64(e.objects))),
		note: plural(int64(pages), "LIST request")}))
	e.add(withRatio(row{name: fmt.Sprintf("idemport rerun of an S3 prefix of %s imported objects", thousands(int64(e.objects))), wall: rerun["ns/op"] / 1e9,
		note: fmt.Sprintf("%.0f LIST, %.0f HEAD, %.0f GET requests", rerun["LIST/rerun"], rerun["HEAD/rerun"], rerun["GET/rerun"])}, "one LIST pass", rerun["LIST/rerun"]/pages))
}

// otherWriterFiles are the files bench/otherwriters/write.mjs writes.
var otherWriterFiles = []string{"orders-rs-1group.parquet", "orders-rs-10groups.parquet", "orders-rs-dict8m.parquet", "orders-arrowjs.arrow"}

// otherWriters returns the Parquet and Arrow files other programs wrote of
// the 1M-row data set (bench/otherwriters/write.mjs: the Rust parquet
// crate through parquet-wasm, and Arrow JS), and the CSV file they were
// written from. It writes them into DATA/otherwriters when they are
// missing and Node.js and npm are installed (npm installs the two
// packages there once); else it says why not and returns nil. Node reads
// the CSV whole into one string, so they are written of 1M rows whatever
// the data set's size.
func (e *env) otherWriters() (files []string, csv string) {
	csv = e.gen("orders_1m.csv", "-rows", "1000000", "-formats", "csv")
	dir, err := filepath.Abs(filepath.Join(e.data, "otherwriters"))
	check(err)
	for _, f := range otherWriterFiles {
		files = append(files, filepath.Join(dir, f))
	}
	missing := false
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			missing = true
		}
	}
	if !missing {
		return files, csv
	}
	skip := func(why string) ([]string, string) {
		fmt.Fprintf(os.Stderr, "bench: the other writers' Parquet and Arrow files are not timed: %s (docs/development.md says how to write them)\n", why)
		return nil, ""
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return skip(tool + " is not installed")
		}
	}
	check(os.MkdirAll(dir, 0o755))
	script, err := os.ReadFile("bench/otherwriters/write.mjs")
	check(err)
	check(os.WriteFile(filepath.Join(dir, "write.mjs"), script, 0o644))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "parquet-wasm")); err != nil {
		fmt.Printf("installing parquet-wasm and apache-arrow into %s …\n", dir)
		if err := inDir(dir, "npm", "install", "--no-save", "--no-audit", "--no-fund", "parquet-wasm", "apache-arrow"); err != nil {
			return skip(err.Error())
		}
	}
	fmt.Printf("writing the other writers' files into %s …\n", dir)
	if err := inDir(dir, "node", "--max-old-space-size=6000", "write.mjs", csv, dir); err != nil {
		return skip(err.Error())
	}
	return files, csv
}

// inDir runs a command in dir, its output to the terminal.
func inDir(dir string, argv ...string) error {
	x := exec.Command(argv[0], argv[1:]...)
	x.Dir, x.Stdout, x.Stderr = dir, os.Stdout, os.Stderr
	if err := x.Run(); err != nil {
		return fmt.Errorf("%s: %v", strings.Join(argv, " "), err)
	}
	return nil
}

// otherFormats times the other writers' files (otherWriters) against the
// import of the CSV file they were written from, in rows per second
// (wanted: ≥ 1.2×).
func (e *env) otherFormats() {
	files, csv := e.otherWriters()
	if files == nil {
		return
	}
	cs := []cmd{{name: csv, setup: fresh(e.db), argv: e.importArgs(csv)}}
	for _, f := range files {
		cs = append(cs, cmd{name: f, setup: fresh(e.db), argv: e.importArgs(f)})
	}
	ms, r := e.race(e.runs, cs...)
	const rows = 1_000_000
	e.add(anchor("the 1M CSV's rows/s", summary("idemport import CSV, 1M rows → SQLite", ms[0], rows)))
	for i, f := range files {
		format := "Arrow"
		if strings.HasSuffix(f, ".parquet") {
			format = "Parquet"
		}
		e.add(withRatio(summary("idemport import "+format+" "+filepath.Base(f)+" → SQLite", ms[i+1], rows), "the 1M CSV's rows/s", 1/r[i+1]))
	}
}

// huge times a --key import of 100M rows of the orders data set (10.7
// GB of CSV, generated into the data directory when missing) into SQLite
// once, for its peak RSS (wanted: ≤ 500 MiB, the key hashes spilled past
// their bound). It takes half an hour and more, so it is in no default
// set of sections.
func (e *env) huge() {
	const rows = 100_000_000
	csv := e.gen("orders_100m.csv", "-rows", fmt.Sprint(rows), "-formats", "csv")
	db := filepath.Join(e.work, "huge.db")
	argv := []string{e.idemport, "import", "--progress", "never", "--into", db, "--table", "orders", "--key", "order_id", csv}
	ms := timeN(1, cmd{name: "huge", setup: fresh(db), argv: argv})
	fresh(db)()
	e.add(summary("idemport import 100M rows, --key order_id → SQLite (peak RSS)", ms, rows))
}

// plural writes n things: 1 LIST request, 10 LIST requests.
func plural(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return thousands(n) + " " + thing + "s"
}

// thousands formats n with commas: 107,255,311.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
