package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestAtomicMoveThroughTriggers: an --atomic import into a PostgreSQL
// table whose BEFORE INSERT OR UPDATE trigger rewrites some rows (upper
// case) and skips others (returns NULL) completes at once, the table
// holding what its trigger made of the file, and counts what the move
// did: a row the trigger skipped or made equal to the stored one is
// unchanged, never taken for another import's key (no move again, no
// exit 1). The counts add up over the ledger.
func TestAtomicMoveThroughTriggers(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.Postgres)
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.Postgres, dir)
	for _, s := range []string{
		`CREATE TABLE tr (id bigint PRIMARY KEY, v text)`,
		`CREATE FUNCTION tr_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.v = 'skip' THEN RETURN NULL; END IF; NEW.v := upper(NEW.v); RETURN NEW; END $$`,
		`CREATE TRIGGER tr_rewrite BEFORE INSERT OR UPDATE ON tr FOR EACH ROW EXECUTE FUNCTION tr_rewrite()`,
	} {
		if _, err := tg.DB.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	atomic := []string{"--atomic", "--table", "tr", "--key", "id"}
	writeFile(t, dir, "a.csv", "id,v\n1,a\n2,skip\n3,c\n")
	r := importTo(t, tg, dir, nil, 0, append(atomic, "a.csv")...)
	if r.Outcome != "imported" || r.Rows.Read != 3 || r.Rows.Inserted != 2 || r.Rows.Updated != 0 || r.Rows.Unchanged != 1 {
		t.Fatalf("a.csv: %s %+v, want imported, 2 inserted, 1 unchanged", r.Outcome, r.Rows)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "the triggers of tr changed or skipped rows") {
		t.Fatalf("a.csv notes %q, want the triggers named", r.Notes)
	}
	// 1: the file's a is the stored A once the trigger made it so; 2:
	// new; 3: stored, its update skipped; 4: a new row skipped.
	writeFile(t, dir, "b.csv", "id,v\n1,a\n2,b\n3,skip\n4,skip\n")
	r = importTo(t, tg, dir, nil, 0, append(atomic, "b.csv")...)
	if r.Outcome != "imported" || r.Rows.Read != 4 || r.Rows.Inserted != 1 || r.Rows.Updated != 0 || r.Rows.Unchanged != 3 {
		t.Fatalf("b.csv: %s %+v, want imported, 1 inserted, 3 unchanged", r.Outcome, r.Rows)
	}
	got := testkit.Query(t, tg.DB, `SELECT id::text, v FROM tr ORDER BY id`)
	want := [][]any{{"1", "A"}, {"2", "B"}, {"3", "C"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tr holds %v, want %v", got, want)
	}
	if r := importTo(t, tg, dir, nil, 0, append(atomic, "b.csv")...); r.Outcome != "duplicate" {
		t.Fatalf("rerun of b.csv: %s, want duplicate", r.Outcome)
	}
	if n := testkit.Int(t, tg.DB, `SELECT `+tg.Sum("rows_inserted")+` FROM `+tg.Ledger("operations")); n != 3 {
		t.Fatalf("%d rows inserted over the ledger, want 3", n)
	}
	if n := testkit.Int(t, tg.DB, `SELECT `+tg.Sum("rows_unchanged")+` FROM `+tg.Ledger("operations")); n != 4 {
		t.Fatalf("%d rows unchanged over the ledger, want 4", n)
	}
}

// TestAtomicIntoATableWhoseTriggerRewritesValues: a PostgreSQL table with
// a BEFORE INSERT OR UPDATE trigger that normalises a value (upper case).
// A plain import counts a row whose normalised values the table holds
// unchanged. An --atomic import of the same file must complete with the
// same table and counts: its classification compares the staged 'a' with
// the stored 'A' (changed) while the move's ON CONFLICT compares the
// trigger's 'A' (unchanged): the move's count stands, and the completing
// transaction does not run again as if another import had written.
func TestAtomicIntoATableWhoseTriggerRewritesValues(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.Postgres)
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.Postgres, dir)
	if _, err := tg.DB.Exec(`CREATE FUNCTION rv_upper() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.v := upper(NEW.v); RETURN NEW; END $$;
		CREATE TABLE tp (id bigint PRIMARY KEY, v text);
		CREATE TABLE ta (id bigint PRIMARY KEY, v text);
		CREATE TRIGGER tp_upper BEFORE INSERT OR UPDATE ON tp FOR EACH ROW EXECUTE FUNCTION rv_upper();
		CREATE TRIGGER ta_upper BEFORE INSERT OR UPDATE ON ta FOR EACH ROW EXECUTE FUNCTION rv_upper()`); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.csv", "id,v\n1,a\n2,b\n")
	writeFile(t, dir, "b.csv", "id,v\n1,a\n2,c\n3,d\n")
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

// TestAtomicMoveThroughTriggersCountedBeforeTheMove: the tables whose
// move counts its new rows just before it runs (SQLite's, a partitioned
// PostgreSQL one) with BEFORE INSERT and UPDATE row triggers that skip
// some rows (SQLite: RAISE(IGNORE); PostgreSQL: on the partition alone,
// returning NULL, and upper-casing the others). As into any other table,
// the --atomic import completes at once, the table holding what its
// triggers made of the file, a row a trigger skipped or left as stored
// counted unchanged. Before, a new row the trigger skipped was counted
// new by the move, the move never matched its classification, and the
// import failed (exit 1) after 9 tries on every rerun.
func TestAtomicMoveThroughTriggersCountedBeforeTheMove(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.SQLite, testkit.Postgres}, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		ddl := []string{
			`CREATE TABLE tr (id bigint PRIMARY KEY, v text)`,
			`CREATE TRIGGER tr_skip_insert BEFORE INSERT ON tr WHEN NEW.v = 'skip' BEGIN SELECT RAISE(IGNORE); END`,
			`CREATE TRIGGER tr_skip_update BEFORE UPDATE ON tr WHEN NEW.v = 'skip' BEGIN SELECT RAISE(IGNORE); END`,
		}
		want := [][]any{{"1", "a"}, {"2", "b"}, {"3", "c"}}
		if name == testkit.Postgres {
			ddl = []string{
				`CREATE TABLE tr (id bigint PRIMARY KEY, v text) PARTITION BY RANGE (id)`,
				`CREATE TABLE tr_all PARTITION OF tr FOR VALUES FROM (MINVALUE) TO (MAXVALUE)`,
				`CREATE FUNCTION tr_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN IF NEW.v = 'skip' THEN RETURN NULL; END IF; NEW.v := upper(NEW.v); RETURN NEW; END $$`,
				`CREATE TRIGGER tr_rewrite BEFORE INSERT OR UPDATE ON tr_all FOR EACH ROW EXECUTE FUNCTION tr_rewrite()`,
			}
			want = [][]any{{"1", "A"}, {"2", "B"}, {"3", "C"}}
		}
		for _, s := range ddl {
			if _, err := tg.DB.Exec(s); err != nil {
				t.Fatal(err)
			}
		}
		atomic := []string{"--atomic", "--table", "tr", "--key", "id"}
		writeFile(t, dir, "a.csv", "id,v\n1,a\n2,skip\n3,c\n")
		r := importTo(t, tg, dir, nil, 0, append(atomic, "a.csv")...)
		if r.Outcome != "imported" || r.Rows.Read != 3 || r.Rows.Inserted != 2 || r.Rows.Updated != 0 || r.Rows.Unchanged != 1 {
			t.Fatalf("a.csv: %s %+v, want imported, 2 inserted, 1 unchanged", r.Outcome, r.Rows)
		}
		// 1: stored as the trigger made it; 2: new; 3: stored, its
		// update skipped; 4: a new row skipped.
		writeFile(t, dir, "b.csv", "id,v\n1,a\n2,b\n3,skip\n4,skip\n")
		r = importTo(t, tg, dir, nil, 0, append(atomic, "b.csv")...)
		if r.Outcome != "imported" || r.Rows.Read != 4 || r.Rows.Inserted != 1 || r.Rows.Updated != 0 || r.Rows.Unchanged != 3 {
			t.Fatalf("b.csv: %s %+v, want imported, 1 inserted, 3 unchanged", r.Outcome, r.Rows)
		}
		if got := testkit.Query(t, tg.DB, `SELECT CAST(id AS text), v FROM tr ORDER BY id`); !reflect.DeepEqual(got, want) {
			t.Fatalf("tr holds %v, want %v", got, want)
		}
	})
}
