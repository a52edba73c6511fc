package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// evolveFile is one file of an evolve soak round: its name, its --evolve
// mode, its text and, by id, the fields of its rows as the table must
// hold them (id, v, n and the generation's c columns).
type evolveFile struct {
	name   string
	evolve string
	text   string
	rows   map[int64][]string
}

// evolveGens and evolveFiles shape a round of the evolve soak: a seed
// file, then evolveGens generations of evolveFiles files each. The files
// of generation g have the columns id, v, n, c1…cg and share their keys,
// in different orders, with distinct versions; generations share none.
const (
	evolveGens  = 3
	evolveFiles = 2
	evolveKeys  = 600 // per generation; each file has about 4 in 5 of them
)

// evolveRound writes the files of one round into dir: the seed and the
// generations' files. n is an int64 in the seed and, in each file after
// it, int64, decimal (13 or 14 digits, 2 decimals: read as float64) or text
// (words, leading zeros); the first file of generation 1 has decimals and
// that of generation 2 text, so every round widens int64 → decimal →
// text. Files of int64 values add columns (--evolve add), the others
// widen (--evolve widen).
func evolveRound(t *testing.T, rng *rand.Rand, dir string) (seed evolveFile, files []evolveFile) {
	t.Helper()
	value := func(kind string) string {
		switch kind {
		case "decimal":
			// 13 or 14 significant digits, 2 of them decimals (often a
			// trailing zero): the file's column is read as float64, and
			// each value must land as written all the same, in the
			// decimal column it widens to or in a column another file
			// made text meanwhile.
			return fmt.Sprintf("%d.%02d", rng.Int64N(9e11)+1e10, rng.IntN(100))
		case "text":
			if rng.IntN(2) == 0 {
				return fmt.Sprintf("0%d", rng.IntN(10000))
			}
			return fmt.Sprintf("w%x", rng.Uint32())
		}
		switch rng.IntN(8) {
		case 0:
			return "9223372036854775807"
		case 1:
			return "-9223372036854775808"
		}
		return fmt.Sprint(rng.Int64N(1<<62) - 1<<61)
	}
	write := func(f *evolveFile, cols []string, order []int64) {
		var b strings.Builder
		b.WriteString(strings.Join(cols, ",") + "\n")
		for _, id := range order {
			b.WriteString(strings.Join(f.rows[id][:len(cols)], ",") + "\n")
		}
		f.text = b.String()
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	seed = evolveFile{name: "g0.csv", evolve: "none", rows: map[int64][]string{}}
	var ids []int64
	for id := int64(1); id <= 100; id++ {
		seed.rows[id] = []string{fmt.Sprint(id), "1", value("int")}
		ids = append(ids, id)
	}
	write(&seed, []string{"id", "v", "n"}, ids)
	for g := 1; g <= evolveGens; g++ {
		cols := []string{"id", "v", "n"}
		for c := 1; c <= g; c++ {
			cols = append(cols, fmt.Sprintf("c%d", c))
		}
		gen := make([]evolveFile, evolveFiles)
		for i := range gen {
			kind := []string{"int", "decimal", "text"}[rng.IntN(3)]
			if i == 0 && g < 3 {
				kind = []string{"", "decimal", "text"}[g]
			}
			gen[i] = evolveFile{name: fmt.Sprintf("g%d-%d-%s.csv", g, i, kind), evolve: map[bool]string{true: "add", false: "widen"}[kind == "int"], rows: map[int64][]string{}}
			for k := range evolveKeys {
				if rng.IntN(5) == 0 {
					continue
				}
				id := int64(g*10000 + k)
				row := []string{fmt.Sprint(id), "", value(kind)}
				for range g {
					row = append(row, fmt.Sprint(rng.IntN(1000)))
				}
				gen[i].rows[id] = row
			}
		}
		// Distinct versions per key across the generation's files.
		for k := range evolveKeys {
			id := int64(g*10000 + k)
			for j, i := range rng.Perm(evolveFiles) {
				if r, ok := gen[i].rows[id]; ok {
					r[1] = fmt.Sprint(j + 1)
				}
			}
		}
		for i := range gen {
			order := make([]int64, 0, len(gen[i].rows))
			for id := range gen[i].rows {
				order = append(order, id)
			}
			slices.Sort(order)
			rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
			write(&gen[i], cols, order)
		}
		files = append(files, gen...)
	}
	return seed, files
}

// evolveWant is the table the files make applied one by one in any order
// (so in the order they committed): by id, the row of the highest version,
// each column as the file wrote it, NULL where its file has none.
func evolveWant(files ...evolveFile) []string {
	best := map[int64][]string{}
	for _, f := range files {
		for id, r := range f.rows {
			if b, ok := best[id]; !ok || mustInt(r[1]) > mustInt(b[1]) {
				best[id] = r
			}
		}
	}
	ids := make([]int64, 0, len(best))
	for id := range best {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var out []string
	for _, id := range ids {
		r := slices.Clone(best[id])
		for len(r) < 3+evolveGens {
			r = append(r, "NULL")
		}
		out = append(out, strings.Join(r, "|"))
	}
	return out
}

// TestEvolveSoak imports the files of several generations into one table
// at once, each process of two workers, with --evolve add (files of int64
// values with a new column) and --evolve widen (files whose values widen
// n to decimal, then to text), some SIGKILLed at random and started again
// until each has exited by itself. The files of one generation share
// their keys (in different orders, so that PostgreSQL transactions
// deadlock on them) with distinct versions (--version-col v). Every
// process that was not killed must exit 0; then the table must equal the
// files applied one by one in the order they committed, value by value as
// text (by version, that is any order), every operation be completed, no
// attempt be recorded failed and no row quarantined. -soak=N sets the
// rounds (default 8 on SQLite and PostgreSQL and 4 on MariaDB, whose
// rounds take several times as long). The kills, and changes of the table
// made while another file's import was running, are aimed at random, so
// the soak runs more rounds, up to four times as many, until it has at
// least one kill and one such change per round asked for, and fails if it
// still has not.
func TestEvolveSoak(t *testing.T) {
	// Not parallel: its kills are aimed within the time a run takes (see eachSoakTarget).
	eachSoakTarget(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 11))
		rounds := 8
		if name == testkit.MariaDB {
			rounds = 4
		}
		flag.Visit(func(f *flag.Flag) {
			if f.Name == "soak" {
				rounds = *soak
			}
		})
		base := []string{"--table", "t", "--key", "id", "--version-col", "v", "--workers", "2", "--partition-rows", "100"}
		args := func(f evolveFile) []string {
			return append(append([]string{"import", "--output", "json"}, base...), "--evolve", f.evolve, f.name)
		}
		// How long one import of a generation's file takes here alone, to
		// aim the starts and the kills inside the imports.
		testkit.Binary(t)
		dir := t.TempDir()
		s, fs := evolveRound(t, rng, dir)
		solo := testkit.NewTarget(t, name, dir)
		importTo(t, solo, dir, nil, 0, args(s)[3:]...)
		began := time.Now()
		importTo(t, solo, dir, nil, 0, args(fs[0])[3:]...)
		span := time.Since(began)

		var kills, meetings, deadlocks int
		enough := func() bool { return kills >= rounds && meetings >= rounds }
		round := 0
		for ; round < rounds || !enough() && round < 4*rounds; round++ {
			if !t.Run(fmt.Sprintf("round %d", round), func(t *testing.T) {
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				seed, files := evolveRound(t, rng, dir)
				importTo(t, tg, dir, nil, 0, args(seed)[3:]...)
				runs := make([][]hostRun, len(files))
				var wg sync.WaitGroup
				for i, f := range files {
					delay := time.Duration(rng.Int64N(int64(span)/2 + 1))
					var killAt []time.Duration
					for range rng.IntN(3) {
						killAt = append(killAt, time.Duration(rng.Int64N(int64(span)+1)))
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						time.Sleep(delay)
						for k := 0; ; k++ {
							p := launch(t, tg.Cmd(t, dir, nil, args(f)...))
							hr := hostRun{began: time.Now()}
							if k < len(killAt) {
								time.AfterFunc(killAt[k], func() { p.cmd.Process.Signal(syscall.SIGKILL) })
							}
							hr.run = testkit.Wait(t, p.cmd)
							hr.ended = time.Now()
							runs[i] = append(runs[i], hr)
							if hr.run.Signal != syscall.SIGKILL {
								return
							}
						}
					}()
				}
				wg.Wait()
				for i, fr := range runs {
					for j, hr := range fr {
						deadlocks += strings.Count(hr.run.Stderr, "deadlock's victim")
						if hr.run.Signal == syscall.SIGKILL {
							kills++
							continue
						}
						res := parsed(t, hr.run, fmt.Sprintf("round %d, %s, process %d", round, files[i].name, j), 0)
						if !slices.Contains([]string{"imported", "resumed", "duplicate"}, res.Outcome) {
							t.Fatalf("round %d, %s: outcome %s", round, files[i].name, res.Outcome)
						}
						// A meeting: this process changed the table while a
						// process of another file was running.
						if len(res.ColumnsAdded)+len(res.ColumnsWidened) == 0 {
							continue
						}
						for o, others := range runs {
							if o != i && slices.ContainsFunc(others, func(x hostRun) bool { return x.began.Before(hr.ended) && hr.began.Before(x.ended) }) {
								meetings++
								break
							}
						}
					}
				}
				sel := []string{tg.Text("id"), tg.Text("v"), "coalesce(" + tg.Text("n") + ", 'NULL')"}
				for c := 1; c <= evolveGens; c++ {
					sel = append(sel, "coalesce("+tg.Text(fmt.Sprintf("c%d", c))+", 'NULL')")
				}
				var got []string
				for _, r := range testkit.Query(t, tg.DB, `SELECT `+strings.Join(sel, ` || '|' || `)+` FROM t ORDER BY id`) {
					got = append(got, r[0].(string))
				}
				if want := evolveWant(append([]evolveFile{seed}, files...)...); !slices.Equal(got, want) {
					for k := range max(len(got), len(want)) {
						g, w := "(none)", "(none)"
						if k < len(got) {
							g = got[k]
						}
						if k < len(want) {
							w = want[k]
						}
						if g != w {
							t.Fatalf("round %d: t holds %d rows, want %d; row %d is\n\t%s\nwant\n\t%s\n(columns %s)", round, len(got), len(want), k, g, w, tableColumns(t, tg, "t", false))
						}
					}
				}
				if ops := testkit.Query(t, tg.DB, `SELECT state, count(*) FROM `+tg.Ledger("operations")+` GROUP BY state`); fmt.Sprint(ops) != fmt.Sprintf("[[completed %d]]", len(files)+1) {
					t.Fatalf("round %d: operations by state %v, want all %d completed", round, ops, len(files)+1)
				}
				if failed := testkit.Query(t, tg.DB, `SELECT attempt_id, error FROM `+tg.Ledger("attempts")+` WHERE outcome = 'failed'`); len(failed) > 0 {
					t.Fatalf("round %d: attempts recorded failed: %v", round, failed)
				}
				if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM `+tg.Ledger("rejects")); n != 0 {
					t.Fatalf("round %d: %d rows quarantined", round, n)
				}
			}) {
				break
			}
		}
		t.Logf("%d rounds (%d asked for): %d kills, %d changes of the table while another file's import ran, %d partitions run again after a deadlock",
			round, rounds, kills, meetings, deadlocks)
		if !enough() {
			t.Fatalf("%d kills and %d changes of the table meeting another import in %d rounds: too few for the soak to have proved anything (want %d of each)", kills, meetings, round, rounds)
		}
	})
}
