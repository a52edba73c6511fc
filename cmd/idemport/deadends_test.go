package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestProposalsWork meets each refusal that proposes a command or a flag
// and runs what it proposes: undo of a file imported into two tables lists
// them as table ← file ID with an undo of each, and each undo works; bad
// values for an existing table's integer column propose --evolve widen,
// which imports every row exactly; a file with a new column proposes
// --evolve add, which imports it; a key the table does not have proposes
// no --evolve (it cannot help) but another table, which works.
func TestProposalsWork(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		write := func(file, content string) {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("a.csv", "id,v\n1,a\n")
		importTo(t, tg, dir, nil, 0, "--table", "t1", "a.csv")
		importTo(t, tg, dir, nil, 0, "--table", "t2", "a.csv")
		r := tg.Exec(t, dir, nil, "undo", "a.csv")
		undos := regexp.MustCompile(`\(idemport (undo [^)]*)\)`).FindAllStringSubmatch(r.Stderr, -1)
		if r.Code != exitUsage || len(undos) != 2 || !strings.Contains(r.Stderr, "t1 ← sha256:") || !strings.Contains(r.Stderr, "t2 ← sha256:") {
			t.Fatalf("undo of a file in two tables: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		for _, u := range undos {
			if r := tg.Exec(t, dir, nil, strings.Fields(u[1])...); r.Code != 0 {
				t.Fatalf("the proposed %s: exit %d\n%s%s", u[1], r.Code, r.Stdout, r.Stderr)
			}
		}
		if n := testkit.Int(t, tg.DB, `SELECT (SELECT count(*) FROM t1) + (SELECT count(*) FROM t2)`); n != 0 {
			t.Fatalf("%d rows left after both undos", n)
		}

		write("n1.csv", "id,v\n1,2\n")
		write("n2.csv", "id,v\n2,2.5\n3,4.25\n")
		importTo(t, tg, dir, nil, 0, "--table", "nums", "n1.csv")
		refused := importTo(t, tg, dir, nil, exitRefused, "--table", "nums", "n2.csv")
		if !strings.Contains(refused.Next, "rerun with --evolve widen") {
			t.Fatalf("a value the integer column cannot hold: %+v", refused)
		}
		importTo(t, tg, dir, nil, 0, "--table", "nums", "--evolve", "widen", "n2.csv")
		got := testkit.Query(t, tg.DB, `SELECT id, CAST(v AS TEXT) FROM nums ORDER BY id`)
		if want := [][]any{{int64(1), "2"}, {int64(2), "2.5"}, {int64(3), "4.25"}}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("nums after --evolve widen: %v, want %v", got, want)
		}

		write("w.csv", "id,v,w\n4,5,x\n")
		added := importTo(t, tg, dir, nil, exitRefused, "--table", "nums", "w.csv")
		if !strings.Contains(added.Error, "rerun with --evolve add") || strings.Contains(added.Error, "--evolve widen") {
			t.Fatalf("a new column: %+v", added)
		}
		importTo(t, tg, dir, nil, 0, "--table", "nums", "--evolve", "add", "w.csv")
		if got := testkit.Query(t, tg.DB, `SELECT id, w FROM nums WHERE w IS NOT NULL`); !reflect.DeepEqual(got, [][]any{{int64(4), "x"}}) {
			t.Fatalf("nums after --evolve add: %v", got)
		}

		write("k.csv", "id,v\n5,6\n")
		keyed := importTo(t, tg, dir, nil, exitRefused, "--table", "nums", "--key", "id", "k.csv")
		if strings.Contains(keyed.Error, "rerun with --evolve") || !strings.Contains(keyed.Error, "import into another table (--table NAME)") {
			t.Fatalf("a key the table does not have: %+v", keyed)
		}
		importTo(t, tg, dir, nil, 0, "--table", "nums_by_id", "--key", "id", "k.csv")
		if got := testkit.Query(t, tg.DB, `SELECT id, v FROM nums_by_id`); !reflect.DeepEqual(got, [][]any{{int64(5), int64(6)}}) {
			t.Fatalf("nums_by_id: %v", got)
		}
	})
}
