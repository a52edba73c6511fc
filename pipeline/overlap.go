package pipeline

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline/internal/store"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/sink"
)

// An overlap writes the first partitions of a new file while its plan
// pass still runs, so that the rows start going into the target before
// the pass has read the whole file. It writes them in one transaction,
// which creates the table (unless it exists), with the columns' types the
// rows of the first partition the pass finished infer, and which nothing
// else sees until it commits. When the pass ends and the file is admitted, the same
// transaction stores the plan, its bad rows and the written partitions'
// done marks, and commits: the partitions left are applied as ever.
// Otherwise it rolls back, leaving nothing, and the file goes the way it
// goes without it (refused, or planned and applied from its first
// partition).
//
// What the overlap wrote is what the apply would have written, or it does
// not commit: a partition is read as the plan's partitions are
// (reader.File.Partition) under a plan of the types it was written with,
// and it commits only when the final plan has those types, and the
// written partitions as the pass reported them (offsets, lengths, CRCs,
// rows, bad rows) and none of their rows superseded by a later row of the
// same key (the pass tells those only at its end). A row the database
// refuses, a table that changed, a partition whose bytes changed: it
// rolls back.
//
// It serves only a plain import: a new operation (ledger.Create),
// or one without a plan yet (ledger.Plan: its first attempt died before
// storing one, or was refused and may now be admitted),
// of a local CSV, TSV, JSONL or Parquet file of at least overlapBytes,
// one worker, ordinal or by key without a version column, and none of
// --atomic, --snapshot, --replace, --reapply, --evolve, on a database
// whose DDL is transactional; into a table that does not exist yet, or
// into one that exists and has both lineage columns (a daily delta into
// its keyed table). The pass then reads text as the table's columns
// are typed, so no type is guessed; the writer is prepared for the table
// as the transaction holds it, checked as the apply checks it
// (applier.fits), and an upsert of a stored key updates it in the
// transaction, which a rollback undoes. Excluded: a table without the
// lineage columns, which the plan's Ensure alters, and an ALTER held
// across the pass would lock every reader of the table out.
//
// Its transaction holds the table's creation, or for an existing table
// Ensure's lock on its name (another import's plan, and an --atomic
// import's completion, wait), the lock every write takes (PostgreSQL's
// ROW EXCLUSIVE: an ALTER, an --evolve import, waits) and the rows it wrote (another import writing
// the same keys waits, or one of the two is a deadlock's victim and
// rolls back: the overlap's goes without it, the apply's is run again),
// and on SQLite the whole database's write lock, while the pass runs, so
// it is bounded in time (overlapTime, or Engine.overlapWait): an overlap
// still waiting for the pass past it rolls back.
type overlap struct {
	kp *keeper
	sp *speculation
	in planInput
	// existing is the table as the plan stage found it (planInputs),
	// which the pass is told; nil: it does not exist yet.
	existing *sink.Table
	file     *reader.File
	time     time.Duration // how long it may wait for the pass (overlapTime)
	began    time.Time
	cancel   context.CancelFunc
	done     chan struct{} // closed when its goroutines end
	final    chan struct{} // closed by settle: the plan is final, admitted
	limit    int           // once final: the partitions it may write are those before it

	// Set by its goroutines; read by the keeper once done is closed.
	a       *applier // the writer's applier, for the schema of the first partition
	conn    *sql.Conn
	tx      *txn
	created reader.Schema      // set with tx by an early begin: the types it created the table with
	untie   context.CancelFunc // an early begin's: ends the context its transaction was begun under, once it is over
	w       partitionWriter
	written []overlapped
	err     error // why it rolled back

	detached func() // set by detach: the wait for what its writer still does
}

// overlapped is a partition an overlap wrote, and what writing it did.
type overlapped struct {
	part   reader.Partition
	counts idemtype.Rows
}

// overlapBytes is the least size of a file an overlap serves: a smaller
// file's plan pass ends within a few tens of milliseconds (8 MiB of CSV
// in 20–40 ms), too soon for writing beside it to gain anything.
const overlapBytes = 8 << 20

// overlapTime bounds how long an overlap's transaction waits for the
// plan pass, lease being the attempt's lease and busy the database's
// --busy-timeout: others wait for its locks (SQLite's write lock), and on
// SQLite this attempt's heartbeat waits for it too.
func overlapTime(lease, busy time.Duration) time.Duration {
	return min(lease/4, busy/4, 10*time.Second)
}

// overlapWrite is how many bytes of the file (of a Parquet file, its row
// groups' uncompressed size: reader.Cut's Bytes) an overlap writes before
// the plan is final whatever the pass's pace; past them it writes on
// only while the pass, at the pace it has kept, would end within three
// quarters of the overlap's time (full), and never past the database's bound on a
// held transaction (sink.Limits.HeldBytes: SQLite's log). Writing on
// keeps the database busy while a large file's pass runs, where it would
// otherwise wait for the pass; what a pass that ends too late makes the
// overlap roll back is lost, so the bound leaves room for the pass's end
// (a keyed file's duplicate check), its slowdown beside the writes, and
// the commit.
const overlapWrite = 24 << 20

// errOverlapTime stops an overlap whose plan pass ran past overlapTime.
var errOverlapTime = errors.New("the plan pass took longer than an overlap may hold its transaction")

// overlaps says whether the file of kp's attempt is one an overlap serves.
func (kp *keeper) overlaps() bool {
	return kp.overlapsFile(kp.id.Size) && (kp.decision == ledger.Create || kp.decision == ledger.Plan) && !kp.tables.keysSeen
}

// overlapsFile says whether h's file, of size bytes, and request are ones
// an overlap serves as far as they tell before the claim, whose decision
// and the tables it names overlaps asks besides.
func (h *holding) overlapsFile(size int64) bool {
	m, q := h.req.Mapping, h.req
	f := m.Format
	if f == "" {
		f, _, _ = reader.Detect(formatName(h.name()))
	}
	return size >= overlapBytes && !h.e.st.DDLCommits() && q.Workers == 1 &&
		(f == reader.CSV || f == reader.TSV || f == reader.JSONL || f == reader.Parquet) && h.in.obj == nil && !h.in.streaming &&
		!m.Atomic && m.Snapshot == nil && m.Evolve == EvolveNone && m.Version == "" && !q.Replace && !q.Reapply &&
		h.e.st.Driver.Limits().CheckTable(h.target.Table) == nil
}

// An early begin is an overlap's transaction begun before the claim, on
// a database whose claim does not wait for a transaction that holds a
// new table's creation (not SQLite, whose one writer would make it wait;
// not MariaDB, whose DDL commits): beside the migrations of a fresh state
// and the claim, once the plan pass has finished its first partition, it
// takes a connection, begins and creates the new table with that
// partition's types, as the overlap's begin would after the claim. The
// overlap that takes it (startOverlap) then only readies its writer: the
// claim and the round trips before an overlap's first row (a CREATE
// TABLE among them) no longer wait for each other.
//
// It creates nothing anyone sees: its transaction commits only as the
// overlap's does, with the plan, and rolls back otherwise. It serves
// only a new file (its plan pass started on the hash's read) into a table
// that does not exist, and only a run that does not wait for a busy
// operation (--wait): the table's creation it holds (Ensure's lock on
// the name) would stop the holder it waits for, whose overlap or plan
// creates the same table. A claim that does not make a new operation this
// attempt's (a duplicate, a busy or failed claim, a resume) rolls it back
// (close) before anything else is done; one that does hands it to the
// overlap, or rolls it back when the plan stage starts none.
type early struct {
	cancel context.CancelFunc // ends its goroutine, and its transaction
	done   chan struct{}      // closed when its goroutine ends
	taken  bool               // by take or close: later calls do nothing
	time   time.Duration      // the overlap's time (overlapTime), which its hold counts against
	log    *slog.Logger

	// Set by its goroutine once it created the table; read once done is
	// closed, under mu, since expire may roll them back meanwhile.
	mu     sync.Mutex
	conn   *sql.Conn
	tx     *txn
	schema reader.Schema // the first partition's types, the table's
	began  time.Time     // when its transaction began
	expiry *time.Timer   // rolls it back (expire) once its time is over
	handed bool          // by take or close: expire does nothing
}

// beginEarly starts an early begin for h's file, of size bytes, whose
// plan pass sp has just started on the hash's read, when one serves it,
// and returns it; nil otherwise (a nil early does nothing). A pool of one
// connection begins none: the claim would wait for the connection the
// early begin holds until the overlap after the claim takes it.
func (h *holding) beginEarly(ctx context.Context, sp *speculation, size int64) *early {
	st := h.e.st
	if sp == nil || st.DB == nil || h.req.Wait > 0 || st.GroupCommits || !h.overlapsFile(size) || st.DB.Stats().MaxOpenConnections == 1 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	el := &early{cancel: cancel, done: make(chan struct{}), time: cmp.Or(h.e.overlapWait, overlapTime(h.req.Lease, st.BusyTimeout)), log: st.Log}
	go el.run(ctx, st, sp, h.target)
	return el
}

// run waits for the pass's first partition, takes the early begin's
// connection, finds no table there, begins and creates the table in the
// transaction; it keeps connection and transaction only when all of that
// was done.
func (el *early) run(ctx context.Context, st *store.Store, sp *speculation, tg sink.Target) {
	defer close(el.done)
	// The connection is taken once the pass has finished its first
	// partition: by then the pass has described the table (planInputs)
	// and left its connection idle, which is taken rather than another
	// dialed beside the hash (on PostgreSQL a server process started).
	c, ok := firstCut(ctx, sp)
	if !ok {
		st.Log.Debug("no transaction begun before the claim: the plan pass finished no partition")
		return
	}
	if sp.tableFound() {
		// The pass described the table and found it (planInputs): the
		// Describe below would find it too, after taking a connection
		// that, while the claim holds the idle one, is a new session
		// dialed (on PostgreSQL a server process) for nothing.
		st.Log.Debug("no transaction begun before the claim: the table exists")
		return
	}
	conn, err := st.DB.Conn(ctx)
	if err != nil {
		st.Log.Debug("no transaction begun before the claim", "err", err)
		return
	}
	t, err := st.Driver.Describe(ctx, conn, tg.Table)
	if err != nil || t != nil {
		st.Log.Debug("no transaction begun before the claim", "err", err, "table_exists", t != nil)
		conn.Close()
		return
	}
	began := time.Now()
	tx, err := beginTx(ctx, conn)
	if err != nil {
		st.Log.Debug("no transaction begun before the claim", "err", err)
		conn.Close()
		return
	}
	schema := c.Schema.Arrow()
	if d, is := st.Driver.(connEnsurer); is {
		err = d.EnsureOn(ctx, conn, tx.Tx, tg, schema)
	} else {
		err = st.Driver.Ensure(ctx, tx.Tx, tg, schema)
	}
	if err == nil {
		err = st.Hit("inside-early-overlap")
	}
	if err != nil {
		st.Log.Debug("the transaction begun before the claim created no table", "err", err)
		tx.Rollback()
		conn.Close()
		return
	}
	el.mu.Lock()
	el.conn, el.tx, el.schema, el.began = conn, tx, c.Schema, began
	el.expiry = time.AfterFunc(el.time-time.Since(began), el.expire)
	el.mu.Unlock()
}

// earlyExpiredLog is the message expire logs.
const earlyExpiredLog = "rolled back the transaction begun before the claim: the claim came later than the overlap's time"

// expire rolls the early begin back when nothing took it within the
// overlap's time from its begin: its hold of the new table's creation
// (Ensure's lock on the name) counts against that time as the overlap's
// own does, so that another import creating the same table waits no
// longer for it than for an overlap, however long the hash, a fresh
// state's migrations or the claim take. The overlap after the claim then
// begins its own transaction, as without an early begin.
func (el *early) expire() {
	el.mu.Lock()
	defer el.mu.Unlock()
	if el.handed || el.tx == nil {
		return
	}
	el.log.Debug(earlyExpiredLog, "time", el.time)
	el.tx.Rollback()
	el.conn.Close()
	el.conn, el.tx, el.schema = nil, nil, nil
}

// hand marks el handed over (take, close), stopping its expiry, and
// returns what it holds.
func (el *early) hand() (*sql.Conn, *txn, reader.Schema, time.Time) {
	el.mu.Lock()
	defer el.mu.Unlock()
	el.handed = true
	if el.expiry != nil {
		el.expiry.Stop()
	}
	return el.conn, el.tx, el.schema, el.began
}

// firstCut waits for the first partition the pass sp finishes; ok is
// false when it ended without one, or ctx did.
func firstCut(ctx context.Context, sp *speculation) (reader.Cut, bool) {
	for {
		if c, ok := sp.cutAt(0); ok {
			return c, true
		}
		select {
		case <-sp.cut:
		case <-sp.done:
			return sp.cutAt(0)
		case <-ctx.Done():
			return reader.Cut{}, false
		}
	}
}

// take waits for the early begin and hands its connection and transaction
// over (nil when it has none): the caller then owns them, and cancel,
// which rolls the transaction back. Later calls return nothing.
func (el *early) take() (conn *sql.Conn, tx *txn, schema reader.Schema, began time.Time, cancel context.CancelFunc) {
	if el == nil || el.taken {
		return nil, nil, nil, time.Time{}, nil
	}
	el.taken = true
	<-el.done
	conn, tx, schema, began = el.hand()
	if tx == nil {
		el.cancel()
		return nil, nil, nil, time.Time{}, nil
	}
	return conn, tx, schema, began, el.cancel
}

// close rolls the early begin back, unless it was taken. It may be
// called again.
func (el *early) close() {
	if el == nil || el.taken {
		return
	}
	el.taken = true
	el.cancel()
	<-el.done
	if conn, tx, _, _ := el.hand(); tx != nil {
		tx.Rollback()
		conn.Close()
	}
}

// startOverlap starts an overlap for kp's file when it serves it, and
// returns it; nil otherwise (a nil overlap does nothing). When no plan
// pass was started while the file was hashed (the quick check knew it:
// a rerun after an attempt that died before storing its plan), it starts
// one now, as the speculation the plan stage then takes (planPass), and
// returns it to be stopped once the stage is over.
func (kp *keeper) startOverlap(ctx context.Context) (*overlap, *speculation) {
	defer kp.early.close() // unless the overlap took it
	if !kp.overlaps() {
		return nil, nil
	}
	in, existing, err := kp.planInputs(ctx)
	if err != nil || (existing != nil && (existing.Column(sink.FileColumn) == nil || existing.Column(sink.RowColumn) == nil)) {
		return nil, nil
	}
	// The plan stage takes these (planPass) rather than asking again:
	// asked again while the overlap holds the connection it takes below,
	// they needed another.
	kp.asked = &askedInputs{in: in, existing: existing}
	var own *speculation
	if kp.spec == nil {
		own = kp.speculate(ctx, nil, false)
		kp.spec = own
	}
	f, err := kp.in.open(kp.readerOptions(in))
	if err != nil {
		return nil, own
	}
	// The overlap's connection is taken now, before the plan stage goes
	// on: the one the claim and planInputs have just used, idle, its
	// statements prepared. Taken at the first write, it raced the plan
	// stage's own query, and lost about half the time: it then waited for
	// a connection dialed (on PostgreSQL a server process started, and
	// each statement prepared again).
	// An early begin's transaction, begun and the table created in it
	// before the claim, is the overlap's when the table is still new.
	var (
		conn        *sql.Conn
		tx          *txn
		created     reader.Schema
		began       = time.Now()
		earlyBegan  time.Time
		earlyCancel context.CancelFunc
	)
	if existing == nil {
		conn, tx, created, earlyBegan, earlyCancel = kp.early.take()
	}
	if tx != nil {
		began = earlyBegan // its hold so far counts against the overlap's time
	}
	kp.early.close()
	if conn == nil {
		if conn, err = kp.e.st.DB.Conn(ctx); err != nil {
			f.Close()
			return nil, own
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	if earlyCancel != nil {
		ovCancel := cancel
		cancel = func() { ovCancel(); earlyCancel() }
	}
	ov := &overlap{kp: kp, sp: kp.spec, in: in, existing: existing, file: f, conn: conn, tx: tx, created: created, untie: earlyCancel, time: cmp.Or(kp.e.overlapWait, overlapTime(kp.req.Lease, kp.e.st.BusyTimeout)),
		began: began, cancel: cancel, done: make(chan struct{}), final: make(chan struct{})}
	go ov.run(ctx)
	return ov, own
}

// run reads and writes the partitions the pass finishes, on two
// goroutines as a worker does, until there are no more to write or
// something stops it; then it rolls back, unless it stopped with nothing
// wrong.
func (ov *overlap) run(ctx context.Context) {
	defer close(ov.done)
	q := newQueue(ov.kp.holding.req.BatchRows)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer q.close()
		return ov.read(gctx, q)
	})
	g.Go(func() error { return ov.write(gctx, ctx, q) })
	err := g.Wait()
	for it := range q.items {
		it.batch.Release()
	}
	if err != nil {
		ov.rollback(err)
	}
}

// read decodes each partition the pass finishes into items, as the
// worker's reader does.
func (ov *overlap) read(ctx context.Context, q *queue) error {
	send := func(it item) error { return q.send(ctx, it) }
	var bytes int64
	for i := 0; ; i++ {
		c, ok, err := ov.next(ctx, i, bytes)
		if err != nil || !ok {
			return err
		}
		bytes += c.Bytes
		if i == 0 {
			ov.a = ov.applier(c.Schema)
		} else if !slices.Equal(c.Schema, ov.a.plan.Schema) {
			return fmt.Errorf("the columns' types changed at partition %d", c.Partition.Index)
		}
		if err := ov.a.readPartition(&checkpoint.Claim{Partition: checkpoint.Partition{Partition: c.Partition}}, send, i == 0); err != nil {
			return err
		}
	}
}

// next returns the i-th partition the pass finished, waiting for it; ok
// is false when none is to be written any more: the plan is final and i
// is past its limit or the overlap's time, or the pass ended without it,
// or the partitions written hold overlapWrite bytes of the file (written)
// already; before then, once they hold all it may write (full), it waits
// for the plan to be final.
// Past its time while the pass runs, it fails with errOverlapTime.
func (ov *overlap) next(ctx context.Context, i int, written int64) (c reader.Cut, ok bool, err error) {
	for {
		final := closed(ov.final)
		if final && (i >= ov.limit || time.Since(ov.began) > ov.time || written >= overlapWrite) {
			return c, false, nil
		}
		if !final && ov.full(written) {
			select {
			case <-ov.final:
				continue
			case <-ctx.Done():
				return c, false, ctx.Err()
			case <-time.After(ov.time - time.Since(ov.began)):
				return c, false, errOverlapTime
			}
		}
		if !final && time.Since(ov.began) > ov.time {
			return c, false, errOverlapTime
		}
		if c, ok := ov.sp.cutAt(i); ok {
			return c, true, nil
		}
		left := time.NewTimer(ov.time - time.Since(ov.began))
		select {
		case <-ov.sp.cut:
		case <-ov.sp.done:
			if _, ok := ov.sp.cutAt(i); !ok {
				// No more: the keeper settles or aborts the overlap.
				select {
				case <-ov.final:
				case <-ctx.Done():
				}
				left.Stop()
				if !closed(ov.final) {
					return c, false, ctx.Err()
				}
				return c, false, nil
			}
		case <-ov.final:
		case <-left.C:
		case <-ctx.Done():
			left.Stop()
			return c, false, ctx.Err()
		}
		left.Stop()
	}
}

// full reports whether the partitions written, written bytes of the
// file, are all the overlap may write before the plan is final: the
// database's bound on a held transaction (sink.Limits.HeldBytes), or
// overlapWrite bytes once the pass, at its pace so far, would not end
// within three quarters of the overlap's time. The pace since the pass
// began is a cautious one: while the file was hashed, the pass shared the
// file's reads and a core with the hash.
func (ov *overlap) full(written int64) bool {
	if held := ov.kp.e.st.Driver.Limits().HeldBytes; held > 0 && written >= held {
		return true
	}
	return written >= overlapWrite && !ov.sp.endsBy(ov.began.Add(ov.time*3/4), ov.kp.id.Size)
}

// closed reports whether ch is closed.
func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// applier returns the applier the overlap writes with: the attempt's,
// with the plan's schema as the first partition's rows inferred it. Into
// an existing table the partitions are read from the first as the table
// takes their values (valuesAs, as expectAs has the apply read them); a
// table changed since is found by the writer, whose types then differ
// (overlap.write rolls back).
func (ov *overlap) applier(schema reader.Schema) *applier {
	kp := ov.kp
	a := &applier{holding: *kp.holding, text: kp.textFormat(), leases: kp.leases(),
		planned: planned{inputs: ov.in, file: ov.file, plan: &reader.Plan{Schema: schema}}}
	a.ap = &applying{} // its own: the attempt counts what commits
	if ov.existing != nil {
		as := valuesAs(kp.req.Mapping, a.text, ov.existing, schema)
		a.ap.lastAs.Store(&as)
	}
	return a
}

// write writes the items read into the overlap's transaction, which it
// begins with the first, under txCtx, which outlives ctx (the goroutines'):
// the table created, and the writer readied for it.
func (ov *overlap) write(ctx, txCtx context.Context, q *queue) error {
	var (
		cur    *checkpoint.Claim
		counts idemtype.Rows
	)
	for it := range q.items {
		q.took(it)
		switch {
		case it.claim != nil:
			if ov.w.Writer == nil {
				if err := ov.begin(txCtx); err != nil {
					return err
				}
			}
			if !slices.Equal(it.as, ov.w.as) {
				return fmt.Errorf("partition %d was read for other types than the table takes", it.claim.Index)
			}
			cur, counts = it.claim, idemtype.Rows{}
		case it.end:
			counts.Read += cur.Rejected
			counts.Rejected += cur.Rejected
			counts = behindSuperseded(counts, ov.kp.target)
			if counts.Read != cur.Rows || !counts.Balanced() {
				return fmt.Errorf("partition %d: counted %+v for %d rows", cur.Index, counts, cur.Rows)
			}
			ov.written = append(ov.written, overlapped{part: cur.Partition.Partition, counts: counts})
			if err := ov.kp.e.st.Hit("inside-overlap"); err != nil {
				return err
			}
		default:
			c, bad, err := ov.a.writeBatch(ctx, ov.tx.Tx, ov.w.Writer, it.batch.Record, it.batch.Ordinals, 0)
			it.batch.Release()
			if err == nil && len(bad) > 0 {
				err = fmt.Errorf("the database refused row %d", bad[0].ordinal)
			}
			if err != nil {
				return err
			}
			counts.Add(c)
		}
	}
	return ctx.Err()
}

// begin begins the overlap's transaction on its connection (taken by
// startOverlap), creates the table in it, or checks the existing one
// (through the driver's EnsureOn where it has one: a round trip fewer),
// and readies the writer. The transaction commits as the server says
// (not lazily): it stores the plan. An existing table is ensured first,
// before any row, as the plan's store would: so the overlap takes
// Ensure's lock on the table's name (PostgreSQL) before the rows it
// writes, in the order an --atomic import's completion takes them (taken
// after, each waited for the other), and its writer finds the table as
// the plan leaves it (SQLite: a decimal key compared by number, which the
// key of a table an older version made is not until Ensure). A
// transaction begun before the claim (early), which created the new
// table with the first partition's types, only has its writer readied.
func (ov *overlap) begin(ctx context.Context) error {
	st := ov.kp.e.st
	if ov.tx != nil {
		// Begun early, the table created with the first partition's
		// types (early): the types the overlap writes by.
		if !slices.Equal(ov.created, ov.a.plan.Schema) {
			return errors.New("the table was created before the claim with other types than the first partition's")
		}
		return ov.w.ready(ctx, ov.a, ov.conn, ov.tx.Tx)
	}
	var err error
	if ov.tx, err = beginTx(ctx, ov.conn); err != nil {
		return err
	}
	schema := ov.a.plan.Schema.Arrow()
	// A table found before the overlap began is ensured, held and
	// described in one message (ensureHolder) where the driver allows:
	// one round trip fewer before the first row.
	if d, ok := st.Driver.(ensureHolder); ok && ov.existing != nil && ov.w.Writer == nil && ov.a.tables.write.Table == ov.kp.target.Table {
		version, table, err := d.EnsureHeld(ctx, ov.conn, ov.tx.Tx, ov.kp.target, schema)
		if err != nil {
			return err
		}
		return ov.w.readyFor(ctx, ov.a, ov.conn, version, table)
	}
	if d, ok := st.Driver.(connEnsurer); ok {
		err = d.EnsureOn(ctx, ov.conn, ov.tx.Tx, ov.kp.target, schema)
	} else {
		err = st.Driver.Ensure(ctx, ov.tx.Tx, ov.kp.target, schema)
	}
	if err != nil {
		return err
	}
	return ov.w.ready(ctx, ov.a, ov.conn, ov.tx.Tx)
}

// rollback rolls the overlap's transaction back, for err, and releases
// its writer and connection.
func (ov *overlap) rollback(err error) {
	if ov.tx != nil {
		ov.tx.Rollback()
		ov.tx = nil
		if ov.err == nil {
			ov.err = err
		}
		ov.kp.log.Info("the partitions written while the plan pass ran were rolled back", "partitions", len(ov.written), "why", err)
	}
	ov.release()
}

// release closes the overlap's writer, connection and file.
func (ov *overlap) release() {
	if ov.untie != nil {
		ov.untie()
		ov.untie = nil
	}
	if ov.w.Writer != nil {
		ov.w.Close()
		ov.w.Writer = nil
	}
	if ov.conn != nil {
		ov.conn.Close()
		ov.conn = nil
	}
	if ov.file != nil {
		ov.file.Close()
		ov.file = nil
	}
}

// detach releases the overlap as release does once it has committed, but
// leaves what its writer still does that no commit waits for
// (sink.Detacher: on SQLite, the checkpoint of the pages the commit wrote
// and synced, 0.1-0.2 s for the 300,000 rows of three partitions) to go
// on beside the apply, which waited for it. wait waits for it.
func (ov *overlap) detach() {
	if d, ok := ov.w.Writer.(sink.Detacher); ok {
		ov.detached = d.Detach()
		ov.w.Writer = nil
	}
	ov.release()
}

// wait waits for what detach left going on, if anything: before the
// attempt ends, so that all of it has ended before the database is closed.
func (ov *overlap) wait() {
	if ov != nil && ov.detached != nil {
		ov.detached()
		ov.detached = nil
	}
}

// abort stops the overlap, if any, and rolls back what it wrote. It may
// be called again, and after keep.
func (ov *overlap) abort() {
	if ov == nil {
		return
	}
	ov.cancel()
	<-ov.done
	ov.rollback(errors.New("the file's plan does not keep them"))
}

// settle decides, once the plan pass ended, whether the overlap is kept:
// p is the plan stage's result, and the file is admitted as far as the
// plan alone tells (nothing bars it: keeper.barred, the function the
// keeper's admit refuses the file by). A kept overlap writes the
// partitions the pass finished before the first whose rows a later key
// supersedes, within its time, and stops; it is then kept when what it
// wrote is what the plan says. An overlap not kept is rolled back, before
// anything else is written. It reports whether it was kept.
func (ov *overlap) settle(p planned, err error) bool {
	if ov == nil {
		return false
	}
	first, cut := ov.sp.cutAt(0)
	kp := ov.kp
	ok := err == nil && cut && p.speculated && p.existing == ov.existing && ov.in.equal(p.inputs) && slices.Equal(p.plan.Schema, first.Schema)
	// A file holding keys a table may compare as one (reader.Plan.Loose)
	// is written with its writer told so (sink.Target.Loose), which the
	// overlap's, prepared before the pass ended, was not.
	ok = ok && !p.plan.Loose
	var barred error
	if ok {
		barred = kp.barred(p)
		ok = barred == nil
	}
	if !ok {
		kp.log.Debug("the plan keeps nothing written while the plan pass ran", "err", err, "barred", barred, "cut", cut, "speculated", p.speculated)
		ov.abort()
		return false
	}
	// A last partition is cut before the pass ends only when it is full
	// (reader.ScanOptions.Partitioned): written, it is the plan's as any.
	ov.limit = len(p.plan.Partitions)
	for i, pt := range p.plan.Partitions {
		if len(pt.Superseded) > 0 {
			ov.limit = min(ov.limit, i)
			break
		}
	}
	close(ov.final)
	<-ov.done
	if ov.tx == nil || len(ov.written) == 0 {
		ov.abort()
		return false
	}
	for i, w := range ov.written {
		if i >= ov.limit {
			ov.abort()
			return false
		}
		pt := p.plan.Partitions[i]
		if w.part.Index != i || len(pt.Superseded) > 0 || pt.First != w.part.First || pt.Offset != w.part.Offset ||
			pt.Length != w.part.Length || pt.CRC != w.part.CRC || pt.Rows != w.part.Rows || pt.Rejected != w.part.Rejected {
			ov.abort()
			return false
		}
	}
	return true
}

// kept reports whether the overlap was settled and kept, and is still to
// commit.
func (ov *overlap) kept() bool {
	return ov != nil && closed(ov.final) && ov.tx != nil
}

// commit does in the overlap's transaction what the plan's would do
// (store, as storePlan), marks the partitions it wrote done by this
// attempt with their counts, and commits. What it committed is then this
// attempt's, as partitions it applied.
func (ov *overlap) commit(ctx context.Context, store func(tx *sql.Tx) error) error {
	kp, tx := ov.kp, ov.tx
	defer ov.detach()
	ov.tx = nil
	defer tx.Rollback()
	if err := store(tx.Tx); err != nil {
		return err
	}
	st := kp.e.st
	for _, w := range ov.written {
		c, err := st.CP.Claim(ctx, tx.Tx, kp.op, kp.attempt.ID, kp.leaseMs)
		if err != nil {
			return err
		}
		if c == nil || c.Index != w.part.Index {
			return fmt.Errorf("partition %d written before the plan's end is not the first left to claim", w.part.Index)
		}
		if err := st.CompletePartition(ctx, tx.Tx, kp.id.Key, c.Index, kp.attempt.ID, w.counts); err != nil {
			return err
		}
	}
	if err := kp.in.check(kp.stat); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	for _, w := range ov.written {
		kp.ap.committed++
		kp.ap.rows.Add(w.counts)
	}
	kp.log.Debug("partitions written while the plan pass ran committed with the plan", "partitions", len(ov.written))
	// Each partition committed passes the failpoint after-partition-commit,
	// as one the apply commits does, so that its N-th pass is still the
	// moment N partitions are committed.
	for range ov.written {
		if err := kp.e.st.Hit("after-partition-commit"); err != nil {
			return err
		}
	}
	return nil
}
