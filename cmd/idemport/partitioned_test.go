package main

import (
	"reflect"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestPlainImportIntoPartitionedTable: a plain import (no --atomic) by a
// key into a PostgreSQL table partitioned by its key, its keys spread
// over two partitions, merges a file of unchanged, changed and new rows,
// in and out of key order, as into any table: each row counted exactly
// (inserted, updated, unchanged), the table holding the file's rows; and
// a --snapshot import removes the rows the file lacks. Every rerun is a
// duplicate. With one worker and with four, partitions of three rows.
// Before, the merge asked the partitioned table for its rows' xmax, and
// the second import failed (exit 1, SQLSTATE 0A000) on every rerun.
func TestPlainImportIntoPartitionedTable(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.Postgres)
	for _, workers := range []string{"1", "4"} {
		t.Run("workers="+workers, func(t *testing.T) {
			dir := t.TempDir()
			tg := testkit.NewTarget(t, testkit.Postgres, dir)
			if _, err := tg.DB.Exec(`CREATE TABLE pt (k bigint PRIMARY KEY, v text) PARTITION BY RANGE (k);
				CREATE TABLE pt_lo PARTITION OF pt FOR VALUES FROM (MINVALUE) TO (100);
				CREATE TABLE pt_hi PARTITION OF pt FOR VALUES FROM (100) TO (MAXVALUE)`); err != nil {
				t.Fatal(err)
			}
			writeFile(t, dir, "a.csv", "k,v\n1,a\n2,b\n3,c\n101,x\n102,y\n103,z\n")
			// 103 and 2 changed, 1, 101 and 102 unchanged, 150, 5, 104 and
			// 105 new: out of key order, then in it.
			writeFile(t, dir, "b.csv", "k,v\n103,Z\n1,a\n150,n\n2,B\n5,e\n101,x\n102,y\n104,w\n105,q\n")
			// 5 changed, 1, 2, 101 and 150 unchanged; the rest removed.
			writeFile(t, dir, "c.csv", "k,v\n150,n\n1,a\n5,E\n2,B\n101,x\n")
			for _, c := range []struct {
				file                      string
				snapshot                  bool
				read, ins, upd, unch, del int64
				want                      [][]any
			}{
				{"a.csv", false, 6, 6, 0, 0, 0, [][]any{{"1", "a"}, {"2", "b"}, {"3", "c"}, {"101", "x"}, {"102", "y"}, {"103", "z"}}},
				{"b.csv", false, 9, 4, 2, 3, 0, [][]any{{"1", "a"}, {"2", "B"}, {"3", "c"}, {"5", "e"}, {"101", "x"}, {"102", "y"}, {"103", "Z"}, {"104", "w"}, {"105", "q"}, {"150", "n"}}},
				{"c.csv", true, 5, 0, 1, 4, 5, [][]any{{"1", "a"}, {"2", "B"}, {"5", "E"}, {"101", "x"}, {"150", "n"}}},
			} {
				args := []string{"--table", "pt", "--key", "k", "--workers", workers, "--partition-rows", "3"}
				if c.snapshot {
					args = append(args, "--snapshot", "--max-delete", "100%")
				}
				args = append(args, c.file)
				r := importTo(t, tg, dir, nil, 0, args...)
				if r.Outcome != "imported" || r.Rows.Read != c.read || r.Rows.Inserted != c.ins || r.Rows.Updated != c.upd ||
					r.Rows.Unchanged != c.unch || r.Rows.Stale != 0 || r.Deleted != c.del {
					t.Fatalf("%s: %s %+v deleted %d (%s), want imported, %d inserted, %d updated, %d unchanged, %d deleted",
						c.file, r.Outcome, r.Rows, r.Deleted, r.Error, c.ins, c.upd, c.unch, c.del)
				}
				if got := testkit.Query(t, tg.DB, `SELECT CAST(k AS text) AS key_text, v FROM pt ORDER BY k`); !reflect.DeepEqual(got, c.want) {
					t.Fatalf("after %s pt holds %v, want %v", c.file, got, c.want)
				}
				if r := importTo(t, tg, dir, nil, 0, args...); r.Outcome != "duplicate" {
					t.Fatalf("rerun of %s: %s, want duplicate", c.file, r.Outcome)
				}
			}
		})
	}
}
