package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// growGroupRows is the rows of TestGrownGroupKilledThenRerun's file: the
// first growGroupNarrow of a few bytes each, the others of 14 or so.
const (
	growGroupRows   = 860000
	growGroupNarrow = 400000
)

// TestGrownGroupKilledThenRerun kills the binary importing into SQLite by
// --key, without --partition-rows, a file of shuffled keys inside a group
// of its grown partitions, then reruns it. The file's first 400000 rows
// are narrow and its later ones wider, with --partition-bytes 2MiB: the
// partitions grow by rows (100000, 100000, 200000), and then each is cut
// by its bytes at about 151000 rows, more than --partition-rows would
// give and fewer than the 400000 done before it, so that the fourth, the
// fifth and the sixth are one group (pipeline/group.go), as a file of
// wide rows makes them with the default 64 MiB, without the 2.6 million
// rows a group of partitions grown to 1000000 rows needs. The run stops
// (SIGSTOP) where the fifth partition has passed before-partition-commit:
// its log says the first three committed and no other, the ledger, read
// beside it, says three done, so the fourth and the fifth are written and
// marked done in a transaction still open. It is then killed (SIGKILL):
// the group's partitions are not done, nor its rows in the table. The
// rerun applies the group again: the table holds the file, every value
// compared as text, each key once; the ledger says completed, every
// partition done once, the attempts' counts adding up to the file's.
// The table exists before, made and filled by SQL without the lineage
// columns, so that no overlap writes partitions beside the plan pass
// (pipeline/overlap.go serves neither a new table here nor one the plan
// must alter) and each partition passes the failpoint.
func TestGrownGroupKilledThenRerun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.SQLite, dir)
	ids := make([]int, growGroupRows)
	for i := range ids {
		ids[i] = i + 1
	}
	rand.New(rand.NewPCG(19, 23)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	want := make([]string, growGroupRows+4) // by id: v as text
	var b strings.Builder
	b.WriteString("id,v\n")
	for i, id := range ids {
		v := string(rune('a' + i%26))
		if i >= growGroupNarrow {
			v = fmt.Sprintf("w%05d", i%100000)
		}
		if i%1000 == 999 {
			v = "" // an unquoted empty field is NULL
		}
		fmt.Fprintf(&b, "%d,%s\n", id, v)
		if v == "" {
			v = nullText
		}
		want[id] = v
	}
	write(t, dir, "items.csv", b.String())
	if _, err := tg.DB.Exec(fmt.Sprintf(`CREATE TABLE items (id INTEGER PRIMARY KEY, v TEXT);
		INSERT INTO items VALUES (%d, 's1'), (%d, NULL), (%d, 's3')`, growGroupRows+1, growGroupRows+2, growGroupRows+3)); err != nil {
		t.Fatal(err)
	}
	want[growGroupRows+1], want[growGroupRows+2], want[growGroupRows+3] = "s1", nullText, "s3"
	args := []string{"--table", "items", "--key", "id", "--partition-bytes", "2MiB"}

	log := filepath.Join(dir, "killed.log")
	cmd := tg.Cmd(t, dir, []string{"IDEMPORT_FAILPOINT=before-partition-commit:5:stop"},
		append(append([]string{"import", "--output", "json", "--log-format", "json", "--log-level", "debug"}, args...), "items.csv")...)
	s := stopped(t, startLogging(t, cmd, log))
	fileID := testkit.Query(t, tg.DB, `SELECT file_id FROM `+tg.Ledger("operations")+` WHERE file_path LIKE '%items.csv'`)
	if len(fileID) != 1 {
		t.Fatalf("%d operations of items.csv", len(fileID))
	}
	ledger := func(q string) string {
		return fmt.Sprint(testkit.Query(t, tg.DB, q, fileID[0][0]))
	}
	var sizes []int64
	for _, r := range testkit.Query(t, tg.DB, `SELECT row_count FROM `+tg.Ledger("partitions")+` WHERE file_id = ? ORDER BY idx`, fileID[0][0]) {
		sizes = append(sizes, r[0].(int64))
	}
	// Grown by rows, then cut by bytes: the fourth and fifth join the
	// group the fourth begins (their rows fewer than the 400000 done),
	// the sixth closes it.
	if len(sizes) != 7 || !slices.Equal(sizes[:3], []int64{100000, 100000, 200000}) || slices.Min(sizes[3:6]) <= 100000 ||
		sizes[3]+sizes[4] >= 400000 || sizes[3]+sizes[4]+sizes[5] < 400000 {
		t.Fatalf("the plan's partitions hold %v rows: not grown by rows and then cut by bytes into a group of three", sizes)
	}
	if g := ledger(`SELECT json_extract(body, '$.grow_to') FROM ` + tg.Ledger("plans") + ` WHERE file_id = ?`); g != "[[1000000]]" {
		t.Fatalf("the stored plan grows to %s rows, want 1000000", g)
	}
	doneNow := func() string {
		return ledger(`SELECT idx FROM ` + tg.Ledger("partitions") + ` WHERE file_id = ? AND done = 1 ORDER BY idx`)
	}
	if d := doneNow(); d != "[[0] [1] [2]]" {
		t.Fatalf("partitions done while the run is stopped at the fifth's before-partition-commit: %s, want 0, 1 and 2", d)
	}
	if c := committedIn(t, log); !slices.Equal(c, []int64{0, 1, 2}) {
		t.Fatalf("the stopped run's log says partitions %v committed, want 0, 1 and 2: the fourth and fifth not in one open transaction", c)
	}
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if r := testkit.Wait(t, s.cmd); r.Signal != syscall.SIGKILL {
		t.Fatalf("not killed: exit %d\n%s", r.Code, r.Stdout)
	}
	if d := doneNow(); d != "[[0] [1] [2]]" {
		t.Fatalf("partitions done after the kill: %s, want 0, 1 and 2", d)
	}
	if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM items`); n != growGroupNarrow+3 {
		t.Fatalf("the table holds %d rows after the kill, want %d: the killed group's rows stayed", n, growGroupNarrow+3)
	}

	res := importTo(t, tg, dir, nil, 0, append(args, "items.csv")...)
	if res.Outcome != "resumed" || res.Partitions.Skipped != 3 || res.Partitions.Committed != 4 ||
		res.Rows.Inserted != growGroupRows-growGroupNarrow || res.Rows.Read != growGroupRows-growGroupNarrow {
		t.Fatalf("the rerun: %s, partitions %+v, rows %+v; want resumed, 3 skipped, 4 committed, %d rows inserted",
			res.Outcome, res.Partitions, res.Rows, growGroupRows-growGroupNarrow)
	}
	checkGrownGroup(t, tg, want)
	if op := ledger(`SELECT state, rows_read, rows_inserted FROM ` + tg.Ledger("operations") + ` WHERE file_id = ?`); op != fmt.Sprintf("[[completed %d %d]]", growGroupRows, growGroupRows) {
		t.Fatalf("items.csv's operation (state, read, inserted) %s, want completed with %d", op, growGroupRows)
	}
	if d := doneNow(); d != "[[0] [1] [2] [3] [4] [5] [6]]" {
		t.Fatalf("partitions done at the end: %s", d)
	}
	// Each attempt counted the partitions it committed: the killed one the
	// three before the group, the rerun the four after.
	att := ledger(`SELECT rows_inserted, partitions_committed FROM ` + tg.Ledger("attempts") + ` WHERE file_id = ? ORDER BY started_at, rowid`)
	if want := fmt.Sprintf("[[%d 3] [%d 4]]", growGroupNarrow, growGroupRows-growGroupNarrow); att != want {
		t.Fatalf("the attempts counted (rows, partitions) %s, want %s", att, want)
	}
}

// committedIn returns the partitions the JSON log in the file path says
// committed, in its order.
func committedIn(t *testing.T, path string) []int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct {
			Msg       string `json:"msg"`
			Partition int64  `json:"partition"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: not a JSON log line: %v\n%s", path, err, sc.Text())
		}
		if l.Msg == "partition committed" {
			out = append(out, l.Partition)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkGrownGroup asserts that table items holds exactly want: the row of
// id i, for each i whose want[i] is set, with v as text.
func checkGrownGroup(t *testing.T, tg *testkit.Target, want []string) {
	t.Helper()
	rows, err := tg.DB.Query(`SELECT id, CAST(id AS TEXT), coalesce(CAST(v AS TEXT), '` + nullText + `') FROM items ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	next := int64(1)
	for rows.Next() {
		var id int64
		var text, v string
		if err := rows.Scan(&id, &text, &v); err != nil {
			t.Fatal(err)
		}
		if id != next || text != fmt.Sprint(id) || id >= int64(len(want)) || v != want[id] {
			t.Fatalf("table items: row %s %q after id %d, want id %d with %q", text, v, next-1, next, want[min(next, int64(len(want)-1))])
		}
		next++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if next != int64(len(want)) {
		t.Fatalf("table items holds ids 1 to %d, want 1 to %d", next-1, len(want)-1)
	}
	if n := testkit.Int(t, tg.DB, `SELECT count(DISTINCT id) FROM items`); n != int64(len(want)-1) {
		t.Fatalf("%d distinct ids, want %d", n, len(want)-1)
	}
}
