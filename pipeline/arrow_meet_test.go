package pipeline

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/internal/testkit"
)

// meetRows is the rows of the Arrow files of TestArrowRangesMeet, and
// meetPartRows its --partition-rows: one record batch cut into 17 ranges
// of 7,058 or 7,059 rows.
const (
	meetRows     = overlapParquetRows
	meetPartRows = 7_000
)

// TestArrowRangesMeet runs two imports at once into one table, the first
// an Arrow IPC file of one record batch cut into ranges of its rows, as
// the decision table says they meet:
//
//   - join: the same file, the first import stopped after its first range
//     committed, holding the lease of the second: the other joins, commits
//     every other range (the first it reads alone, decoding the batch's
//     rows before it, the next in order) and waits; the first, let go,
//     commits its range.
//   - busy: the same file, the first import stopped holding the planning
//     lease: the other is busy and writes nothing; with --wait it waits
//     and ends a duplicate or joins.
//   - key: another Arrow file of one record batch by --key with
//     --version-col, half its keys the first file's, imported whole while
//     the first stopped after its first range; then the first let go. For
//     each key the row of the higher version wins, whichever import wrote
//     first.
//
// Each ends with the table, value by value as text with each row's
// lineage (file and row), the same as the files imported one after the
// other, alone, into another table; each key or row once; the operations
// completed with every row read counted once. On every target.
func TestArrowRangesMeet(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Run("join", func(t *testing.T) {
			t.Parallel()
			f := newFx(t, name)
			rec := overlapRecord(t, 0)
			defer rec.Release()
			req := Request{Path: writeArrowFile(t, f.dir, "data.arrow", rec), Mapping: Mapping{Table: "t"}, PartitionRows: meetPartRows, Lease: time.Minute}
			total := int64(meetRows / meetPartRows)
			h := f.holdPartition(t, req) // range 0 committed, 1 held
			waits := make(chan struct{}, 1)
			joined := make(chan *Result, 1)
			jreq := req
			jreq.Progress = func(p Progress) {
				if p.Phase == "apply" && p.Partitions == total-1 {
					select { // every range but the held one done: the joiner waits
					case waits <- struct{}{}:
					default:
					}
				}
			}
			go func() { joined <- f.open(t, Options{}).Import(context.Background(), jreq) }()
			select {
			case <-waits:
			case res := <-joined:
				t.Fatalf("the joiner ended before the held range: %s %+v (%v)", res.Outcome, res.Partitions, res.Err)
			case <-time.After(2 * time.Minute):
				t.Fatal("the joiner did not commit the free ranges")
			}
			held := h.finish()
			res := <-joined
			if held.Err != nil || res.Err != nil || res.Outcome != Resumed {
				t.Fatalf("the holder %s (%v), the joiner %s (%v), want the joiner resumed", held.Outcome, held.Err, res.Outcome, res.Err)
			}
			if c := held.Partitions.Committed + res.Partitions.Committed; c != total || held.Partitions.Committed != 2 {
				t.Fatalf("the holder committed %d ranges, the joiner %d; want 2 and %d", held.Partitions.Committed, res.Partitions.Committed, total-2)
			}
			if r := held.Rows.Read + res.Rows.Read; r != meetRows {
				t.Fatalf("%d rows read by both, want %d", r, meetRows)
			}
			checkMeet(t, f, []string{req.Path}, Mapping{}, meetRows)
		})
		t.Run("busy", func(t *testing.T) {
			t.Parallel()
			f := newFx(t, name)
			rec := overlapRecord(t, 0)
			defer rec.Release()
			req := Request{Path: writeArrowFile(t, f.dir, "data.arrow", rec), Mapping: Mapping{Table: "t"}, PartitionRows: meetPartRows, Lease: time.Minute}
			h := f.holdPlanning(t, req)
			if res := f.open(t, Options{}).Import(context.Background(), req); res.Outcome != Busy || res.Partitions.Committed != 0 || res.Rows.Read != 0 {
				t.Fatalf("%s %+v %+v (%v), want busy with nothing written", res.Outcome, res.Partitions, res.Rows, res.Err)
			}
			if f.tg.TableExists(t, "t") {
				t.Fatal("a busy run left the table")
			}
			waiting := make(chan *Result, 1)
			wreq := req
			wreq.Wait = 2 * time.Minute
			go func() { waiting <- f.open(t, Options{}).Import(context.Background(), wreq) }()
			time.Sleep(200 * time.Millisecond) // let it find the lease held
			held := h.finish()
			res := <-waiting
			if held.Err != nil || held.Outcome != Imported || res.Err != nil || (res.Outcome != Duplicate && res.Outcome != Resumed) {
				t.Fatalf("the holder %s (%v), the waiter %s (%v), want imported, and a duplicate or resumed", held.Outcome, held.Err, res.Outcome, res.Err)
			}
			if c := held.Partitions.Committed + res.Partitions.Committed; c != meetRows/meetPartRows {
				t.Fatalf("%d ranges committed by both, want %d", c, meetRows/meetPartRows)
			}
			checkMeet(t, f, []string{req.Path}, Mapping{}, meetRows)
		})
		t.Run("key", func(t *testing.T) {
			t.Parallel()
			f := newFx(t, name)
			rec := overlapRecord(t, 0)
			defer rec.Release()
			other := shiftedRecord(t, rec, meetRows/2)
			defer other.Release()
			m := Mapping{Table: "t", Key: []string{"id"}, Version: "qty"}
			first := Request{Path: writeArrowFile(t, f.dir, "first.arrow", rec), Mapping: m, PartitionRows: meetPartRows, Lease: time.Minute}
			second := Request{Path: writeArrowFile(t, f.dir, "second.arrow", other), Mapping: m, PartitionRows: meetPartRows, Lease: time.Minute}
			h := f.holdPartition(t, first) // range 0 committed, 1 held
			res := f.open(t, Options{}).Import(context.Background(), second)
			if res.Err != nil || res.Outcome != Imported || res.Partitions.Committed != meetRows/meetPartRows {
				t.Fatalf("the other file: %s %+v (%v)", res.Outcome, res.Partitions, res.Err)
			}
			if held := h.finish(); held.Err != nil || held.Outcome != Imported || held.Partitions.Committed != meetRows/meetPartRows {
				t.Fatalf("the held file: %s %+v (%v)", held.Outcome, held.Partitions, held.Err)
			}
			checkMeet(t, f, []string{first.Path, second.Path}, m, meetRows*3/2)
			// Of the keys both files hold, the even ones keep the second
			// file's row (its qty the first's row 2's plus 2001), the odd
			// ones the first's (60001 % 2001 - 1000).
			if got := f.rows(t, `SELECT `+f.tg.Text("qty")+` FROM t WHERE id IN (60001, 60002) ORDER BY id`); fmt.Sprint(got) != "[[972] [1003]]" {
				t.Fatalf("qty of ids 60001 and 60002: %v, want 972 and 1003", got)
			}
		})
	})
}

// shiftedRecord returns rec with its ids shifted by shift and its qty (the
// version column) moved above every qty of rec for even ids and below
// every one for odd ids: imported by key with --version-col qty after or
// before rec, the keys both files hold keep this record's row where the id
// is even, rec's where it is odd.
func shiftedRecord(t *testing.T, rec arrow.RecordBatch, shift int64) arrow.RecordBatch {
	t.Helper()
	n := int(rec.NumRows())
	ids := array.NewInt64Builder(memory.DefaultAllocator)
	defer ids.Release()
	qty := array.NewInt32Builder(memory.DefaultAllocator)
	defer qty.Release()
	oldIDs, oldQty := rec.Column(0).(*array.Int64), rec.Column(8).(*array.Int32)
	if rec.Schema().Field(0).Name != "id" || rec.Schema().Field(8).Name != "qty" {
		t.Fatalf("schema %v: want id first and qty ninth", rec.Schema())
	}
	for i := range n {
		id := oldIDs.Value(i) + shift
		ids.Append(id)
		if id%2 == 0 {
			qty.Append(oldQty.Value(i) + 2001)
		} else {
			qty.Append(oldQty.Value(i) - 2001)
		}
	}
	cols := make([]arrow.Array, rec.NumCols())
	copy(cols, rec.Columns())
	cols[0], cols[8] = ids.NewArray(), qty.NewArray()
	defer cols[0].Release()
	defer cols[8].Release()
	return array.NewRecordBatch(rec.Schema(), cols, int64(n))
}

// checkMeet checks table t against the files of paths imported with m one
// after the other, alone, into table ref: value by value as text, with
// each row's lineage; rows rows, each key (or file row) once; every
// operation completed, and the rows read counted once across attempts.
func checkMeet(t *testing.T, f *fx, paths []string, m Mapping, rows int) {
	t.Helper()
	ref := f.open(t, Options{})
	for _, p := range paths {
		rm := m
		rm.Table = "ref"
		r := ref.Import(context.Background(), Request{Path: p, Mapping: rm, PartitionRows: int64(meetRows), Lease: time.Minute})
		if r.Err != nil || r.Outcome != Imported {
			t.Fatalf("the import alone of %s: %s (%v)", p, r.Outcome, r.Err)
		}
	}
	got, want := meetTableText(t, f, "t"), meetTableText(t, f, "ref")
	if len(got) != rows {
		t.Fatalf("t holds %d rows, want %d", len(got), rows)
	}
	for i := range max(len(got), len(want)) {
		if i >= len(got) || i >= len(want) || got[i] != want[i] {
			t.Fatalf("t holds %d rows, the imports alone %d; they differ at row %d:\n%q\n%q",
				len(got), len(want), i, got[min(i, len(got)-1)], want[min(i, len(want)-1)])
		}
	}
	if n := testkit.Int(t, f.tg.DB, `SELECT count(DISTINCT `+f.tg.Text("id")+`) FROM t`); n != int64(rows) {
		t.Fatalf("%d distinct ids, want %d", n, rows)
	}
	ops := f.rows(t, `SELECT state, rows_read FROM `+f.tg.Ledger("operations")+` WHERE table_name = 't'`)
	if len(ops) != len(paths) {
		t.Fatalf("operations into t %v, want %d", ops, len(paths))
	}
	for _, r := range ops {
		if fmt.Sprint(r[0]) != "completed" || fmt.Sprint(r[1]) != fmt.Sprint(meetRows) {
			t.Fatalf("operation %v, want completed with %d rows read", r, meetRows)
		}
	}
}

// meetTableText returns every row of table as its columns' text
// (timestamps as fixed-width UTC text) and its lineage, the file and the
// row that wrote it, in the order of the ids.
func meetTableText(t *testing.T, f *fx, table string) []string {
	t.Helper()
	var cols []string
	for _, c := range []string{"id", "edge", "big", "price", "wide", "sku", "note", "qty", "ok", "f", "_idemport_file", "_idemport_row"} {
		cols = append(cols, f.tg.Text(c))
	}
	cols = append(cols, f.tg.TimeText("at"))
	var out []string
	for _, r := range f.rows(t, fmt.Sprintf(`SELECT %s FROM %s ORDER BY id`, strings.Join(cols, ", "), table)) {
		out = append(out, fmt.Sprint(r...))
	}
	return out
}
