package main

import (
	"reflect"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestAtomicJSONColumnKeepsTheFilesText: a PostgreSQL json column (not
// jsonb) keeps a document's text, and a plain import writes the file's
// text into it and counts a document written otherwise as changed. An
// --atomic import of the same files must leave the same table and counts:
// the file's text for a new key, the file's text over a stored document
// that is equal only as jsonb (other key order, spacing, a repeated key),
// and a stored document jsonb cannot read (a \u0000 escape, which json
// holds) is no reason to refuse the file.
func TestAtomicJSONColumnKeepsTheFilesText(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.Postgres)
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.Postgres, dir)
	if _, err := tg.DB.Exec(`CREATE TABLE jp (id bigint PRIMARY KEY, j json);
		CREATE TABLE ja (id bigint PRIMARY KEY, j json)`); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.csv", "id,j\n1,\"{\"\"a\"\": 1, \"\"b\"\": 2}\"\n2,\"{\"\"a\"\":1,\"\"a\"\":2}\"\n")
	writeFile(t, dir, "b.csv", "id,j\n1,\"{\"\"b\"\":2,\"\"a\"\":1}\"\n2,\"{\"\"a\"\":2}\"\n3,\"{\"\"z\"\":1,\"\"y\"\":2}\"\n")
	want := [][]any{{int64(1), `{"b":2,"a":1}`}, {int64(2), `{"a":2}`}, {int64(3), `{"z":1,"y":2}`}}
	for _, c := range []struct {
		table  string
		atomic []string
	}{{"jp", nil}, {"ja", []string{"--atomic"}}} {
		args := func(file string) []string {
			return append(append([]string{"--table", c.table, "--key", "id"}, c.atomic...), file)
		}
		importTo(t, tg, dir, nil, 0, "--table", c.table, "--key", "id", "a.csv")
		r := importTo(t, tg, dir, nil, 0, args("b.csv")...)
		if r.Rows.Inserted != 1 || r.Rows.Updated != 2 || r.Rows.Unchanged != 0 {
			t.Errorf("%s %v b.csv: %+v, want 1 inserted, 2 updated", c.table, c.atomic, r.Rows)
		}
		if got := testkit.Query(t, tg.DB, `SELECT id, j::text FROM `+c.table+` ORDER BY id`); !reflect.DeepEqual(got, want) {
			t.Errorf("%s %v: holds %v, want the file's text %v", c.table, c.atomic, got, want)
		}
	}

	// A stored document json holds and jsonb does not.
	if _, err := tg.DB.Exec(`CREATE TABLE jn (id bigint PRIMARY KEY, j json);
		INSERT INTO jn VALUES (1, '{"a":"\u0000"}')`); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "n.csv", "id,j\n1,\"{\"\"a\"\":\"\"b\"\"}\"\n")
	if r := importTo(t, tg, dir, nil, 0, "--atomic", "--table", "jn", "--key", "id", "n.csv"); r.Rows.Updated != 1 {
		t.Errorf("n.csv --atomic: %s %q %+v, want 1 updated", r.Outcome, r.Error, r.Rows)
	}
}
