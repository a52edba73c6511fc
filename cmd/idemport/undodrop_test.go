package main

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestUndoOfKilledAtomicImportSaysWhatItDropped: an --atomic import named
// by --file-id, killed before its completing transaction, is undone. The
// undo drops its staging table (on MariaDB also the table it created) and
// says so: its output names exactly the tables that are gone. The next
// version under the same file ID then imports exactly, rather than
// finding the undone version's staged rows (before, on SQLite and
// PostgreSQL, every attempt failed: "staged rows outside every
// partition").
func TestUndoOfKilledAtomicImportSaysWhatItDropped(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		writeFile(t, dir, "v1.csv", "id,v\n1,a\n2,b\n3,c\n")
		writeFile(t, dir, "v2.csv", "id,v\n1,A\n2,B\n")
		args := []string{"--table", "t", "--file-id", "orders", "--atomic"}
		killedAt(t, tg, dir, "before-finalize", append(args, "v1.csv")...)
		before := tg.Tables(t)
		undo := tg.Exec(t, dir, nil, "undo", "--table", "t", "orders")
		if undo.Code != 0 {
			t.Fatalf("undo: exit %d\n%s%s", undo.Code, undo.Stdout, undo.Stderr)
		}
		after := tg.Tables(t)
		var gone []string
		for _, n := range before {
			if !slices.Contains(after, n) {
				gone = append(gone, n)
			}
		}
		if len(gone) == 0 || !slices.ContainsFunc(gone, func(n string) bool { return strings.HasPrefix(n, "_idemport_stage_") }) {
			t.Fatalf("the undo dropped %v, want the staging table among them (tables before: %v)", gone, before)
		}
		var said []string
		for _, line := range strings.Split(undo.Stdout, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "dropped: "); ok {
				said = strings.Split(rest, ", ")
			}
		}
		for i, s := range said {
			said[i] = s[strings.LastIndexByte(s, '.')+1:] // PostgreSQL names them in their schema
		}
		slices.Sort(said)
		if !reflect.DeepEqual(said, gone) {
			t.Fatalf("the undo says it dropped %v; gone are %v\n%s", said, gone, undo.Stdout)
		}
		importTo(t, tg, dir, nil, 0, append(args, "v2.csv")...)
		if got := sortedRows(t, tg, `SELECT `+tg.Text("id")+`, v FROM t`); !reflect.DeepEqual(got, [][]any{{"1", "A"}, {"2", "B"}}) {
			t.Fatalf("table t after v2.csv: %v", got)
		}
	})
}
