package pipeline

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/english"
	"github.com/idemport/idemport/internal/proc"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline/internal/store"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/reader/remote"
	"github.com/idemport/idemport/sink"
)

// Request asks for one file to be imported. The zero values of the tuning
// fields mean their defaults.
type Request struct {
	Path string
	// FileID is the file's business identity, or a template of it (see
	// [FileID]); empty means its content digest.
	FileID  string
	Mapping Mapping
	// PartitionRows is the rows per partition of a new plan (default
	// 100000). A stored plan keeps the size it was made with. When it is
	// 0, the import has a key and the target groups commits
	// (sink.Database.GroupCommits: SQLite), a new plan's partitions grow
	// instead, from 100000 rows to growRows (reader.ScanOptions.GrowTo).
	PartitionRows int64
	// PartitionBytes bounds the partitions of a new plan of a text file by
	// their bytes as well (default 64 MiB; see
	// reader.ScanOptions.PartitionBytes). A stored plan keeps the
	// partitions it was made with.
	PartitionBytes int64
	// MaxRejects is how many bad rows a file may have and still be imported;
	// the bad rows then go to the rejects quarantine.
	MaxRejects RejectLimit
	// Lease is how long a claim stays valid without a heartbeat (default 60s).
	Lease time.Duration
	// Trigger says who started the run: manual (default), cron, ci or replay.
	Trigger string
	// Wait, when positive, makes a busy run wait up to that long for the
	// other attempt instead of returning Busy.
	Wait time.Duration
	// Workers is how many partitions are applied at once (default 1).
	Workers int
	// BatchRows is the rows per batch handed to the sink: by default what
	// the database's driver asks for (sink.Database.BatchRows), and for 0
	// a whole partition (at most 1M rows), as on PostgreSQL, so that each
	// partition is one COPY and one set-based merge.
	BatchRows int
	// Rehash makes the run hash the file even when the quick check (path,
	// size, times, inode) says it is unchanged since it was last hashed.
	Rehash bool
	// MinAge, when positive, skips a file modified more recently than
	// that: it may still be being written. The outcome is Skipped.
	MinAge time.Duration
	// Reapply makes a completed operation be applied again by a new
	// attempt, as if its table had been dropped. Ordinal-mode rows are
	// keyed by file and row, so this writes no duplicate; in natural-key
	// mode without a version column, the file's values overwrite newer ones.
	Reapply bool
	// Replace makes a file whose file ID names an operation completed with
	// other content (and the same mapping) replace it: the earlier
	// version's rows are removed (ordinal mode) or its keys the new
	// version lacks deleted (by key), and the new version imported; with
	// Mapping.Atomic all of it in the completing transaction. The earlier
	// operation is kept among past operations as replaced. It needs a
	// FileID that names the file (a content digest never has another
	// version).
	Replace bool
	// MaxDelete limits how many rows a snapshot sweep may remove: a count,
	// or a percentage of the live rows in the snapshot's scope; nil means
	// DefaultMaxDelete. It is not part of the mapping, so a rerun with a
	// higher limit resumes the operation it refused.
	MaxDelete *RejectLimit
	// AsOf is the time a snapshot's data is as of; zero means the file's
	// modification time. A snapshot older than the last one applied to the
	// same table and scope is stale and writes nothing.
	AsOf time.Time
	// Remote opens a Path that is an s3:// or http(s):// URL; nil means a
	// client with default options (the AWS configuration chain).
	Remote *remote.Client
	// SpoolDir, when set, is where a remote input is copied while it is
	// hashed, so that the plan pass and the partitions read the copy and
	// a first import fetches the object once; a compressed input, each of
	// whose partitions decompresses from the first byte, is copied
	// whenever it is read. The copy is resumed by range after an
	// interruption and removed when the operation settles. Empty means
	// each partition is read from the object again (a compressed one from
	// its first byte). The plan pass of a keyed file spills there too the
	// key hashes it cannot hold in memory (KeysHeld), and removes them
	// before it ends; SpoolDir is created 0700 when missing, and one that
	// cannot be used fails a keyed run. Empty means they spill to the
	// system's temporary directory, which may be held in memory (tmpfs).
	SpoolDir string
	// KeysHeld is how many key hashes the plan pass of a keyed file holds
	// in memory before it spills them to SpoolDir (reader.ScanOptions.
	// KeysHeld); 0 means the reader's default. The plan is the same
	// whatever it is: tests set it small to make a pass spill.
	KeysHeld int
	// Name is the name a stream (Path "-", standard input; or a pipe, a
	// FIFO, /dev/stdin) is known by: in the ledger, in results, for its
	// format and compression by extension, and for the default table.
	// Empty means "stdin". A stream is copied into a private file in
	// SpoolDir (the system's temporary directory when empty) while it is
	// hashed, imported from that copy, and the copy removed: its identity
	// is its content, so the same bytes piped again are a duplicate, or
	// resume an import that was interrupted.
	Name string
	// Stdin is what Path "-" reads; nil means nothing (an empty stream).
	Stdin io.Reader
	// Progress, if set, receives progress reports. It is called from the
	// import's goroutines and must be quick.
	Progress func(Progress)
}

// Progress reports how far an import is. Totals are zero while unknown.
// The phases come in order, hash, plan then apply (a phase with nothing
// to do is left out); each phase's values only grow, and its last report
// has them equal to its totals. Hash and plan count the bytes of the file
// as stored (compressed bytes for a compressed file) against its size;
// apply counts rows against the plan's. The plan phase's bytes reach its
// total only in the report that its pass has ended.
type Progress struct {
	Phase      string // "hash", "plan" or "apply"
	Bytes      int64
	TotalBytes int64
	Rows       int64 // rows done, including those of partitions done before
	TotalRows  int64
	Partitions int64 // partitions done
	TotalParts int64
	Skipped    int64 // partitions that were already done when this run began applying
}

// Defaults.
const (
	maxBatchRows = 1 << 20 // the largest batch a partition is read in

	DefaultLease   = 60 * time.Second
	DefaultTrigger = "manual"
)

// run is the state of one file's import: its holding, which the identify
// and claim stages fill in, and what the run keeps besides.
type run struct {
	holding
	started time.Time

	sharesRead bool         // plan while hashing (imports do; dry runs and verify do not)
	spec       *speculation // the plan pass identify started on the hash's read (identify returns it)
	early      *early       // the overlap's transaction begun beside the claim, if it was (beginEarly)
	planned                 // what the plan stage made, or loadPlan read: set once, from its result
}

// holding is an attempt holding its claimed operation: the identity and
// claim the identify and claim stages returned, with what the stages need
// of the attempt (its leases, its result, the tables it uses) and the
// steps they share: recording the attempt's end, readying the rows of a
// replaced version (prepareReplaced). The run fills it in; the claimer and
// the planner work on it, and the applier takes a copy once the plan is
// made.
type holding struct {
	e   *Engine
	req Request
	res *Result
	identity
	attempt ledger.Attempt
	target  sink.Target
	log     *slog.Logger
	in      *input    // what is imported: made by newRun, opened by identify
	claimed           // what the claim stage decided: set once, from its result
	tables  tables    // the names of the tables the import uses: set once, after the claim
	ap      *applying // what this attempt has done so far: counts, commits, leases recovered
	leaseMs int64     // the attempt's lease (Request.Lease) in milliseconds
	growTo  int64     // a new plan's partitions grow to this many rows (reader.ScanOptions.GrowTo); 0: they do not
}

// Import imports one file and reports what happened. It never panics on bad
// input; every failure is in the Result.
func (e *Engine) Import(ctx context.Context, req Request) *Result {
	r := newRun(e, req)
	r.started, r.sharesRead = time.Now(), true
	r.defaults()
	r.res = &Result{File: r.name(), Table: r.target.Table, Outcome: Failed}
	err := e.st.Present()
	var merr error // the migrations' failure
	if err == nil {
		err = r.run(ctx)
		// A run that failed before its identity was known, or skipped
		// its file (--min-age), may not have waited for the migrations
		// Open left running: what follows (a delivery pass, the next
		// file's quick check) reads the tables, and a state that could
		// not be created is this file's failure, not a skip, so that a
		// run that reaches no import still says so; a file that failed
		// for its own reason first (a missing file) says it too, below.
		// A run whose ctx is done is followed by neither, and does not
		// wait: Close ends the migrations.
		if ctx.Err() == nil {
			if merr = e.st.Ready(ctx); ctx.Err() != nil {
				merr = nil
			}
			if merr != nil && err == nil {
				err = merr
				r.res.Outcome = Failed
			}
		}
	}
	r.logFetched()
	r.in.settleSpool(r.res.Outcome == Failed || r.res.Outcome == Interrupted || r.res.Outcome == Busy, r.e.st.Log)
	r.in.close(r.e.st.Log)
	if err != nil && r.res.Err == nil {
		r.res.Err = err
	}
	if r.res.Err != nil && ctx.Err() == nil {
		r.res.Err = e.diskFull(r.res.Err)
	}
	if merr != nil && r.res.Err != nil && !errors.Is(r.res.Err, merr) {
		// The file failed for its own reason before it reached the
		// state, which cannot be created either: both are the user's
		// to fix, and fixing the file alone would only meet the other.
		// The state's comes second (a missing privilege is exit 2).
		r.res.Err, r.res.Outcome = errors.Join(r.res.Err, merr), Failed
	}
	if r.res.Outcome == Failed && ctx.Err() != nil {
		r.res.Outcome = Interrupted // stopped before it had an attempt to record
	}
	r.res.Rows.Add(r.ap.rows) // a refusal's counts are there already (refuse)
	r.res.QuickCheck = r.quick
	if r.file != nil {
		r.res.Read = r.file.Stats()
	}
	r.res.Duration = time.Since(r.started)
	if len(r.ap.recovered) > 0 {
		r.res.RecoveredLease, r.res.RecoveredLeases = true, int64(len(r.ap.recovered))
		for _, a := range r.ap.recovered { // an attempt holds a lease per partition it had claimed
			if !slices.Contains(r.res.RecoveredFrom, a) {
				r.res.RecoveredFrom = append(r.res.RecoveredFrom, a)
			}
		}
	}
	return r.res
}

func (r *run) defaults() {
	q := &r.req
	if r.in.streaming {
		if q.Name == "" {
			q.Name = "stdin"
		}
	}
	if q.Mapping.Table == "" {
		q.Mapping.Table = DefaultTable(formatName(r.name()))
	}
	if q.Lease <= 0 {
		q.Lease = DefaultLease
	}
	if q.Trigger == "" {
		q.Trigger = DefaultTrigger
	}
	if q.Workers <= 0 {
		q.Workers = 1
	}
	if q.PartitionRows <= 0 {
		q.PartitionRows = reader.DefaultPartitionRows
		if r.e.st.GroupCommits && len(q.Mapping.Key) > 0 {
			r.growTo = growRows
		}
	}
	if q.PartitionBytes <= 0 {
		q.PartitionBytes = reader.DefaultPartitionBytes
	}
	if q.BatchRows <= 0 {
		q.BatchRows = r.e.st.Batch
		if q.BatchRows <= 0 { // the whole partition: one COPY and one merge
			q.BatchRows = int(min(q.PartitionRows, maxBatchRows))
		}
	}
	r.leaseMs = q.Lease.Milliseconds()
	r.target = sink.Target{Table: q.Mapping.Table, Key: q.Mapping.Key, Version: q.Mapping.Version}
}

// progress reports p to q's Progress, if set.
func (q *Request) progress(p Progress) {
	if q.Progress != nil {
		q.Progress(p)
	}
}

func (r *run) run(ctx context.Context) error {
	defer func() { r.spec.stop() }()
	defer func() { r.early.close() }() // unless an overlap took it
	if skipped, err := r.identify(ctx); skipped || err != nil {
		return err
	}
	if err := r.e.st.Hit("after-identify"); err != nil {
		return err
	}
	// The overlap's transaction, begun while the file was hashed (early),
	// is rolled back by a claim that makes no new operation this
	// attempt's, before anything else.
	c, err := r.claimer().claimWaiting(ctx)
	r.ap.recovered = c.recovered // the attempt starts applying with the leases its claim recovered
	if err != nil || !c.taken || c.decision != ledger.Create {
		r.early.close()
	}
	if err != nil || !c.taken {
		return err
	}
	r.claimed = c
	r.tables = newTables(r.req, r.target, r.identity, c, r.e.st.Driver.Limits())
	r.log.Info("claimed", "decision", c.decision.String(), "recovered_from", r.attempt.RecoveredFrom)
	if err := r.e.st.Hit("after-claim"); err != nil {
		return r.abandon(ctx, err)
	}
	wctx, stop := heartbeat(ctx, r.leases())
	err = r.work(wctx, c.decision)
	stop()
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(wctx), errUnanswered) {
		err = context.Cause(wctx)
	}
	return r.stopped(ctx, err)
}

// identify runs the identify stage and checks the mapping against the
// file (preflight). skipped says the file is too young to import
// (--min-age): the run ends there, without error.
func (r *run) identify(ctx context.Context) (skipped bool, err error) {
	idf := r.identifier()
	ident, spec, err := idf.identify(ctx)
	r.spec, r.early = spec, idf.early
	if young := (*tooYoungError)(nil); errors.As(err, &young) {
		r.res.Outcome = Skipped
		r.res.note(r.log, "%s", young)
		return true, nil
	} else if err != nil {
		return false, err
	}
	r.identified(ident)
	r.res.FileID, r.res.ContentDigest, r.res.MappingDigest = r.id.FileID, r.id.ContentDigest, r.id.MappingDigest
	note, err := r.planner().preflight()
	if err != nil {
		return false, err
	}
	if note != "" {
		r.res.note(r.log, "%s", note)
	}
	return false, nil
}

// stopped ends the attempt whose work stopped with err (nil: it
// completed): a retraction, a changed source, a busy holder, a refused
// sweep or any other failure is recorded as such.
func (r *run) stopped(ctx context.Context, err error) error {
	var retracted errRetracted
	switch {
	case err == nil, r.res.Outcome == Refused:
		return err
	case errors.As(err, &retracted):
		return retracted.error
	case errors.Is(err, reader.ErrSourceChanged) && ctx.Err() == nil:
		return r.abandonChanged(ctx, err)
	case ctx.Err() == nil && (errors.As(err, new(*BusyError)) || r.e.st.Driver.Locked(err)):
		return r.stopBusy(ctx, err)
	}
	if unfit := (*unfitError)(nil); errors.As(err, &unfit) && ctx.Err() == nil {
		return r.refuseLate(ctx, unfit)
	}
	if moved := (*MoveRefusedError)(nil); errors.As(err, &moved) && ctx.Err() == nil {
		err = moved // said as it is, not as the step of the completion it stopped
	}
	if rows := (*RowsRefusedError)(nil); errors.As(err, &rows) && ctx.Err() == nil {
		err = rows // said as it is, not as the step of the partition it stopped
	}
	var guard *DeleteGuardError
	if (errors.As(err, &guard) || errors.As(err, new(*MoveRefusedError)) || errors.As(err, new(*RowsRefusedError))) && ctx.Err() == nil {
		err = r.abandon(ctx, err)
		r.res.Outcome = Refused // exit 5; the operation stays resumable, or forgotten
		return err
	}
	return r.abandon(ctx, err)
}

// identified makes ident the run's identity and starts its attempt: an ID
// and a logger that names them.
func (r *run) identified(ident identity) {
	r.identity = ident
	host, _ := os.Hostname()
	r.attempt = ledger.Attempt{ID: uuid.Must(uuid.NewV7()).String(), Trigger: r.req.Trigger, Host: host, PID: os.Getpid(),
		ProcStart: proc.Start(os.Getpid()), Path: r.name()}
	r.log = r.e.st.Log.With("file", r.name(), "operation", r.id.Key.String(), "file_id", r.id.FileID, "attempt_id", r.attempt.ID)
	if r.id.ContentDigest != r.digests.Content {
		r.log.Info("identified by the digest of its stored bytes, as an older version recorded it", "content_digest", r.digests.Content)
	}
}

// readAs sets r.id.ReadAs, once, when the stored operation op was made
// with a mapping whose digest differs from this run's: then the two may
// differ only in --column types that change nothing, which
// ledger.Identity.SameMapping tells from the types the file's columns are
// read as whatever the mapping says. A text file going into an existing
// table is read with the table's column types (planInputs: those of its
// numeric columns only without --evolve widen, which infers them from the
// file); a Parquet or Arrow file with its own. The table is read through
// q, once a run.
func (cl *claimer) readAs(ctx context.Context, q sink.Querier, op *ledger.Operation) error {
	if op == nil || op.MappingDigest == cl.id.MappingDigest || cl.id.ReadAs != nil {
		return nil
	}
	readAs := map[string]string{}
	if cl.textFormat() {
		if !cl.e.st.Exists() || cl.e.st.Driver.Limits().CheckTable(cl.target.Table) != nil {
			return nil
		}
		t, err := cl.e.st.Driver.Describe(ctx, q, cl.target.Table)
		if err != nil {
			return err
		}
		for name, typ := range tableTypes(t, cl.req.Mapping.Evolve == EvolveWiden) {
			readAs[name] = typ.StoredName()
		}
	} else {
		f, err := cl.in.open(reader.Options{Format: cl.req.Mapping.Format})
		if err != nil {
			return nil // the plan pass reports a file it cannot read
		}
		for _, c := range f.Schema() {
			readAs[c.Name] = c.Type.StoredName()
		}
	}
	cl.id.ReadAs = readAs
	return nil
}

// txn is a transaction that a cancel of its context stops up to its
// COMMIT but not during it (store.Txn).
type txn = store.Txn

// beginTx begins a txn on db (store.BeginTx).
func beginTx(ctx context.Context, db interface {
	BeginTx(context.Context, *sql.TxOptions) (*sql.Tx, error)
}) (*txn, error) {
	return store.BeginTx(ctx, db)
}

// detachedFor returns ctx free of its cancel for at most wait, but not of
// the database's silence (store.Detached): for what a run must still do
// after an interrupt, such as learn whether a COMMIT whose reply was lost
// committed.
func detachedFor(ctx context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	d, cancel := store.Detached(ctx)
	d, cancelWait := context.WithTimeout(d, wait)
	return d, func() { cancelWait(); cancel() }
}

// work plans if the claim made this run the planner, then applies and
// finalizes.
func (r *run) work(ctx context.Context, d ledger.Decision) error {
	switch d {
	case ledger.Create, ledger.Supersede, ledger.Replace, ledger.Plan, ledger.Reapply:
		kp := r.keeper()
		// A kept overlap's writer may still checkpoint what it committed
		// (overlap.detach), beside the apply below.
		defer func() { kp.ov.wait() }()
		p, refused, err := kp.planFile(ctx)
		r.planned = p // what it read counts even when refused (Result.Read)
		if err != nil || refused {
			return err
		}
		if d == ledger.Create {
			if err := r.planner().noteSamePath(ctx, p.plan); err != nil {
				r.log.Warn("could not look for other content imported from the same path", "err", err)
			}
		}
		if err := r.e.st.Hit("after-plan"); err != nil {
			return err
		}
	default:
		r.spec.stop() // a stored plan is used instead
		r.spec = nil
		p, err := r.planner().loadPlan(ctx)
		if err != nil {
			return err
		}
		r.planned = p
	}
	a := r.applier()
	if err := a.apply(ctx); err != nil {
		return err
	}
	completer, err := a.finalize(ctx)
	if err != nil {
		return err
	}
	return r.succeed(ctx, completer)
}

// applier is the apply and finalize stages of r's attempt, with the
// identity, claim and plan its earlier stages made.
func (r *run) applier() *applier {
	return &applier{holding: r.holding, started: r.started, text: r.textFormat(),
		planned: r.planned, leases: r.leases()}
}

// stopBusy ends an attempt that found its operation's remaining work held
// by a holder that cannot be taken over: its claims are released and it is
// recorded as busy, and the outcome is Busy (exit 4).
func (h *holding) stopBusy(ctx context.Context, err error) error {
	var b *BusyError
	if !errors.As(err, &b) {
		b = h.locked(ctx)
	}
	h.log.Warn("busy", "err", b)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if cerr := h.record(cctx, "busy", b); errors.Is(cerr, ledger.ErrCompleted) {
		return h.completedMeanwhile(cctx, b)
	} else if cerr != nil {
		h.log.Error("could not record the end of the attempt; its leases will expire instead", "err", cerr)
	}
	h.res.Outcome = Busy
	return b
}

// abandon records a failed or interrupted attempt, releasing its claims so
// the next run can resume at once, and returns err.
func (h *holding) abandon(ctx context.Context, err error) error {
	h.res.Outcome = Failed
	outcome := "failed"
	if ctx.Err() != nil {
		outcome = string(Interrupted)
		err = fmt.Errorf("%w (this run committed %s)", ErrInterrupted, english.Plural(h.ap.committed, "partition"))
	}
	level := slog.LevelError
	if outcome == "interrupted" {
		level = slog.LevelWarn
	}
	h.log.Log(context.WithoutCancel(ctx), level, "attempt stopped", "outcome", outcome, "err", err)
	wait := 30 * time.Second
	if errors.Is(err, errUnanswered) {
		wait = unansweredRecord // it may not answer now either
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
	defer cancel()
	if cerr := h.record(cctx, outcome, err); errors.Is(cerr, ledger.ErrCompleted) {
		return h.completedMeanwhile(cctx, err)
	} else if cerr != nil {
		h.log.Error("could not record the failure; the lease will expire instead", "err", cerr)
	}
	return err
}

// abandonChanged records that the source of h's operation changed under this
// attempt: in one transaction, the operation's partitions are dropped, in
// ordinal mode the rows it committed are deleted (the changed file is
// another file, which then imports cleanly), and it becomes abandoned.
// The result then counts the partitions as a failed run's do (this run's
// committed, the others' done before it skipped) and the rows deleted as
// removed: its rows counted as inserted, of this run's partitions, are no
// longer in the table.
func (h *holding) abandonChanged(ctx context.Context, cause error) error {
	h.res.Outcome = Failed
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var (
		deleted int64
		parts   idemtype.Partitions
	)
	err := withTx(ctx, h.e.st.DB, func(tx *sql.Tx) error {
		if err := h.e.st.Ledger.Lock(ctx, tx, h.id.Key); err != nil {
			return err
		}
		// Another attempt, reading its own unchanged copy, may have
		// completed the operation meanwhile: that stays.
		if op, err := h.e.st.Ledger.Find(ctx, tx, h.id.Key); err != nil {
			return err
		} else if op != nil && op.State == ledger.Completed {
			return ledger.ErrCompleted
		}
		p, err := h.e.st.CP.Progress(ctx, tx, h.op, h.attempt.ID)
		if err != nil {
			return err
		}
		parts = idemtype.Partitions{Total: p.Total, Skipped: p.Done - h.ap.committed, Committed: h.ap.committed}
		if _, _, err := h.e.st.CP.Drop(ctx, tx, h.op); err != nil {
			return err
		}
		if err := h.dropWorkTables(ctx, tx); err != nil {
			return err
		}
		if h.target.Ordinal() {
			var err error
			if deleted, err = h.e.st.Driver.DeleteFile(ctx, tx, h.target.Table, h.id.FileKey); err != nil {
				return err
			}
		}
		if err := h.e.st.Ledger.Close(ctx, tx, h.id.Key, ledger.Abandoned); err != nil {
			return err
		}
		return h.e.st.Ledger.End(ctx, tx, h.attempt.ID, string(ledger.Abandoned), cause.Error(), 0, int64(len(h.ap.recovered)))
	})
	if errors.Is(err, ledger.ErrCompleted) {
		h.res.note(h.log, "%s changed while this run read it, but another attempt had completed its import meanwhile; the changed file is another file to import", h.req.Path)
		return h.completedMeanwhile(ctx, cause)
	}
	if err != nil {
		h.log.Error("could not abandon the operation; the lease will expire instead", "err", err)
		return cause
	}
	h.res.Partitions, h.res.Removed = parts, deleted
	h.log.Warn("source changed: operation abandoned", "deleted", deleted, "err", cause)
	h.dropAbandoned(ctx)
	if h.target.Ordinal() {
		return fmt.Errorf("%w; the import was abandoned and the %s it had committed %s removed: import the file again once it is complete (--min-age helps)", cause, english.Plural(deleted, "row"), english.Verb(deleted, "was", "were"))
	}
	return fmt.Errorf("%w; the import was abandoned (rows it committed by key stay): import the file again once it is complete (--min-age helps)", cause)
}

// dropWorkTables drops inside tx, where DDL does not commit, the staging
// table of --atomic and the table of keys seen of h's operation, which
// its completing transaction would have dropped: left, they would hold
// the abandoned attempt's rows for the next operation of the same table
// and file ID. (Where DDL commits, dropAbandoned drops them.)
func (h *holding) dropWorkTables(ctx context.Context, tx *sql.Tx) error {
	if h.e.st.DDLCommits() {
		return nil
	}
	for _, name := range []string{h.tables.stage, h.tables.seen} {
		if err := h.e.st.Driver.DropTable(ctx, tx, name); err != nil {
			return fmt.Errorf("drop %s: %w", name, err)
		}
	}
	return nil
}

// completedMeanwhile ends the attempt of a run that stopped with cause
// while its operation was completed, by another attempt (which finished
// the work: a partition or staging table this run wanted was done or gone)
// or by this one (an error after its completing transaction committed):
// the import is done, and the run succeeds.
func (h *holding) completedMeanwhile(ctx context.Context, cause error) error {
	op, err := h.e.st.Ledger.Find(ctx, h.e.st.DB, h.id.Key)
	if err != nil || op == nil || op.State != ledger.Completed {
		return cause
	}
	h.log.Info("the operation was completed while this attempt ran; what stopped it is moot", "completed_by", op.CompletedBy, "err", cause)
	h.res.Err = nil
	if op.CompletedBy != h.attempt.ID {
		h.res.EventID, h.res.Deleted = "", 0
	}
	return h.succeed(ctx, op.CompletedBy)
}

// record ends the attempt as outcome, for failure, and releases its
// claims, under the operation's Lock. When the operation is completed it
// fails with ledger.ErrCompleted, recording nothing: the import is done,
// whatever stopped this attempt. Except when its lease was lost: a stalled
// attempt whose work another took over failed, and is recorded so (the
// completed operation stays as it is). A record the database failed to
// break a deadlock rolled back whole, and is made again (at most
// maxDeadlocks times): an interrupted attempt's partition transaction,
// rolled back by the server as its connection closes, still holds the
// partition's row while the record, holding the operation's, releases the
// partitions (MariaDB), and without the record the operation looked in
// progress until the leases expired.
func (h *holding) record(ctx context.Context, outcome string, failure error) error {
	for deadlocks := 0; ; deadlocks++ {
		err := h.recordOnce(ctx, outcome, failure)
		if err == nil || ctx.Err() != nil || !h.e.st.Driver.Deadlock(err) || deadlocks == maxDeadlocks {
			return err
		}
		h.log.Debug("recording the end of the attempt was a deadlock's victim; recording it again", "err", err)
	}
}

// recordOnce is one transaction of record.
func (h *holding) recordOnce(ctx context.Context, outcome string, failure error) error {
	tx, err := h.e.st.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := h.e.st.Ledger.Lock(ctx, tx, h.id.Key); err != nil {
		return err
	}
	if err := h.e.st.CP.Release(ctx, tx, h.op, h.attempt.ID); err != nil {
		return err
	}
	p, err := h.e.st.CP.Progress(ctx, tx, h.op, h.attempt.ID)
	if err != nil {
		return err
	}
	if err := h.e.st.Ledger.Fail(ctx, tx, h.id.Key, h.attempt.ID, p.Held > 0); err != nil &&
		(!errors.Is(err, ledger.ErrCompleted) || !errors.Is(failure, ledger.ErrLeaseLost)) {
		return err
	}
	// Skipped: partitions done, but not by this attempt (before it, or by
	// others meanwhile); those nobody finished are neither.
	skipped := p.Done - h.ap.committed
	h.res.Partitions = idemtype.Partitions{Total: p.Total, Skipped: skipped, Committed: h.ap.committed}
	if err := h.e.st.Ledger.End(ctx, tx, h.attempt.ID, outcome, failure.Error(), skipped, int64(len(h.ap.recovered))); err != nil {
		return err
	}
	return tx.Commit()
}

// withTx runs f in a transaction on db and commits it.
func withTx(ctx context.Context, db *sql.DB, f func(*sql.Tx) error) error {
	tx, err := beginTx(ctx, db)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f(tx.Tx); err != nil {
		return err
	}
	return tx.Commit()
}

// growRows is the rows a new plan's partitions grow to on a target that
// groups commits, for an import with a key and no Request.PartitionRows
// (reader.ScanOptions.GrowTo): SQLite writes each partition of keys in
// random order in passes over the table's B-tree, one per run its reader
// sorts (pipeline/keyorder.go), and the fewer the partitions the fewer the
// passes. 10M shuffled rows, 7 short columns: 245 s and 91 GB written
// with partitions of 100000 rows, 78 s and 24 GB with 1000000.
const growRows = 10 * reader.DefaultPartitionRows
