package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// column is a column of the CSV file -file names, with the type
// idemport's plan pass infers for it (its stored name: int64, timestamp…).
type column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// useFile makes csv, a CSV file of any shape, the data set: its columns,
// their types and its row count are the plan pass's (idemport plan), so
// that the anchors' tables have the types idemport's table has. keyCol,
// when set, is the column of the keyed rows and the anchors' primary key.
func (e *env) useFile(csv, keyCol string) {
	e.csv, e.keyCol = csv, keyCol
	argv := []string{"plan", "--output", "json", "--into", filepath.Join(e.work, "none.db")}
	if keyCol != "" {
		argv = append(argv, "--key", keyCol)
	}
	out, err := exec.Command(e.idemport, append(argv, csv)...).Output()
	if x, ok := err.(*exec.ExitError); ok {
		err = fmt.Errorf("idemport plan %s: %v\n%s", csv, err, x.Stderr)
	}
	check(err)
	var plan struct {
		Schema []column `json:"schema"`
		Rows   int64    `json:"rows"`
	}
	check(json.Unmarshal(out, &plan))
	e.cols, e.rows, e.name = plan.Schema, plan.Rows, filepath.Base(csv)
}

// columnar reports whether files, comma-separated, are Parquet or Arrow
// files (by their names, as idemport tells formats apart).
func columnar(files string) bool {
	for _, f := range strings.Split(files, ",") {
		switch strings.ToLower(filepath.Ext(f)) {
		case ".parquet", ".arrow", ".feather", ".ipc", ".arrows":
		default:
			return false
		}
	}
	return true
}

// useColumnar makes files, comma-separated Parquet or Arrow files, the
// data set, timed against csv, the CSV file of the same data (section
// formats: rows per second of each against the CSV import's). Each must
// plan to as many rows as csv.
func (e *env) useColumnar(files, csv string) {
	if csv == "" {
		check(fmt.Errorf("-file %s: give -csv, the CSV file of the same data, to time it against", files))
	}
	e.useFile(csv, "")
	rows := e.rows
	e.others = strings.Split(files, ",")
	for _, f := range e.others {
		e.useFile(f, "")
		if e.rows != rows {
			check(fmt.Errorf("%s has %d rows, %s has %d: not the same data", f, e.rows, csv, rows))
		}
	}
	e.useFile(csv, "")
	for _, f := range append([]string{csv}, e.others...) {
		exec.Command("cat", f).Run() // warm the page cache
	}
}

// otherNames names e.others in the report: format and file name.
func (e *env) otherNames() []string {
	var names []string
	for _, f := range e.others {
		format := "Arrow"
		if strings.EqualFold(filepath.Ext(f), ".parquet") {
			format = "Parquet"
		}
		names = append(names, format+" "+filepath.Base(f))
	}
	return names
}

// createTable is the CREATE TABLE of the anchors' table for the -file
// data set on SQLite (sqlite, as idemport's SQLite driver declares the
// types) or PostgreSQL, keyed by e.keyCol when it is set.
func (e *env) createTable(table string, sqlite bool) string {
	var defs []string
	for _, c := range e.cols {
		d := `"` + strings.ReplaceAll(c.Name, `"`, `""`) + `" ` + colType(c.Type, sqlite)
		if sqlite && c.Name == e.keyCol && c.Type == "int64" {
			d += " PRIMARY KEY" // a rowid alias, as idemport makes it
		}
		defs = append(defs, d)
	}
	if e.keyCol != "" && !(sqlite && e.colType(e.keyCol) == "int64") {
		defs = append(defs, `PRIMARY KEY ("`+strings.ReplaceAll(e.keyCol, `"`, `""`)+`")`)
	}
	return "CREATE TABLE " + table + "(" + strings.Join(defs, ", ") + ");"
}

func (e *env) colType(name string) string {
	for _, c := range e.cols {
		if c.Name == name {
			return c.Type
		}
	}
	return ""
}

// colType is the SQL type of a column of the plan's type, as idemport's
// drivers declare it.
func colType(t string, sqlite bool) string {
	types := map[string][2]string{
		"bool":           {"BOOLEAN", "boolean"},
		"int64":          {"INTEGER", "bigint"},
		"float64":        {"REAL", "double precision"},
		"decimal":        {"DECIMAL TEXT", "numeric"},
		"timestamp":      {"TIMESTAMP", "timestamptz"},
		"localtimestamp": {"TIMESTAMP WITHOUT TIME ZONE", "timestamp"},
		"date":           {"DATE", "date"},
		"json":           {"TEXT", "jsonb"},
	}
	s, ok := types[t]
	switch {
	case !ok && sqlite:
		return "TEXT"
	case !ok:
		return "text"
	case sqlite:
		return s[0]
	}
	return s[1]
}

// show prints an anchor's command as a user could run it: argv (the
// sqlite3 CLI reading a script as sqlite3 DB < SCRIPT, the anchors
// written in Go as go run ./bench/anchor), then what runs untimed before
// each run, and the scripts it reads.
func (e *env) show(argv []string, before string, scripts ...string) {
	var line string
	if len(argv) == 5 && argv[0] == "sh" && strings.HasPrefix(argv[2], "exec sqlite3") {
		line = "sqlite3 " + quote(argv[3]) + " < " + quote(argv[4])
	} else {
		words := make([]string, len(argv))
		for i, a := range argv {
			words[i] = quote(a)
		}
		if argv[0] == e.anchor {
			words[0] = "go run ./bench/anchor"
		}
		line = strings.Join(words, " ")
	}
	fmt.Fprintf(e.out, "    $ %s\n", line)
	if before != "" {
		fmt.Fprintf(e.out, "      (before each run, untimed: %s)\n", before)
	}
	for _, s := range scripts {
		b, err := os.ReadFile(s)
		check(err)
		fmt.Fprintf(e.out, "      %s:\n", s)
		for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
			fmt.Fprintf(e.out, "        %s\n", l)
		}
	}
}

// quote returns s as one shell word, a DSN's password hidden.
func quote(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			s = u.Redacted()
		}
	}
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@,+%") == "" {
		return s
	}
	if strings.Contains(s, "'") && !strings.ContainsAny(s, "$`\"!") && !strings.Contains(s, `\\`) {
		return `"` + s + `"` // as psql's \copy is written
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
