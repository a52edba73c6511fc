package mysql

import (
	"errors"
	"slices"
	"testing"
	"time"

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

// TestMergeKeyStoredBetweenItsStatements: a key another transaction
// stores and commits after Merge's update looked for it, and before its
// insert does, is found by the insert, which skips it: Merge fails with
// sink.ErrKeyStoredMeanwhile (the classification read before it counted
// the key new), and run again in a new transaction it writes the staged
// row, newer, over the stored one. A trigger on the update of the stage's
// other row holds Merge between its statements (on a row lock the test
// holds) while another connection stores the key.
func TestMergeKeyStoredBetweenItsStatements(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{})
	f := drivertest.Open(t, drivertest.Env{DB: db, Driver: Driver{}})
	s := drivertest.Schema(drivertest.I64("id"), drivertest.I64("v"), drivertest.Str("n"))
	tg := sink.Target{Table: "t", Key: []string{"id"}, Version: "v"}
	stage := sink.StagePrefix + "t"
	f.MustEnsure(tg, s)
	f.MustEnsure(sink.Target{Table: stage, Key: []string{"id"}}, s)
	f.Exec(`CREATE TABLE gate (k INT PRIMARY KEY)`)
	f.Exec(`INSERT INTO gate VALUES (1)`)
	f.Exec(`INSERT INTO t (id, v, n, _idemport_file, _idemport_row) VALUES (2, 1, 'stored', 1, 1)`)
	f.Exec(`INSERT INTO ` + q(stage) + ` (id, v, n, _idemport_file, _idemport_row) VALUES (1, 2, 'new', 4, 1), (2, 2, 'changed', 4, 2)`)
	f.Exec(`CREATE TRIGGER hold AFTER UPDATE ON t FOR EACH ROW UPDATE gate SET k = k WHERE k = 1`)
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var merger int64
	if err := conn.QueryRowContext(t.Context(), `SELECT CONNECTION_ID()`).Scan(&merger); err != nil {
		t.Fatal(err)
	}

	gate, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Rollback()
	if _, err := gate.ExecContext(t.Context(), `UPDATE gate SET k = k WHERE k = 1`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		staged, fresh, written int64
		err                    error
	}
	done := make(chan result, 1)
	go func() {
		tx, err := conn.BeginTx(t.Context(), nil)
		if err != nil {
			done <- result{err: err}
			return
		}
		var r result
		r.staged, r.fresh, r.written, r.err = Driver{}.Merge(t.Context(), tx, tg, stage, []string{"id", "v", "n"})
		if r.err == nil {
			r.err = tx.Commit()
		} else {
			tx.Rollback()
		}
		done <- r
	}()
	// Merge's update has changed key 2 and waits, in the trigger, for the
	// gate.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		select {
		case r := <-done:
			t.Fatalf("Merge ended without waiting for the gate: %+v", r)
		default:
		}
		var waiting int64
		if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM information_schema.processlist WHERE id = ? AND info LIKE 'UPDATE gate%'`, merger).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Merge never waited for the gate")
		}
	}
	if _, err := db.ExecContext(t.Context(), `INSERT INTO t (id, v, n) VALUES (1, 1, 'meanwhile')`); err != nil {
		t.Fatal(err)
	}
	if err := gate.Rollback(); err != nil {
		t.Fatal(err)
	}
	r := receive(t, done, "Merge, after the gate rolled back,")
	if !errors.Is(r.err, sink.ErrKeyStoredMeanwhile) {
		t.Fatalf("merge: %+v, want an error wrapping sink.ErrKeyStoredMeanwhile", r)
	}
	f.Exec(`DROP TRIGGER hold`)
	tx, err := conn.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	r.staged, r.fresh, r.written, r.err = Driver{}.Merge(t.Context(), tx, tg, stage, []string{"id", "v", "n"})
	if r.err != nil {
		t.Fatalf("merge again: %v", r.err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if r.staged != 2 || r.fresh != 0 || r.written != 2 {
		t.Errorf("merge again: staged %d, fresh %d, written %d; want 2 staged, 0 new, 2 written", r.staged, r.fresh, r.written)
	}
	if got, want := drivertest.Strings(t, db, `SELECT CONCAT(id, '|', v, '|', n) FROM t ORDER BY id`), []string{"1|2|new", "2|2|changed"}; !slices.Equal(got, want) {
		t.Errorf("t holds %q, want %q", got, want)
	}
}
