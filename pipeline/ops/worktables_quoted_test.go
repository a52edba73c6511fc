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

// TestWorkTablesBesideATableOfAQuotedName: gc drops the staging and key
// tables of an ended import and names them, and leaves the user's tables
// beside them whose names begin as theirs and hold a quote, a dot or
// upper case, names none of those, and says nothing of them. A table
// named _idemport_stage_<h…>"<…h>" was listed as schema.name unquoted,
// read back as the staging table itself (the quotes quoting its tail),
// and reported dropped while it stayed. Upper case is compared exactly,
// as the drivers write names (quoted): _IDEMPORT_STAGE_<h> and
// _idemport_stage_<H> are other tables.
func TestWorkTablesBesideATableOfAQuotedName(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.Postgres, testkit.MariaDB}, func(t *testing.T, name string) {
		ctx := context.Background()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		dsn := tg.Args[1]
		opts := pipeline.Options{StateSchema: tg.Schema}
		exec := func(q string) {
			t.Helper()
			if _, err := tg.DB.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		path := filepath.Join(dir, "items.csv")
		if err := os.WriteFile(path, []byte("id,v\n1,a\n2,b\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		e, err := pipeline.Open(ctx, dsn, opts)
		if err != nil {
			t.Fatal(err)
		}
		res := e.Import(ctx, pipeline.Request{Path: path, Mapping: pipeline.Mapping{Table: "items"}})
		e.Close()
		if res.Outcome != pipeline.Imported {
			t.Fatalf("import: %s (%v)", res.Outcome, res.Err)
		}
		o, err := Open(ctx, dsn, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		ops, err := o.st.Ledger.List(ctx, ledger.Filter{})
		if err != nil || len(ops) != 1 {
			t.Fatalf("operations %v (%v), want one", ops, err)
		}
		current, err := o.st.Driver.CurrentSchema(ctx, o.st.DB)
		if err != nil {
			t.Fatal(err)
		}
		h := strconv.FormatUint(uint64(pipeline.FileKey(ops[0].Table+"\x00"+ops[0].FileID)), 16)
		ours := []string{"_idemport_seen_" + h, sink.StagePrefix + h}
		up := []byte(h)
		for i, c := range up {
			if c >= 'a' && c <= 'f' {
				up[i] = c - 'a' + 'A'
			}
		}
		users := []string{
			sink.StagePrefix + h[:4] + `"` + h[4:] + `"`, // read unquoted: the staging table itself
			"_idemport_seen_" + h[:4] + `"."` + h[4:] + `"`,
			sink.StagePrefix + h + ".x",
			"_IDEMPORT_STAGE_" + h,
		}
		if string(up) != h {
			users = append(users, sink.StagePrefix+string(up))
		}
		slices.Sort(users)
		for _, w := range append(slices.Clone(ours), users...) {
			exec(`CREATE TABLE ` + testkit.QuoteOne(current) + `.` + testkit.QuoteOne(w) + ` (id bigint)`)
		}
		left := func() []string {
			q := `SELECT tablename FROM pg_tables WHERE schemaname = $1 AND lower(tablename) LIKE '\_idemport\_%' ORDER BY 1`
			if tg.IsMariaDB() {
				q = `SELECT table_name FROM information_schema.tables WHERE table_schema = ? AND lower(table_name) LIKE '\_idemport\_%' ORDER BY 1`
			}
			var got []string
			for _, r := range testkit.Query(t, tg.DB, q, current) {
				got = append(got, r[0].(string))
			}
			slices.Sort(got)
			return got
		}
		rep, err := o.GC(ctx, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, w := range ours {
			want = append(want, o.st.Driver.Limits().JoinTable(current, w))
		}
		if slices.Sort(rep.Dropped); !reflect.DeepEqual(rep.Dropped, want) || !reflect.DeepEqual(left(), users) {
			t.Fatalf("gc dropped %q, left %q; want %q dropped, the user's %q left", rep.Dropped, left(), want, users)
		}
	})
}
