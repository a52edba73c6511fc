package ops

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline"
	"github.com/idemport/idemport/sink"
)

// TestWorkTablesInASchemaWithADot: the staging and key tables of an
// import into a table of a schema whose name holds a dot ("s.eu".items)
// are found and dropped by gc once the import ended, and by its undo,
// each telling the tables it dropped as they read back; before, their
// listed names (s.eu._idemport_stage_…) read as three parts and the DROP
// went to a table of that whole name, leaving them while saying them
// dropped.
func TestWorkTablesInASchemaWithADot(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.Postgres}, func(t *testing.T, name string) {
		ctx := context.Background()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		dsn, state := tg.Args[1], tg.Schema
		exec := func(q string) {
			t.Helper()
			if _, err := tg.DB.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		schema := tg.Schema + ".eu"
		exec(`CREATE SCHEMA ` + testkit.QuoteOne(schema))
		t.Cleanup(func() { tg.DB.Exec(`DROP SCHEMA ` + testkit.QuoteOne(schema) + ` CASCADE`) })
		path := filepath.Join(dir, "items.csv")
		if err := os.WriteFile(path, []byte("id,v\n1,a\n2,b\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		table := testkit.QuoteOne(schema) + ".items"
		e, err := pipeline.Open(ctx, dsn, pipeline.Options{StateSchema: state})
		if err != nil {
			t.Fatal(err)
		}
		res := e.Import(ctx, pipeline.Request{Path: path, Mapping: pipeline.Mapping{Table: table}})
		e.Close()
		if res.Outcome != pipeline.Imported {
			t.Fatalf("import: %s (%v)", res.Outcome, res.Err)
		}
		o, err := Open(ctx, dsn, pipeline.Options{StateSchema: state})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		ops, err := o.st.Ledger.List(ctx, ledger.Filter{})
		if err != nil || len(ops) != 1 {
			t.Fatalf("operations %v (%v), want one", ops, err)
		}
		h := strconv.FormatUint(uint64(pipeline.FileKey(ops[0].Table+"\x00"+ops[0].FileID)), 16)
		work := []string{sink.StagePrefix + h, "_idemport_seen_" + h}
		var want []string
		for _, w := range work {
			want = append(want, testkit.QuoteOne(schema)+"."+w)
		}
		slices.Sort(want)
		left := func() []string {
			var got []string
			for _, r := range testkit.Query(t, tg.DB, `SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename LIKE '\_idemport\_%' ORDER BY 1`, schema) {
				got = append(got, r[0].(string))
			}
			return got
		}
		create := func() {
			for _, w := range work {
				exec(`CREATE TABLE ` + testkit.QuoteOne(schema) + `.` + testkit.QuoteOne(w) + ` (id bigint)`)
			}
		}
		create()
		rep, err := o.GC(ctx, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Sort(rep.Dropped); !reflect.DeepEqual(rep.Dropped, want) || len(left()) != 0 {
			t.Fatalf("gc dropped %q, left %q; want %q dropped, none left", rep.Dropped, left(), want)
		}
		create()
		u, err := o.Undo(ctx, UndoRequest{FileOrID: path})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Sort(u.Dropped); !reflect.DeepEqual(u.Dropped, want) || len(left()) != 0 {
			t.Fatalf("the undo dropped %q, left %q; want %q dropped, none left", u.Dropped, left(), want)
		}
	})
}
