package mysql

import (
	"fmt"
	"slices"
	"testing"

	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// TestCompare: Compare finds the file's keys in the table by value (1.50
// is the row of 1.5) and reports, among the rows of one file, the values
// that differ as text, decimals by their text (1.50 is not 1.5) and the
// empty string apart from NULL, as drivertest's
// CompareFindsKeysAndValues does once the Writer is there.
func TestCompare(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{})
	f := drivertest.Open(t, drivertest.Env{DB: db, Driver: Driver{}})
	s := drivertest.Schema(drivertest.Dec("k"), drivertest.Str("v"), drivertest.Dec("d"))
	tg := sink.Target{Table: "t", Key: []string{"k"}}
	f.MustEnsure(tg, s)
	f.Exec(`INSERT INTO t (k, v, d, _idemport_file, _idemport_row) VALUES
		('1.5', 'a', '1.50', 1, 1), ('2', 'b', NULL, 1, 2), ('3', '', '7', 1, 3), ('4', 'd', '1', 2, 1)`)
	d := Driver{}
	table, err := d.Describe(t.Context(), db, "t")
	if err != nil || table == nil {
		t.Fatalf("describe t: %v, %v", table, err)
	}
	rows := [][]any{{"1.50", "a", "1.5"}, {"2", "b", nil}, {"3", nil, "7"}, {"4", "x", "1"}, {"9", "a", "1"}, {"2", "b", nil}}
	compare := func(cols []string) (int64, []string) {
		t.Helper()
		c := sink.Comparison{Target: tg, Table: table, FileKey: 1, Columns: cols}
		for _, r := range rows {
			row := []any{r[0]}
			for _, col := range cols {
				row = append(row, r[s.FieldIndices(col)[0]])
			}
			c.Rows = append(c.Rows, row)
		}
		var got []string
		present, err := d.Compare(t.Context(), db, c, func(dr sink.Differing) error {
			line := dr.Key[0].String
			for j, col := range cols {
				if dr.Differs[j] {
					line += fmt.Sprintf(" %s:%v→%v", col, dr.Stored[j], dr.File[j])
				}
			}
			got = append(got, line)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		return present, got
	}
	if present, got := compare(nil); present != 5 || got != nil {
		t.Errorf("keys only: %d present, differing %q; want 5 and none", present, got)
	}
	cols := sink.Rewritten(table, tg, []string{"k", "v", "d"})
	present, got := compare(cols)
	if want := []string{"1.5 k:{1.5 true}→{1.50 true} d:{1.50 true}→{1.5 true}", "3 v:{ true}→{ false}"}; present != 5 || !slices.Equal(got, want) {
		t.Errorf("values of %q: %d present, differing %q; want 5 and %q", cols, present, got, want)
	}
}
