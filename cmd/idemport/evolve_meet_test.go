package main

// Imports of different files that meet on one table while one of them
// changes its columns (--evolve): the import under way writes its later
// partitions into the table as it is then, every value exact.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestWidenUnderARunningImport stops an import of int64 values after its
// first partition committed, lets another file's --evolve widen turn the
// column into a decimal (or text) column, and lets the first go on: it
// exits 0 having quarantined nothing, its later partitions hold their
// values exactly (never the int64's bytes read as another type), verify
// finds both files whole, and the table holds every value as the file
// wrote it, in ordinal and in --key mode.
func TestWidenUnderARunningImport(t *testing.T) {
	t.Parallel()
	const first = "id,n\n1,9223372036854775807\n2,-9223372036854775808\n3,0\n4,42\n5,-1\n6,9007199254740993\n"
	cases := []struct{ name, second, want string }{
		{"to decimal", "id,n\n11,1.50\n12,12345678901234567890.123\n", "1.50\n12345678901234567890.123"},
		{"to text", "id,n\n11,0050\n12,abc\n", "0050\nabc"},
	}
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, c := range cases {
			for _, mode := range []string{"ordinal", "natural"} {
				t.Run(c.name+" "+mode, func(t *testing.T) {
					t.Parallel()
					dir := t.TempDir()
					l := &life{t: t, tg: testkit.NewTarget(t, name, dir), dir: dir}
					l.write("first.csv", first)
					l.write("second.csv", c.second)
					args := []string{"--table", "items", "--workers", "1", "--partition-rows", "2"}
					if mode == "natural" {
						args = append(args, "--key", "id")
					}
					// The first import stops after its first partition committed,
					// between two partition transactions.
					a := stopped(t, start(t, l.tg, dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit:stop"},
						append(append([]string{"import", "--output", "json"}, args...), "first.csv")...))
					r := importTo(t, l.tg, dir, nil, 0, append(append(args, "--evolve", "widen"), "second.csv")...)
					if fmt.Sprint(r.ColumnsWidened) != "[n]" {
						t.Fatalf("second.csv: columns_widened %v, want [n]", r.ColumnsWidened)
					}
					continued(t, a)
					res := finished(t, a, "the first import", 0)
					if res.Outcome != "imported" || res.Rows.Inserted != 6 || res.Rows.Rejected != 0 {
						t.Fatalf("the first import: %s, rows %+v; want imported, 6 inserted, none rejected", res.Outcome, res.Rows)
					}
					want := ""
					for i, v := range strings.Split(strings.TrimSpace(first), "\n")[1:] {
						want += fmt.Sprintf("%d|%s\n", i+1, strings.Split(v, ",")[1])
					}
					for i, v := range strings.Split(c.want, "\n") {
						want += fmt.Sprintf("%d|%s\n", i+11, v)
					}
					l.wantRows("items", strings.TrimSuffix(want, "\n"), "id", "n")
					if n := testkit.Int(t, l.tg.DB, `SELECT count(*) FROM `+l.tg.Ledger("rejects")); n != 0 {
						t.Fatalf("%d rows quarantined", n)
					}
					for _, f := range [][]string{{"first.csv"}, {"--evolve", "widen", "second.csv"}} {
						v := l.tg.Exec(t, dir, nil, append(append(append([]string{"verify"}, args[:2]...), args[6:]...), f...)...)
						if v.Code != 0 || !strings.Contains(v.Stdout, "ok") {
							t.Fatalf("verify %s: exit %d\n%s%s", f, v.Code, v.Stdout, v.Stderr)
						}
					}
				})
			}
		}
	})
}
