package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestRejectsReplayKeepsIdentity quarantines bad rows, exports them, fixes
// them and replays them: each lands under its original identity (file key
// and ordinal), as an attempt with trigger replay, and a second replay
// changes nothing.
func TestRejectsReplayKeepsIdentity(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := "id,qty,note\n1,5,ok\n2,five,\"needs, a fix\"\n3,7,ok\n4,x,fix me too\n5,9,ok\n"
	os.WriteFile(filepath.Join(dir, "items.csv"), []byte(data), 0o644)
	res := importJSON(t, dir, nil, 0, "--column", "qty:int64", "--max-rejects", "2", "items.csv")
	if res.Rows.Inserted != 3 || res.Rows.Rejected != 2 {
		t.Fatalf("import: %+v", res)
	}
	list := testkit.Exec(t, dir, nil, "rejects", "list", "items.csv")
	if list.Code != 0 || !strings.Contains(list.Stdout, "items ← "+res.FileID+": 2 rejected rows") ||
		!strings.Contains(list.Stdout, `"five"`) || !strings.Contains(list.Stdout, `"x"`) || !strings.Contains(list.Stdout, "not a valid int64") {
		t.Fatalf("list: %d %s %s", list.Code, list.Stdout, list.Stderr)
	}
	export := testkit.Exec(t, dir, nil, "rejects", "export", "items.csv")
	want := "_idemport_table,_idemport_file_id,_idemport_row,id,qty,note\n" +
		"items," + res.FileID + ",2,2,five,\"needs, a fix\"\n" +
		"items," + res.FileID + ",4,4,x,fix me too\n"
	if export.Code != 0 || export.Stdout != want {
		t.Fatalf("export: %d\n%s\nwant\n%s%s", export.Code, export.Stdout, want, export.Stderr)
	}

	// Still bad: nothing is applied, exit 5.
	os.WriteFile(filepath.Join(dir, "bad.csv"), []byte(strings.Replace(export.Stdout, ",x,", ",y,", 1)), 0o644)
	if r := testkit.Exec(t, dir, nil, "rejects", "replay", "bad.csv"); r.Code != 5 || !strings.Contains(r.Stderr, "still bad") {
		t.Fatalf("replay of a still bad row: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	fixed := strings.Replace(strings.Replace(export.Stdout, ",five,", ",55,", 1), ",x,", ",44,", 1)
	os.WriteFile(filepath.Join(dir, "fix.csv"), []byte(fixed), 0o644)
	first := testkit.Exec(t, dir, nil, "rejects", "replay", "fix.csv")
	if first.Code != 0 || !strings.Contains(first.Stdout, "replayed 2 rows into items") || !strings.Contains(first.Stdout, "2 inserted") {
		t.Fatalf("replay: %d %s %s", first.Code, first.Stdout, first.Stderr)
	}
	db := testkit.Open(t, filepath.Join(dir, "idemport.db"))
	got := testkit.Query(t, db, `SELECT _idemport_row, id, qty, note FROM items ORDER BY _idemport_row`)
	wantRows := [][]any{{int64(1), int64(1), int64(5), "ok"}, {int64(2), int64(2), int64(55), "needs, a fix"}, {int64(3), int64(3), int64(7), "ok"},
		{int64(4), int64(4), int64(44), "fix me too"}, {int64(5), int64(5), int64(9), "ok"}}
	if !reflect.DeepEqual(got, wantRows) {
		t.Fatalf("target after replay: %v", got)
	}
	if n := testkit.Int(t, db, `SELECT count(DISTINCT _idemport_file) FROM items`); n != 1 {
		t.Fatalf("replayed rows carry %d file keys, want the source file's one", n)
	}
	again := testkit.Exec(t, dir, nil, "rejects", "replay", "fix.csv")
	if again.Code != 0 || !strings.Contains(again.Stdout, "0 inserted, 0 updated, 2 unchanged") {
		t.Fatalf("second replay: %d %s %s", again.Code, again.Stdout, again.Stderr)
	}
	if after := testkit.Query(t, db, `SELECT _idemport_row, id, qty, note FROM items ORDER BY _idemport_row`); !reflect.DeepEqual(after, wantRows) {
		t.Fatalf("the second replay changed the target: %v", after)
	}
	attempts := testkit.Query(t, db, `SELECT trigger, outcome, rows_inserted, rows_unchanged FROM idemport_attempts ORDER BY started_at`)
	if want := [][]any{{"manual", "imported", int64(3), int64(0)}, {"replay", "replayed", int64(2), int64(0)}, {"replay", "replayed", int64(0), int64(2)}}; !reflect.DeepEqual(attempts, want) {
		t.Fatalf("attempts: %v", attempts)
	}
	if n := testkit.Int(t, db, `SELECT count(*) FROM idemport_rejects WHERE replayed_by IS NOT NULL`); n != 2 {
		t.Fatalf("%d rejects marked replayed", n)
	}
	// A row that was never rejected cannot be replayed.
	os.WriteFile(filepath.Join(dir, "wrong.csv"), []byte(strings.Replace(fixed, "items,"+res.FileID+",4,", "items,"+res.FileID+",3,", 1)), 0o644)
	if r := testkit.Exec(t, dir, nil, "rejects", "replay", "wrong.csv"); r.Code != 5 || !strings.Contains(r.Stderr, "rows 3 of") {
		t.Fatalf("replay of a row that was not rejected: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
}
