package main

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestWidenByFloatsKeepsTheDigits: an int64 column widened to decimal by a
// file whose column is read as float64 (its import killed in its second
// partition and resumed), then to text by a file of words, then given
// another such file: the whole table, compared as text, holds every value
// as the files wrote them (the decimal's canonical text until the column
// is text), never a float64's digits (4.0, 4.7631606274779e+11).
func TestWidenByFloatsKeepsTheDigits(t *testing.T) {
	t.Parallel()
	floats := []string{"4", "4.0", "4.50", "-0", "1e3", "476316062747.79", "0.1", "9007199254740992", "-12345678901.25"}
	decimal := []string{"4", "4.0", "4.50", "0", "1000", "476316062747.79", "0.1", "9007199254740992", "-12345678901.25"}
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		l := &life{t: t, tg: testkit.NewTarget(t, name, dir), dir: dir}
		want := map[string]string{"1": "4", "2": "-9223372036854775808", "3": "9223372036854775807"}
		l.write("ints.csv", "id,v\n1,4\n2,-9223372036854775808\n3,9223372036854775807\n")
		var f2, f4 strings.Builder
		f2.WriteString("id,v\n")
		f4.WriteString("id,v\n")
		for i, v := range floats {
			fmt.Fprintf(&f2, "%d,%s\n", 10+i, v)
			fmt.Fprintf(&f4, "%d,%s\n", 30+i, v)
			want[fmt.Sprint(10+i)] = decimal[i]
		}
		l.write("floats.csv", f2.String())
		l.write("words.csv", "id,v\n20,abc\n")
		l.write("more.csv", f4.String())
		base := []string{"--table", "nums", "--key", "id", "--partition-rows", "3"}
		check := func(after string) {
			t.Helper()
			got := map[string]string{}
			for _, r := range testkit.Query(t, l.tg.DB, `SELECT `+l.tg.Text("id")+`, coalesce(`+l.tg.Text("v")+`, 'NULL') FROM nums`) {
				got[r[0].(string)] = r[1].(string)
			}
			for id, w := range want {
				if got[id] != w {
					t.Errorf("after %s row %s holds %q, want %q", after, id, got[id], w)
				}
			}
			if len(got) != len(want) {
				t.Errorf("after %s: %d rows, want %d", after, len(got), len(want))
			}
		}
		importTo(t, l.tg, dir, nil, 0, append(slices.Clone(base), "ints.csv")...)
		widen := append(slices.Clone(base), "--evolve", "widen")
		killed := l.tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=inside-partition:2"}, append(append([]string{"import"}, widen...), "floats.csv")...)
		if killed.Signal != syscall.SIGKILL {
			t.Fatalf("not killed: exit %d\n%s%s", killed.Code, killed.Stdout, killed.Stderr)
		}
		if r := importTo(t, l.tg, dir, nil, 0, append(slices.Clone(widen), "floats.csv")...); r.Outcome != "resumed" {
			t.Fatalf("floats.csv: %s", r.Outcome)
		}
		check("floats.csv")
		importTo(t, l.tg, dir, nil, 0, append(slices.Clone(widen), "words.csv")...)
		want["20"] = "abc"
		check("words.csv")
		importTo(t, l.tg, dir, nil, 0, append(slices.Clone(widen), "more.csv")...)
		for i, v := range floats {
			want[fmt.Sprint(30+i)] = v
		}
		check("more.csv")
	})
}
