// Command run is idemport's benchmark: it times idemport and the tools a
// user could pick instead on the same files, in one run, and prints one
// table of median wall and CPU times, rows per second, peak RSS and paired
// ratios.
//
//	go run ./bench/run -rows 1m            # generates bench/data/orders_1m.* if missing
//	go run ./bench/run -rows 10m -runs 3 -sections first,delta
//	go run ./bench/run -rows 1m -modes     # --atomic and --snapshot against plain imports
//	go run ./bench/run -file my.csv -key id   # any CSV instead of the generated data set
//	go run ./bench/run -rows 10m -readme   # docs/development.md's table, in its shape
//
// The sections (-sections, default all of them):
//
//	first         first import into an empty keyed table, ordinal and --key order_id,
//	              against sqlite3 .import, psql \copy and the mariadb client's
//	              LOAD DATA LOCAL INFILE into the same table; and the --key
//	              import again into a database whose idemport state an untimed
//	              import of a one-row file into another table made first, since
//	              a user makes the state (its migrations) once per database,
//	              not once per import
//	fixed         each first import beside the same import resumed after its plan
//	              pass (killed at failpoint after-plan, rerun with --rehash): what
//	              the import spends before its first write
//	delta         a daily delta (bench/gen -delta: N/10 rows, half new keys, half
//	              changed) with --key into the N-row table, against the CLI doing
//	              .import / \copy into a temp table, then INSERT … ON CONFLICT DO
//	              UPDATE … WHERE the row differs (MariaDB: LOAD DATA into a
//	              temporary table, then INSERT … SELECT … ON DUPLICATE KEY UPDATE)
//	rerun         a rerun of the completed file (--rehash) against sha256sum and a
//	              Go SHA-256 of it; through the quick check against idemport version
//	resume        a resume after a kill at 90 % against the full import
//	formats       JSONL and Parquet against CSV, rows per second; and Parquet and
//	              Arrow files other programs wrote (bench/otherwriters, written
//	              when Node.js is installed) against the CSV they were written from
//	memory        peak RSS: 1M rows of 1 KiB, 2,000 rows of 1 MiB, and a
//	              --max-rejects 1% refusal of a file whose rows are all bad
//	remote        the bytes a first import from S3 fetches against the object's
//	              size, and the requests a rerun of an S3 prefix of -objects
//	              imported objects makes (pipeline's benchmarks, against an S3
//	              server in their process)
//	huge          (only when named) peak RSS of a 100M-row --key import into
//	              SQLite: 10.7 GB of CSV, half an hour and more
//	parse         the plan pass (no database) against Go parsers
//	alternatives  Go + go-sqlite3, pgx and pgloader against idemport
//
// With -file, the data set is that CSV file (its columns and types as
// idemport's plan pass infers them, the anchors' tables declared alike and
// keyed by -key) and the sections are first, rerun and resume, and delta
// when -delta names a daily delta of it. With -readme the rows print as
// the Markdown table of docs/development.md, each beside its anchor, and
// the anchors' commands after it. Each
// anchor's command is printed under its row, with its scripts.
//
// Each comparison runs its commands in turn (A B A B …) and the ratio is
// the median of the per-round ratios, so a machine whose speed drifts
// still gives a fair ratio. Peak RSS is the largest resident set of the
// command's own process (for psql and pgx clients, not the server's), and
// CPU time its user and system time (not the server's either).
// PostgreSQL comparisons run when -postgres is set (or
// IDEMPORT_TEST_POSTGRES), and MariaDB's rows of first and delta when -mariadb is
// (or IDEMPORT_TEST_MARIADB: it makes and drops the databases
// idemport_bench_TAG and idemport_bench_base_TAG there); pgloader runs when it is installed.
// The schemas, databases and tables a run makes on a server end in -tag
// (default: random), so that runs at once on one server keep apart. Data sets
// missing from -data are generated there (the memory files take 3 GiB).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/idemport/idemport/bench/orders"
)

type measure struct {
	wall time.Duration
	cpu  time.Duration // user and system time of the process (a database server's is not in it)
	rss  int64         // KiB
}

// cmd is a command to time, with a setup that runs untimed before it.
type cmd struct {
	name  string
	setup func() error
	argv  []string
	env   []string
	exit  int // the exit status expected
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
	if code := x.ProcessState.ExitCode(); code == c.exit && code > 0 {
		err = nil
	} else if err == nil && c.exit != 0 {
		err = fmt.Errorf("exit status 0, not %d", c.exit)
	}
	if err != nil {
		b, _ := os.ReadFile(out.Name())
		return measure{}, fmt.Errorf("%s: %v\n%s", c.name, err, b)
	}
	cpu := x.ProcessState.UserTime() + x.ProcessState.SystemTime()
	return measure{wall: wall, cpu: cpu, rss: peakRSS(x.ProcessState)}, nil
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
	cpu   float64 // median seconds of user and system time
	rows  int64
	rss   int64 // KiB, max
	vs    string
	ratio float64
	// cpuRatio, when set, is the paired ratio of CPU times beside ratio.
	cpuRatio float64
	label    string // of an anchor: the vs of the rows timed against it
	// note, when set, is what the row counts beside its time (bytes
	// fetched, requests made), printed after its name.
	note string
}

// anchor returns r as the anchor that rows with vs label are timed against.
func anchor(label string, r row) row {
	r.label = label
	return r
}

// race runs cs with the env's timer: race, unless a test set another.
func (e *env) race(n int, cs ...cmd) ([][]measure, []float64) {
	if e.timer != nil {
		return e.timer(n, cs...)
	}
	return race(n, cs...)
}

// race runs cs in turn, n rounds (A B C A B C …), and returns each one's
// measures and the median of its per-round ratios to cs[0].
func race(n int, cs ...cmd) ([][]measure, []float64) {
	ms := make([][]measure, len(cs))
	ratios := make([][]float64, len(cs))
	for i := 0; i < n; i++ {
		for j, c := range cs {
			m, err := run(c)
			check(err)
			ms[j] = append(ms[j], m)
			ratios[j] = append(ratios[j], m.wall.Seconds()/ms[0][i].wall.Seconds())
		}
	}
	r := make([]float64, len(cs))
	for j := range cs {
		r[j] = median(ratios[j])
	}
	return ms, r
}

func summary(name string, ms []measure, rows int64) row {
	var ws, cs []float64
	var rss int64
	for _, m := range ms {
		ws = append(ws, m.wall.Seconds())
		cs = append(cs, m.cpu.Seconds())
		rss = max(rss, m.rss)
	}
	return row{name: name, wall: median(ws), cpu: median(cs), rows: rows, rss: rss}
}

var sections = []string{"first", "fixed", "delta", "rerun", "resume", "formats", "memory", "remote", "parse", "alternatives"}

func main() {
	rowsFlag := flag.String("rows", "1m", "data set size: 1m, 10m, or a row count")
	runs := flag.Int("runs", 3, "timed runs of each command (after one warm-up of the data in the page cache)")
	data := flag.String("data", "bench/data", "where the data sets are (generated if missing)")
	pg := flag.String("postgres", os.Getenv("IDEMPORT_TEST_POSTGRES"), "PostgreSQL DSN for the PostgreSQL comparisons (empty: skip them)")
	maria := flag.String("mariadb", os.Getenv("IDEMPORT_TEST_MARIADB"), "MariaDB URL (mysql://user@host:3306/db) for the MariaDB rows of first and delta (empty: skip them)")
	only := flag.String("only", "", "run only this database's rows: sqlite, postgres or mariadb")
	sel := flag.String("sections", strings.Join(sections, ","), "sections to run, comma-separated")
	modes := flag.Bool("modes", false, "time the write modes (--atomic, --snapshot) against plain keyed imports instead of the comparisons")
	file := flag.String("file", "", "time this CSV file instead of the generated data set (sections first, rerun and resume), or these Parquet and Arrow files, comma-separated, against -csv (section formats)")
	csvOf := flag.String("csv", "", "with Parquet or Arrow -file: the CSV file of the same data, whose import's rows/s theirs are timed against")
	keyCol := flag.String("key", "", "with -file: the key column of the --key rows and of the anchors' tables (default: no keyed rows)")
	delta := flag.String("delta", "", "with -file and -key: a daily delta of that file (a CSV file of the same columns), timed into the imported file's table in section delta")
	tag := flag.String("tag", "", "the suffix of the PostgreSQL schemas, databases and table and the MariaDB databases this run makes and drops: lower-case letters, digits and _ (default: random, so that runs at once on one server keep apart)")
	objects := flag.Int("objects", 10000, "section remote: the objects of the S3 prefix whose rerun is counted")
	readme := flag.Bool("readme", false, "print the table of docs/development.md's benchmark section (default sections first,delta,rerun,resume,formats,memory,remote), each row beside its anchor, and the anchors' commands under it")
	flag.Parse()
	checkFlags(*file, *keyCol, *delta, *modes)
	if *tag == "" {
		*tag = randomTag()
	}
	check(checkTag(*tag))

	rows, name := parseRows(*rowsFlag)
	bin, err := os.MkdirTemp("", "idemport-bench-")
	check(err)
	defer os.RemoveAll(bin)
	e := &env{runs: *runs, rows: rows, name: name, data: *data, idemport: filepath.Join(bin, "idemport"), anchor: filepath.Join(bin, "anchor"), add: report, out: os.Stdout, tag: *tag, objects: *objects}
	var md *markdown
	if *readme {
		md = newMarkdown()
		e.add, e.out = md.add, md
		if !isFlagSet("sections") {
			*sel = readmeSections
		}
	}
	check(goBuild(e.idemport, "./cmd/idemport"))
	check(goBuild(e.anchor, "./bench/anchor"))
	e.work, err = os.MkdirTemp("", "idemport-bench-db-")
	check(err)
	defer os.RemoveAll(e.work)
	e.db = filepath.Join(e.work, "i.db")
	if e.dataSet(*file, *csvOf, *keyCol, *delta, *data, *pg, *only, *modes, sel) {
		return
	}
	e.checkSections(*sel, *file)
	e.sections(md, *sel, *pg, *maria, *only)
}

// checkFlags refuses the flags that do not go together.
func checkFlags(file, keyCol, delta string, modes bool) {
	if file == "" && keyCol != "" || file != "" && modes {
		check(fmt.Errorf("-key goes with -file, and -file does not go with -modes"))
	}
	if delta != "" && (file == "" || keyCol == "") {
		check(fmt.Errorf("-delta goes with -file and -key"))
	}
}

// randomTag returns a run's tag: 8 random hexadecimal digits.
func randomTag() string {
	var b [4]byte
	_, err := rand.Read(b[:])
	check(err)
	return hex.EncodeToString(b[:])
}

// checkTag refuses a tag that would not keep the names it ends plain SQL
// identifiers, unquoted on both servers.
func checkTag(tag string) error {
	if tag == "" || len(tag) > 20 {
		return fmt.Errorf("-tag %q: want 1-20 characters", tag)
	}
	for _, r := range tag {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return fmt.Errorf("-tag %q: want lower-case letters, digits and _", tag)
		}
	}
	return nil
}

// dataSet chooses the data set (-file, or the generated one in data) and,
// unless -sections is set, the sections that go with it. With -modes it
// times the write modes instead, and reports true: nothing is left to run.
func (e *env) dataSet(file, csvOf, keyCol, delta, data, pg, only string, modes bool, sel *string) bool {
	if file != "" && columnar(file) {
		e.useColumnar(file, csvOf)
		if !isFlagSet("sections") {
			*sel = "formats"
		}
	} else if file != "" {
		if delta != "" {
			e.useFile(delta, keyCol)
			e.delta, e.deltaRows = delta, e.rows
		}
		e.useFile(file, keyCol)
		if !isFlagSet("sections") && delta != "" {
			*sel = "first,delta,rerun,resume"
		} else if !isFlagSet("sections") {
			*sel = "first,rerun,resume"
		}
		exec.Command("cat", e.csv).Run() // warm the page cache
	} else {
		e.keyCol = "order_id"
		e.csv = filepath.Join(data, "orders_"+e.name+".csv")
		e.jsonl = filepath.Join(data, "orders_"+e.name+".jsonl")
		e.parquet = filepath.Join(data, "orders_"+e.name+".parquet")
		e.day2 = filepath.Join(data, "orders_"+e.name+"_day2.csv")
		if modes {
			e.allModes(data, pg, only)
			return true
		}
		files := map[string]string{"csv": e.csv, "jsonl": e.jsonl, "parquet": e.parquet}
		for _, format := range formatsFor(*sel) {
			f := files[format]
			e.gen(filepath.Base(f), "-rows", fmt.Sprint(e.rows), "-formats", format)
			exec.Command("cat", f).Run() // warm the page cache
		}
	}
	return false
}

// formatsFor returns the formats of the generated data set that sections
// sel read: the CSV always, JSONL for formats and parse, Parquet for
// formats. Only those are generated when missing (bench/gen writes each
// format from the same seeded rows, so a format written later holds the
// same orders), since the 10M JSONL and Parquet files take minutes.
func formatsFor(sel string) []string {
	secs := strings.Split(sel, ",")
	out := []string{"csv"}
	if slices.Contains(secs, "formats") || slices.Contains(secs, "parse") {
		out = append(out, "jsonl")
	}
	if slices.Contains(secs, "formats") {
		out = append(out, "parquet")
	}
	return out
}

// checkSections refuses the sections the data set cannot run.
func (e *env) checkSections(sel, file string) {
	for _, s := range strings.Split(sel, ",") {
		if file != "" && e.others != nil && s != "formats" {
			check(fmt.Errorf("-sections: %s needs a CSV -file or the generated data set, not Parquet or Arrow files", s))
		}
		if file != "" && e.others == nil && s != "first" && s != "fixed" && s != "rerun" && s != "resume" && s != "remote" && (s != "delta" || e.delta == "") {
			check(fmt.Errorf("-sections: %s needs the generated data set, or with -file a -delta, not -file alone", s))
		}
	}
}

// sections runs the sections of sel for the databases -only leaves, and
// prints the report (as Markdown when md is not nil).
func (e *env) sections(md *markdown, sel, pg, maria, only string) {
	fmt.Printf("\nload average at start: %s; ratios are paired medians (A B A B …) unless marked\n", loadavg())
	if md == nil {
		fmt.Printf("%-62s %9s %9s %11s %9s   %s\n", "command", "median s", "CPU s", "rows/s", "RSS MiB", "ratio")
	}
	sqlite, postgres := only == "" || only == "sqlite", pg != "" && (only == "" || only == "postgres")
	mariadb := maria != "" && (only == "" || only == "mariadb")
	for _, s := range strings.Split(sel, ",") {
		e.section(s, pg, maria, sqlite, postgres, mariadb)
	}
	if md != nil {
		md.print(os.Stdout)
	}
	fmt.Printf("load average at end: %s\n\n", loadavg())
}

// section runs one section against the databases chosen.
func (e *env) section(s, pg, maria string, sqlite, postgres, mariadb bool) {
	switch s {
	case "first":
		if sqlite {
			e.sqliteFirst()
		}
		if postgres {
			e.postgresFirst(pg)
		}
		if mariadb {
			e.mariadbFirst(maria)
		}
	case "fixed":
		e.fixed(pg, sqlite, postgres)
	case "delta":
		if sqlite {
			e.sqliteDelta()
		}
		if postgres {
			e.postgresDelta(pg)
		}
		if mariadb {
			e.mariadbDelta(maria)
		}
	case "rerun":
		e.rerun()
	case "resume":
		e.resume()
	case "formats":
		e.formats()
		if e.others == nil && e.cols == nil {
			e.otherFormats()
		}
	case "remote":
		e.remote()
	case "huge":
		e.huge()
	case "memory":
		e.memory(pg, sqlite, postgres)
	case "parse":
		e.parse()
	case "alternatives":
		if sqlite {
			e.sqliteAlternatives()
		}
		if postgres {
			e.postgresAlternatives(pg)
		}
	default:
		check(fmt.Errorf("-sections: unknown section %q (known: %s)", s, strings.Join(sections, ", ")))
	}
}

// env is one run of the benchmark: the binaries, the data set, a scratch
// directory, and where the rows of the report go.
type env struct {
	runs                int
	rows                int64
	name, data          string // the data set's name (1m, 10m…) and directory
	idemport, anchor    string
	csv, jsonl, parquet string
	day2                string   // the next day's extract of csv
	others              []string // with Parquet or Arrow -file: those files, timed against csv
	cols                []column // with -file: its columns (nil: the orders data set)
	keyCol              string   // the key column of the --key rows; empty: none
	work, db            string
	tag                 string // ends the names of what the run makes on a server (own)
	delta               string // the daily delta of csv; "": bench/gen's, made when the delta section needs it
	objects             int    // section remote: the objects of the S3 prefix rerun
	deltaRows           int64  // its rows
	add                 func(row)
	out                 io.Writer                                  // where show prints the anchors' commands
	timer               func(int, ...cmd) ([][]measure, []float64) // nil: race
}

// own returns name ended by the run's tag: the name of a schema,
// database or table the run makes and drops on a server, which another
// run on the same server at the same time does not share.
func (e *env) own(name string) string {
	if e.tag == "" {
		return name
	}
	return name + "_" + e.tag
}

// deltaFile returns the daily delta of the data set and its rows: -delta,
// or bench/gen's delta of the orders (N/10 rows), generated if missing.
func (e *env) deltaFile() (string, int64) {
	if e.delta != "" {
		return e.delta, e.deltaRows
	}
	return e.gen("orders_"+e.name+"_delta.csv", "-rows", fmt.Sprint(e.rows), "-delta"), e.rows / 10
}

// gen writes file into the data directory with bench/gen and args,
// unless it is there already, and returns its path.
func (e *env) gen(file string, args ...string) string {
	path := filepath.Join(e.data, file)
	if _, err := os.Stat(path); err == nil {
		return path
	}
	fmt.Printf("generating %s …\n", path)
	x := exec.Command("go", append([]string{"run", "./bench/gen", "-out", e.data}, args...)...)
	x.Stdout, x.Stderr = os.Stdout, os.Stderr
	check(x.Run())
	return path
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

// restore returns a setup that replaces the SQLite database at to with a
// copy of the one at from.
func restore(from, to string) func() error {
	return func() error {
		fresh(to)()
		for _, s := range []string{"", "-wal"} {
			if _, err := os.Stat(from + s); err != nil {
				continue
			}
			if out, err := exec.Command("cp", from+s, to+s).CombinedOutput(); err != nil {
				return fmt.Errorf("cp: %v %s", err, out)
			}
		}
		return nil
	}
}

// importArgs is idemport's import of extra (flags, then files) into the
// table orders of the SQLite database e.db.
func (e *env) importArgs(extra ...string) []string {
	return append([]string{e.idemport, "import", "--progress", "never", "--into", e.db, "--table", "orders"}, extra...)
}

// vsMedians adds the row of anchor's times, with the ratio of mine's
// median to anchor's (not paired: for anchors timed apart from idemport).
func (e *env) vsMedians(name string, ms []measure, mineName string, mine []measure) {
	r := summary(name, ms, e.rows)
	e.add(r)
	e.add(withRatio(summary(mineName, mine, e.rows), name+" (medians)", summary("", mine, 0).wall/r.wall))
}

// key returns the flags of a keyed import.
func (e *env) key() []string { return []string{"--key", e.keyCol} }

// sqlite3 returns the sqlite3 CLI running the script in file on db.
func sqlite3(db, file string) []string {
	return []string{"sh", "-c", `exec sqlite3 "$0" < "$1"`, db, file}
}

// script writes s to a file of the scratch directory and returns its path.
func (e *env) script(name, s string) string {
	p := filepath.Join(e.work, name)
	check(os.WriteFile(p, []byte(s), 0o644))
	return p
}

const ordersSQLite = `CREATE TABLE orders(order_id INTEGER PRIMARY KEY, customer_id INTEGER, sku TEXT, quantity INTEGER, unit_price REAL, status TEXT, created_at TEXT, note TEXT);`

// sqliteImport is the script of the sqlite3 CLI's import of csv into a
// new keyed table, as idemport opens SQLite (WAL, synchronous NORMAL).
func (e *env) sqliteImport(csv string) string {
	table := ordersSQLite
	if e.cols != nil {
		table = e.createTable("orders", true)
	}
	return e.script("import.sql", "PRAGMA journal_mode=WAL;\nPRAGMA synchronous=NORMAL;\n"+table+"\n.mode csv\n.import --skip 1 "+dotArg(csv)+" orders\n")
}

// dotArg returns s as one argument of a sqlite3 dot command: as it is,
// or double-quoted when it has spaces or quotes.
func dotArg(s string) string {
	if !strings.ContainsAny(s, " \t\"'\\") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// upsert is the hand-written merge of the temp table d into table: every
// column of the data set but the key updated where it differs. distinct is
// the SQL for "is distinct from".
func (e *env) upsert(table, distinct string) string {
	cols := orders.Columns
	if e.cols != nil {
		cols = nil
		for _, c := range e.cols {
			cols = append(cols, c.Name)
		}
	}
	var set, mine, theirs []string
	for _, c := range cols {
		if c != e.keyCol {
			c = ident(c)
			set, mine, theirs = append(set, c+" = excluded."+c), append(mine, table+"."+c), append(theirs, "excluded."+c)
		}
	}
	merge := "INSERT INTO " + table + " SELECT * FROM d WHERE true ON CONFLICT (" + ident(e.keyCol) + ") DO "
	if len(set) == 0 {
		return merge + "NOTHING;\n"
	}
	return merge + "UPDATE SET " + strings.Join(set, ", ") +
		" WHERE (" + strings.Join(mine, ", ") + ") " + distinct + " (" + strings.Join(theirs, ", ") + ");\n"
}

// ident returns the SQL identifier name, double-quoted unless it is lower
// case letters, digits and underscores.
func ident(name string) string {
	if name != "" && strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789_") == "" && (name[0] < '0' || name[0] > '9') {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

func (e *env) sqliteFirst() {
	sdb, script := filepath.Join(e.work, "s.db"), e.sqliteImport(e.csv)
	cs := []cmd{
		{name: "sqlite3", setup: fresh(sdb), argv: sqlite3(sdb, script)},
		{name: "idemport", setup: fresh(e.db), argv: e.importArgs(e.csv)},
	}
	if e.keyCol != "" {
		cs = append(cs, cmd{name: "idemport --key", setup: fresh(e.db), argv: e.importArgs(append(e.key(), e.csv)...)},
			cmd{name: "idemport --key, state made", setup: e.stateMade(fresh(e.db),
				[]string{e.idemport, "import", "--progress", "never", "--into", e.db, "--table", "state_made"}),
				argv: e.importArgs(append(e.key(), e.csv)...)})
	}
	ms, r := e.race(e.runs, cs...)
	e.add(anchor("sqlite3 .import", summary("sqlite3 .import → "+e.keyedTable("INTEGER PRIMARY KEY")+" (WAL)", ms[0], e.rows)))
	e.show(cs[0].argv, "rm -f "+quote(sdb)+"*", script)
	e.add(withRatio(summary("idemport import CSV → SQLite, ordinal", ms[1], e.rows), "sqlite3 .import", r[1]))
	if e.keyCol != "" {
		e.add(withRatio(summary("idemport import CSV → SQLite, --key "+e.keyCol, ms[2], e.rows), "sqlite3 .import", r[2]))
		e.add(withRatio(summary("idemport import CSV → SQLite, --key "+e.keyCol+", state made before", ms[3], e.rows), "sqlite3 .import", r[3]))
	}
}

// stateMade returns a setup that runs setup, then imports a one-row CSV
// file by argv (idemport's import into another table of the same target,
// the file last), so that the timed import finds idemport's state made,
// as every import after a database's first does; the ledger knows only
// that file, and the timed import still makes its own table.
func (e *env) stateMade(setup func() error, argv []string) func() error {
	return func() error {
		if err := setup(); err != nil {
			return err
		}
		csv := filepath.Join(e.work, "state_made.csv")
		if err := os.WriteFile(csv, []byte("id,note\n1,state\n"), 0o644); err != nil {
			return err
		}
		_, err := run(cmd{name: "state made", argv: append(slices.Clone(argv), csv)})
		return err
	}
}

// fixed times what a first import spends before its first write: each
// import of section first beside the same import resumed where a kill
// after its plan pass (failpoint after-plan) left it, with --rehash so
// that it reads and hashes the file as the first run did. The resumed run
// is the import without its plan pass; its paired ratio, wall and CPU, is
// the share of the import that comes after the plan pass.
func (e *env) fixed(dsn string, sqlite, postgres bool) {
	type target struct {
		name  string
		setup func() error
		args  func(...string) []string
	}
	var ts []target
	if sqlite {
		ts = append(ts, target{"SQLite", fresh(e.db), e.importArgs})
	}
	if postgres {
		p := e.pg(dsn)
		ts = append(ts, target{"PostgreSQL", p.reset, p.importArgs})
		defer p.drop()
	}
	modes := [][]string{nil}
	if e.keyCol != "" {
		modes = append(modes, e.key())
	}
	for _, t := range ts {
		for _, m := range modes {
			args := t.args(append(slices.Clone(m), e.csv)...)
			kill := func() error {
				if err := t.setup(); err != nil {
					return err
				}
				x := exec.Command(args[0], args[1:]...)
				x.Env = append(os.Environ(), "IDEMPORT_FAILPOINT=after-plan")
				if err := x.Run(); err == nil {
					return fmt.Errorf("the import was not killed after its plan pass")
				}
				return nil
			}
			ms, r := e.race(e.runs,
				cmd{name: "import", setup: t.setup, argv: args},
				cmd{name: "after its plan", setup: kill, argv: t.args(append(slices.Clone(m), "--rehash", e.csv)...)})
			mode := "ordinal"
			if m != nil {
				mode = strings.Join(m, " ")
			}
			label := t.name + " " + mode
			e.add(anchor(label, summary("idemport import CSV → "+t.name+", "+mode, ms[0], e.rows)))
			after := withRatio(summary("  resumed after its plan pass (--rehash)", ms[1], e.rows), label, r[1])
			after.cpuRatio = pairedCPU(ms[0], ms[1])
			e.add(after)
		}
	}
}

// pairedCPU returns the median of the per-round ratios of b's CPU time to
// a's.
func pairedCPU(a, b []measure) float64 {
	var rs []float64
	for i := range min(len(a), len(b)) {
		if a[i].cpu > 0 {
			rs = append(rs, b[i].cpu.Seconds()/a[i].cpu.Seconds())
		}
	}
	if len(rs) == 0 {
		return 0
	}
	return median(rs)
}

// sqliteDelta times the daily delta into a copy of the N-row table, made
// once by each tool.
func (e *env) sqliteDelta() {
	delta, rows := e.deltaFile()
	sdb, baseI, baseS := filepath.Join(e.work, "s.db"), filepath.Join(e.work, "base-i.db"), filepath.Join(e.work, "base-s.db")
	fresh(baseI, baseS)()
	e.race(1, cmd{name: "day 1", argv: append([]string{e.idemport, "import", "--progress", "never", "--into", baseI, "--table", "orders"}, append(e.key(), e.csv)...)},
		cmd{name: "sqlite3 day 1", argv: sqlite3(baseS, e.sqliteImport(e.csv))})
	temp := strings.Replace(ordersSQLite, "TABLE orders", "TEMP TABLE d", 1)
	if e.cols != nil {
		temp = strings.Replace(e.createTable("d", true), "TABLE d", "TEMP TABLE d", 1)
	}
	merge := e.script("delta.sql", "PRAGMA journal_mode=WAL;\nPRAGMA synchronous=NORMAL;\n"+
		temp+"\n.mode csv\n.import --skip 1 "+dotArg(delta)+" d\n"+e.upsert("orders", "IS NOT"))
	ms, r := e.race(e.runs,
		cmd{name: "sqlite3 merge", setup: restore(baseS, sdb), argv: sqlite3(sdb, merge)},
		cmd{name: "idemport delta", setup: restore(baseI, e.db), argv: e.importArgs(append(e.key(), delta)...)})
	e.add(anchor("sqlite3 merge", summary("sqlite3 .import into temp + INSERT … ON CONFLICT DO UPDATE", ms[0], rows)))
	e.show(sqlite3(sdb, merge), "cp "+quote(baseS)+" "+quote(sdb)+", the day-1 table loaded by sqlite3 .import as in first", merge)
	e.add(withRatio(summary("idemport --key delta (½ new, ½ changed) → N-row SQLite", ms[1], rows), "sqlite3 merge", r[1]))
	fresh(baseI, baseS)()
}

// rerun times a rerun of the completed file, rehashed and through the
// quick check. The rehash is timed against sha256sum (coreutils, whose
// own SHA-256 may not use the CPU's SHA extensions) and a Go SHA-256,
// which does where the CPU has them; the quick check against idemport
// version, the cost of the process's start alone.
func (e *env) rerun() {
	fresh(e.db)()
	_, err := run(cmd{name: "first import", argv: e.importArgs(e.csv)})
	check(err)
	goSHA := []string{e.anchor, "sha256", e.csv}
	cs := []cmd{{name: "sha256", argv: goSHA}, {name: "rerun", argv: e.importArgs("--rehash", e.csv)}}
	sum, err := exec.LookPath("sha256sum")
	if err == nil {
		cs = append(cs, cmd{name: "sha256sum", argv: []string{sum, e.csv}})
	}
	ms, r := e.race(e.runs, cs...)
	e.add(anchor("SHA-256 of the file", summary("SHA-256 of the file (Go)", ms[0], e.rows)))
	e.show(goSHA, "")
	if len(ms) > 2 {
		e.add(anchor("sha256sum", withRatio(summary("sha256sum of the file", ms[2], e.rows), "SHA-256 of the file", r[2])))
		e.show([]string{"sha256sum", e.csv}, "")
		e.add(withRatio(summary("idemport rerun of the completed file (--rehash)", ms[1], e.rows), "sha256sum", paired(ms[1], ms[2])))
	}
	e.add(withRatio(summary("idemport rerun of the completed file (--rehash)", ms[1], e.rows), "SHA-256 of the file", r[1]))
	ms, r = e.race(max(e.runs, 10),
		cmd{name: "version", argv: []string{e.idemport, "version"}},
		cmd{name: "quick", argv: e.importArgs(e.csv)})
	e.add(anchor("idemport version", summary("idemport version (the process's start alone)", ms[0], 0)))
	e.add(withRatio(summary("idemport rerun, quick check hit", ms[1], 0), "idemport version", r[1]))
}

// paired returns the median of the ratios a[i]/b[i] of the wall times of
// two commands run in turn.
func paired(a, b []measure) float64 {
	var rs []float64
	for i := range a {
		rs = append(rs, a[i].wall.Seconds()/b[i].wall.Seconds())
	}
	return median(rs)
}

// resume times a resume after a kill at 90 %: 10 partitions, killed after
// the 9th commit. The partitions are cut by rows alone (--partition-bytes
// as large as the file): cut at the default 64 MiB as well, the 10M-row
// file has 16 partitions, and a kill after 9 is at 56 %.
func (e *env) resume() {
	st, err := os.Stat(e.csv)
	check(err)
	part := []string{"--partition-rows", fmt.Sprint(e.rows / 10), "--partition-bytes", fmt.Sprint(st.Size())}
	kill := func() error {
		fresh(e.db)()
		x := exec.Command(e.idemport, e.importArgs(append(part, e.csv)...)[1:]...)
		x.Env = append(os.Environ(), "IDEMPORT_FAILPOINT=after-partition-commit:9")
		x.Run() // killed on purpose
		return nil
	}
	ms, r := e.race(e.runs,
		cmd{name: "full", setup: fresh(e.db), argv: e.importArgs(append(part, e.csv)...)},
		cmd{name: "resume", setup: kill, argv: e.importArgs(append(part, e.csv)...)})
	e.add(anchor("full import", summary("idemport full import, 10 partitions", ms[0], e.rows)))
	e.add(withRatio(summary("idemport resume after a kill at 90 %", ms[1], e.rows/10), "full import", r[1]))
}

// formats times the JSONL and Parquet imports against the CSV import;
// their ratios are of rows per second (higher is faster).
func (e *env) formats() {
	files, names := []string{e.csv, e.jsonl, e.parquet}, []string{"CSV", "JSONL", "Parquet"}
	if e.others != nil {
		files, names = append([]string{e.csv}, e.others...), append([]string{"CSV"}, e.otherNames()...)
	}
	var cs []cmd
	for _, f := range files {
		cs = append(cs, cmd{name: f, setup: fresh(e.db), argv: e.importArgs(f)})
	}
	ms, r := e.race(e.runs, cs...)
	e.add(anchor("CSV's rows/s", summary("idemport import "+names[0]+" → SQLite", ms[0], e.rows)))
	for i := 1; i < len(files); i++ {
		e.add(withRatio(summary("idemport import "+names[i]+" → SQLite", ms[i], e.rows), "CSV's rows/s", 1/r[i]))
	}
}

// memory reports idemport's peak RSS on wide rows, and on the refusal of a
// file whose rows are all bad, on each database.
func (e *env) memory(dsn string, sqlite, postgres bool) {
	files := []struct {
		name string
		path string
		rows int64
	}{
		{"1M rows of 1 KiB", e.gen("orders_1m_w1024.csv", "-rows", "1000000", "-width", "1024"), 1_000_000},
		{"2,000 rows of 1 MiB", e.gen("orders_2k_w1048576.csv", "-rows", "2000", "-width", "1048576"), 2000},
	}
	bad := e.gen("orders_"+e.name+"_bad.csv", "-rows", fmt.Sprint(e.rows), "-bad")
	refuse := []string{"--column", "quantity:int64", "--max-rejects", "1%", bad}
	if sqlite {
		for _, f := range files {
			ms := timeN(e.runs, cmd{name: f.name, setup: fresh(e.db), argv: e.importArgs(f.path)})
			e.add(summary("idemport import "+f.name+" → SQLite", ms, f.rows))
		}
		ms := timeN(e.runs, cmd{name: "refusal", setup: fresh(e.db), argv: e.importArgs(refuse...), exit: 5})
		e.add(summary("idemport --max-rejects 1% refusal, all rows bad → SQLite", ms, e.rows))
	}
	if postgres {
		p := e.pg(dsn)
		for _, f := range files {
			ms := timeN(e.runs, cmd{name: f.name, setup: p.reset, argv: p.importArgs(f.path)})
			e.add(summary("idemport import "+f.name+" → PostgreSQL", ms, f.rows))
		}
		ms := timeN(e.runs, cmd{name: "refusal", setup: p.reset, argv: p.importArgs(refuse...), exit: 5})
		e.add(summary("idemport --max-rejects 1% refusal, all rows bad → PostgreSQL", ms, e.rows))
		p.drop()
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

// sqliteAlternatives times the load written in Go with go-sqlite3, as a
// user would, against idemport's.
func (e *env) sqliteAlternatives() {
	sdb := filepath.Join(e.work, "s.db")
	ms, r := e.race(e.runs,
		cmd{name: "idemport", setup: fresh(e.db), argv: e.importArgs(e.csv)},
		cmd{name: "upsert 1", setup: fresh(sdb), argv: []string{e.anchor, "sqlite-upsert", "1", sdb, e.csv}},
		cmd{name: "upsert 100", setup: fresh(sdb), argv: []string{e.anchor, "sqlite-upsert", "100", sdb, e.csv}})
	e.add(summary("idemport import CSV → SQLite, ordinal", ms[0], e.rows))
	e.add(withRatio(summary("Go + go-sqlite3 upsert, 1 row per statement", ms[1], e.rows), "idemport", r[1]))
	e.show([]string{e.anchor, "sqlite-upsert", "1", sdb, e.csv}, "rm -f "+quote(sdb)+"*")
	e.add(withRatio(summary("Go + go-sqlite3 upsert, 100 rows per statement", ms[2], e.rows), "idemport", r[2]))
	e.show([]string{e.anchor, "sqlite-upsert", "100", sdb, e.csv}, "rm -f "+quote(sdb)+"*")
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

// pgTarget is a PostgreSQL database the benchmark writes: idemport's
// table orders in the schema idemport_bench_TAG (state in
// idemport_bench_state_TAG) and the anchors' table bench_copy_TAG (TAG:
// the run's, env.own).
type pgTarget struct {
	e   *env
	dsn string
	sql func(string) error
}

func (e *env) pg(dsn string) pgTarget { return pgTarget{e, dsn, psql(dsn)} }

// schema, state and copyName are the names of idemport's schema, its
// state schema and the anchors' table.
func (p pgTarget) schema() string   { return p.e.own("idemport_bench") }
func (p pgTarget) state() string    { return p.e.own("idemport_bench_state") }
func (p pgTarget) copyName() string { return p.e.own("bench_copy") }

// reset empties idemport's schemas.
func (p pgTarget) reset() error {
	return p.sql(`DROP SCHEMA IF EXISTS ` + p.schema() + ` CASCADE; DROP SCHEMA IF EXISTS ` + p.state() + ` CASCADE; CREATE SCHEMA ` + p.schema())
}

// resetCopy makes the anchors' table a new, empty keyed table.
func (p pgTarget) resetCopy() error { return p.sql(p.copyTable()) }

// copyTable is the SQL making the anchors' table a new, empty table: the orders
// data set's keyed one, or -file's (keyed by -key when it is set).
func (p pgTarget) copyTable() string {
	if p.e.cols != nil {
		return "DROP TABLE IF EXISTS " + p.copyName() + "; " + p.e.createTable(p.copyName(), false)
	}
	return `DROP TABLE IF EXISTS ` + p.copyName() + `; CREATE TABLE ` + p.copyName() + `(order_id bigint PRIMARY KEY, customer_id bigint, sku text, ` +
		`quantity bigint, unit_price double precision, status text, created_at timestamptz, note text)`
}

func (p pgTarget) drop() {
	p.sql(`DROP SCHEMA IF EXISTS ` + p.schema() + ` CASCADE; DROP SCHEMA IF EXISTS ` + p.state() + ` CASCADE; DROP TABLE IF EXISTS ` + p.copyName())
}

func (p pgTarget) importArgs(extra ...string) []string {
	return append([]string{p.e.idemport, "import", "--progress", "never", "--into", p.dsn, "--state-schema", p.state(),
		"--table", p.schema() + ".orders"}, extra...)
}

// anchorName is the table of bench/anchor's pgx loads.
func (p pgTarget) anchorName() string { return p.e.own("bench_anchor") }

// pgxArgs is bench/anchor's pgx load (pgx-copy or pgx-merge) of csv into
// anchorName.
func (p pgTarget) pgxArgs(load, csv string) []string {
	return []string{p.e.anchor, load, p.dsn, csv, p.anchorName()}
}

func (p pgTarget) copyArgs(csv string) []string {
	return []string{"psql", p.dsn, "-qc", `\copy ` + p.copyName() + ` FROM '` + csv + `' CSV HEADER`}
}

func (e *env) postgresFirst(dsn string) {
	p := e.pg(dsn)
	cs := []cmd{
		{name: "psql copy", setup: p.resetCopy, argv: p.copyArgs(e.csv)},
		{name: "idemport", setup: p.reset, argv: p.importArgs(e.csv)},
	}
	if e.keyCol != "" {
		cs = append(cs, cmd{name: "idemport --key", setup: p.reset, argv: p.importArgs(append(e.key(), e.csv)...)},
			cmd{name: "idemport --key, state made", setup: e.stateMade(p.reset, []string{e.idemport, "import", "--progress", "never",
				"--into", p.dsn, "--state-schema", p.state(), "--table", p.schema() + ".state_made"}),
				argv: p.importArgs(append(e.key(), e.csv)...)})
	}
	// The server does most of the work of every command: its CPU time is
	// read around each one when it runs on this machine.
	srv := newPostgresCPU(dsn)
	for j := range cs {
		cs[j].setup = srv.around(j, cs[j].setup)
	}
	ms, r := e.race(e.runs, cs...)
	srv.stop()
	e.add(anchor(`psql \copy`, summary(srv.named(0, `psql \copy → `+e.keyedTable("PRIMARY KEY")), ms[0], e.rows)))
	e.show(cs[0].argv, "psql "+quote(dsn)+" -c "+quote(p.copyTable()))
	e.add(withRatio(summary(srv.named(1, "idemport import CSV → PostgreSQL, ordinal"), ms[1], e.rows), `psql \copy`, r[1]))
	if e.keyCol != "" {
		e.add(withRatio(summary(srv.named(2, "idemport import CSV → PostgreSQL, --key "+e.keyCol), ms[2], e.rows), `psql \copy`, r[2]))
		e.add(withRatio(summary(srv.named(3, "idemport import CSV → PostgreSQL, --key "+e.keyCol+", state made before"), ms[3], e.rows), `psql \copy`, r[3]))
	}
	p.drop()
}

// pgHost returns the host of a PostgreSQL URL, or "" (a key=value DSN).
func pgHost(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// pgDeltaDatabases are the names of the databases of postgresDelta: the
// one loaded once, and the one each run copies it into.
func (e *env) pgDeltaDatabases() (base, run string) {
	return e.own("idemport_bench_base"), e.own("idemport_bench_run")
}

// postgresDelta times the daily delta into a copy of the N-row tables:
// each tool's day 1 is loaded once into the database idemport_bench_base_TAG,
// and each run starts from a copy of it, idemport_bench_run_TAG.
func (e *env) postgresDelta(dsn string) {
	delta, rows := e.deltaFile()
	server := psql(dsn)
	u, err := url.Parse(dsn)
	check(err)
	db := func(name string) string { u.Path = "/" + name; return u.String() }
	baseName, runName := e.pgDeltaDatabases()
	base, copy := e.pg(db(baseName)), e.pg(db(runName))
	dropAll := func() error {
		for _, d := range []string{runName, baseName} {
			if err := server(`DROP DATABASE IF EXISTS ` + d + ` WITH (FORCE)`); err != nil {
				return err
			}
		}
		return nil
	}
	check(dropAll())
	check(server(`CREATE DATABASE ` + baseName))
	check(base.reset())
	check(base.resetCopy())
	for _, c := range []cmd{{name: "day 1", argv: base.importArgs(append(e.key(), e.csv)...)}, {name: "psql day 1", argv: base.copyArgs(e.csv)}} {
		_, err := run(c)
		check(err)
	}
	again := func() error {
		if err := server(`DROP DATABASE IF EXISTS ` + runName + ` WITH (FORCE)`); err != nil {
			return err
		}
		return server(`CREATE DATABASE ` + runName + ` TEMPLATE ` + baseName)
	}
	merge := e.script("delta-pg.sql", "BEGIN;\nCREATE TEMP TABLE d (LIKE "+copy.copyName()+") ON COMMIT DROP;\n\\copy d FROM '"+delta+"' CSV HEADER\n"+
		e.upsert(copy.copyName(), "IS DISTINCT FROM")+"COMMIT;\n")
	srv := newPostgresCPU(dsn)
	ms, r := e.race(e.runs,
		cmd{name: "psql merge", setup: srv.around(0, again), argv: []string{"psql", copy.dsn, "-v", "ON_ERROR_STOP=1", "-qf", merge}},
		cmd{name: "idemport delta", setup: srv.around(1, again), argv: copy.importArgs(append(e.key(), delta)...)})
	srv.stop()
	e.add(anchor("psql merge", summary(srv.named(0, `psql \copy into temp + INSERT … ON CONFLICT DO UPDATE`), ms[0], rows)))
	e.show([]string{"psql", copy.dsn, "-v", "ON_ERROR_STOP=1", "-qf", merge},
		`CREATE DATABASE `+runName+` TEMPLATE `+baseName+`, the day-1 table loaded by psql \copy as in first`, merge)
	e.add(withRatio(summary(srv.named(1, "idemport --key delta (½ new, ½ changed) → N-row PostgreSQL"), ms[1], rows), "psql merge", r[1]))
	check(dropAll())
}

// postgresAlternatives times pgx loaders and pgloader against idemport's
// ordinal import.
func (e *env) postgresAlternatives(dsn string) {
	p := e.pg(dsn)
	pgxCopy, pgxMerge := p.pgxArgs("pgx-copy", e.csv), p.pgxArgs("pgx-merge", e.csv)
	ms, r := e.race(e.runs,
		cmd{name: "idemport", setup: p.reset, argv: p.importArgs(e.csv)},
		cmd{name: "pgx-copy", argv: pgxCopy},
		cmd{name: "pgx-merge", argv: pgxMerge})
	e.add(summary("idemport import CSV → PostgreSQL, ordinal", ms[0], e.rows))
	e.add(withRatio(summary("pgx CopyFrom → PRIMARY KEY table", ms[1], e.rows), "idemport", r[1]))
	e.show(pgxCopy, "")
	e.add(withRatio(summary("pgx staging + ON CONFLICT merge", ms[2], e.rows), "idemport", r[2]))
	e.show(pgxMerge, "")
	p.sql(`DROP TABLE IF EXISTS ` + p.anchorName())
	if _, err := exec.LookPath("pgloader"); err != nil {
		fmt.Println("(pgloader is not installed: apt-get install pgloader to compare with it)")
		p.drop()
		return
	}
	u, err := url.Parse(dsn)
	check(err)
	u.RawQuery = "" // pgloader reads ?name as the table
	script := e.script("idemport-bench.load", fmt.Sprintf(`LOAD CSV FROM '%s' (order_id, customer_id, sku, quantity, unit_price, status, created_at, note)
INTO %s?%s (order_id, customer_id, sku, quantity, unit_price, status, created_at, note)
WITH truncate, skip header = 1, fields optionally enclosed by '"', fields escaped by double-quote, fields terminated by ',';`, e.csv, u.String(), p.copyName()))
	ms, r = e.race(1,
		cmd{name: "psql copy", setup: p.resetCopy, argv: p.copyArgs(e.csv)},
		cmd{name: "pgloader", setup: p.resetCopy, argv: []string{"pgloader", script}})
	e.add(withRatio(summary("pgloader LOAD CSV → PRIMARY KEY table (1 run)", ms[1], e.rows), `psql \copy`, r[1]))
	e.show([]string{"pgloader", script}, "psql "+quote(dsn)+" -c "+quote(p.copyTable()), script)
	p.drop()
}

// keyedTable names the anchors' table in a row: the orders data set's,
// keyed (by INTEGER PRIMARY KEY or PRIMARY KEY, as keyed says), or
// -file's, keyed by -key or not.
func (e *env) keyedTable(keyed string) string {
	switch {
	case e.cols == nil:
		return keyed + " table"
	case e.keyCol == "":
		return "table without a key"
	}
	return "table keyed by " + e.keyCol
}

// isFlagSet reports whether the flag name was given.
func isFlagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
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
		if r.cpuRatio > 0 {
			ratio += fmt.Sprintf(" (CPU %.2f×)", r.cpuRatio)
		}
	}
	wall := fmt.Sprintf("%9.2f", r.wall)
	if r.wall < 0.1 { // a process that does next to nothing: its milliseconds
		wall = fmt.Sprintf("%9.3f", r.wall)
	}
	name := r.name
	if r.note != "" {
		name += " (" + r.note + ")"
	}
	fmt.Printf("%-62s %s %9.2f %11s %9.0f   %s\n", name, wall, r.cpu, rate, float64(r.rss)/1024, ratio)
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
