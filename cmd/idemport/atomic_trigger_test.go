package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestAtomicIntoATableWhoseTriggerRewritesValues: a PostgreSQL table with
// a BEFORE INSERT OR UPDATE trigger that normalises a value (upper case).
// A plain import counts a row whose normalised values the table holds
// unchanged. An --atomic import of the same file must complete with the
// same table and counts: its classification compares the staged 'a' with
// the stored 'A' (changed) while the move's ON CONFLICT compares the
// trigger's 'A' (unchanged), and a move that did other than the
// classification said is not another import writing meanwhile when it
// does so on every try. Today the completing transaction runs again until
// it gives up, exit 1, on every rerun.
func TestAtomicIntoATableWhoseTriggerRewritesValues(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.Postgres)
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.Postgres, dir)
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tg.DB.Exec(`CREATE FUNCTION rv_upper() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.v := upper(NEW.v); RETURN NEW; END $$;
		CREATE TABLE tp (id bigint PRIMARY KEY, v text);
		CREATE TABLE ta (id bigint PRIMARY KEY, v text);
		CREATE TRIGGER tp_upper BEFORE INSERT OR UPDATE ON tp FOR EACH ROW EXECUTE FUNCTION rv_upper();
		CREATE TRIGGER ta_upper BEFORE INSERT OR UPDATE ON ta FOR EACH ROW EXECUTE FUNCTION rv_upper()`); err != nil {
		t.Fatal(err)
	}
	write("a.csv", "id,v\n1,a\n2,b\n")
	write("b.csv", "id,v\n1,a\n2,c\n3,d\n")
	want := [][]any{{int64(1), "A"}, {int64(2), "C"}, {int64(3), "D"}}
	for _, c := range []struct {
		table string
		extra []string
	}{{"tp", nil}, {"ta", []string{"--atomic"}}} {
		importTo(t, tg, dir, nil, 0, "--table", c.table, "--key", "id", "a.csv")
		r := importTo(t, tg, dir, nil, 0, append(append([]string{"--table", c.table, "--key", "id"}, c.extra...), "b.csv")...)
		if r.Rows.Inserted != 1 || r.Rows.Updated != 1 || r.Rows.Unchanged != 1 {
			t.Errorf("%s %v b.csv: %+v, want 1 inserted, 1 updated, 1 unchanged", c.table, c.extra, r.Rows)
		}
		if got := testkit.Query(t, tg.DB, `SELECT id, v FROM `+c.table+` ORDER BY id`); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: holds %v, want %v", c.table, got, want)
		}
	}
}
