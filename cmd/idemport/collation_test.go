package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestLaterRowUnchangedAgainstAnotherFile: a file holding keys its plan
// tells apart but the table's key compares as one ('a' and 'A': a SQLite
// key column of COLLATE NOCASE, a PostgreSQL one of a nondeterministic ICU
// collation that ignores case, a MariaDB one of utf8mb4_general_ci), whose
// later row of such a pair is unchanged against the row another file
// stored: the later row still wins, whichever row the table meets first,
// its lineage recorded so that the earlier row, met after it, is found
// behind it. The pair in one partition (on PostgreSQL each in a round of
// its own, which ON CONFLICT needs: it affects a row once; MariaDB's
// writer takes keys in byte order) and in partitions of a row (met in
// file order); on MariaDB through the one-statement merge and, the table
// having another unique index, the update and insert. Keys only trailing
// spaces set apart ('c ' and 'c') are two keys to SQLite's and
// PostgreSQL's collations, and stay two, and one to MariaDB's (PAD
// SPACE), where the later wins. 'Ｋ' (full width) and 'k' are one key to ICU,
// two to NOCASE and utf8mb4_general_ci; 'ß' and 's' one to
// utf8mb4_general_ci, two to the others.
func TestLaterRowUnchangedAgainstAnotherFile(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		// column is the key column's type, text a row as text, order
		// the rows in an order that tells 'c' from 'c '.
		column, text, order := "text COLLATE NOCASE", "k || '|' || v", "k COLLATE BINARY"
		want := [][]any{{"A|3"}, {"c|5"}, {"c |4"}, {"k|7"}, {"s|8"}, {"x|1"}, {"ß|9"}, {"Ｋ|6"}}
		switch name {
		case testkit.Postgres:
			if _, err := tg.DB.Exec(`CREATE COLLATION IF NOT EXISTS nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false)`); err != nil {
				t.Fatal(err)
			}
			column, order = "text COLLATE nocase", `k COLLATE "C"`
			want = [][]any{{"A|3"}, {"c|5"}, {"c |4"}, {"k|7"}, {"s|8"}, {"x|1"}, {"ß|9"}}
		case testkit.MariaDB:
			column, text, order = "varchar(20) COLLATE utf8mb4_general_ci", "concat(k, '|', v)", "CAST(k AS BINARY)"
			want = [][]any{{"A|3"}, {"c|5"}, {"k|7"}, {"s|8"}, {"x|1"}, {"Ｋ|6"}}
		}
		writeFile(t, dir, "g1.csv", "k,v\nA,3\nc,5\nk,7\ns,8\nx,1\n")
		writeFile(t, dir, "g2.csv", "k,v\na,2\nA,3\nc ,4\nc,5\nＫ,6\nk,7\nß,9\ns,8\nx,1\n")
		i := 0
		for _, extra := range []string{"", ", u bigint UNIQUE"} {
			for _, parts := range []string{"1000", "1"} {
				i++
				table := fmt.Sprintf("lu%d", i)
				if _, err := tg.DB.Exec(`CREATE TABLE ` + table + ` (k ` + column + ` PRIMARY KEY, v int` + extra + `)`); err != nil {
					t.Fatal(err)
				}
				for _, f := range []string{"g1.csv", "g2.csv"} {
					if r := tg.Exec(t, dir, nil, "import", "--table", table, "--key", "k", "--partition-rows", parts, f); r.Code != 0 {
						t.Fatalf("%s %s: exit %d\n%s%s", table, f, r.Code, r.Stdout, r.Stderr)
					}
				}
				if got := testkit.Query(t, tg.DB, `SELECT `+text+` FROM `+table+` ORDER BY `+order); !reflect.DeepEqual(got, want) {
					t.Errorf("%s (partitions of %s rows) holds %v, want %v (the file's later rows)", table, parts, got, want)
				}
			}
		}
	})
}

// TestPostgresOverlapOfKeysOneToTheTable: a file large enough to be
// written while its plan pass runs (the overlap), holding keys its plan
// tells apart but the table's nondeterministic key compares as one, the
// later of them unchanged against the row another file stored: the
// overlap's writer, prepared before the pass ended, was not told of such
// keys, so what it wrote is not kept, and the file is applied by writers
// that are; the later row wins.
func TestPostgresOverlapOfKeysOneToTheTable(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.Postgres}, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		for _, q := range []string{
			`CREATE COLLATION IF NOT EXISTS nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false)`,
			`CREATE TABLE big (k text COLLATE nocase PRIMARY KEY, v int)`,
		} {
			if _, err := tg.DB.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		os.WriteFile(filepath.Join(dir, "g1.csv"), []byte("k,v\nA,3\n"), 0o644)
		var b strings.Builder
		b.WriteString("k,v\na,2\nA,3\n")
		for i := 0; b.Len() < 12<<20; i++ {
			fmt.Fprintf(&b, "key%07d,%d\n", i, i)
		}
		os.WriteFile(filepath.Join(dir, "big.csv"), []byte(b.String()), 0o644)
		for _, f := range []string{"g1.csv", "big.csv"} {
			if r := tg.Exec(t, dir, nil, "import", "--table", "big", "--key", "k", f); r.Code != 0 {
				t.Fatalf("%s: exit %d\n%s%s", f, r.Code, r.Stdout, r.Stderr)
			}
		}
		if got, want := testkit.Query(t, tg.DB, `SELECT k || '|' || v FROM big WHERE k = 'a'`), [][]any{{"A|3"}}; !reflect.DeepEqual(got, want) {
			t.Errorf("big holds %v for a and A, want %v (the file's later row)", got, want)
		}
	})
}
