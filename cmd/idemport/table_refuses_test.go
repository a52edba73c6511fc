package main

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestKeyImportOfAValueTheTableRefuses: a plain import by key of a row
// whose value a PostgreSQL enum, or a domain's CHECK, refuses (no plan
// can know it) is over --max-rejects 0: the file is refused, exit 5 as
// with --atomic, and the message names the file, the row, the column,
// the value and the database's reason, and the next step. Nothing of the
// file reaches the table (its partition rolled back: the good rows 1 and
// 3 are not there either), the operation stays failed, resumable, and
// a rerun with --max-rejects 1 quarantines the row and imports the rest.
// It exited 1 ("a rerun resumes"), which no rerun did, without the
// column.
func TestKeyImportOfAValueTheTableRefuses(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.Postgres}, func(t *testing.T, name string) {
		dir := t.TempDir()
		l := &life{t: t, tg: testkit.NewTarget(t, name, dir), dir: dir}
		for _, q := range []string{
			`CREATE TYPE color AS ENUM ('red', 'blue')`,
			`CREATE DOMAIN small AS bigint CHECK (VALUE < 10)`,
		} {
			if _, err := l.tg.DB.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			table, file, body, where, reject string
		}{
			{"te_enum", "enum.csv", "id,c,n\n1,red,1\n2,purple,2\n3,blue,3\n", `row 2 column "c" value "purple": invalid input value for enum color: "purple"`, `2 +15 +c +"purple" +refused +invalid input value for enum color: "purple" \(SQLSTATE 22P02\)`},
			{"te_domain", "domain.csv", "id,c,n\n1,red,1\n2,blue,12\n3,blue,3\n", `row 2 column "n" value "12": value for domain small violates check constraint "small_check"`, `2 +15 +n +"?12"? +constraint +value for domain small violates check constraint "small_check" \(SQLSTATE 23514\)`},
		} {
			for _, q := range []string{
				`CREATE TABLE ` + c.table + ` (id bigint PRIMARY KEY, c color, n small)`,
				`INSERT INTO ` + c.table + ` VALUES (9, 'red', 1)`,
			} {
				if _, err := l.tg.DB.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			l.write(c.file, c.body)
			args := []string{"import", "--table", c.table, "--key", "id", c.file}
			for run := 0; run < 2; run++ { // the rerun is refused the same way
				r := l.run(5, args...)
				want := c.file + `: refused: the table ` + c.table + ` refused rows of ` + c.file + `: ` + c.where
				if !strings.HasPrefix(r.Stdout, want) || !strings.Contains(r.Stdout, "more bad rows than --max-rejects 0 allows") ||
					!regexp.MustCompile(`\n  next: fix the rows .*or rerun with a higher --max-rejects`).MatchString(r.Stdout) {
					t.Fatalf("the refusal does not say what and where, and what to do:\n%s\nwant it to start with:\n%s", r.Stdout, want)
				}
				l.wantRows(c.table, "9|red|1", "id", "c", "n")
				l.wantStates(c.table, "failed", "")
			}
			l.run(0, append(args, "--max-rejects", "1")...)
			l.wantRows(c.table, "1|red|1\n3|blue|3\n9|red|1", "id", "c", "n")
			l.wantStates(c.table, "completed", "")
			if out := l.run(0, "rejects", "list", "--table", c.table, c.file).Stdout; !regexp.MustCompile(`(?m)^` + c.reject).MatchString(out) {
				t.Fatalf("row 2 is not quarantined as %q:\n%s", c.reject, out)
			}
		}
	})
}

// TestMariaDBRefusesLeapDayOfYearZero: MariaDB's calendar has no
// 0000-02-29 (its DATE and DATETIME refuse it, error 1292), though the
// proleptic Gregorian calendar has. The plan refuses such a date or
// timestamp as it does 2023-02-29, before any effect: exit 5, the row,
// column, value and reason named, no table made; 0004-02-29 and
// 0000-02-28 import as written, and with --max-rejects 2 the good row does.
func TestMariaDBRefusesLeapDayOfYearZero(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.MariaDB}, func(t *testing.T, name string) {
		dir := t.TempDir()
		l := &life{t: t, tg: testkit.NewTarget(t, name, dir), dir: dir}
		l.write("z.csv", "id,d,t\n1,0004-02-29,0000-02-28 10:00:00\n2,0000-02-29,2024-01-01 00:00:00\n3,2024-01-01,0000-02-29 10:00:00\n")
		args := []string{"import", "--table", "z", "--key", "id", "--column", "d:date", "--column", "t:timestamp", "z.csv"}
		r := l.run(5, args...)
		for _, want := range []string{`z.csv: refused: 2 of 3 rows are bad (at most 0 allowed); row 2 column "d" value "0000-02-29": ` + noLeapDay,
			`row 3 column "t" value "0000-02-29 10:00:00": ` + noLeapDay} {
			if !strings.Contains(r.Stdout, want) {
				t.Fatalf("the refusal does not say %q:\n%s", want, r.Stdout)
			}
		}
		l.wantRows("z", "(no table)", "id")
		l.run(0, append(args, "--max-rejects", "2")...)
		if got := testkit.Query(t, l.tg.DB, `SELECT id, CAST(d AS CHAR), CAST(t AS CHAR) FROM z`); !reflect.DeepEqual(got, [][]any{{int64(1), "0004-02-29", "0000-02-28 10:00:00.000000"}}) {
			t.Fatalf("z holds %v", got)
		}
	})
}

// noLeapDay is the reason MariaDB's rules give for 0000-02-29.
const noLeapDay = "MariaDB has no 29 February in the year 0000"

// TestKeyImportOfAKeyTheColumnsCharsetLacks: a MariaDB table whose text
// key column is latin1, and a file whose key 'ş' latin1 has no character
// for, first or last of its batch (where the load's message looks the
// batch's first and last keys up): the row is the table's refusal, exit
// 5 naming it, twice, and a rerun with --max-rejects 1 quarantines it and
// imports the rest. The look-up could not compare the key with the
// column (Illegal mix of collations, error 1270), which failed the load
// (exit 1) on every rerun, whatever --max-rejects allowed.
func TestKeyImportOfAKeyTheColumnsCharsetLacks(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.MariaDB}, func(t *testing.T, name string) {
		dir := t.TempDir()
		l := &life{t: t, tg: testkit.NewTarget(t, name, dir), dir: dir}
		for _, c := range []struct{ table, body, row, want string }{
			{"cs_first", "k,v\nş,1\nb,2\nc,3\n", "row 1", "b|2\nc|3"},
			{"cs_middle", "k,v\na,1\nş,2\nc,3\n", "row 2", "a|1\nc|3"},
		} {
			if _, err := l.tg.DB.Exec(`CREATE TABLE ` + c.table + ` (k VARCHAR(20) CHARACTER SET latin1 PRIMARY KEY, v TEXT)`); err != nil {
				t.Fatal(err)
			}
			file := c.table + ".csv"
			l.write(file, c.body)
			args := []string{"import", "--table", c.table, "--key", "k", file}
			for run := 0; run < 2; run++ {
				if r := l.run(5, args...); !strings.Contains(r.Stdout, `refused rows of `+file+`: `+c.row+` column "k" value "ş"`) {
					t.Fatalf("%s: the refusal does not name the row:\n%s", c.table, r.Stdout)
				}
			}
			l.run(0, append(args, "--max-rejects", "1")...)
			l.wantRows(c.table, c.want, "k", "v")
			l.wantStates(c.table, "completed", "")
		}
	})
}
