package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// TestMariaDBEvolveAfterALostLock: on MariaDB an --evolve import looks at
// the table and alters it under a lock that is a row lock of a session of
// its own (its ALTER commits the transaction it runs in), so a process
// killed while its ALTER runs loses the lock at once while the server
// runs the ALTER on to its end. Here the ALTER of a text file's import
// (n BIGINT → text) is held under way by a reader of the table, and the
// session holding that import's lock is killed on the server, as the
// process's death ends it; an import of decimals into n, waiting for the
// lock, takes it. It must look at the table as that ALTER leaves it (n
// text, which holds its decimals) and change nothing, rather than queue a
// widening to a decimal, decided from n as a BIGINT, behind the ALTER:
// that narrowed n back to a decimal column, and the text import, finding
// n no longer text, was refused (exit 5; in TestEvolveSoak/mariadb an
// import that had planned n as text failed, exit 1, "column "n" is
// mediumtext, the file's is string").
// Both exit 0, n stays text, the change is recorded and reported once, by
// the text import, and the table holds every file's values exactly.
func TestMariaDBEvolveAfterALostLock(t *testing.T) {
	t.Parallel()
	onMariaDB(t, func(t *testing.T, dir string, tg *testkit.Target) {
		write := func(name string, from, to int, value func(i int) string) {
			var b strings.Builder
			b.WriteString("id,v,n\n")
			for i := from; i < to; i++ {
				fmt.Fprintf(&b, "%d,1,%s\n", i, value(i))
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("g0.csv", 1, 100, func(i int) string { return fmt.Sprint(i * 7) })
		write("text.csv", 1000, 1100, func(i int) string { return fmt.Sprintf("w%x", i) })
		write("dec.csv", 2000, 2100, func(i int) string { return fmt.Sprintf("%d.50", 10_000_000_000+i) })
		// Lock waits as long as the test's: the ALTER waits for the reader
		// while the other import starts, on a machine that may be loaded.
		base := []string{"--table", "t", "--key", "id", "--version-col", "v", "--workers", "1", "--busy-timeout", "10m"}
		importTo(t, tg, dir, nil, 0, append(base, "g0.csv")...)
		args := func(f string) []string {
			return append(append([]string{"import", "--output", "json"}, base...), "--evolve", "widen", f)
		}
		// count waits, up to 3 minutes (the machine may be loaded), for
		// the count query q reads to reach n.
		count := func(what string, n int64, q string) {
			t.Helper()
			for deadline := time.Now().Add(3 * time.Minute); testkit.Int(t, tg.DB, q) < n; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("no %s after 3 minutes; the statements under way: %v", what,
						testkit.Query(t, tg.DB, `SELECT id, command, time, state, info FROM information_schema.processlist WHERE db = DATABASE()`))
				}
			}
		}
		const waiting = `SELECT count(*) FROM information_schema.processlist WHERE db = DATABASE() AND id <> CONNECTION_ID()
			AND (state LIKE 'Waiting for%lock' OR state = 'User lock')`
		reader, err := tg.DB.Begin()
		if err != nil {
			t.Fatal(err)
		}
		defer reader.Rollback()
		if _, err := reader.Exec(`SELECT * FROM t`); err != nil {
			t.Fatal(err)
		}
		text := start(t, tg, dir, nil, args("text.csv")...)
		count("ALTER of the text import waiting for the reader", 1, waiting)
		dec := start(t, tg, dir, nil, args("dec.csv")...)
		count("import of decimals waiting for the evolve lock", 1, `SELECT count(*) FROM information_schema.processlist
			WHERE db = DATABASE() AND info LIKE 'INSERT INTO%locks%' AND id IN (SELECT trx_mysql_thread_id FROM information_schema.innodb_trx WHERE trx_state = 'LOCK WAIT')`)
		// The session that holds the lock the import of decimals waits
		// for: the text import's (in this test's database: the server
		// serves others).
		holder := testkit.Int(t, tg.DB, `SELECT b.trx_mysql_thread_id FROM information_schema.innodb_lock_waits w
			JOIN information_schema.innodb_trx b ON b.trx_id = w.blocking_trx_id
			JOIN information_schema.innodb_trx r ON r.trx_id = w.requesting_trx_id
			JOIN information_schema.processlist bp ON bp.id = b.trx_mysql_thread_id AND bp.db = DATABASE()
			JOIN information_schema.processlist rp ON rp.id = r.trx_mysql_thread_id AND rp.db = DATABASE()
			WHERE rp.info LIKE 'INSERT INTO%locks%'`)
		if _, err := tg.DB.Exec(fmt.Sprintf(`KILL %d`, holder)); err != nil {
			t.Fatal(err)
		}
		// The import of decimals has the lock: it waits for the ALTER
		// under way, or (before) queued an ALTER of its own behind it.
		count("import of decimals waiting behind the ALTER under way", 2, waiting)
		if err := reader.Commit(); err != nil {
			t.Fatal(err)
		}
		var widened []string
		for _, s := range []struct {
			name string
			p    *started
		}{{"the text import", text}, {"the import of decimals", dec}} {
			res := finished(t, s.p, s.name, 0)
			widened = append(widened, res.ColumnsWidened...)
		}
		if !reflect.DeepEqual(widened, []string{"n"}) {
			t.Errorf("the imports say they widened %v, want n once (the text import)", widened)
		}
		if got := testkit.Query(t, tg.DB, `SELECT schema_changes FROM `+tg.Ledger("attempts")+` WHERE schema_changes IS NOT NULL`); !reflect.DeepEqual(got, [][]any{{"widened n int64 → text"}}) {
			t.Errorf("schema changes recorded: %v, want n widened to text, once", got)
		}
		if got := tableColumns(t, tg, "t", false); !strings.Contains(got, "n:longtext") {
			t.Errorf("columns %s, want n:longtext", got)
		}
		want := map[string]string{"g0": "7", "text": "w3e8", "dec": "10000002000.50"}
		for file, id := range map[string]int{"g0": 1, "text": 1000, "dec": 2000} {
			if got := testkit.Query(t, tg.DB, `SELECT n FROM t WHERE id = ?`, id); fmt.Sprint(got) != fmt.Sprintf("[[%s]]", want[file]) {
				t.Errorf("%s's row %d holds n %v, want %s", file, id, got, want[file])
			}
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM t`); n != 99+100+100 {
			t.Errorf("t holds %d rows, want 299", n)
		}
	})
}
