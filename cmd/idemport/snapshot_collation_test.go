package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestSnapshotKeysOneUnderTheCollation: a snapshot whose keys differ from
// the stored ones only as the key column's collation ignores (a MariaDB
// utf8mb4_general_ci key, a SQLite COLLATE NOCASE one, a PostgreSQL key
// of a nondeterministic ICU collation that ignores case: 'a' for a stored
// 'A') keeps the rows it writes over them, and sweeps the key it lacks,
// plain and (but on MariaDB) --atomic, and a --replace of the file as
// well. Its keys were
// found in the table of keys seen byte for byte (MariaDB's binary
// collation wins a comparison of two columns; SQLite's takes the left
// one's, the seen table's BINARY), so the sweep deleted the rows the
// file had just written (with --max-delete 100%: "2 rows not in the
// snapshot deleted", an empty table) or refused every rerun.
func TestSnapshotKeysOneUnderTheCollation(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		create, row, order := "k text COLLATE NOCASE PRIMARY KEY, v int", "k || '|' || v", "k COLLATE BINARY"
		switch name {
		case testkit.Postgres:
			if _, err := tg.DB.Exec(`CREATE COLLATION IF NOT EXISTS nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false)`); err != nil {
				t.Fatal(err)
			}
			create, order = "k text COLLATE nocase PRIMARY KEY, v int", `k COLLATE "C"`
		case testkit.MariaDB:
			create, row, order = "k varchar(20) COLLATE utf8mb4_general_ci PRIMARY KEY, v int", "concat(k, '|', v)", "CAST(k AS BINARY)"
		}
		os.WriteFile(filepath.Join(dir, "s1.csv"), []byte("k,v\nA,1\nb,1\nc,1\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "s2.csv"), []byte("k,v\na,2\nB,1\n"), 0o644)
		for i, mode := range [][]string{{"--snapshot"}, {"--snapshot", "--atomic"}, {"--replace"}} {
			table := []string{"sc_plain", "sc_atomic", "sc_replace"}[i]
			if name == testkit.MariaDB && i == 1 {
				continue // its move matches staged keys byte for byte: the file is refused, --snapshot or not
			}
			if _, err := tg.DB.Exec(`CREATE TABLE ` + table + ` (` + create + `)`); err != nil {
				t.Fatal(err)
			}
			files := []string{"s1.csv", "s2.csv"}
			if mode[0] == "--replace" {
				os.WriteFile(filepath.Join(dir, "r.csv"), []byte("k,v\nA,1\nb,1\nc,1\n"), 0o644)
				files = []string{"r.csv", "r.csv"}
			}
			for j, f := range files {
				if mode[0] == "--replace" && j == 1 {
					os.WriteFile(filepath.Join(dir, "r.csv"), []byte("k,v\na,2\nB,1\n"), 0o644)
				}
				args := append([]string{"import", "--table", table, "--key", "k", "--file-id", "{name}"}, mode...)
				if r := tg.Exec(t, dir, nil, append(args, "--max-delete", "100%", f)...); r.Code != 0 {
					t.Fatalf("%s %s: exit %d\n%s%s", table, f, r.Code, r.Stdout, r.Stderr)
				}
			}
			want := [][]any{{"A|2"}, {"b|1"}} // the stored keys' text, the file's values
			if got := testkit.Query(t, tg.DB, `SELECT `+row+` FROM `+table+` ORDER BY `+order); !reflect.DeepEqual(got, want) {
				t.Errorf("%s holds %v, want %v (the snapshot's rows, c swept)", table, got, want)
			}
		}
	})
}
