package mysql

import (
	"slices"
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// TestMerge: a staged import moves its rows in by the key's value (1.500
// updates the row of 1.50 and takes its text, 10.0 the row of 10), leaves
// an identical row alone, inserts a new one, and with a version column
// does not apply an older row; Classify, run first, says so of each.
func TestMerge(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{})
	f := drivertest.Open(t, drivertest.Env{DB: db, Driver: Driver{}})
	s := drivertest.Schema(drivertest.Dec("k"), drivertest.Str("v"), drivertest.I64("ver"))
	tg := sink.Target{Table: "t", Key: []string{"k"}, Version: "ver"}
	stage := sink.StagePrefix + "t"
	f.MustEnsure(tg, s)
	f.MustEnsure(sink.Target{Table: stage, Key: []string{"k"}}, s)
	f.Exec(`INSERT INTO t (k, v, ver, _idemport_file, _idemport_row) VALUES ('1.50', 'a', 1, 1, 1), ('10', 'e', 1, 1, 2), ('100', 'd', 1, 1, 3), ('7', 'old', 5, 1, 4)`)
	f.Exec(`INSERT INTO ` + q(stage) + ` (k, v, ver, _idemport_file, _idemport_row) VALUES ('1.500', 'a', 1, 4, 1), ('10.0', 'E', 2, 4, 2), ('100', 'd', 1, 4, 3),
		('3', 'z', 1, 4, 4), ('7.0', 'older', 4, 4, 5)`)
	d := Driver{}
	cols := []string{"k", "v", "ver"}
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	classes, err := d.Classify(t.Context(), tx, tg, stage, cols, "0")
	if err != nil {
		t.Fatal(err)
	}
	drivertest.WantRows(t, "classify", classes[0], idemtype.Rows{Read: 5, Inserted: 1, Updated: 2, Unchanged: 1, Stale: 1})
	staged, fresh, written, err := d.Merge(t.Context(), tx, tg, stage, cols)
	if err != nil {
		t.Fatal(err)
	}
	if staged != 5 || fresh != 1 || written != 3 {
		t.Errorf("merge: staged %d, fresh %d, written %d; want 5, 1, 3", staged, fresh, written)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	got := drivertest.Strings(t, db, `SELECT concat_ws('|', k, v, ver, `+q(sink.FileColumn)+`, `+q(sink.RowColumn)+`) FROM t`)
	slices.Sort(got)
	want := []string{"1.500|a|1|4|1", "10.0|E|2|4|2", "100|d|1|1|3", "3|z|1|4|4", "7|old|5|1|4"}
	if !slices.Equal(got, want) {
		t.Errorf("after the merge:\n%q\nwant\n%q", got, want)
	}
}
