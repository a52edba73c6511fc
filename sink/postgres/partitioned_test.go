package postgres

import (
	"reflect"
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// TestOrdinalMergeIntoPartitionedTable: in ordinal mode (no key) the
// writer merges a batch whose ordinals are stored into a table
// partitioned by the row ordinal, its rows spread over two partitions, as
// into any table: a batch written again with one value changed counts one
// updated and the rest unchanged, and a batch overlapping the stored
// ordinals counts the new ones inserted. The merge into a partitioned
// table returns no xmax (SQLSTATE 0A000 when asked for it).
func TestOrdinalMergeIntoPartitionedTable(t *testing.T) {
	f := drivertest.Open(t, open(t))
	f.Exec(`CREATE TABLE po (_idemport_file bigint NOT NULL, _idemport_row bigint NOT NULL, id bigint, name text,
		PRIMARY KEY (_idemport_file, _idemport_row)) PARTITION BY RANGE (_idemport_row);
		CREATE TABLE po_lo PARTITION OF po FOR VALUES FROM (MINVALUE) TO (3);
		CREATE TABLE po_hi PARTITION OF po FOR VALUES FROM (3) TO (MAXVALUE)`)
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("name"))
	tg := sink.Target{Table: "po"}
	w := f.Writer(tg, s)
	for _, c := range []struct {
		rows [][]any
		ords []int64
		want idemtype.Rows
	}{
		{[][]any{{1, "a"}, {2, "b"}, {3, "c"}, {4, "d"}}, []int64{1, 2, 3, 4}, idemtype.Rows{Read: 4, Inserted: 4}},
		{[][]any{{1, "a"}, {2, "B"}, {3, "c"}, {4, "d"}}, []int64{1, 2, 3, 4}, idemtype.Rows{Read: 4, Updated: 1, Unchanged: 3}},
		{[][]any{{3, "C"}, {4, "d"}, {5, "e"}}, []int64{3, 4, 5}, idemtype.Rows{Read: 3, Inserted: 1, Updated: 1, Unchanged: 1}},
	} {
		if got := f.Write(w, 7, drivertest.Batch(t, s, c.rows...), c.ords); got != c.want {
			t.Fatalf("rows %v: %+v, want %+v", c.ords, got, c.want)
		}
	}
	want := []string{"7|1|1|'a'", "7|2|2|'B'", "7|3|3|'C'", "7|4|4|'d'", "7|5|5|'e'"}
	if got := f.Table("po", "_idemport_row", "_idemport_file", "_idemport_row", "id", "name"); !reflect.DeepEqual(got, want) {
		t.Fatalf("po holds %q, want %q", got, want)
	}
}
