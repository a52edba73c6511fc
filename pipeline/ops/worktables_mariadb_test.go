package ops

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/idemport/idemport/internal/failpoint"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline"
	"github.com/idemport/idemport/sink"
)

// TestWorkTablesInADatabaseWithADot is TestWorkTablesInASchemaWithADot on
// MariaDB, where a table's schema is its database and Tables lists the
// DSN's database only: the ledger and an unqualified table in a database
// whose name holds a dot (x.eu), whose staging and key tables gc finds
// and drops once the import ended, telling them as they read back
// ("x.eu"._idemport_stage_…), and none left. The undo leaves them to gc
// there: MariaDB's DDL commits, so it drops inside its transaction none
// of them, and after it the table the import created, which it names.
func TestWorkTablesInADatabaseWithADot(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.MariaDB}, func(t *testing.T, name string) {
		ctx := context.Background()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		exec := func(q string) {
			t.Helper()
			if _, err := tg.DB.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		var base string
		if err := tg.DB.QueryRow(`SELECT DATABASE()`).Scan(&base); err != nil {
			t.Fatal(err)
		}
		db := base + ".eu"
		exec(`CREATE DATABASE ` + testkit.QuoteOne(db) + ` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin`)
		t.Cleanup(func() { tg.DB.Exec(`DROP DATABASE IF EXISTS ` + testkit.QuoteOne(db)) })
		u, err := url.Parse(tg.Args[1])
		if err != nil {
			t.Fatal(err)
		}
		u.Path = "/" + db
		dsn := u.String()
		path := filepath.Join(dir, "items.csv")
		if err := os.WriteFile(path, []byte("id,v\n1,a\n2,b\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		e, err := pipeline.Open(ctx, dsn, pipeline.Options{})
		if err != nil {
			t.Fatal(err)
		}
		res := e.Import(ctx, pipeline.Request{Path: path, Mapping: pipeline.Mapping{Table: "items"}})
		e.Close()
		if res.Outcome != pipeline.Imported {
			t.Fatalf("import: %s (%v)", res.Outcome, res.Err)
		}
		if got := testkit.Query(t, tg.DB, `SELECT id, v FROM `+testkit.QuoteOne(db)+`.items ORDER BY id`); len(got) != 2 {
			t.Fatalf("%s.items holds %v, want the file's two rows", db, got)
		}
		o, err := Open(ctx, dsn, pipeline.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		ops, err := o.st.Ledger.List(ctx, ledger.Filter{})
		if err != nil || len(ops) != 1 {
			t.Fatalf("operations %v (%v), want one", ops, err)
		}
		h := strconv.FormatUint(uint64(pipeline.FileKey(ops[0].Table+"\x00"+ops[0].FileID)), 16)
		work := []string{"_idemport_seen_" + h, sink.StagePrefix + h} // sorted
		var want []string
		for _, w := range work {
			want = append(want, testkit.QuoteOne(db)+"."+w)
		}
		slices.Sort(want)
		left := func() []string {
			var got []string
			for _, r := range testkit.Query(t, tg.DB, `SELECT table_name FROM information_schema.tables WHERE table_schema = ? AND table_name LIKE '\_idemport\_%' ORDER BY 1`, db) {
				got = append(got, r[0].(string))
			}
			return got
		}
		create := func() {
			for _, w := range work {
				exec(`CREATE TABLE ` + testkit.QuoteOne(db) + `.` + testkit.QuoteOne(w) + ` (id bigint)`)
			}
		}
		create()
		u2, err := o.Undo(ctx, UndoRequest{FileOrID: path})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(u2.Dropped, []string{"items"}) || !reflect.DeepEqual(left(), work) {
			t.Fatalf("the undo dropped %q, left %q; want the table it created dropped, %q left", u2.Dropped, left(), work)
		}
		rep, err := o.GC(ctx, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Sort(rep.Dropped); !reflect.DeepEqual(rep.Dropped, want) || len(left()) != 0 {
			t.Fatalf("gc dropped %q, left %q; want %q dropped, none left", rep.Dropped, left(), want)
		}
	})
}

// TestAtomicIntoADatabaseWithADot: an --atomic import on MariaDB into a
// table of another database whose name holds a dot ("x.eu".items),
// failed after its first partition committed into its staging table
// there, is undone: the undo drops the staging table it made beside the
// target (recorded as a table the import created, since MariaDB's DDL
// commits) and names it as it reads back, leaves no table of the import
// in that database, and gc then finds nothing to drop; the file imports
// anew, exactly.
func TestAtomicIntoADatabaseWithADot(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.MariaDB}, func(t *testing.T, name string) {
		ctx := context.Background()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		var base string
		if err := tg.DB.QueryRow(`SELECT DATABASE()`).Scan(&base); err != nil {
			t.Fatal(err)
		}
		db := base + ".eu"
		if _, err := tg.DB.Exec(`CREATE DATABASE ` + testkit.QuoteOne(db) + ` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin`); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tg.DB.Exec(`DROP DATABASE IF EXISTS ` + testkit.QuoteOne(db)) })
		path := filepath.Join(dir, "items.csv")
		if err := os.WriteFile(path, []byte("id,v\n1,a\n2,b\n3,c\n4,d\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		tables := func() []string {
			var got []string
			for _, r := range testkit.Query(t, tg.DB, `SELECT table_name FROM information_schema.tables WHERE table_schema = ?`, db) {
				got = append(got, r[0].(string))
			}
			slices.Sort(got)
			return got
		}
		table := testkit.QuoteOne(db) + ".items"
		req := pipeline.Request{Path: path, Mapping: pipeline.Mapping{Table: table, Atomic: true}, PartitionRows: 2}
		fp, err := failpoint.Parse("after-partition-commit:1:error")
		if err != nil {
			t.Fatal(err)
		}
		e, err := pipeline.Open(ctx, tg.Args[1], pipeline.Options{Failpoints: fp})
		if err != nil {
			t.Fatal(err)
		}
		res := e.Import(ctx, req)
		e.Close()
		if res.Err == nil {
			t.Fatalf("import: %s, want it failed at the failpoint", res.Outcome)
		}
		o, err := Open(ctx, tg.Args[1], pipeline.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		ops, err := o.st.Ledger.List(ctx, ledger.Filter{})
		if err != nil || len(ops) != 1 {
			t.Fatalf("operations %v (%v), want one", ops, err)
		}
		stage := sink.StagePrefix + strconv.FormatUint(uint64(pipeline.FileKey(ops[0].Table+"\x00"+ops[0].FileID)), 16)
		if got := tables(); !reflect.DeepEqual(got, []string{stage, "items"} /* sorted */) {
			t.Fatalf("%s holds %q after the failed import, want its staging table and items", db, got)
		}
		u, err := o.Undo(ctx, UndoRequest{FileOrID: path})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(u.Dropped)
		if want := []string{testkit.QuoteOne(db) + "." + stage, testkit.QuoteOne(db) + ".items"}; !reflect.DeepEqual(u.Dropped, want) || len(tables()) != 0 {
			t.Fatalf("the undo dropped %q, left %q; want %q dropped, nothing left", u.Dropped, tables(), want)
		}
		rep, err := o.GC(ctx, 0, false)
		if err != nil || len(rep.Dropped) != 0 {
			t.Fatalf("gc after the undo dropped %q (%v), want nothing", rep.Dropped, err)
		}
		e, err = pipeline.Open(ctx, tg.Args[1], pipeline.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if res := e.Import(ctx, req); res.Outcome != pipeline.Imported || res.Rows.Inserted != 4 {
			t.Fatalf("import again: %s (%v), rows %+v; want the 4 rows imported", res.Outcome, res.Err, res.Rows)
		}
		if got := testkit.Query(t, tg.DB, `SELECT id, v FROM `+table+` ORDER BY id`); fmt.Sprint(got) != "[[1 a] [2 b] [3 c] [4 d]]" {
			t.Fatalf("%s holds %v, want the file", table, got)
		}
		if got := tables(); !reflect.DeepEqual(got, []string{"items"}) {
			t.Fatalf("%s holds %q after the import, want items alone", db, got)
		}
	})
}
