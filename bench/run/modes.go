package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// allModes runs modes on SQLite and, when dsn is set, on PostgreSQL (in
// the schemas idemport_modes and idemport_modes_state, dropped after),
// as only allows; it generates the CSV data set and its next day first
// if they are missing.
func (e *env) allModes(data, dsn, only string) {
	if _, err := os.Stat(e.csv); err != nil {
		x := exec.Command("go", "run", "./bench/gen", "-rows", fmt.Sprint(e.rows), "-out", data, "-formats", "csv")
		x.Stdout, x.Stderr = os.Stdout, os.Stderr
		check(x.Run())
	}
	if _, err := os.Stat(e.day2); err != nil {
		x := exec.Command("go", "run", "./bench/gen", "-rows", fmt.Sprint(e.rows), "-out", data, "-day2")
		x.Stdout, x.Stderr = os.Stdout, os.Stderr
		check(x.Run())
	}
	for _, f := range []string{e.csv, e.day2} { // warm the page cache
		exec.Command("cat", f).Run()
	}
	fmt.Printf("\n%-62s %9s %9s %11s %9s   %s\n", "command", "median s", "CPU s", "rows/s", "RSS MiB", "ratio (paired, median)")
	if only != "postgres" {
		e.modes("SQLite", fresh(e.db), func(file string, extra ...string) []string {
			return e.importArgs(append(extra, file)...)
		})
	}
	if dsn != "" && only != "sqlite" {
		psql := psql(dsn)
		drop := `DROP SCHEMA IF EXISTS idemport_modes CASCADE; DROP SCHEMA IF EXISTS idemport_modes_state CASCADE`
		e.modes("PostgreSQL", func() error { return psql(drop + "; CREATE SCHEMA idemport_modes") },
			func(file string, extra ...string) []string {
				return append(append([]string{e.idemport, "import", "--progress", "never", "--into", dsn,
					"--state-schema", "idemport_modes_state", "--table", "idemport_modes.orders"}, extra...), file)
			})
		check(psql(drop))
	}
	fmt.Println()
}

// modes times the write modes against a plain keyed import on one
// database, runs times each, and adds their rows to the report:
//
//   - day 1 (the data set into an empty table): plain --key, then --atomic;
//   - day 2 (the next day's extract, bench/gen -day2, over day 1):
//     plain --key, --snapshot, and --snapshot --atomic.
//
// Each day-1 ratio is against the plain day-1 import, each day-2 ratio
// against the plain day-2 import, paired within a run: so the snapshot's
// ratio is the cost of recording keys and sweeping the 1 % deleted rows.
// reset empties the database; imp returns the import's argv for a file and
// extra flags. The load average at the start of each command is printed,
// as the machine may be shared.
func (e *env) modes(db string, reset func() error, imp func(file string, extra ...string) []string) {
	key := []string{"--key", "order_id"}
	day1 := func() error { // reset, then day 1 imported untimed
		if err := reset(); err != nil {
			return err
		}
		_, err := run(cmd{name: "day 1", argv: imp(e.csv, key...)})
		return err
	}
	// In each run, a command without a setup continues from the database
	// the previous one left.
	cs := []cmd{
		{name: "day 1 --key", setup: reset, argv: imp(e.csv, key...)},
		{name: "day 2 --key", argv: imp(e.day2, key...)},
		{name: "day 2 --key --snapshot", setup: day1, argv: imp(e.day2, append(key, "--snapshot")...)},
		{name: "day 1 --key --atomic", setup: reset, argv: imp(e.csv, append(key, "--atomic")...)},
		{name: "day 2 --key --snapshot --atomic", setup: day1, argv: imp(e.day2, append(key, "--snapshot", "--atomic")...)},
	}
	base := []int{-1, -1, 1, 0, 1} // the plain import each is compared with
	ms := make([][]measure, len(cs))
	ratios := make([][]float64, len(cs))
	loads := make([][]string, len(cs))
	for i := 0; i < e.runs; i++ {
		for j, c := range cs {
			if c.setup != nil {
				check(c.setup())
				c.setup = nil
			}
			loads[j] = append(loads[j], loadavg())
			m, err := run(c)
			check(err)
			ms[j] = append(ms[j], m)
		}
		for j, b := range base {
			if b >= 0 {
				ratios[j] = append(ratios[j], ms[j][i].wall.Seconds()/ms[b][i].wall.Seconds())
			}
		}
	}
	for j, c := range cs {
		r := summary(db+" "+c.name, ms[j], e.rows)
		if b := base[j]; b >= 0 {
			r = withRatio(r, "plain "+cs[b].name[:5]+" import", median(ratios[j]))
		}
		e.add(r)
		fmt.Printf("    load average at start: %s\n", strings.Join(loads[j], "; "))
	}
}

// loadavg returns the 1-, 5- and 15-minute load averages, or "?" where
// the system does not publish /proc/loadavg.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}
