package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestTrickyValuesThroughTheBinary imports the tricky values, CSV and JSONL,
// with the real binary, and compares every stored value with the file's as
// text; then a later file's 02134 into the integer column the first made
// is refused (exit 5) saying why, and nothing of it is written.
func TestTrickyValuesThroughTheBinary(t *testing.T) {
	csv, jsonl, cols := testkit.Tricky()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		for file, content := range map[string]string{"tricky.csv": csv, "tricky.jsonl": jsonl} {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			table := strings.ReplaceAll(file, ".", "_")
			r := importTo(t, tg, dir, nil, 0, "--table", table, "--key", "id", file)
			if r.Rows.Inserted != int64(len(cols[0].Want)) {
				t.Fatalf("%s: %+v", file, r)
			}
			check := cols
			if strings.HasSuffix(file, ".jsonl") {
				check = append(check[:len(check):len(check)], testkit.TrickyJSON)
			}
			for _, c := range check {
				testkit.CheckTricky(t, tg.DB, name, table, "id", c)
			}
		}

		os.WriteFile(filepath.Join(dir, "zips1.csv"), []byte("zip\n2134\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "zips2.csv"), []byte("zip\n02134\n"), 0o644)
		importTo(t, tg, dir, nil, 0, "--table", "zips", "zips1.csv")
		run := tg.Exec(t, dir, nil, "import", "--table", "zips", "zips2.csv")
		if run.Code != 5 || !strings.Contains(run.Stdout+run.Stderr, "leading zeros would be lost") ||
			!strings.Contains(run.Stdout+run.Stderr, "--column zip:string") {
			t.Fatalf("02134 into an integer column: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
		testkit.CheckTricky(t, tg.DB, name, "zips", "zip", testkit.TrickyColumn{Name: "zip", Want: []string{"2134"}})
	})
}
