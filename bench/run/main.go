// Command run is idemport's benchmark: it times idemport and the tools a
// user could pick instead on the same files, in one run, and prints median
// wall times, rows per second, peak RSS and paired ratios.
//
//	go run ./bench/run -rows 1m            # generates bench/data/orders_1m.* if missing
//	go run ./bench/run -rows 10m -runs 3
//	go run ./bench/run -rows 1m -modes     # --atomic and --snapshot against plain imports
//
// Each comparison runs the two commands alternately (A B A B …) and the
// ratio is the median of the per-pair ratios, so a machine whose speed
// drifts still gives a fair ratio. Peak RSS is the largest resident set of
// the command's own process (for psql and pgx clients, not the server's).
// PostgreSQL comparisons run when -postgres is set (or IDEMPORT_TEST_POSTGRES);
// pgloader runs when it is installed.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

type measure struct {
	wall time.Duration
	rss  int64 // KiB
}

// cmd is a command to time, with a setup that runs untimed before it.
type cmd struct {
	name  string
	setup func() error
	argv  []string
	env   []string
}

func run(c cmd) (measure, error) {
	if c.setup != nil {
		if err := c.setup(); err != nil {
			return measure{}, fmt.Errorf("%s: setup: %w", c.name, err)
		}
	}
	x := exec.Command(c.argv[0], c.argv[1:]...)
	x.Env = append(os.Environ(), c.env...)
	out, err := os.CreateTemp("", "bench-out-")
	if err != nil {
		return measure{}, err
	}
	defer os.Remove(out.Name())
	defer out.Close()
	x.Stdout, x.Stderr = out, out
	start := time.Now()
	err = x.Run()
	wall := time.Since(start)
	if err != nil {
		b, _ := os.ReadFile(out.Name())
		return measure{}, fmt.Errorf("%s: %v\n%s", c.name, err, b)
	}
	return measure{wall: wall, rss: peakRSS(x.ProcessState)}, nil
}

func median(ds []float64) float64 {
	s := append([]float64(nil), ds...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

type row struct {
	name  string
	wall  float64 // median seconds
	rows  int64
	rss   int64 // KiB, max
	vs    string
	ratio float64
}

// pair times a and b alternately n times; it returns their medians and the
// median of the per-pair ratios a/b.
func pair(n int, a, b cmd) (ma, mb []measure, ratio float64, err error) {
	var ratios []float64
	for i := 0; i < n; i++ {
		x, err := run(a)
		if err != nil {
			return nil, nil, 0, err
		}
		y, err := run(b)
		if err != nil {
			return nil, nil, 0, err
		}
		ma, mb = append(ma, x), append(mb, y)
		ratios = append(ratios, x.wall.Seconds()/y.wall.Seconds())
	}
	return ma, mb, median(ratios), nil
}

func summary(name string, ms []measure, rows int64) row {
	var ws []float64
	var rss int64
	for _, m := range ms {
		ws = append(ws, m.wall.Seconds())
		rss = max(rss, m.rss)
	}
	return row{name: name, wall: median(ws), rows: rows, rss: rss}
}

func main() {
	rowsFlag := flag.String("rows", "1m", "data set size: 1m, 10m, or a row count")
	runs := flag.Int("runs", 3, "timed runs of each command (after one warm-up of the data in the page cache)")
	data := flag.String("data", "bench/data", "where the data sets are (generated if missing)")
	pg := flag.String("postgres", os.Getenv("IDEMPORT_TEST_POSTGRES"), "PostgreSQL DSN for the PostgreSQL comparisons (empty: skip them)")
	only := flag.String("only", "", "run only this section: sqlite or postgres")
	modes := flag.Bool("modes", false, "time the write modes (--atomic, --snapshot) against plain keyed imports instead of the comparisons")
	flag.Parse()

	rows, name := parseRows(*rowsFlag)
	bin, err := os.MkdirTemp("", "idemport-bench-")
	check(err)
	defer os.RemoveAll(bin)
	e := &env{runs: *runs, rows: rows, idemport: filepath.Join(bin, "idemport"), anchor: filepath.Join(bin, "anchor"), add: report}
	check(goBuild(e.idemport, "./cmd/idemport"))
	check(goBuild(e.anchor, "./bench/anchor"))
	e.csv = filepath.Join(*data, "orders_"+name+".csv")
	e.jsonl = filepath.Join(*data, "orders_"+name+".jsonl")
	e.parquet = filepath.Join(*data, "orders_"+name+".parquet")
	e.day2 = filepath.Join(*data, "orders_"+name+"_day2.csv")
	e.work, err = os.MkdirTemp("", "idemport-bench-db-")
	check(err)
	defer os.RemoveAll(e.work)
	e.db = filepath.Join(e.work, "i.db")
	if *modes {
		e.allModes(*data, *pg, *only)
		return
	}
	if _, err := os.Stat(e.parquet); err != nil {
		fmt.Printf("generating %d rows into %s …\n", rows, *data)
		x := exec.Command("go", "run", "./bench/gen", "-rows", fmt.Sprint(rows), "-out", *data)
		x.Stdout, x.Stderr = os.Stdout, os.Stderr
		check(x.Run())
	}
	for _, f := range []string{e.csv, e.jsonl, e.parquet} { // warm the page cache
		exec.Command("cat", f).Run()
	}

	fmt.Printf("\n%-58s %9s %11s %9s   %s\n", "command", "median s", "rows/s", "RSS MiB", "ratio (paired, median, unless marked)")
	if *only != "postgres" {
		e.sqlite()
		e.parse()
	}
	if *pg != "" && *only != "sqlite" {
		e.postgres(*pg)
	}
	fmt.Println()
}

// env is one run of the benchmark: the binaries, the data set, a scratch
// directory, and where the rows of the report go.
type env struct {
	runs                int
	rows                int64
	idemport, anchor    string
	csv, jsonl, parquet string
	day2                string // the next day's extract of csv
	work, db            string
	add                 func(row)
}

// fresh returns a setup that deletes the SQLite databases at paths.
func fresh(paths ...string) func() error {
	return func() error {
		for _, p := range paths {
			for _, s := range []string{"", "-wal", "-shm", "-journal"} {
				os.Remove(p + s)
			}
		}
		return nil
	}
}

func (e *env) importArgs(extra ...string) []string {
	return append([]string{e.idemport, "import", "--progress", "never", "--into", e.db}, extra...)
}

// vsMedians adds the row of anchor's times, with the ratio of mine's
// median to anchor's (not paired: for anchors timed apart from idemport).
func (e *env) vsMedians(name string, ms []measure, mineName string, mine []measure) {
	r := summary(name, ms, e.rows)
	e.add(r)
	e.add(withRatio(summary(mineName, mine, e.rows), name+" (medians)", summary("", mine, 0).wall/r.wall))
}

func (e *env) sqlite() {
	runs, rows, add := e.runs, e.rows, e.add
	sdb := filepath.Join(e.work, "s.db")
	sqlImport := filepath.Join(e.work, "import.sql")
	check(os.WriteFile(sqlImport, []byte(`PRAGMA journal_mode=WAL;
PRAGMA synchronous=NORMAL;
CREATE TABLE orders(order_id INTEGER PRIMARY KEY, customer_id INTEGER, sku TEXT, quantity INTEGER, unit_price REAL, status TEXT, created_at TEXT, note TEXT);
.mode csv
.import --skip 1 `+e.csv+` orders
`), 0o644))

	// SQLite first import against sqlite3 .import, same journal mode (WAL).
	first, b, ratio, err := pair(runs,
		cmd{name: "idemport", setup: fresh(e.db), argv: e.importArgs(e.csv)},
		cmd{name: "sqlite3", setup: fresh(sdb), argv: []string{"sh", "-c", "sqlite3 " + sdb + " < " + sqlImport}})
	check(err)
	add(withRatio(summary("idemport import CSV → SQLite (WAL)", first, rows), "sqlite3 .import", ratio))
	add(summary("sqlite3 .import → INTEGER PRIMARY KEY table (WAL)", b, rows))
	// The same load written in Go with go-sqlite3, as a user would.
	for _, per := range []string{"1", "100"} {
		ms := timeN(runs, cmd{name: "upsert " + per, setup: fresh(sdb), argv: []string{e.anchor, "sqlite-upsert", per, sdb, e.csv}})
		e.vsMedians("Go + go-sqlite3 upsert, "+per+" row(s) per statement", ms, "  idemport import CSV → SQLite", first)
	}

	// Rerun of the completed file (e.db holds the last first import):
	// rehashed, and through the quick check.
	a, b, ratio, err := pair(runs,
		cmd{name: "rerun", argv: e.importArgs("--rehash", e.csv)},
		cmd{name: "sha256", argv: []string{e.anchor, "sha256", e.csv}})
	check(err)
	add(withRatio(summary("idemport rerun of the completed file (--rehash)", a, rows), "SHA-256 of the file", ratio))
	add(summary("SHA-256 of the file (Go)", b, rows))
	ms := timeN(runs, cmd{name: "quick", argv: e.importArgs(e.csv)})
	add(summary("idemport rerun, quick check hit", ms, rows))

	// Resume after a kill at 90 %: 10 partitions, killed after the 9th commit.
	part := fmt.Sprint(rows / 10)
	kill := func() error {
		fresh(e.db)()
		x := exec.Command(e.idemport, "import", "--progress", "never", "--into", e.db, "--partition-rows", part, e.csv)
		x.Env = append(os.Environ(), "IDEMPORT_FAILPOINT=after-partition-commit:9")
		x.Run() // killed on purpose
		return nil
	}
	a, _, ratio, err = pair(runs,
		cmd{name: "resume", setup: kill, argv: e.importArgs("--partition-rows", part, e.csv)},
		cmd{name: "full", setup: fresh(e.db), argv: e.importArgs("--partition-rows", part, e.csv)})
	check(err)
	add(withRatio(summary("idemport resume after a kill at 90 %", a, rows/10), "full import", ratio))

	// Other formats, per row against the CSV import above.
	for _, f := range []string{e.jsonl, e.parquet} {
		ms := timeN(runs, cmd{name: f, setup: fresh(e.db), argv: e.importArgs(f)})
		add(withRatio(summary("idemport import "+strings.ToUpper(strings.TrimPrefix(filepath.Ext(f), "."))+" → SQLite", ms, rows),
			"CSV import (medians)", summary("", ms, 0).wall/summary("", first, 0).wall))
	}
}

// parse times the plan pass (parse, infer, validate; no database) against
// the parsers a user could write the import with.
func (e *env) parse() {
	plan := func(f string) cmd {
		return cmd{name: "plan", argv: []string{e.idemport, "plan", "--into", filepath.Join(e.work, "none.db"), f}}
	}
	csvPlan := timeN(e.runs, plan(e.csv))
	e.add(summary("idemport plan CSV (parse + validate only)", csvPlan, e.rows))
	for _, a := range []struct{ name, anchor string }{{"encoding/csv, typed", "csv"}, {"Arrow csv.Reader, typed", "arrowcsv"}} {
		ms := timeN(e.runs, cmd{name: a.anchor, argv: []string{e.anchor, a.anchor, e.csv}})
		e.vsMedians(a.name, ms, "  idemport plan CSV", csvPlan)
	}
	jsonPlan := timeN(e.runs, plan(e.jsonl))
	e.add(summary("idemport plan JSONL (parse + validate only)", jsonPlan, e.rows))
	ms := timeN(e.runs, cmd{name: "json", argv: []string{e.anchor, "json", e.jsonl}})
	e.vsMedians("encoding/json into a struct", ms, "  idemport plan JSONL", jsonPlan)
}

// psql returns a function running SQL on the PostgreSQL at dsn.
func psql(dsn string) func(sql string) error {
	return func(sql string) error {
		x := exec.Command("psql", dsn, "-qAtc", sql)
		out, err := x.CombinedOutput()
		if err != nil {
			return fmt.Errorf("psql %q: %v %s", sql, err, out)
		}
		return nil
	}
}

func (e *env) postgres(dsn string) {
	runs, rows, add := e.runs, e.rows, e.add
	psql := psql(dsn)
	reset := func() error {
		return psql(`DROP SCHEMA IF EXISTS idemport_bench CASCADE; DROP SCHEMA IF EXISTS idemport_bench_state CASCADE; CREATE SCHEMA idemport_bench`)
	}
	resetCopy := func() error {
		return psql(`DROP TABLE IF EXISTS bench_copy; CREATE TABLE bench_copy(order_id bigint PRIMARY KEY, customer_id bigint, sku text,
			quantity bigint, unit_price double precision, status text, created_at timestamptz, note text)`)
	}
	imp := []string{e.idemport, "import", "--progress", "never", "--into", dsn, "--state-schema", "idemport_bench_state", "--table", "idemport_bench.orders", e.csv}
	mine, b, ratio, err := pair(runs,
		cmd{name: "idemport pg", setup: reset, argv: imp},
		cmd{name: "psql copy", setup: resetCopy, argv: []string{"psql", dsn, "-qc", `\copy bench_copy FROM '` + e.csv + `' CSV HEADER`}})
	check(err)
	add(withRatio(summary("idemport import CSV → PostgreSQL", mine, rows), `psql \copy`, ratio))
	add(summary(`psql \copy → PRIMARY KEY table`, b, rows))
	for _, a := range []struct{ name, anchor string }{{"pgx CopyFrom → PRIMARY KEY table", "pgx-copy"}, {"pgx staging + ON CONFLICT merge", "pgx-merge"}} {
		ms := timeN(runs, cmd{name: a.anchor, argv: []string{e.anchor, a.anchor, dsn, e.csv}})
		e.vsMedians(a.name, ms, "  idemport import CSV → PostgreSQL", mine)
	}
	psql(`DROP TABLE IF EXISTS bench_anchor`)
	if _, err := exec.LookPath("pgloader"); err == nil {
		u, err := url.Parse(dsn)
		check(err)
		u.RawQuery = "" // pgloader reads ?name as the table
		load := fmt.Sprintf(`LOAD CSV FROM '%s' (order_id, customer_id, sku, quantity, unit_price, status, created_at, note)
INTO %s?bench_copy (order_id, customer_id, sku, quantity, unit_price, status, created_at, note)
WITH truncate, skip header = 1, fields optionally enclosed by '"', fields escaped by double-quote, fields terminated by ',';`, e.csv, u.String())
		script := filepath.Join(e.work, "idemport-bench.load")
		check(os.WriteFile(script, []byte(load), 0o644))
		a, _, ratio, err := pair(1, cmd{name: "pgloader", setup: resetCopy, argv: []string{"pgloader", script}},
			cmd{name: "idemport pg", setup: reset, argv: imp})
		check(err)
		add(withRatio(summary("pgloader LOAD CSV → PRIMARY KEY table", a, rows), "idemport", ratio))
	} else {
		fmt.Println("(pgloader is not installed: apt-get install pgloader to compare with it)")
	}
	psql(`DROP SCHEMA IF EXISTS idemport_bench CASCADE; DROP SCHEMA IF EXISTS idemport_bench_state CASCADE; DROP TABLE IF EXISTS bench_copy`)
}

func timeN(n int, c cmd) []measure {
	var ms []measure
	for i := 0; i < n; i++ {
		m, err := run(c)
		check(err)
		ms = append(ms, m)
	}
	return ms
}

func withRatio(r row, vs string, ratio float64) row {
	r.vs, r.ratio = vs, ratio
	return r
}

func report(r row) {
	rate := "-"
	if r.rows > 0 && r.wall > 0 {
		rate = fmt.Sprintf("%.0f", float64(r.rows)/r.wall)
	}
	ratio := ""
	if r.vs != "" {
		ratio = fmt.Sprintf("%.2f× %s", r.ratio, r.vs)
	}
	fmt.Printf("%-58s %9.2f %11s %9.0f   %s\n", r.name, r.wall, rate, float64(r.rss)/1024, ratio)
}

// parseRows returns the row count s names (1m, 10m, 20k or a count) and
// the data set's name for it, as bench/gen names its files.
func parseRows(s string) (int64, string) {
	var n int64
	switch {
	case strings.HasSuffix(s, "m"):
		fmt.Sscan(strings.TrimSuffix(s, "m"), &n)
		n *= 1_000_000
	case strings.HasSuffix(s, "k"):
		fmt.Sscan(strings.TrimSuffix(s, "k"), &n)
		n *= 1000
	default:
		fmt.Sscan(s, &n)
	}
	switch {
	case n > 0 && n%1_000_000 == 0:
		return n, fmt.Sprintf("%dm", n/1_000_000)
	case n > 0 && n%1000 == 0:
		return n, fmt.Sprintf("%dk", n/1000)
	}
	return n, fmt.Sprint(n)
}

func goBuild(out, pkg string) error {
	x := exec.CommandContext(context.Background(), "go", "build", "-o", out, pkg)
	x.Stdout, x.Stderr = os.Stdout, os.Stderr
	return x.Run()
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
