package pipeline

import (
	"context"
	"fmt"
	"testing"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
)

// TestQueueReadsAcrossPartitions: while the writer writes a partition's
// long first batch, the reader queues the partition's short rest, its
// end and the next partition's start, and still has room for the next
// partition's first batch; a third batch waits until the writer takes
// one. A send that would wait fails at once here (its context is done),
// so each step says whether the reader could go on.
func TestQueueReadsAcrossPartitions(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	q := newQueue(100_000) // whole partitions: PostgreSQL's batches
	var log []string
	send := func(name string, it item) {
		err := q.send(ctx, it)
		log = append(log, fmt.Sprintf("send %s: %v", name, err))
	}
	take := func() {
		it := <-q.items
		q.took(it)
		name := "batch"
		switch {
		case it.claim != nil:
			name = fmt.Sprintf("claim %d", it.claim.Index)
		case it.end:
			name = "end"
		}
		log = append(log, "take "+name)
	}
	claim := func(i int) item {
		return item{claim: &checkpoint.Claim{Partition: checkpoint.Partition{Partition: idemtype.Partition{Index: i}}}}
	}
	send("claim 0", claim(0))
	send("long batch of 0", item{})
	send("rest of 0", item{})
	take() // the writer begins partition 0 …
	take() // … and copies its long batch
	send("end of 0", item{end: true})
	send("claim 1", claim(1))
	send("first batch of 1", item{})
	send("second batch of 1", item{})
	take() // the rest of 0
	send("second batch of 1 again", item{})
	want := []string{
		"send claim 0: <nil>",
		"send long batch of 0: <nil>",
		"send rest of 0: <nil>",
		"take claim 0",
		"take batch",
		"send end of 0: <nil>",
		"send claim 1: <nil>",
		"send first batch of 1: <nil>",
		"send second batch of 1: context canceled",
		"take batch",
		"send second batch of 1 again: <nil>",
	}
	if got, w := fmt.Sprintf("%q", log), fmt.Sprintf("%q", want); got != w {
		t.Errorf("got\n%s\nwant\n%s", got, w)
	}
}
