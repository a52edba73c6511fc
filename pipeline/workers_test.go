package pipeline

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// claimBarrier is a Failpoints that holds the first partition a worker
// claimed (after-partition-claim, its lease taken and committed) until
// a second partition is claimed while it is held, or until wait has
// passed; held then says how many partitions were claimed at once.
type claimBarrier struct {
	wait time.Duration
	mu   sync.Mutex
	n    int           // partitions claimed while the first is held (at most 2)
	more chan struct{} // closed when a second is claimed
	done bool          // counting is over
}

func (b *claimBarrier) Hit(name string) error {
	if name != "after-partition-claim" {
		return nil
	}
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return nil
	}
	b.n++
	if b.n == 2 {
		close(b.more)
		b.done = true
	}
	if b.n > 1 {
		b.mu.Unlock()
		return nil
	}
	b.mu.Unlock()
	select {
	case <-b.more:
	case <-time.After(b.wait):
	}
	b.mu.Lock()
	b.done = true
	b.mu.Unlock()
	return nil
}

func (b *claimBarrier) held() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

// TestUnsetWorkersTakeTheDatabasesNumber: a Request without Workers
// applies two partitions at once on PostgreSQL and MariaDB (a second
// partition is claimed while the first one's worker is held inside it)
// and one at a time on SQLite (none is, however long the first is held).
func TestUnsetWorkersTakeTheDatabasesNumber(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		f := newFx(t, name)
		path := f.write(t, "items.csv", itemsCSV(40))
		want, wait := 2, 30*time.Second // a second worker ends the wait at once
		if !f.tg.IsPostgres() && !f.tg.IsMariaDB() {
			want, wait = 1, 2*time.Second
		}
		b := &claimBarrier{wait: wait, more: make(chan struct{})}
		res := f.open(t, Options{Failpoints: b}).Import(context.Background(), Request{Path: path, PartitionRows: 10, Mapping: Mapping{Table: "items"}})
		f.wantOutcome(t, res, Imported)
		if res.Partitions.Committed != 4 {
			t.Fatalf("committed %d partitions, want 4", res.Partitions.Committed)
		}
		if got := b.held(); got != want {
			t.Fatalf("%d partitions claimed at once, want %d", got, want)
		}
	})
}
