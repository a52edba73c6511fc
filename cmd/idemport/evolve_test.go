package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestEvolveAddThenWiden: a table refuses a file with a new column (exit
// 5, nothing written), --evolve add adds it, --evolve widen widens an
// int64 column to text when a file holds values it cannot (a leading zero,
// a fraction, a word), each crash-resumed midway; the whole table is
// compared after each file, old integers kept as their exact text.
func TestEvolveAddThenWiden(t *testing.T) {
	t.Parallel()
	files := []string{
		"id,a\n1,-9223372036854775808\n2,9223372036854775807\n3,9007199254740993\n4,0\n5,-1\n6,42\n",
		"id,a,b\n7,7,\"\"\n8,8,\n9,9,nine\n10,10,ten\n11,11,eleven\n12,12,twelve\n",
		"id,a,b\n1,0050,one\n13,1.5,x\n14,abc,y\n15,9223372036854775807,z\n16,-0,w\n17,1e3,v\n",
	}
	want := [][]string{
		{"1|-9223372036854775808|NULL", "2|9223372036854775807|NULL", "3|9007199254740993|NULL", "4|0|NULL", "5|-1|NULL", "6|42|NULL"},
		{"7|7|", "8|8|NULL", "9|9|nine", "10|10|ten", "11|11|eleven", "12|12|twelve"},
		{"1|0050|one", "13|1.5|x", "14|abc|y", "15|9223372036854775807|z", "16|-0|w", "17|1e3|v"},
	}
	kills := []string{"after-plan:1", "inside-partition:2", "after-partition-commit:1"}
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, kill := range kills {
			t.Run(kill, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				l := &life{t: t, tg: testkit.NewTarget(t, name, dir), dir: dir}
				rows := map[string]string{}
				check := func(after string) {
					t.Helper()
					got := testkit.Query(t, l.tg.DB, `SELECT `+l.tg.Text("id")+` || '|' || coalesce(`+l.tg.Text("a")+`, 'NULL') || '|' || `+
						map[bool]string{true: `coalesce(b, 'NULL')`, false: `'NULL'`}[after != "f1.csv"]+` FROM items ORDER BY id`)
					var lines, exp []string
					for _, r := range got {
						lines = append(lines, r[0].(string))
					}
					for _, v := range rows {
						exp = append(exp, v)
					}
					slices.SortFunc(exp, func(x, y string) int {
						return cmp.Compare(mustInt(strings.Split(x, "|")[0]), mustInt(strings.Split(y, "|")[0]))
					})
					if !slices.Equal(lines, exp) {
						t.Fatalf("after %s the table holds\n%s\nwant\n%s", after, strings.Join(lines, "\n"), strings.Join(exp, "\n"))
					}
				}
				base := []string{"--table", "items", "--key", "id", "--partition-rows", "2"}
				for i, content := range files {
					file := fmt.Sprintf("f%d.csv", i+1)
					l.write(file, content)
					evolve := []string{"--evolve", []string{"none", "add", "widen"}[i]}
					if i > 0 {
						// Without --evolve the table does not fit: refused, nothing written.
						before := l.tg.Snapshot(t, "quickcheck", "operations", "operations_past", "attempts", "rejects", "files", "locks")
						prev := []string{"none", "add"}[i-1]
						r := importTo(t, l.tg, dir, nil, 5, append(append(slices.Clone(base), "--evolve", prev), file)...)
						// f2 has a column the table lacks; f3's values of a do not fit int64.
						if r.Outcome != "refused" || !strings.Contains(r.Error, []string{"does not fit", "not a valid int64"}[i-1]) {
							t.Fatalf("%s with --evolve %s: outcome %s error %q, want refused as not fitting", file, prev, r.Outcome, r.Error)
						}
						if d := before.Diff(l.tg.Snapshot(t, "quickcheck", "operations", "operations_past", "attempts", "rejects", "files", "locks")); d != "" {
							t.Fatalf("the refused %s changed %s", file, d)
						}
						killed := l.tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=" + kill}, append(append(append([]string{"import"}, base...), evolve...), file)...)
						if killed.Signal != syscall.SIGKILL {
							t.Fatalf("%s: not killed at %s: exit %d\n%s%s", file, kill, killed.Code, killed.Stdout, killed.Stderr)
						}
					}
					r := importTo(t, l.tg, dir, nil, 0, append(append(slices.Clone(base), evolve...), file)...)
					if r.Outcome != "imported" && r.Outcome != "resumed" {
						t.Fatalf("%s: outcome %s", file, r.Outcome)
					}
					for _, line := range want[i] {
						rows[strings.Split(line, "|")[0]] = line
					}
					check(file)
				}
				hist := l.run(0, l.tg.With("history", "--table", "items", "f3.csv")...)
				if !strings.Contains(hist.Stdout, "schema: widened a int64 → text") {
					t.Fatalf("history does not show the widening:\n%s", hist.Stdout)
				}
				hist = l.run(0, l.tg.With("history", "--table", "items", "f2.csv")...)
				if !strings.Contains(hist.Stdout, "schema: added b (string)") {
					t.Fatalf("history does not show the added column:\n%s", hist.Stdout)
				}
			})
		}
	})
}

// TestWidenThroughDecimal: --evolve widen takes an int64 column to decimal
// for a file of long decimals, then to text for a file with a word, every
// stored value exact at each step (int64 edges, a 23-digit decimal, the
// scale as written).
func TestWidenThroughDecimal(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		l := &life{t: t, tg: testkit.NewTarget(t, name, dir), dir: dir}
		l.write("w1.csv", "id,a\n1,10\n2,9223372036854775807\n3,-9223372036854775808\n")
		l.write("w2.csv", "id,a\n4,1.50\n5,12345678901234567890.123\n")
		l.write("w3.csv", "id,a\n6,abc\n7,0050\n")
		args := []string{"--table", "w", "--key", "id", "--evolve", "widen"}
		importTo(t, l.tg, dir, nil, 0, append(args, "w1.csv")...)
		r := importTo(t, l.tg, dir, nil, 0, append(args, "w2.csv")...)
		if fmt.Sprint(r.ColumnsWidened) != "[a]" {
			t.Fatalf("w2: columns_widened %v, want [a]", r.ColumnsWidened)
		}
		want := "1|10\n2|9223372036854775807\n3|-9223372036854775808\n4|1.50\n5|12345678901234567890.123"
		l.wantRows("w", want, l.tg.Text("id"), l.tg.Text("a"))
		if h := l.run(0, l.tg.With("history", "--table", "w", "w2.csv")...); !strings.Contains(h.Stdout, "schema: widened a int64 → decimal") {
			t.Fatalf("history:\n%s", h.Stdout)
		}
		importTo(t, l.tg, dir, nil, 0, append(args, "w3.csv")...)
		l.wantRows("w", want+"\n6|abc\n7|0050", l.tg.Text("id"), l.tg.Text("a"))
		if h := l.run(0, l.tg.With("history", "--table", "w", "w3.csv")...); !strings.Contains(h.Stdout, "schema: widened a decimal → text") {
			t.Fatalf("history:\n%s", h.Stdout)
		}
	})
}

// tableColumns returns table's columns, each as name:type, in their order
// in the table; idemport's own columns only when own.
func tableColumns(t *testing.T, tg *testkit.Target, table string, own bool) string {
	t.Helper()
	notMine := func(col string) string {
		if own {
			return "1 = 1"
		}
		return col + ` NOT LIKE '\_idemport\_%' ESCAPE '\'`
	}
	q := `SELECT name || ':' || type FROM pragma_table_info('` + table + `') WHERE ` + notMine("name") + ` ORDER BY cid`
	var args []any
	if tg.IsPostgres() {
		q = tg.Rebind(`SELECT column_name || ':' || data_type FROM information_schema.columns WHERE table_schema = ? AND table_name = ?
			AND ` + notMine("column_name") + ` ORDER BY ordinal_position`)
		args = append(args, tg.Schema, table)
	} else if tg.IsMariaDB() {
		q = `SELECT CAST(CONCAT(column_name, ':', column_type) AS CHAR) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ?
			AND ` + notMine("column_name") + ` ORDER BY ordinal_position`
		args = append(args, table)
	}
	var out []string
	for _, r := range testkit.Query(t, tg.DB, q, args...) {
		out = append(out, r[0].(string))
	}
	return strings.Join(out, ",")
}

// TestEvolveWithTheFirstPartition: without --atomic, --evolve changes the
// table in the transaction of the first partition to commit, with its
// rows. Killed after the plan is stored, or inside the first partition
// before it commits, the import has changed neither the table's columns
// nor its rows; resumed by several workers at once, the table is changed
// once (recorded once, with the attempt that changed it) and holds every
// value exactly. Killed after the first partition committed, the table
// holds the new columns with that partition's rows and no other.
func TestEvolveWithTheFirstPartition(t *testing.T) {
	t.Parallel()
	const f1 = "id,a\n1,-9223372036854775808\n2,9223372036854775807\n3,0\n"
	// a's decimals do not fit int64 (widened to decimal); b is new.
	const f2 = "id,a,b\n4,12345678901234567890.123,\"\"\n5,-0.5,\n2,9223372036854775807,two\n6,1.50,six\n7,-9223372036854775808,seven\n8,0.000000000000000001,eight\n"
	before := "1|-9223372036854775808\n2|9223372036854775807\n3|0"
	after := "1|-9223372036854775808|NULL\n2|9223372036854775807|two\n3|0|NULL\n4|12345678901234567890.123|\n5|-0.5|NULL\n" +
		"6|1.50|six\n7|-9223372036854775808|seven\n8|0.000000000000000001|eight"
	firstPartition := "1|-9223372036854775808|NULL\n2|9223372036854775807|NULL\n3|0|NULL\n4|12345678901234567890.123|\n5|-0.5|NULL"
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, kill := range []string{"after-plan:1", "inside-partition:1", "after-partition-commit:1"} {
			t.Run(kill, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				l := &life{t: t, tg: testkit.NewTarget(t, name, dir), dir: dir}
				l.write("f1.csv", f1)
				l.write("f2.csv", f2)
				args := []string{"--table", "items", "--key", "id", "--partition-rows", "2"}
				importTo(t, l.tg, dir, nil, 0, append(args, "f1.csv")...)
				cols := tableColumns(t, l.tg, "items", false)
				args = append(args, "--evolve", "widen")
				killed := l.tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=" + kill}, append(append([]string{"import", "--workers", "1"}, args...), "f2.csv")...)
				if killed.Signal != syscall.SIGKILL {
					t.Fatalf("not killed at %s: exit %d\n%s%s", kill, killed.Code, killed.Stdout, killed.Stderr)
				}
				if kill == "after-partition-commit:1" {
					// The first partition (ids 4 and 5) committed with the changes.
					if got := tableColumns(t, l.tg, "items", false); got == cols || !strings.Contains(got, "b:") {
						t.Fatalf("after the first partition committed, the columns are %s (were %s)", got, cols)
					}
					l.wantRows("items", firstPartition, "id", "a", "b")
				} else {
					// Where DDL commits alone (MariaDB) the columns change
					// before the rows that need them (sink/mysql's doc).
					if got := tableColumns(t, l.tg, "items", false); got != cols && !l.tg.IsMariaDB() {
						t.Fatalf("killed at %s, before any partition committed, the table's columns changed from %s to %s", kill, cols, got)
					}
					l.wantRows("items", before, "id", "a")
				}
				res := importTo(t, l.tg, dir, nil, 0, append(append(args, "--workers", "3"), "f2.csv")...)
				if res.Outcome != "resumed" {
					t.Fatalf("resumed: outcome %s", res.Outcome)
				}
				// Where DDL commits alone (MariaDB) the killed attempt made
				// the changes: history names them once, below.
				if kill != "after-partition-commit:1" && !l.tg.IsMariaDB() && (fmt.Sprint(res.ColumnsAdded) != "[b]" || fmt.Sprint(res.ColumnsWidened) != "[a]") {
					t.Fatalf("resumed: columns added %v, widened %v; want [b] and [a]", res.ColumnsAdded, res.ColumnsWidened)
				}
				l.wantRows("items", after, "id", "a", "b")
				h := l.run(0, l.tg.With("history", "--table", "items", "f2.csv")...)
				if n := strings.Count(h.Stdout, "schema: "); n != 1 || !strings.Contains(h.Stdout, "schema: widened a int64 → decimal, added b (string)") &&
					!strings.Contains(h.Stdout, "schema: added b (string), widened a int64 → decimal") {
					t.Fatalf("history shows the schema change %d times, want once:\n%s", n, h.Stdout)
				}
			})
		}
	})
}
