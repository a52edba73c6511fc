package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestPlainImportThroughTriggers: a plain import (no --atomic) into a
// table whose BEFORE INSERT and UPDATE row triggers skip some rows
// (SQLite: RAISE(IGNORE); PostgreSQL: returning NULL, of the table or of
// its partition, and upper-casing the others) completes, the table holding
// what its triggers made of the file, and counts as the --atomic move
// counts (TestAtomicMoveThroughTriggersCountedBeforeTheMove): a row a
// trigger skipped or left as stored is unchanged, and a note names the
// triggers. Reruns are duplicates. With one worker and with four, two
// partitions of two rows. Before, PostgreSQL's COPY of new rows into the
// table took fewer rows than it was sent and the import failed (exit 1)
// on every rerun, and SQLite counted a skipped new row inserted.
func TestPlainImportThroughTriggers(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.SQLite, testkit.Postgres}, func(t *testing.T, name string) {
		tables := map[string][]string{"tr": {
			`CREATE TABLE tr (id bigint PRIMARY KEY, v text)`,
			`CREATE TRIGGER tr_skip_insert BEFORE INSERT ON tr WHEN NEW.v = 'skip' BEGIN SELECT RAISE(IGNORE); END`,
			`CREATE TRIGGER tr_skip_update BEFORE UPDATE ON tr WHEN NEW.v = 'skip' BEGIN SELECT RAISE(IGNORE); END`,
		}}
		want := [][]any{{"1", "a"}, {"2", "b"}, {"3", "c"}}
		if name == testkit.Postgres {
			rewrite := `CREATE OR REPLACE FUNCTION tr_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN IF NEW.v = 'skip' THEN RETURN NULL; END IF; NEW.v := upper(NEW.v); RETURN NEW; END $$`
			tables = map[string][]string{
				"tr": {rewrite,
					`CREATE TABLE tr (id bigint PRIMARY KEY, v text)`,
					`CREATE TRIGGER tr_rewrite BEFORE INSERT OR UPDATE ON tr FOR EACH ROW EXECUTE FUNCTION tr_rewrite()`},
				"tp": {rewrite,
					`CREATE TABLE tp (id bigint PRIMARY KEY, v text) PARTITION BY RANGE (id)`,
					`CREATE TABLE tp_all PARTITION OF tp FOR VALUES FROM (MINVALUE) TO (MAXVALUE)`,
					`CREATE TRIGGER tp_rewrite BEFORE INSERT OR UPDATE ON tp_all FOR EACH ROW EXECUTE FUNCTION tr_rewrite()`},
			}
			want = [][]any{{"1", "A"}, {"2", "B"}, {"3", "C"}}
		}
		for table, ddl := range tables {
			for _, workers := range []string{"1", "4"} {
				t.Run(table+"/workers="+workers, func(t *testing.T) {
					dir := t.TempDir()
					tg := testkit.NewTarget(t, name, dir)
					for _, s := range ddl {
						if _, err := tg.DB.Exec(s); err != nil {
							t.Fatal(err)
						}
					}
					args := []string{"--table", table, "--key", "id", "--workers", workers, "--partition-rows", "2"}
					writeFile(t, dir, "a.csv", "id,v\n1,a\n2,skip\n3,c\n")
					// 1: stored as the trigger made it; 2: new; 3: stored,
					// its update skipped; 4: a new row skipped. Into tr,
					// the first partition holds 1 and 3, and writes no new
					// row, so that SQLite upserts the second's rows one by
					// one (one worker).
					b := "id,v\n1,a\n3,skip\n2,b\n4,skip\n"
					if table == "tp" {
						b = "id,v\n1,a\n2,b\n3,skip\n4,skip\n"
					}
					writeFile(t, dir, "b.csv", b)
					for _, c := range []struct {
						file                 string
						read, ins, unchanged int64
					}{{"a.csv", 3, 2, 1}, {"b.csv", 4, 1, 3}} {
						r := importTo(t, tg, dir, nil, 0, append(args, c.file)...)
						if r.Outcome != "imported" || r.Rows.Read != c.read || r.Rows.Inserted != c.ins || r.Rows.Updated != 0 || r.Rows.Unchanged != c.unchanged || r.Rows.Stale != 0 {
							t.Fatalf("%s: %s %+v, want imported, %d inserted, %d unchanged", c.file, r.Outcome, r.Rows, c.ins, c.unchanged)
						}
						if !strings.Contains(strings.Join(r.Notes, "\n"), "the triggers of "+table+" may change or skip the rows") {
							t.Fatalf("%s notes %q, want the triggers named", c.file, r.Notes)
						}
						if r := importTo(t, tg, dir, nil, 0, append(args, c.file)...); r.Outcome != "duplicate" {
							t.Fatalf("rerun of %s: %s, want duplicate", c.file, r.Outcome)
						}
					}
					if got := testkit.Query(t, tg.DB, `SELECT CAST(id AS text), v FROM `+table+` ORDER BY id`); !reflect.DeepEqual(got, want) {
						t.Fatalf("%s holds %v, want %v", table, got, want)
					}
				})
			}
		}
	})
}

// TestPlainImportShortCopyWithoutTriggers: a COPY into a PostgreSQL
// table that took fewer rows than it was sent, where the table has no
// trigger that may skip rows, is still an error (exit 1), and writes
// nothing: the trigger here skips a row and then disables itself in the
// catalog, inside the import's transaction, so that the table has no
// enabled trigger when the writer asks.
func TestPlainImportShortCopyWithoutTriggers(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.Postgres)
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.Postgres, dir)
	if _, err := tg.DB.Exec(`CREATE TABLE th (id bigint PRIMARY KEY, v text);
		CREATE FUNCTION th_hide() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.id = 2 THEN
			UPDATE pg_trigger SET tgenabled = 'D' WHERE tgrelid = TG_RELID AND tgname = TG_NAME; RETURN NULL;
		END IF; RETURN NEW; END $$;
		CREATE TRIGGER th_hide BEFORE INSERT ON th FOR EACH ROW EXECUTE FUNCTION th_hide()`); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.csv", "id,v\n1,a\n2,b\n3,c\n")
	r := importTo(t, tg, dir, nil, 1, "--table", "th", "--key", "id", "a.csv")
	if r.Outcome != "failed" || !strings.Contains(r.Error, "copy rows into th: copied 2 of 3") {
		t.Fatalf("a.csv: %s %q, want failed, copied 2 of 3", r.Outcome, r.Error)
	}
	if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM th`); n != 0 {
		t.Fatalf("th holds %d rows, want none", n)
	}
}
