package pipeline

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestQuotedTableNameWithDot imports into a schema-qualified table whose
// quoted name holds a dot ("snap.items" in the target's schema, or
// database on MariaDB) by key, as snapshots (the second sweeps the keys
// the first had and it lacks, through the table of seen keys beside the
// target) and atomically (through a staging table beside it). Every
// statement reads the name as one function does: the rows land in that
// table, the sweep finds its tables, and none is left over. Before, on
// PostgreSQL the name was split at every dot and named no table.
func TestQuotedTableNameWithDot(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.Postgres, testkit.MariaDB}, func(t *testing.T, name string) {
		ctx := context.Background()
		f := newFx(t, name)
		schema := f.tg.Schema
		table := `"` + schema + `"."snap.items"`
		if f.tg.IsMariaDB() {
			schema = fmt.Sprint(f.rows(t, `SELECT DATABASE()`)[0][0])
			table = "`" + schema + "`.`snap.items`"
		}
		snap := Mapping{Table: table, Key: []string{"id"}, Snapshot: &Snapshot{}}
		f.wantOutcome(t, f.e.Import(ctx, Request{Path: f.write(t, "mon.csv", items(10, 1)), Mapping: snap}), Imported)
		tue := Request{Path: f.write(t, "tue.csv", items(8, 2)), Mapping: snap, MaxDelete: &RejectLimit{Percent: 50}}
		if res := f.e.Import(ctx, tue); res.Outcome != Imported || res.Deleted != 2 {
			t.Fatalf("the second snapshot: %s, %d deleted, %v; want imported, 2 deleted", res.Outcome, res.Deleted, res.Err)
		}
		if got, want := f.rows(t, `SELECT count(*), `+f.tg.Sum("qty")+` FROM `+testkit.QuoteOne(schema)+`.`+testkit.QuoteOne("snap.items")), [][]any{{int64(8), int64(72)}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("snap.items after the sweep (rows, sum of qty): %v, want %v", got, want)
		}
		atomic := Mapping{Table: table, Key: []string{"id"}, Atomic: true}
		f.wantOutcome(t, f.e.Import(ctx, Request{Path: f.write(t, "wed.csv", items(12, 3)), Mapping: atomic}), Imported)
		if got, want := f.rows(t, `SELECT count(*), `+f.tg.Sum("qty")+` FROM `+testkit.QuoteOne(schema)+`.`+testkit.QuoteOne("snap.items")), [][]any{{int64(12), int64(234)}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("snap.items after the atomic import (rows, sum of qty): %v, want %v", got, want)
		}
		var targets []string
		for _, r := range f.rows(t, `SELECT table_name FROM information_schema.tables WHERE table_schema = ? ORDER BY 1`, schema) {
			if n := fmt.Sprint(r[0]); strings.Contains(n, "items") || strings.HasPrefix(n, "_idemport_") {
				targets = append(targets, n)
			}
		}
		if want := []string{"snap.items"}; !reflect.DeepEqual(targets, want) {
			t.Fatalf("tables of the imports in %s: %q, want %q alone (no staging or seen table left, no other table written)", schema, targets, want)
		}
	})
}

// TestTableNameOfThreePartsRefused: a --table of more than two parts is
// refused before any effect, as a usage error naming the flag and the
// name, on every database whose names are qualified, rather than read as
// some two of its parts.
func TestTableNameOfThreePartsRefused(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.Postgres, testkit.MariaDB}, func(t *testing.T, name string) {
		f := newFx(t, name)
		path := f.write(t, "items.csv", items(3, 1))
		for _, table := range []string{"a.b.c", `"a"."b"."c.d"`} {
			res := f.e.Import(context.Background(), Request{Path: path, Mapping: Mapping{Table: table}})
			want := "--table " + table + ": it has 3 parts; a table name is table or schema.table"
			if res.Outcome != Failed || !errors.As(res.Err, new(*UsageError)) || !strings.Contains(res.Err.Error(), want) {
				t.Errorf("--table %s: %s %v, want a usage error %q", table, res.Outcome, res.Err, want)
			}
		}
		if got := f.rows(t, `SELECT count(*) FROM `+f.tg.Ledger("operations")); !reflect.DeepEqual(got, [][]any{{int64(0)}}) {
			t.Errorf("operations after the refusals: %v, want none", got)
		}
	})
}
