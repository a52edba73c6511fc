package mysql

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// TestOpenAsksForKeyOrder: the driver asks the pipeline for a natural
// key's rows in key order (sink.Database.KeyOrder). InnoDB keeps a table's
// rows in its primary key's B-tree, and the rows of a partition sorted by
// key reach its leaves one after another: on 1M rows of shuffled ids the
// server's CPU fell from about 1.15× to below that of the mariadb client's
// LOAD DATA of the same file (docs/internals.md).
func TestOpenAsksForKeyOrder(t *testing.T) {
	db, err := Driver{}.Open(t.Context(), freshDSN(t), sink.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.DB.Close()
	if !db.KeyOrder {
		t.Error("Open's Database has KeyOrder false, want true")
	}
}

// TestWriterKeyOrderedBatches: batches of a natural key's rows in key
// order, as the pipeline hands them when the driver asks for it, have
// their ordinals out of order, and a repeated key's rows in file order.
// Each row's values and lineage land exactly, whether the batch is loaded
// straight into the table (no key stored) or staged and merged (some
// stored; a repeated key applied in its rounds, the later row last).
func TestWriterKeyOrderedBatches(t *testing.T) {
	f := writerFx(t)
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("v"))
	tg := sink.Target{Table: "sorted", Key: []string{"id"}}
	f.MustEnsure(tg, s)
	w := f.Writer(tg, s)
	batch := func(fileKey int64, keys []int, ords []int64) arrow.RecordBatch {
		var rows [][]any
		for i, k := range keys {
			rows = append(rows, []any{k, fmt.Sprintf("f%d r%d", fileKey, ords[i])})
		}
		return drivertest.Batch(t, s, rows...)
	}
	count := statements(f)
	keys, ords := []int{1, 2, 3, 4, 5, 6}, drivertest.Ords(4, 1, 6, 2, 5, 3)
	drivertest.WantRows(t, "file 1", f.Write(w, 1, batch(1, keys, ords), ords), idemtype.Rows{Read: 6, Inserted: 6})
	if loads, inserts := count(); loads != 1 || inserts != 0 {
		t.Errorf("file 1: %d loads and %d INSERT statements, want the batch loaded straight into the table", loads, inserts)
	}
	drivertest.WantTable(t, "file 1", f.Table(tg.Table, "id", "id", "v", sink.FileColumn, sink.RowColumn),
		"1|'f1 r4'|1|4", "2|'f1 r1'|1|1", "3|'f1 r6'|1|6", "4|'f1 r2'|1|2", "5|'f1 r5'|1|5", "6|'f1 r3'|1|3")

	// Keys 1 and 3 stored, 3 twice (rows 2 and 8), 7 and 8 new.
	keys, ords = []int{1, 3, 3, 7, 8}, drivertest.Ords(9, 2, 8, 1, 5)
	drivertest.WantRows(t, "file 2", f.Write(w, 2, batch(2, keys, ords), ords), idemtype.Rows{Read: 5, Inserted: 2, Updated: 3})
	drivertest.WantTable(t, "file 2", f.Table(tg.Table, "id", "id", "v", sink.FileColumn, sink.RowColumn),
		"1|'f2 r9'|2|9", "2|'f1 r1'|1|1", "3|'f2 r8'|2|8", "4|'f1 r2'|1|2", "5|'f1 r5'|1|5", "6|'f1 r3'|1|3",
		"7|'f2 r1'|2|1", "8|'f2 r5'|2|5")
}
