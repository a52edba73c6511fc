package main

import (
	"reflect"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestAtomicMariaDBKeyTheColumnTruncates: the file's key
// 2024-01-01 00:00:00.6 is the stored 2024-01-01 00:00:00 to a MariaDB
// DATETIME(0) key column. A plain import updates the stored row; an
// --atomic import of the same file must too (1 new, 1 updated), as it
// does on PostgreSQL's timestamp(0). Today its move matches the stored
// keys as staged (DATETIME(6)), finds none, inserts both rows and is
// refused with a duplicate key, on every rerun.
func TestAtomicMariaDBKeyTheColumnTruncates(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.MariaDB)
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.MariaDB, dir)
	if _, err := tg.DB.Exec(`CREATE TABLE mk (ts DATETIME(0) PRIMARY KEY, v TEXT)`); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.csv", "ts,v\n2024-01-01 00:00:00,a\n")
	writeFile(t, dir, "b.csv", "ts,v\n2024-01-01 00:00:00.6,b\n2024-01-02 00:00:00,c\n")
	importTo(t, tg, dir, nil, 0, "--table", "mk", "--key", "ts", "a.csv")
	r := importTo(t, tg, dir, nil, 0, "--atomic", "--table", "mk", "--key", "ts", "b.csv")
	if r.Rows.Inserted != 1 || r.Rows.Updated != 1 {
		t.Errorf("b.csv --atomic: %+v, want 1 inserted, 1 updated", r.Rows)
	}
	if got := testkit.Query(t, tg.DB, `SELECT CAST(ts AS CHAR), v FROM mk ORDER BY ts`); !reflect.DeepEqual(got, [][]any{{"2024-01-01 00:00:00", "b"}, {"2024-01-02 00:00:00", "c"}}) {
		t.Errorf("mk holds %v", got)
	}
}
