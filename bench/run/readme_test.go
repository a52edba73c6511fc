package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeTimer records the commands a section times, without running them:
// the first of each race takes 2 s, the others 1 s (a ratio of 0.50×).
type fakeTimer struct{ ran []cmd }

func (f *fakeTimer) race(n int, cs ...cmd) ([][]measure, []float64) {
	ms, r := make([][]measure, len(cs)), make([]float64, len(cs))
	for j, c := range cs {
		f.ran = append(f.ran, c)
		wall := time.Second
		if j == 0 {
			wall = 2 * time.Second
		}
		for range n {
			ms[j] = append(ms[j], measure{wall: wall, cpu: wall / 2, rss: 100 << 10})
		}
		r[j] = wall.Seconds() / 2
	}
	return ms, r
}

// newFakeEnv is an env of the -file data set orders.csv keyed by id, with
// the daily delta delta.csv, whose sections time with f and print as a
// -readme run does.
func newFakeEnv(t *testing.T, f *fakeTimer) (*env, *markdown) {
	md := newMarkdown()
	e := &env{runs: 3, rows: 1000, name: "orders.csv", idemport: "/bin/idemport", work: t.TempDir(), timer: f.race, add: md.add, out: md,
		csv: "/data/orders.csv", delta: "/data/delta.csv", deltaRows: 100, keyCol: "id",
		cols: []column{{"id", "int64"}, {"Name", "string"}, {"amount", "decimal"}}}
	e.db = filepath.Join(e.work, "i.db")
	return e, md
}

// TestReadmeShowsWhatRan checks that under each anchor's row of a -readme
// table the command printed is the one timed, and the script printed
// under it is the one that command reads: for the first import and the
// daily delta of a -file data set into SQLite.
func TestReadmeShowsWhatRan(t *testing.T) {
	f := &fakeTimer{}
	e, md := newFakeEnv(t, f)
	e.sqliteFirst()
	e.sqliteDelta()
	var out strings.Builder
	md.print(&out)
	got := out.String()
	for _, c := range f.ran {
		if !strings.HasPrefix(c.name, "sqlite3") || strings.Contains(c.name, "day 1") {
			continue
		}
		script, err := os.ReadFile(c.argv[4])
		if err != nil {
			t.Fatal(err)
		}
		want := "    $ sqlite3 " + quote(c.argv[3]) + " < " + quote(c.argv[4]) + "\n"
		want += "      (before each run, untimed: "
		i := strings.Index(got, want)
		if i < 0 {
			t.Errorf("%s: the command timed, %q, is not printed:\n%s", c.name, c.argv, got)
			continue
		}
		lines := strings.Split(strings.TrimRight(string(script), "\n"), "\n")
		shown := "      " + c.argv[4] + ":\n        " + strings.Join(lines, "\n        ") + "\n"
		if !strings.Contains(got[i:], shown) {
			t.Errorf("%s: the script it reads is not printed under it:\n%s\nwant:\n%s", c.name, got, shown)
		}
	}
	for _, want := range []string{
		"| idemport import CSV → SQLite, --key id | 1.00 s, 1k rows/s, 100 MiB | sqlite3 .import → table keyed by id (WAL), 2.00 s | 0.50× |",
		"| idemport import CSV → SQLite, --key id, state made before | 1.00 s, 1k rows/s, 100 MiB | sqlite3 .import → table keyed by id (WAL), 2.00 s | 0.50× |",
		"| idemport --key delta (½ new, ½ changed) → N-row SQLite | 1.00 s, 100 rows/s, 100 MiB | sqlite3 .import into temp + INSERT … ON CONFLICT DO UPDATE, 2.00 s | 0.50× |",
		`ON CONFLICT (id) DO UPDATE SET "Name" = excluded."Name", amount = excluded.amount WHERE (orders."Name", orders.amount) IS NOT (excluded."Name", excluded.amount);`,
		"CREATE TEMP TABLE d(\"id\" INTEGER PRIMARY KEY, \"Name\" TEXT, \"amount\" DECIMAL TEXT);",
		".import --skip 1 /data/delta.csv d",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

// TestMarkdownRows checks the table's shape: a row beside the anchor its
// ratio names, an anchor timed against another on a row of its own, an
// anchor's own row not repeated, and a ratio to no anchor beside its name.
func TestMarkdownRows(t *testing.T) {
	md := newMarkdown()
	md.add(anchor("SHA-256 of the file", row{name: "SHA-256 of the file (Go)", wall: 0.59, rows: 10_000_000}))
	md.add(anchor("sha256sum", withRatio(row{name: "sha256sum of the file", wall: 1.2, rows: 10_000_000}, "SHA-256 of the file", 2.03)))
	md.add(withRatio(row{name: "idemport rerun (--rehash)", wall: 0.6, rows: 10_000_000, rss: 20 << 10}, "sha256sum", 0.5))
	md.add(withRatio(row{name: "idemport quick", wall: 0.012}, "idemport version", 1.1))
	md.add(row{name: "idemport import 1M rows of 1 KiB → SQLite", wall: 5.56, rows: 1_000_000, rss: 245 << 10})
	var out strings.Builder
	md.print(&out)
	want := `
| | idemport | alternative | ratio |
|---|---|---|---|
| sha256sum of the file | 1.20 s, 8.33M rows/s | SHA-256 of the file (Go), 0.59 s | 2.03× |
| idemport rerun (--rehash) | 0.60 s, 16.67M rows/s, 20 MiB | sha256sum of the file, 1.20 s | 0.50× |
| idemport quick | 0.012 s | idemport version | 1.10× |
| idemport import 1M rows of 1 KiB → SQLite | 5.56 s, 180k rows/s, 245 MiB |  |  |
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestStateMade checks the setup of the --key import into a database whose
// state is made: the database made anew first, then idemport's import of a
// one-row file, not the data set, the file last on its command line.
func TestStateMade(t *testing.T) {
	e := &env{work: t.TempDir(), csv: "/data/orders.csv"}
	out := filepath.Join(e.work, "imported")
	made := false
	setup := e.stateMade(func() error { made = true; return os.WriteFile(out, nil, 0o644) },
		[]string{"sh", "-c", `test -f "$0" && cat "$1" >> "$0"`, out}) // $0: out, $1: the file appended
	if err := setup(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil || !made {
		t.Fatalf("made %v, read %v", made, err)
	}
	if string(b) != "id,note\n1,state\n" {
		t.Errorf("imported %q, want the one-row file after the database was made", b)
	}
}
