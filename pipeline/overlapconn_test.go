package pipeline

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// TestOverlapOnOneConnection imports a new keyed file of two full
// partitions, some 12 MiB, which the overlap writes before the plan is
// known (passHold), through an engine whose pool holds one connection.
// The overlap takes that connection as it starts, the one the claim used,
// and the plan stage takes the table's description the overlap's start
// asked for instead of asking again (keeper.startOverlap, planPass): the
// import needs no other connection before the overlap commits with the
// plan. A plan stage that asked again raced the overlap for a connection
// and, losing, had a new one dialed (on PostgreSQL a server process, and
// each of the overlap's statements prepared again); with one connection
// to the pool, its query waits for the overlap, which waits for the plan,
// and the import stops at the test's deadline. The table is the file.
func TestOverlapOnOneConnection(t *testing.T) {
	t.Parallel()
	const partRows, rows = 100000, 200000
	content := numberedFile(rows, strings.Repeat("x", 40))
	testkit.Each(t, func(t *testing.T, name string) {
		t.Parallel()
		f := newFx(t, name)
		if f.tg.IsMariaDB() {
			t.Skip("no overlap where DDL commits")
		}
		path := f.write(t, "data.csv", content)
		hold := newPassHold(2)
		e, log := f.openHeld(t, hold)
		e.DB().SetMaxOpenConns(1)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res := e.Import(ctx, Request{Path: path, Mapping: Mapping{Table: "t", Key: []string{"id"}}, PartitionRows: partRows,
			Lease: time.Minute, Progress: hold.progress})
		if res.Err != nil || res.Outcome != Imported || res.Rows.Inserted != rows || res.Partitions.Committed != 2 {
			t.Fatalf("%s (%v): rows %+v, partitions %+v; want imported, %d rows in 2 partitions", res.Outcome, res.Err, res.Rows, res.Partitions, rows)
		}
		if n := hold.atHold.Load(); n != 2 || !log.has(overlapKeptLog) || log.has(overlapRolledLog) {
			t.Fatalf("the overlap wrote %d partitions before the plan was known, want both, kept with the plan:\n%s", n, log)
		}
		f.wantNumbered(t, rows, strings.Repeat("x", 40))
	})
}
