package pipeline

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline/internal/store"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/sink"
)

// applying is what an attempt has done so far, which the apply stage adds
// to and the attempt's end reports. It starts with the leases the claim
// recovered (claimed.recovered).
type applying struct {
	recovered []string // the attempts whose leases this one took over
	committed int64    // partitions this attempt committed
	rows      idemtype.Rows
	doneRows  int64 // rows of partitions done, by anyone, for progress
	// lastAs is what valuesAs returned for the table as the last partition
	// transaction found it (nil: none yet), for the partitions read next.
	lastAs atomic.Pointer[[]idemtype.Type]
}

// applier is the apply and finalize stages of an attempt: the identity,
// claim and plan the earlier stages returned, with what it needs of the
// attempt they were made for. Its fields are set once, by work; what it
// applied so far (ap) is the run's, which reports it when the attempt ends.
type applier struct {
	holding // a copy of the run's, whose applying (ap) it adds to
	started time.Time
	text    bool // the file is read as text (holding.textFormat)
	planned
	leases leases // the attempt's leases (run.leases)
}

// apply claims and commits partitions until every partition of the plan is
// done. When the only unfinished partitions are held by other live attempts,
// it waits for them, and takes over any whose lease expires. Each round of
// claims is logged (debug), so that a test can count them.
func (a *applier) apply(ctx context.Context) error {
	if err := a.startApply(ctx); err != nil {
		return err
	}
	var mu sync.Mutex
	var n retries
	for {
		before := a.ap.committed
		a.log.Debug("claiming partitions")
		err := a.applyRound(ctx, &mu)
		if a.ap.committed > before {
			n.deadlocks = 0
		}
		again, err := a.again(ctx, err, &n)
		if err != nil {
			return err
		}
		if again {
			continue
		}
		p, err := a.e.st.CP.Progress(ctx, a.e.st.DB, a.op, a.attempt.ID)
		if err != nil {
			return err
		}
		if p.Done == p.Total {
			// Other attempts may have done some: the last report says all.
			a.req.progress(Progress{Phase: "apply", Rows: a.plan.Rows, TotalRows: a.plan.Rows, Partitions: p.Total, TotalParts: p.Total,
				Skipped: a.res.Partitions.Skipped})
			return nil
		}
		// A partition whose lease expired while its holder's transaction
		// still locks it (a stalled holder on PostgreSQL) counts as
		// claimable, but SKIP LOCKED passes it over: if this round made no
		// progress, wait before trying again rather than spin. So does a
		// partition that only looked free: another live attempt's claim of
		// it not yet committed, or a lease that ran out after this round's
		// last claim.
		if p.Claimable > 0 && a.ap.committed > before {
			continue
		}
		if err := a.awaitOthers(ctx, p); err != nil {
			return err
		}
	}
}

// startApply reports how far the operation is as this attempt begins
// applying, and learns the types the table's values are read as.
func (a *applier) startApply(ctx context.Context) error {
	start, err := a.e.st.CP.Progress(ctx, a.e.st.DB, a.op, a.attempt.ID)
	if err != nil {
		return err
	}
	a.res.Partitions.Total = start.Total
	// Done by others, or before this attempt: those this attempt
	// committed with its plan (an overlap) are not skipped.
	a.res.Partitions.Skipped = start.Done - a.ap.committed
	a.ap.doneRows = a.rowsDone(ctx)
	a.req.progress(Progress{Phase: "apply", Rows: a.ap.doneRows, TotalRows: a.plan.Rows, Partitions: start.Done, TotalParts: start.Total, Skipped: a.res.Partitions.Skipped})
	return a.expectAs(ctx)
}

// retries counts the rounds of apply run again, by cause.
type retries struct {
	reconnects, deadlocks, rereads int
}

// again says whether the round of apply that failed with err is run again
// (its partitions given back first), counting it in n; otherwise it
// returns err.
func (a *applier) again(ctx context.Context, err error, n *retries) (bool, error) {
	if err == nil || ctx.Err() != nil {
		return false, err
	}
	switch {
	case errors.Is(err, errDeadlock) && n.deadlocks < maxDeadlocks:
		// A partition's transaction was a deadlock's victim and rolled
		// back, releasing the rows it held, so that the other
		// transaction went on: give back this attempt's partitions and
		// run them again, after a pause that differs from run to run
		// so that the two do not meet the same way again.
		n.deadlocks++
		a.log.Warn("a partition's transaction was a deadlock's victim; running it again", "err", err, "time", n.deadlocks)
		if err := a.e.st.CP.Release(ctx, a.e.st.DB, a.op, a.attempt.ID); err != nil {
			return false, err
		}
		return true, afterDeadlock(ctx, n.deadlocks)
	case errors.Is(err, errReread) && n.rereads < maxRereads:
		// A worker read a partition's values for the table's columns
		// as they were before another import changed them: give back
		// this attempt's partitions and read them again.
		n.rereads++
		a.log.Info("the table's columns changed while a partition was read; reading it again", "err", err)
		return true, a.e.st.CP.Release(ctx, a.e.st.DB, a.op, a.attempt.ID)
	case errors.Is(err, errReconnect) && n.reconnects < maxReconnects:
		// A worker's connection was lost at a COMMIT; the checkpoint
		// said whether it committed. No worker runs now: give back the
		// partitions this attempt still holds, and go on with new
		// connections.
		n.reconnects++
		a.log.Warn("going on with new connections", "err", err)
		return true, a.e.st.CP.Release(ctx, a.e.st.DB, a.op, a.attempt.ID)
	case a.e.st.Driver.Locked(err) && a.req.Wait > 0 && time.Since(a.started) <= a.req.Wait:
		// A lock a partition needed stayed held past --busy-timeout
		// (a frozen holder's): asked to wait, give back the claims
		// and try again.
		a.log.Info("waiting for a lock another transaction holds", "err", err)
		if err := a.e.st.CP.Release(ctx, a.e.st.DB, a.op, a.attempt.ID); err != nil {
			return false, err
		}
		return true, sleep(ctx, min(time.Second, a.req.Lease/4))
	}
	return false, err
}

// awaitOthers waits while other attempts hold the partitions left (p), and
// takes over those of any that died. A holder frozen inside its
// partition's transaction cannot be taken over, even once its lease
// expires: an expired lease whose row is still locked (PostgreSQL's SKIP
// LOCKED passed it over), or a holder stopped on this host with its row
// locked. That makes the run busy, unless it was asked to wait and may
// wait still. (On SQLite such a holder keeps the write lock: see
// stopBusy.)
func (a *applier) awaitOthers(ctx context.Context, p checkpoint.Progress) error {
	if b := a.leases.busy(ctx, "holds a partition inside its transaction", a.req.Wait > 0); (p.Claimable > 0 && a.expiredInTransaction(ctx)) || a.frozenInTransaction(ctx, b) {
		if a.req.Wait <= 0 || time.Since(a.started) > a.req.Wait {
			return b
		}
	}
	a.log.Debug("waiting for the partitions other attempts hold", "claimable", p.Claimable, "held", p.Held)
	if err := sleep(ctx, min(time.Second, a.req.Lease/4)); err != nil {
		return err
	}
	err := withTx(ctx, a.e.st.DB, func(tx *sql.Tx) error {
		op, err := a.e.st.Ledger.Find(ctx, tx, a.id.Key)
		if err != nil || op == nil {
			return err
		}
		return a.leases.reapDead(ctx, tx, op)
	})
	if err != nil && ctx.Err() == nil && a.e.st.Driver.Deadlock(err) {
		// Taking the dead attempts' leases over was a deadlock's victim
		// (on MariaDB, against another process's partition
		// transactions) and rolled back: the next wait tries again, and
		// the leases run out on their own meanwhile.
		a.log.Info("taking over a dead attempt's leases was a deadlock's victim; trying again", "err", err)
		return nil
	}
	return err
}

// rowsDone sums the rows of partitions already done, for progress reports.
func (a *applier) rowsDone(ctx context.Context) int64 {
	parts, err := a.e.st.CP.Partitions(ctx, a.e.st.DB, a.op)
	if err != nil {
		return 0
	}
	var n int64
	for _, p := range parts {
		if p.Done {
			n += p.Rows
		}
	}
	return n
}

// applyRound runs the workers until none can claim another partition. A
// worker whose partition's transaction was a deadlock's victim (errDeadlock)
// stops alone: the others go on, so that the transaction the deadlock let
// through, often another worker's of this round, commits rather than being
// rolled back with the victim's, and the two meet the same way again in the
// next round. Any other failure stops every worker. The round returns the
// first failure that is not a deadlock, else the first deadlock.
func (a *applier) applyRound(ctx context.Context, mu *sync.Mutex) error {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var (
		wg       sync.WaitGroup
		deadlock atomic.Pointer[error]
	)
	for range a.req.Workers {
		wg.Go(func() {
			err := a.worker(ctx, mu)
			switch {
			case errors.Is(err, errDeadlock):
				deadlock.CompareAndSwap(nil, &err)
			case err != nil:
				stop(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	if err := deadlock.Load(); err != nil {
		return *err
	}
	return nil
}

// readAhead returns how many batches a reader (a worker's, the overlap's)
// may have handed its writer before the writer takes them, for batches
// of batchRows rows (see queue). Batches of whole partitions (PostgreSQL's, MariaDB's)
// are up to partition.BatchBytes of the file each, decoded and held while
// the database takes the ones before: at 8 a first import of 1M orders
// rows into PostgreSQL held up to 8 per reader that the writer could not
// take yet, and the collector let the heap grow with them; 2 keep the
// writer fed (the reader decodes the next batch while the writer's COPY
// of the one before runs), with a quarter fewer page faults. SQLite's
// batches of 8,192 rows keep 8: they are small, and 2 were no faster.
func readAhead(batchRows int) int {
	if batchRows > 16384 {
		return 2
	}
	return 8
}

// item is what a worker's reader hands its writer: the start of a claimed
// partition, one of its batches, or its end.
type item struct {
	claim *checkpoint.Claim
	as    []idemtype.Type // with claim: the types its batches hand values as (valuesAs)
	batch reader.Batch
	end   bool
	// shuffled, with end: the partition's keys came out of key order
	// (keyOrder.broken), so that it may join a group (group.go).
	shuffled bool
}

// isBatch says whether it is one of a partition's batches.
func (it item) isBatch() bool { return it.claim == nil && !it.end }

// queue carries the items a reader hands its writer. Only batches count
// against the read-ahead (readAhead): a partition's start and end pass
// without waiting for room, so that at the boundary of two partitions the
// reader decodes the next one's first batch while the writer writes the
// last batch of the one before. Counted as items, the two took the room:
// a partition of PostgreSQL's whole-partition batches, one of 4 MiB and
// a short rest (100,000 rows of 42 bytes), left its rest and its end
// queued while the writer copied the long batch, the reader waited to
// queue the next partition's start, and decoded the next partition only
// once that COPY was over, while the server, which had nothing more to
// take, waited for it at every partition. On 6 December 2026 a first
// import of 1M such rows (--key, 10 partitions, the first few written
// with the plan) had its worker's writer wait 43-260 ms for batches in
// all, median 150 (6 runs, load average 7-12); 20-103 ms, median 51,
// with only batches counted.
type queue struct {
	items chan item
	room  chan struct{} // one for each batch handed on and not yet taken
}

// newQueue returns the queue of a reader of batches of batchRows rows.
// Besides its batches it holds, without waiting, the end of the partition
// they belong to and the start and end of the next: a worker's reader
// is given the next claim only once its writer begins a partition
// (handoff), so that no more are queued at once. (The overlap's reader
// may queue more partitions that have no batch: the next control item
// then waits for room in items, which holds n+3, not in room.)
func newQueue(batchRows int) *queue {
	n := readAhead(batchRows)
	return &queue{items: make(chan item, n+3), room: make(chan struct{}, n)}
}

// send hands it to the writer, waiting first, for a batch, until fewer
// than the read-ahead are queued. Where it need not wait it sends even
// once ctx is done; otherwise ctx ends the wait, and a batch not sent is
// released.
func (q *queue) send(ctx context.Context, it item) error {
	if it.isBatch() {
		if err := put(ctx, q.room, struct{}{}); err != nil {
			it.batch.Release()
			return err
		}
	}
	if err := put(ctx, q.items, it); err != nil {
		it.batch.Release()
		return err
	}
	return nil
}

// took is told by the writer each item it takes from q.items, which makes
// room for another batch.
func (q *queue) took(it item) {
	if it.isBatch() {
		<-q.room
	}
}

// close tells the writer no item follows.
func (q *queue) close() { close(q.items) }

// put sends v on ch, waiting for room until ctx is done; with room it
// sends, whether ctx is done or not.
func put[T any](ctx context.Context, ch chan<- T, v T) error {
	select {
	case ch <- v:
		return nil
	default:
	}
	select {
	case ch <- v:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// worker applies partitions one after another. Its writer goroutine does
// every database write: each partition's transaction fences the partition's
// claim, claims the next partition, writes the rows, and marks the partition
// done. Its reader goroutine decodes the next partition while the writer
// commits the current one, so parsing and writing overlap, and a worker
// never holds more than two claims.
func (a *applier) worker(ctx context.Context, mu *sync.Mutex) error {
	conn, err := a.e.st.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// Claim before preparing the writers: while this attempt holds a
	// partition the operation cannot complete, so the tables they write
	// (an --atomic staging table, a snapshot's key table), which the
	// completing transaction drops, still exist. A worker of a run that
	// joins as others finish finds nothing to claim and touches neither.
	first, err := a.claimAlone(ctx, conn, mu)
	if err != nil && a.e.st.Driver.Deadlock(err) {
		// The claim's transaction takes the locks a partition's
		// transaction takes when it claims the next partition (the
		// partition's row, a dead holder's attempt row) and, on
		// MariaDB, can be a deadlock's victim as that one can: it
		// rolled back whole, and the round runs again.
		return fmt.Errorf("%w: %w", errDeadlock, err)
	}
	if err != nil || first == nil {
		return err
	}
	w := &partitionWriter{}
	defer func() {
		if w.Writer != nil {
			w.Close()
		}
	}()
	seen, err := a.newSeenWriter(ctx, conn)
	if err != nil {
		return err
	}
	defer seen.close()

	claims := make(chan *checkpoint.Claim, 1) // writer → reader
	q := newQueue(a.req.BatchRows)            // reader → writer
	claims <- first
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer q.close()
		return a.read(gctx, claims, q)
	})
	g.Go(func() error { return a.write(gctx, conn, w, seen, claims, q, mu) })
	err = g.Wait()
	for it := range q.items { // release what the writer did not take
		it.batch.Release()
	}
	if err != nil && a.e.st.Driver.Deadlock(err) {
		return fmt.Errorf("%w: %w", errDeadlock, err)
	}
	return err
}

// read decodes each partition the writer claimed into items, which it
// hands the writer through q. It stops when the writer closes claims.
func (a *applier) read(ctx context.Context, claims <-chan *checkpoint.Claim, q *queue) error {
	send := func(it item) error { return q.send(ctx, it) }
	for first := true; ; first = false {
		var c *checkpoint.Claim
		select {
		case c = <-claims:
		case <-ctx.Done():
			return ctx.Err()
		}
		if c == nil {
			return nil
		}
		if err := a.e.st.Hit("after-partition-claim"); err != nil {
			return err
		}
		if err := a.readPartition(c, send, first); err != nil {
			return err
		}
	}
}

// rampRows is the first batch of the first partition a reader reads,
// whose writer waits for it: a batch of a whole partition (100,000 rows,
// or 4 MiB of text) took 30-50 ms to decode before its first row went to
// the database, which waited; the batches after it double until they are
// whole (reader.PartitionReader.Ramp), each decoded while the one before
// is written. The partitions after the first are read while the one
// before is written, and keep whole batches.
const rampRows = 8192

// readPartition decodes the partition of claim c, handing send its start
// (with the types its values are read as), each of its batches, and its
// end. ramp says the writer waits for its first batch, nothing read ahead
// for it (a reader's first partition): its batches then start at
// rampRows rows (reader.PartitionReader.Ramp).
func (a *applier) readPartition(c *checkpoint.Claim, send func(item) error, ramp bool) error {
	plan, as := a.partitionPlan()
	pr, err := a.file.Partition(plan, c.Partition.Partition, a.req.BatchRows)
	if err != nil {
		return err
	}
	if ramp {
		pr.Ramp(rampRows)
	}
	if err := send(item{claim: c, as: as}); err != nil {
		pr.Close()
		return err
	}
	batch := func(b reader.Batch) error { return send(item{batch: b}) }
	sorted := a.keyOrder()
	defer sorted.release()
	for {
		b, err := pr.Next()
		if err == io.EOF {
			break
		}
		if err == nil {
			err = sorted.add(b, batch)
		}
		if err != nil {
			pr.Close()
			return err
		}
	}
	if err := pr.Close(); err != nil {
		return err
	}
	if err := sorted.flush(batch); err != nil {
		return err
	}
	return send(item{end: true, shuffled: sorted.shuffled()})
}

// partitionPlan returns the plan a partition is read by, and the types its
// values are read as: those the last partition transaction found the
// table takes (applying.lastAs), once one has; until then the plan's own
// (as nil).
func (a *applier) partitionPlan() (*reader.Plan, []idemtype.Type) {
	var as []idemtype.Type
	if p := a.ap.lastAs.Load(); p != nil {
		as = *p
	}
	if as == nil {
		return a.plan, nil
	}
	p := *a.plan
	p.As = as
	return &p, as
}

// claimAlone leases the first partition of a worker in its own transaction.
func (a *applier) claimAlone(ctx context.Context, conn *sql.Conn, mu *sync.Mutex) (*checkpoint.Claim, error) {
	tx, err := beginTx(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("begin claim: %w", err)
	}
	defer tx.Rollback()
	c, err := a.claimNext(ctx, tx.Tx, mu)
	if err != nil {
		return nil, err
	}
	return c, tx.Commit()
}

// claimNext leases the next free partition inside tx. mu guards what the
// attempt's workers share (applying).
func (a *applier) claimNext(ctx context.Context, tx *sql.Tx, mu *sync.Mutex) (*checkpoint.Claim, error) {
	c, err := a.e.st.CP.Claim(ctx, tx, a.op, a.attempt.ID, a.leaseMs)
	if err != nil {
		return nil, err
	}
	if c != nil && c.RecoveredFrom != "" {
		a.log.Warn("recovered the lease of a dead or stalled attempt", "partition", c.Index, "from", c.RecoveredFrom)
		mu.Lock()
		a.ap.recovered = append(a.ap.recovered, c.RecoveredFrom)
		mu.Unlock()
		// Taken over, it is dead to the operation: a stalled process that
		// wakes can no longer commit (fencing), and records its own end.
		if err := a.e.st.Ledger.Died(ctx, tx, c.RecoveredFrom); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// write commits each partition in one transaction: it fences the claim,
// claims the next partition for the reader, writes the batches, and marks
// the partition done and counts it.
func (a *applier) write(ctx context.Context, conn *sql.Conn, w *partitionWriter, seen *seenWriter, claims chan<- *checkpoint.Claim, q *queue, mu *sync.Mutex) error {
	next := &handoff{claims: claims}
	defer next.close()
	var p partitionTx
	defer p.rollback()
	for it := range q.items {
		q.took(it)
		var err error
		switch {
		case it.claim != nil:
			err = a.beginPartition(ctx, conn, w, &p, it, next, mu)
		case it.end:
			err = a.endPartition(ctx, conn, &p, it.shuffled, mu)
		default:
			err = a.writeRows(ctx, w, seen, &p, it.batch)
		}
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

// handoff passes the partitions a worker's writer claims to its reader,
// until it is closed.
type handoff struct {
	claims chan<- *checkpoint.Claim
	closed bool
}

// pass hands c to the reader, which took the previous claim (there is room
// for one); nil, no partition left, closes h.
func (h *handoff) pass(c *checkpoint.Claim) {
	if c == nil {
		h.close()
		return
	}
	h.claims <- c
}

// close tells the reader no claim follows; it may be called again.
func (h *handoff) close() {
	if !h.closed {
		close(h.claims)
		h.closed = true
	}
}

// partitionTx is the open transaction of the partition a worker's writer
// is writing, and what it wrote so far. The transaction may hold, done
// and not committed, the partitions of its group before it (group.go).
type partitionTx struct {
	tx      *txn
	claim   *checkpoint.Claim
	counts  idemtype.Rows
	refused []refusedRow // rows the database refused in this partition
	evolved *evolution   // the schema changes this partition made
	scope   int64        // the rows of a snapshot's scope before it, or -1 (countScope)
	last    bool         // no partition was left to claim after it
	group   group        // the partitions the transaction marked done
}

// rollback rolls back the transaction, if one is open.
func (p *partitionTx) rollback() {
	if p.tx != nil {
		p.tx.Rollback()
	}
}

// beginPartition begins p, the transaction of the partition whose start is
// it, unless its group's transaction is open still (group.go): it fences
// the partition's claim, claims the next partition and passes it to the
// reader, readies the writer for the table as it is, and counts the
// snapshot's scope. Rows read for the table as it was before another
// import changed it are read again (errReread).
func (a *applier) beginPartition(ctx context.Context, conn *sql.Conn, w *partitionWriter, p *partitionTx, it item, next *handoff, mu *sync.Mutex) error {
	*p = partitionTx{claim: it.claim, tx: p.tx, group: p.group}
	index := it.claim.Index
	var err error
	if p.tx == nil {
		if p.tx, err = beginTx(ctx, conn); err != nil {
			return fmt.Errorf("begin partition %d: %w", index, err)
		}
		p.group = a.startGroup(mu)
	}
	if err := a.e.st.CP.Fence(ctx, p.tx.Tx, a.op, index, a.attempt.ID, a.leaseMs); err != nil {
		return a.lost(err)
	}
	c, err := a.claimNext(ctx, p.tx.Tx, mu)
	if err != nil {
		return err
	}
	next.pass(c)
	p.last = c == nil
	if p.evolved, err = w.prepare(ctx, a, conn, p.tx.Tx); err != nil {
		return fmt.Errorf("partition %d: %w", index, err)
	}
	if !slices.Equal(it.as, w.as) {
		// The table changed (another import widened a column) after
		// the partition's rows were read for it as it was: read them
		// again, as the writer now takes them.
		return fmt.Errorf("%w: partition %d", errReread, index)
	}
	if p.scope, err = a.countScope(ctx, p.tx.Tx); err != nil {
		return fmt.Errorf("partition %d: %w", index, err)
	}
	return nil
}

// writeRows writes batch b of partition p, and records the keys it saw;
// the rows the database refuses count against --max-rejects.
func (a *applier) writeRows(ctx context.Context, w *partitionWriter, seen *seenWriter, p *partitionTx, b reader.Batch) error {
	c, bad, err := a.writeBatch(ctx, p.tx.Tx, w.Writer, b.Record, b.Ordinals, a.room()-int64(len(p.refused)))
	if err == nil {
		err = seen.write(ctx, p.tx.Tx, a.id.FileKey, b.Record, b.Ordinals)
	}
	b.Release()
	p.refused = append(p.refused, bad...)
	if errors.Is(err, errTooManyRefused) {
		return a.overLimit(p.claim, p.refused, -1)
	}
	if err != nil {
		return fmt.Errorf("partition %d: %w", p.claim.Index, err)
	}
	p.counts.Add(c)
	return nil
}

// endPartition records the snapshot's scope and marks partition p done,
// and commits its transaction, unless the next partition joins its group
// (shuffled: p's keys came out of key order; see group.go).
func (a *applier) endPartition(ctx context.Context, conn *sql.Conn, p *partitionTx, shuffled bool, mu *sync.Mutex) error {
	if err := a.recordScope(ctx, p.tx.Tx, p.scope); err != nil {
		return fmt.Errorf("partition %d: %w", p.claim.Index, err)
	}
	m, err := a.markDone(ctx, p.tx, p.claim, p.counts, p.refused, p.evolved)
	if err != nil {
		return err
	}
	p.group.done = append(p.group.done, m)
	p.group.rows += p.claim.Rows
	if a.grows(p, shuffled) {
		return nil // the next partition's transaction is this one (beginPartition)
	}
	if err := a.commit(ctx, conn, p.tx, p.group.done, mu); err != nil {
		return err
	}
	p.tx, p.evolved, p.group = nil, nil, group{}
	return nil
}

// lost explains a failed fence: this attempt stalled past its lease and
// another took its partition over.
func (a *applier) lost(err error) error {
	if errors.Is(err, checkpoint.ErrNotHeld) {
		return fmt.Errorf("%w: %w (this process stalled past its lease; the other attempt finishes the work)", ledger.ErrLeaseLost, err)
	}
	return err
}

// behindSuperseded returns c, counts of rows a writer wrote by natural key
// into target, with the rows it counted stale counted superseded when
// target has no --version-col. Without one, a writer counts a row stale
// only when a later row of its own file already wrote its key
// (sink.Writer): the plan leaves one row of each key of a file, so the
// two rows hold keys the plan told apart but the table's key compares as
// one (its collation: 'a' and 'A' to a case-insensitive one, 'b ' and 'b'
// to one that pads). The row is superseded, as the plan counts a key's
// earlier rows; stale would say it is older than the stored row by a
// version there is none of. (With --version-col it stays stale: the
// writers do not tell it from one older by version.)
func behindSuperseded(c idemtype.Rows, target sink.Target) idemtype.Rows {
	if target.Version == "" && !target.Ordinal() {
		c.Superseded += c.Stale
		c.Stale = 0
	}
	return c
}

// markDone marks partition c done and counts it (counts, its rows the
// database refused quarantined) in tx, the transaction of its effects
// (with the schema changes it made, evolved), and returns it as a
// member of tx's group, to be reported once tx commits.
func (a *applier) markDone(ctx context.Context, tx *txn, c *checkpoint.Claim, counts idemtype.Rows, refused []refusedRow, evolved *evolution) (groupMember, error) {
	m := groupMember{claim: c, evolved: evolved}
	// Bad and superseded rows never reach the writer; the plan counted them.
	superseded := int64(len(c.Superseded))
	counts.Read += c.Rejected + superseded
	counts.Rejected += c.Rejected
	counts.Superseded = superseded
	counts = behindSuperseded(counts, a.target)
	if counts.Read != c.Rows || !counts.Balanced() {
		return m, fmt.Errorf("partition %d: counted %+v for %d rows", c.Index, counts, c.Rows)
	}
	m.counts = counts
	if err := a.e.st.Hit("inside-partition"); err != nil {
		return m, err
	}
	if !a.in.pinned() { // a pinned object is checked once, before its operation completes
		if err := a.in.check(a.stat); err != nil {
			return m, err
		}
	}
	if err := a.e.st.CompletePartition(ctx, tx.Tx, a.id.Key, c.Index, a.attempt.ID, counts); err != nil {
		return m, a.lost(err)
	}
	if err := a.quarantine(ctx, tx.Tx, c, refused); err != nil {
		return m, err
	}
	return m, a.e.st.Hit("before-partition-commit")
}

// commit commits tx, begun on conn, which marked the partitions done
// done (a group's, in order), and then counts each for the result and
// progress.
func (a *applier) commit(ctx context.Context, conn *sql.Conn, tx *txn, done []groupMember, mu *sync.Mutex) error {
	if err := tx.Commit(); err != nil {
		return a.unanswered(ctx, conn, done, mu, err)
	}
	for _, m := range done {
		a.committedPartition(m.claim, m.counts, m.evolved, mu)
	}
	for range done {
		if err := a.e.st.Hit("after-partition-commit"); err != nil {
			return err
		}
	}
	return nil
}

// committedPartition counts partition c, committed by this attempt with
// counts (and the schema changes evolved), for the result and progress.
func (a *applier) committedPartition(c *checkpoint.Claim, counts idemtype.Rows, evolved *evolution, mu *sync.Mutex) {
	mu.Lock()
	evolved.report(a.res)
	a.ap.committed++
	a.ap.rows.Add(counts)
	a.ap.doneRows += c.Rows
	p := Progress{Phase: "apply", Rows: a.ap.doneRows, TotalRows: a.plan.Rows, Partitions: a.res.Partitions.Skipped + a.ap.committed,
		TotalParts: a.res.Partitions.Total, Skipped: a.res.Partitions.Skipped}
	a.req.progress(p) // under mu: reports stay in order
	mu.Unlock()
	a.log.Debug("partition committed", "partition", c.Index, "inserted", counts.Inserted, "updated", counts.Updated,
		"unchanged", counts.Unchanged, "stale", counts.Stale, "superseded", counts.Superseded, "rejected", counts.Rejected)
}

// errDeadlock ends a worker one of whose partition transactions the
// database failed to break a deadlock (Driver.Deadlock); the round's other
// workers go on (applyRound), and apply runs the partitions left again in
// a new round.
var errDeadlock = errors.New("deadlock")

// maxDeadlocks is how many rounds in a row, none committing a partition,
// may end in a deadlock before the run fails (a rerun resumes), and
// deadlockPause how long, at most, the first pause before the next round
// lasts (the n-th: n times as long).
const (
	maxDeadlocks  = 8
	deadlockPause = 100 * time.Millisecond
)

// afterDeadlock pauses before the n-th try (from 1) of work a deadlock
// rolled back (retryPause).
func afterDeadlock(ctx context.Context, n int) error {
	return sleep(ctx, retryPause(n))
}

// retryPause is the pause before the n-th try (from 1) of work another
// transaction made fail: a deadlock's victim, or an --atomic move that met
// a key another import stored meanwhile. It is a random time up to n
// times deadlockPause, which differs from run to run so that the two
// transactions do not meet the same way again.
func retryPause(n int) time.Duration {
	return rand.N(time.Duration(n) * deadlockPause)
}

// errReread ends a round of workers one of which found, inside a
// partition's transaction, the table's columns changed since the
// partition's rows were read (partitionWriter.prepare): apply reads them
// again in a new round, as the changed columns take them. Columns only
// widen (int64 → decimal → text), so this happens a bounded number of
// times; maxRereads bounds it all the same.
var errReread = errors.New("the table changed since the partition was read")

// maxRereads is how many times one run reads partitions again for a
// table changed under it before it fails (a rerun resumes).
const maxRereads = 8

// errReconnect ends a round of workers whose one lost its connection at a
// partition's COMMIT: apply goes on with new connections.
var errReconnect = errors.New("connection lost at COMMIT")

// maxReconnects is how many times one run goes on after a connection lost
// at a partition's COMMIT before it fails (a rerun resumes).
const maxReconnects = 3

// unanswered handles the failed COMMIT of the transaction, begun on conn,
// of the partitions done (a group's). When the server answered, they did
// not commit: that is the error. When the connection is gone, the reply
// may have been lost after the server committed: the checkpoint, read on
// another connection once that transaction has ended, says whether it
// did, and a partition that did is counted as this attempt's, as its
// transaction counted it in the ledger. The worker then stops with
// errReconnect.
func (a *applier) unanswered(ctx context.Context, conn *sql.Conn, done []groupMember, mu *sync.Mutex, cerr error) error {
	cerr = fmt.Errorf("commit partition %d: %w", done[len(done)-1].claim.Index, cerr)
	if ctx.Err() != nil || conn.PingContext(ctx) == nil {
		return cerr
	}
	qctx, cancel := detachedFor(ctx, unansweredWait)
	defer cancel()
	by := make([]string, len(done))
	err := withTx(qctx, a.e.st.DB, func(tx *sql.Tx) (err error) {
		for i, m := range done {
			if by[i], err = a.e.st.CP.DoneBy(qctx, tx, a.op, m.claim.Index); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w; whether it committed could not be read: %w", cerr, err)
	}
	for i, m := range done {
		if by[i] == a.attempt.ID {
			a.log.Warn("the reply to a partition's COMMIT was lost; the checkpoint says it committed", "partition", m.claim.Index, "err", cerr)
			a.committedPartition(m.claim, m.counts, m.evolved, mu)
		} else {
			a.log.Warn("a partition's COMMIT failed with the connection; the checkpoint says it did not commit", "partition", m.claim.Index, "err", cerr)
		}
	}
	return fmt.Errorf("%w: %w", errReconnect, cerr)
}

// unansweredWait bounds how long a run waits to learn, after a COMMIT
// whose reply did not come, whether that transaction committed: it waits
// for the transaction to end on the server.
const unansweredWait = 30 * time.Second

// finalize completes the operation and returns the attempt that
// completed it (this one, or another that finished the work while it ran),
// for the run to end its attempt with (holding.succeed).
func (a *applier) finalize(ctx context.Context) (completer string, err error) {
	if err := a.e.st.Hit("before-finalize"); err != nil {
		return "", err
	}
	if a.in.pinned() { // its partitions committed unchecked (see input.pinned)
		if err := a.in.check(a.stat); err != nil {
			return "", err
		}
	}
	apart, err := a.completionDDL(ctx)
	if err != nil {
		return "", fmt.Errorf("finalize: %w", err)
	}
	c, err := a.completeOnce(ctx, apart)
	if err != nil {
		return "", fmt.Errorf("finalize: %w", err)
	}
	a.completed(c)
	a.dropAfterCompletion(ctx)
	if err := a.e.st.Hit("after-finalize"); err != nil {
		return "", err
	}
	return c.completer, nil
}

// completeOnce runs the completing transaction (complete), apart being
// the schema changes made before it where DDL commits. A deadlock's victim
// before its COMMIT is run again (at most maxDeadlocks times), and so is
// an --atomic move that met a key another import stored while it ran
// (sink.ErrKeyStoredMeanwhile). When its COMMIT failed, the ledger says
// whether it committed all the same.
func (a *applier) completeOnce(ctx context.Context, apart *evolution) (completion, error) {
	var c completion
	removed := a.res.Removed  // the replaced version's rows the plan's transaction removed (ordinal mode)
	notes := len(a.res.Notes) // a try rolled back leaves no note
	var err error
	for deadlocks, moves := 0, 0; ; {
		err = withTx(ctx, a.e.st.DB, func(tx *sql.Tx) (err error) {
			a.res.Removed, a.res.Notes = removed, a.res.Notes[:notes]
			c, err = a.complete(ctx, tx, apart)
			return err
		})
		if err != nil && !c.sent && ctx.Err() == nil && errors.Is(err, sink.ErrKeyStoredMeanwhile) && moves < maxDeadlocks {
			// Another import stored and committed a key of the staged
			// rows after they were classified: before the move (which
			// then counted other than the classification, moveStaged),
			// or on MariaDB, whose move updates the stored keys and then
			// inserts the others, in between. Rolled back, the completing
			// transaction runs again, and its classification and move
			// find that key stored, as a plain import's batch written
			// again does (writeBatch). It waits first, as a deadlock's
			// victim does, so that under steady writes of the same keys
			// the tries do not follow back to back.
			moves++
			pause := retryPause(moves)
			a.log.Warn("another import wrote a key of the staged rows during the move; moving them again", "err", err, "time", moves, "pause", pause)
			if err := sleep(ctx, pause); err != nil {
				return c, err
			}
			continue
		}
		if err != nil && errors.Is(err, sink.ErrKeyStoredMeanwhile) && moves == maxDeadlocks {
			err = fmt.Errorf("the move of the staged rows did other than their classification said %d times in a row (other imports writing the file's keys meanwhile, or a table that changes the rows it is given), and gave up; nothing of the file reached %s, and a rerun resumes from its staged rows: %w",
				moves+1, a.target.Table, err)
		}
		if err == nil || c.sent || ctx.Err() != nil || !a.e.st.Driver.Deadlock(err) || deadlocks == maxDeadlocks {
			break
		}
		// The completing transaction was a deadlock's victim (on
		// MariaDB, a snapshot's sweep or a replaced version's removal
		// meeting another import's partition transactions on the same
		// table) before its COMMIT, and rolled back whole: run it
		// again, after a pause that differs from run to run.
		deadlocks++
		a.log.Warn("the completing transaction was a deadlock's victim; running it again", "err", err, "time", deadlocks)
		if err := afterDeadlock(ctx, deadlocks); err != nil {
			return c, err
		}
	}
	if err != nil && c.sent {
		// The COMMIT failed. If the server answered, it did not commit;
		// if the reply was lost, it may have: the ledger says which.
		op, serr := a.settledOp(ctx)
		switch {
		case serr != nil:
			err = fmt.Errorf("%w; whether it committed could not be read: %w", err, serr)
		case op != nil && op.State == ledger.Completed:
			if op.CompletedBy == a.attempt.ID {
				a.log.Warn("the reply to the completing transaction's COMMIT was lost; the ledger says it committed", "err", err)
			}
			c.completer, err = op.CompletedBy, nil
		}
	}
	return c, err
}

// completed reports what the completion c did: this attempt's rows,
// schema changes and replaced version when it completed the operation;
// no event, deletion or removal of its own when another attempt did.
func (a *applier) completed(c completion) {
	if c.completer == a.attempt.ID {
		a.ap.rows.Add(c.moved)
		c.evolved.report(a.res)
		a.noteReplaced()
		return
	}
	a.res.EventID, a.res.Deleted = "", 0
	if a.req.Mapping.Atomic || !a.target.Ordinal() {
		a.res.Removed = 0 // removed by the completing transaction, not this one's
	}
}

// completion is what the completing transaction did.
type completion struct {
	moved     idemtype.Rows // this attempt's counters recounted by an --atomic move
	evolved   *evolution    // the schema changes an --atomic completion made
	completer string        // the attempt that completed the operation
	sent      bool          // the transaction did its work: an error now is its COMMIT's
}

// complete completes the operation in tx, unless another attempt did: the
// work left for the completing transaction (see finish), the stored
// outcome, the attempt's end and the event. apart are the schema changes
// an --atomic import made before tx, where DDL commits.
func (a *applier) complete(ctx context.Context, tx *sql.Tx, apart *evolution) (completion, error) {
	var c completion
	op, now, settled, err := a.completedBefore(ctx, tx)
	if err != nil {
		return c, err
	}
	if settled {
		c.completer = op.CompletedBy
		return c, nil
	}
	totals, err := a.finish(ctx, tx, &c, apart)
	if err != nil {
		return c, err
	}
	done, err := a.storeOutcome(ctx, tx, op, now, totals)
	if err != nil || !done {
		return c, err // completed by another attempt: its event says so
	}
	c.completer = a.attempt.ID
	if err := a.recordEnd(ctx, tx, c.moved); err != nil {
		return c, err
	}
	if err := a.e.st.Hit("inside-finalize"); err != nil {
		return c, err
	}
	c.sent = true
	return c, nil
}

// completedBefore takes the operation's Lock in tx and reads it, with the
// database's time; settled says it is completed already: by another
// attempt first (which swept too), or completed again as it was before a
// run of an earlier version recorded it otherwise.
func (a *applier) completedBefore(ctx context.Context, tx *sql.Tx) (op *ledger.Operation, now int64, settled bool, err error) {
	// One transaction completes the operation at a time, and none while a
	// run decides to join it (claim takes the same lock): each finds the
	// operation as the last one left it. Without it, two attempts of an
	// --atomic import would both move the staged rows, and one would find
	// the staging table dropped by the other.
	if err := a.e.st.Ledger.Lock(ctx, tx, a.id.Key); err != nil {
		return nil, 0, false, err
	}
	op, now, err = a.e.st.Ledger.Get(ctx, tx, a.id.Key)
	if err != nil {
		return nil, 0, false, err
	}
	if op.State == ledger.Completed {
		return op, now, true, nil // another attempt completed it (and swept) first
	}
	if restored, err := a.e.st.Ledger.Restore(ctx, tx, a.id.Key); err != nil {
		return nil, 0, false, err
	} else if restored {
		a.res.note(a.log, "%s had completed on %s (attempt %s), and a run of an earlier version that joined it then recorded it %s: it is completed again; nothing was applied twice",
			op.Key, formatMs(op.CompletedAt), op.CompletedBy, op.State)
		return op, now, true, nil
	}
	return op, now, false, nil
}

// storeOutcome completes the operation op in tx with its stored outcome
// (totals, the rows of its partitions); done is false when another
// attempt completed it first.
func (a *applier) storeOutcome(ctx context.Context, tx *sql.Tx, op *ledger.Operation, now int64, totals idemtype.Rows) (done bool, err error) {
	body, err := json.Marshal(storedOutcome{Rows: totals, Partitions: a.res.Partitions.Total, ContentDigest: a.id.ContentDigest,
		CompletedBy: a.attempt.ID, Attempts: op.Attempts, DurationMs: now - op.CreatedAt, Deleted: a.res.Deleted})
	if err != nil {
		return false, err
	}
	return a.e.st.Ledger.Complete(ctx, tx, a.id.Key, a.attempt.ID, string(body))
}

// finish does in the completing transaction tx what is left of the
// operation's work: an --atomic import's schema changes and move of the
// staged rows (into c), the snapshot's sweep, the removal of a replaced
// version, the staging tables dropped. It returns the operation's rows.
func (a *applier) finish(ctx context.Context, tx *sql.Tx, c *completion, apart *evolution) (idemtype.Rows, error) {
	totals, err := a.e.st.CP.Totals(ctx, tx, a.op)
	if err != nil {
		return totals, err
	}
	inserted := totals.Inserted
	if a.req.Mapping.Atomic {
		if c.evolved, err = a.evolveAtCompletion(ctx, tx, apart); err != nil {
			return totals, err
		}
	}
	before, known, err := a.scopeBefore(ctx, tx) // with --atomic, before the move
	if err != nil {
		return totals, err
	}
	if err := a.prepareReplaced(ctx, tx, true); err != nil { // with --atomic, before the move
		return totals, err
	}
	if a.req.Mapping.Atomic {
		var all idemtype.Rows
		if inserted, all, c.moved, err = a.moveStaged(ctx, tx); err != nil {
			return totals, err
		}
		totals.Add(all)
	} else if err := a.noteRewrites(ctx, tx, totals); err != nil {
		return totals, err
	}
	if a.res.Deleted, err = a.sweep(ctx, tx, inserted, before, known); err != nil {
		return totals, err
	}
	if err := a.sweepReplaced(ctx, tx); err != nil {
		return totals, err
	}
	if err := a.dropSeen(ctx, tx); err != nil {
		return totals, err
	}
	return totals, a.dropStage(ctx, tx)
}

// noteRewrites notes, of a plain import (not --atomic) whose totals count
// rows unchanged, that the table's triggers may have skipped or rewritten
// rows (sink.RowRewriter): its writes are what happened, a row a trigger
// skipped (a BEFORE trigger returning NULL, SQLite's RAISE(IGNORE)) or
// left as stored counted unchanged, as the move of an --atomic import
// counts it (reconcile). A plain import of no unchanged row asks nothing.
func (a *applier) noteRewrites(ctx context.Context, tx *sql.Tx, totals idemtype.Rows) error {
	rw, ok := a.e.st.Driver.(sink.RowRewriter)
	if !ok || totals.Unchanged == 0 {
		return nil
	}
	yes, err := rw.RewritesRows(ctx, tx, a.target.Table)
	if err != nil || !yes {
		return err
	}
	a.res.note(a.log, "the triggers of %s may change or skip the rows written to it: the counts are what the writes did, a row a trigger skipped or left as stored counted unchanged", a.target.Table)
	return nil
}

// recordEnd records, in the transaction tx that completed the operation,
// the end of this attempt and the completed event, so that no kill, and
// no lost reply, leaves the completer recorded otherwise. moved is what
// an --atomic move recounted of this attempt's rows.
func (a *applier) recordEnd(ctx context.Context, tx *sql.Tx, moved idemtype.Rows) error {
	outcome := Resumed
	if a.created {
		outcome = Imported
	}
	if err := a.e.st.Ledger.End(ctx, tx, a.attempt.ID, string(outcome), "", a.res.Partitions.Total-a.ap.committed, int64(len(a.ap.recovered))); err != nil {
		return err
	}
	var deleted *int64
	if a.req.Mapping.Snapshot != nil {
		deleted = &a.res.Deleted
	}
	rows := a.ap.rows
	rows.Add(moved)
	var err error
	a.res.EventID, err = a.e.st.RecordEvent(ctx, tx, EventCompleted, a.id.Key, a.attempt, string(outcome), rows, deleted)
	return err
}

// settledOp reads the operation in a transaction of its own that holds its
// Lock: once every transaction that was completing it has ended (one whose
// COMMIT's reply was lost, say), so it finds whether that one committed.
// It waits at most unansweredWait.
func (a *applier) settledOp(ctx context.Context) (*ledger.Operation, error) {
	ctx, cancel := detachedFor(ctx, unansweredWait)
	defer cancel()
	var op *ledger.Operation
	err := withTx(ctx, a.e.st.DB, func(tx *sql.Tx) (err error) {
		if err := a.e.st.Ledger.Lock(ctx, tx, a.id.Key); err != nil {
			return err
		}
		op, err = a.e.st.Ledger.Find(ctx, tx, a.id.Key)
		return err
	})
	return op, err
}

// succeed ends the attempt of a completed operation: completed by it
// (completer is its ID), or by another attempt that finished the work
// while it ran, which then recounted, for an --atomic import, what this
// attempt staged. The result says what this attempt did.
func (h *holding) succeed(ctx context.Context, completer string) error {
	ctx, cancel := store.Detached(ctx)
	defer cancel()
	if completer != h.attempt.ID {
		h.log.Info("completed by another attempt", "completed_by", completer)
		if h.req.Mapping.Atomic && h.ap.committed > 0 {
			if rows, err := h.recountedRows(ctx); err != nil {
				h.log.Warn("could not read this attempt's recounted rows", "err", err)
			} else {
				h.ap.rows = rows
			}
		}
	}
	h.res.Outcome = Resumed
	if h.created {
		h.res.Outcome = Imported
	}
	if h.res.Partitions.Total == 0 { // it stopped before applying
		if p, err := h.e.st.CP.Progress(ctx, h.e.st.DB, h.op, h.attempt.ID); err == nil {
			h.res.Partitions.Total = p.Total
		}
	}
	h.res.Partitions.Committed = h.ap.committed
	h.res.Partitions.Skipped = h.res.Partitions.Total - h.ap.committed
	if completer != h.attempt.ID { // the completer's end committed with the completion
		if err := h.e.st.Ledger.End(ctx, h.e.st.DB, h.attempt.ID, string(h.res.Outcome), "", h.res.Partitions.Skipped, int64(len(h.ap.recovered))); err != nil {
			h.log.Warn("could not record the end of the attempt", "err", err)
		}
	}
	h.log.Info("completed", "outcome", h.res.Outcome, "inserted", h.ap.rows.Inserted, "updated", h.ap.rows.Updated,
		"unchanged", h.ap.rows.Unchanged, "stale", h.ap.rows.Stale, "superseded", h.ap.rows.Superseded, "rejected", h.ap.rows.Rejected)
	return nil
}

// recountedRows reads this attempt's counters from the ledger, where
// another attempt's completion of an --atomic import recounted the rows
// this one staged as what the move did to the target.
func (h *holding) recountedRows(ctx context.Context) (idemtype.Rows, error) {
	as, err := h.e.st.Ledger.Attempts(ctx, h.id.Key)
	if err != nil {
		return idemtype.Rows{}, err
	}
	for _, a := range as {
		if a.ID == h.attempt.ID {
			return a.Rows, nil
		}
	}
	return idemtype.Rows{}, fmt.Errorf("attempt %s not found", h.attempt.ID)
}
