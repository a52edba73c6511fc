package pipeline

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/internal/counter"
	"github.com/idemport/idemport/internal/proc"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/sink"
)

// Request asks for one file to be imported. The zero values of the tuning
// fields mean their defaults.
type Request struct {
	Path string
	// FileID is the file's business identity; empty means its content digest.
	FileID  string
	Mapping Mapping
	// PartitionRows is the rows per partition of a new plan (default
	// 100000). A stored plan keeps the size it was made with.
	PartitionRows int64
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
	// BatchRows is the rows per batch handed to the sink (default 1024).
	BatchRows int
	// Rehash makes the run hash the file even when the quick check (path,
	// size, times, inode) says it is unchanged since it was last hashed.
	Rehash bool
	// Progress, if set, receives progress reports. It is called from the
	// import's goroutines and must be quick.
	Progress func(Progress)
}

// Progress reports how far an import is. Totals are zero while unknown.
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
	DefaultLease   = 60 * time.Second
	DefaultTrigger = "manual"
)

// run is the state of one file's import.
type run struct {
	e       *Engine
	req     Request
	res     *Result
	id      ledger.Identity
	op      checkpoint.Op
	attempt ledger.Attempt
	target  sink.Target
	log     *slog.Logger
	leaseMs int64
	started time.Time

	stat       ledger.FileStat
	quick      bool // the digest came from the quick check, not from hashing
	sharesRead bool // plan while hashing (imports do; dry runs and verify do not)
	spec       *speculation
	created    bool // this run created the operation
	claimed    bool // an attempt row exists for this run
	file       *reader.File
	plan       *reader.Plan
	recovered  []string
	committed  int64
	rows       counter.Rows
	doneRows   int64 // rows of partitions done, by anyone, for progress
}

// Import imports one file and reports what happened. It never panics on bad
// input; every failure is in the Result.
func (e *Engine) Import(ctx context.Context, req Request) *Result {
	r := &run{e: e, req: req, started: time.Now(), sharesRead: true}
	r.defaults()
	r.res = &Result{File: req.Path, Table: r.target.Table, Outcome: Failed}
	err := r.run(ctx)
	if err != nil && r.res.Err == nil {
		r.res.Err = err
	}
	r.res.Rows = r.rows
	r.res.QuickCheck = r.quick
	if r.file != nil {
		r.res.Read = r.file.Stats()
	}
	r.res.Duration = time.Since(r.started)
	if len(r.recovered) > 0 {
		r.res.RecoveredLease, r.res.RecoveredFrom = true, r.recovered
	}
	return r.res
}

func (r *run) defaults() {
	q := &r.req
	if q.Mapping.Table == "" {
		q.Mapping.Table = DefaultTable(q.Path)
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
	if q.BatchRows <= 0 {
		q.BatchRows = max(r.e.batch, 1024)
	}
	if q.PartitionRows <= 0 {
		q.PartitionRows = reader.DefaultPartitionRows
	}
	r.leaseMs = q.Lease.Milliseconds()
	r.target = sink.Target{Table: q.Mapping.Table, Key: q.Mapping.Key, Version: q.Mapping.Version}
}

func (r *run) progress(p Progress) {
	if r.req.Progress != nil {
		r.req.Progress(p)
	}
}

func (r *run) run(ctx context.Context) error {
	defer func() { r.spec.stop() }()
	if err := r.identify(ctx); err != nil {
		return err
	}
	if err := r.preflight(); err != nil {
		return err
	}
	if err := r.e.fp.Hit("after-identify"); err != nil {
		return err
	}
	decision, err := r.claimWaiting(ctx)
	if err != nil || !r.claimed {
		return err
	}
	r.log.Info("claimed", "decision", decision.String(), "recovered_from", r.attempt.RecoveredFrom)
	if err := r.e.fp.Hit("after-claim"); err != nil {
		return r.abandon(ctx, err)
	}
	stop := r.heartbeat(ctx)
	err = r.work(ctx, decision)
	stop()
	var retracted errRetracted
	switch {
	case err == nil, r.res.Outcome == Refused:
		return err
	case errors.As(err, &retracted):
		return retracted.error
	}
	return r.abandon(ctx, err)
}

// identify hashes the file and computes the operation's fingerprint.
func (r *run) identify(ctx context.Context) error {
	m := r.req.Mapping
	if m.Version != "" && len(m.Key) == 0 {
		return usagef("a version column needs --key: without a natural key a row only ever comes from one file")
	}
	format, _, err := reader.Detect(r.req.Path)
	if m.Format != "" {
		format, err = m.Format, nil
	}
	if err != nil {
		return &UsageError{Err: err}
	}
	st, err := os.Stat(r.req.Path)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return usagef("%s is a directory", r.req.Path)
	}
	host, _ := os.Hostname()
	r.stat = fileStat(host, r.req.Path, st)
	digest := ""
	if !r.req.Rehash && r.e.db != nil {
		if digest, err = r.e.ledger.KnownDigest(ctx, r.e.db, r.stat); err != nil {
			return err
		}
		r.quick = digest != ""
	}
	hashProgress := func(n int64) {
		r.progress(Progress{Phase: "hash", Bytes: n, TotalBytes: st.Size()})
	}
	switch {
	case digest != "":
	case r.sharesRead && r.textFormat():
		// Hash and plan on one read: the plan pass follows the hash.
		sr, err := startSharedRead(ctx, r.req.Path, hashProgress)
		if err != nil {
			return err
		}
		r.speculate(ctx, sr)
		if digest, err = sr.Digest(); err != nil {
			return err
		}
	default:
		if digest, err = reader.Digest(ctx, r.req.Path, hashProgress); err != nil {
			return err
		}
	}
	fileID := r.req.FileID
	if fileID == "" {
		fileID = digest
	}
	delim := m.Delimiter
	if delim == 0 {
		delim = ','
		if format == reader.TSV {
			delim = '\t'
		}
	}
	quotes := format == reader.CSV || m.Quotes
	mapping, mdigest := m.canonical(format, delim, quotes)
	r.id = ledger.Identity{
		Key:           ledger.Key{Table: m.Table, FileID: fileID},
		FileKey:       FileKey(fileID),
		ContentDigest: digest,
		MappingDigest: mdigest,
		Mapping:       mapping,
		Path:          r.req.Path,
		Size:          st.Size(),
	}
	r.op = checkpoint.Op{Table: m.Table, FileID: fileID}
	r.res.FileID, r.res.ContentDigest, r.res.MappingDigest = fileID, digest, mdigest
	r.attempt = ledger.Attempt{ID: uuid.Must(uuid.NewV7()).String(), Trigger: r.req.Trigger, Host: host, PID: os.Getpid(),
		ProcStart: proc.Start(os.Getpid()), Path: r.req.Path}
	r.log = r.e.log.With("operation", r.id.Key.String(), "file_id", fileID, "attempt_id", r.attempt.ID)
	return nil
}

// claimWaiting claims, and when busy and asked to wait, polls until the
// other attempt is done or the wait is over.
func (r *run) claimWaiting(ctx context.Context) (ledger.Decision, error) {
	deadline := time.Now().Add(r.req.Wait)
	for {
		d, err := r.claim(ctx)
		if d != ledger.Busy || time.Now().After(deadline) {
			return d, err
		}
		r.log.Debug("busy; waiting", "err", err)
		if err := sleep(ctx, min(time.Second, r.req.Lease/4)); err != nil {
			return d, err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// claim makes the decision of the claim table and records it. Terminal
// outcomes that write nothing (duplicate, conflict, refused) are decided
// without taking the write lock: completed and refused operations never
// change their fingerprint or state.
func (r *run) claim(ctx context.Context) (ledger.Decision, error) {
	op, now, err := r.e.ledger.Get(ctx, r.e.db, r.id.Key)
	if err != nil {
		return 0, err
	}
	if op != nil {
		if d, _ := ledger.Decide(op, r.id, now); d != ledger.Busy && r.settles(d, op) {
			if !r.quick {
				// The file was hashed: remember it, so the next run need not.
				if err := r.e.ledger.RememberDigest(ctx, r.e.db, r.stat, r.id.ContentDigest); err != nil {
					return 0, err
				}
			}
			return d, r.settle(d, op)
		}
	}
	tx, err := r.e.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("begin claim: %w", err)
	}
	defer tx.Rollback()
	if err := r.e.ledger.Lock(ctx, tx, r.id.Key); err != nil {
		return 0, err
	}
	if op != nil && op.State == ledger.Processing {
		if err := r.reapDead(ctx, tx, op); err != nil {
			return 0, err
		}
	}
	op, now, err = r.e.ledger.Get(ctx, tx, r.id.Key)
	if err != nil {
		return 0, err
	}
	d, from := ledger.Decide(op, r.id, now)
	if d == ledger.Refuse && r.admits(op) {
		d = ledger.Plan
	}
	switch d {
	case ledger.Create:
		if err := r.e.ledger.Create(ctx, tx, r.id, r.attempt, r.leaseMs); err != nil {
			return 0, err
		}
		r.created = true
	case ledger.Plan:
		if from != "" {
			r.attempt.RecoveredFrom = from
			r.recovered = append(r.recovered, from)
			r.log.Warn("recovered the planning lease of a dead attempt", "from", from)
		}
		if err := r.e.ledger.Start(ctx, tx, r.id.Key, r.attempt, true, r.leaseMs); err != nil {
			return 0, err
		}
	case ledger.Resume:
		p, err := r.e.cp.Progress(ctx, tx, r.op, r.attempt.ID)
		if err != nil {
			return 0, err
		}
		if p.Claimable == 0 && p.Held > 0 {
			d = ledger.Busy
			break
		}
		if err := r.e.ledger.Start(ctx, tx, r.id.Key, r.attempt, false, r.leaseMs); err != nil {
			return 0, err
		}
	}
	if !r.settles(d, op) {
		if !r.quick && r.stat.Path != "" {
			if err := r.e.ledger.RememberDigest(ctx, tx, r.stat, r.id.ContentDigest); err != nil {
				return 0, err
			}
		}
		if err := tx.Commit(); err != nil {
			return 0, fmt.Errorf("commit claim: %w", err)
		}
		r.claimed = true
		r.res.AttemptID = r.attempt.ID
		return d, nil
	}
	return d, r.settle(d, op)
}

// reapDead ends at once the leases of attempts that ran on this host in
// processes that have since died, so a rerun after a crash need not wait
// for them to expire. Leases of live processes, and of other hosts, are
// left to expire on their own.
func (r *run) reapDead(ctx context.Context, tx *sql.Tx, op *ledger.Operation) error {
	holders, err := r.e.cp.Holders(ctx, tx, r.op)
	if err != nil {
		return err
	}
	if op.LeaseAttempt != "" {
		holders = append(holders, op.LeaseAttempt)
	}
	for _, a := range holders {
		host, pid, start, ok, err := r.e.ledger.Process(ctx, tx, a)
		if err != nil {
			return err
		}
		if !ok || host != r.attempt.Host || !proc.Gone(pid, start) {
			continue
		}
		r.log.Info("the process holding a lease is gone", "holder", a, "pid", pid)
		if err := r.e.cp.Expire(ctx, tx, r.op, a); err != nil {
			return err
		}
		if err := r.e.ledger.Expire(ctx, tx, r.id.Key, a); err != nil {
			return err
		}
	}
	return nil
}

// settles reports whether decision d ends the run without an attempt.
func (r *run) settles(d ledger.Decision, op *ledger.Operation) bool {
	switch d {
	case ledger.Duplicate, ledger.Conflict, ledger.Busy:
		return true
	case ledger.Refuse:
		return !r.admits(op)
	}
	return false
}

// admits reports whether this run's reject limit lets a refused operation be
// planned again: the stored report counted fewer bad rows than it allows.
func (r *run) admits(op *ledger.Operation) bool {
	return op != nil && op.State == ledger.Refused && r.req.MaxRejects.Allows(op.Rows.Rejected, op.Rows.Read) && !r.refusedByDefect(op)
}

// refusedByDefect reports whether the stored refusal was for a defect that
// stopped the plan pass (no limit admits those).
func (r *run) refusedByDefect(op *ledger.Operation) bool {
	var ref Refusal
	return json.Unmarshal([]byte(op.Outcome), &ref) == nil && ref.Error != ""
}

// settle fills the result of a decision that ends the run without effect.
func (r *run) settle(d ledger.Decision, op *ledger.Operation) error {
	r.res.Stored = op
	switch d {
	case ledger.Duplicate:
		r.res.Outcome = Duplicate
		var so storedOutcome
		if err := json.Unmarshal([]byte(op.Outcome), &so); err == nil {
			r.rows = so.Rows
			r.res.Partitions = counter.Partitions{Total: so.Partitions, Skipped: so.Partitions}
		}
		r.res.AttemptID = op.CompletedBy
		r.log.Info("duplicate", "completed_by", op.CompletedBy)
		return nil
	case ledger.Conflict:
		r.res.Outcome = Conflict
		what, how := ledger.Difference(op, r.id)
		return fmt.Errorf("conflict: %s differs from the file %s as %s into %s on %s (%s)",
			what, map[bool]string{true: "refused", false: "imported"}[op.State == ledger.Refused], op.FileID, op.Table, formatMs(op.CreatedAt), how)
	case ledger.Refuse:
		r.res.Outcome = Refused
		var ref Refusal
		if err := json.Unmarshal([]byte(op.Outcome), &ref); err == nil {
			r.res.Refusal = &ref
		}
		r.rows = op.Rows
		return fmt.Errorf("refused earlier on %s: %s", formatMs(op.UpdatedAt), refusalText(r.res.Refusal))
	case ledger.Busy:
		r.res.Outcome = Busy
		if op.LeaseAttempt != "" && !op.Planned {
			return fmt.Errorf("busy: attempt %s is planning this file (lease until %s)", op.LeaseAttempt, formatMs(op.LeaseExpires))
		}
		return fmt.Errorf("busy: other attempts hold every unfinished partition")
	}
	return nil
}

func formatMs(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}

func refusalText(ref *Refusal) string {
	if ref == nil {
		return "no stored report"
	}
	if ref.Error != "" {
		return ref.Error
	}
	s := fmt.Sprintf("%d of %d rows are bad (at most %s allowed)", ref.Rejected, ref.Rows, ref.MaxRejects)
	for i, b := range ref.Rejects {
		if i == 5 {
			s += fmt.Sprintf("; … %d more", ref.Rejected-5)
			break
		}
		s += fmt.Sprintf("; row %d", b.Ordinal)
		if b.Column != "" {
			s += fmt.Sprintf(" column %q value %q", b.Column, b.Value)
		}
		s += ": " + b.Message
	}
	return s
}

// heartbeat renews this attempt's leases until the returned stop is called.
func (r *run) heartbeat(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(max(r.req.Lease/3, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := r.e.ledger.Heartbeat(ctx, r.e.db, r.id.Key, r.attempt.ID, r.leaseMs); err != nil && ctx.Err() == nil {
				r.log.Warn("heartbeat failed", "err", err)
			}
			if _, err := r.e.cp.Renew(ctx, r.e.db, r.op, r.attempt.ID, r.leaseMs); err != nil && ctx.Err() == nil {
				r.log.Warn("heartbeat failed", "err", err)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// work plans if the claim made this run the planner, then applies and
// finalizes.
func (r *run) work(ctx context.Context, d ledger.Decision) error {
	if d == ledger.Create || d == ledger.Plan {
		refused, err := r.planFile(ctx)
		if err != nil || refused {
			return err
		}
		if err := r.e.fp.Hit("after-plan"); err != nil {
			return err
		}
	} else {
		r.spec.stop() // a stored plan is used instead
		r.spec = nil
		if err := r.loadPlan(ctx); err != nil {
			return err
		}
	}
	if err := r.apply(ctx); err != nil {
		return err
	}
	return r.finalize(ctx)
}

// abandon records a failed or interrupted attempt, releasing its claims so
// the next run can resume at once, and returns err.
func (r *run) abandon(ctx context.Context, err error) error {
	r.res.Outcome = Failed
	outcome := "failed"
	if ctx.Err() != nil {
		outcome = "interrupted"
		err = fmt.Errorf("%w (this run committed %d partitions)", ErrInterrupted, r.committed)
	}
	level := slog.LevelError
	if outcome == "interrupted" {
		level = slog.LevelWarn
	}
	r.log.Log(context.WithoutCancel(ctx), level, "attempt stopped", "outcome", outcome, "err", err)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if cerr := r.record(cctx, outcome, err); cerr != nil {
		r.log.Error("could not record the failure; the lease will expire instead", "err", cerr)
	}
	return err
}

func (r *run) record(ctx context.Context, outcome string, failure error) error {
	tx, err := r.e.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := r.e.cp.Release(ctx, tx, r.op, r.attempt.ID); err != nil {
		return err
	}
	p, err := r.e.cp.Progress(ctx, tx, r.op, r.attempt.ID)
	if err != nil {
		return err
	}
	if err := r.e.ledger.Fail(ctx, tx, r.id.Key, r.attempt.ID, p.Held > 0); err != nil {
		return err
	}
	// Skipped: partitions done, but not by this attempt (before it, or by
	// others meanwhile); those nobody finished are neither.
	skipped := p.Done - r.committed
	r.res.Partitions = counter.Partitions{Total: p.Total, Skipped: skipped, Committed: r.committed}
	if err := r.e.ledger.End(ctx, tx, r.attempt.ID, outcome, failure.Error(), skipped, int64(len(r.recovered))); err != nil {
		return err
	}
	return tx.Commit()
}

// withTx runs f in a transaction and commits it.
func (r *run) withTx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := r.e.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}
