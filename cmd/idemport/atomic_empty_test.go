package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestAtomicHeaderOnlyFile: a CSV file of a header and no rows, imported
// --atomic, by key and by ordinal, into a new table and into one that
// holds rows, completes as a plain import of it does (0 rows, exit 0),
// and leaves the stored rows. Its stage has no partitions, and the
// classification's CASE over them must still be SQL: today it is
// "CASE ELSE -1 END", a syntax error on every database, and the import
// fails (exit 1) on every rerun.
func TestAtomicHeaderOnlyFile(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		for file, body := range map[string]string{"a.csv": "id,v\n1,a\n", "empty.csv": "id,v\n"} {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, mode := range [][]string{{"--table", "ek", "--key", "id"}, {"--table", "eo"}, {"--table", "en", "--key", "id"}} {
			if mode[1] != "en" {
				importTo(t, tg, dir, nil, 0, append(mode, "a.csv")...)
			}
			run := testkit.Exec(t, dir, nil, append(append(append([]string{"import", "--output", "json"}, tg.Args...), mode...), "--atomic", "empty.csv")...)
			if run.Code != 0 {
				t.Errorf("%v --atomic empty.csv: exit %d, want 0\nstdout: %s", mode, run.Code, run.Stdout)
				continue
			}
			if mode[1] != "en" {
				if got := testkit.Query(t, tg.DB, `SELECT v FROM `+mode[1]); !reflect.DeepEqual(got, [][]any{{"a"}}) {
					t.Errorf("%s holds %v after the empty file, want [[a]]", mode[1], got)
				}
			}
		}
	})
}
