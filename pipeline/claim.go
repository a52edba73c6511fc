package pipeline

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/english"

	"github.com/idemport/idemport/internal/proc"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink"
)

// claimer is the claim stage of an attempt: it decides, on the ledger, what
// the attempt of its holding does with the operation of the holding's
// identity, records that, and returns it (claimed). It completes the
// holding as it goes: the identity's ReadAs (readAs), the lease the
// attempt recovers, and the result of a decision that settles.
type claimer struct {
	*holding
}

// claimer returns the run's claim stage.
func (r *run) claimer() *claimer {
	return &claimer{holding: &r.holding}
}

// claimWaiting claims, and when busy and asked to wait, polls until the
// other attempt is done or the wait is over. Each try is logged (debug),
// so that a test can count them.
func (cl *claimer) claimWaiting(ctx context.Context) (claimed, error) {
	deadline := time.Now().Add(cl.req.Wait)
	var recovered []string // by every try, as the tries recorded them
	deadlocks := 0
	for {
		cl.log.Debug("claiming the operation")
		c, err := cl.claim(ctx)
		for _, a := range c.recovered {
			if !slices.Contains(recovered, a) {
				recovered = append(recovered, a)
			}
		}
		if err != nil && ctx.Err() == nil && cl.e.st.Driver.Deadlock(err) && deadlocks < maxDeadlocks {
			// The claim's transaction was a deadlock's victim (on
			// MariaDB, taking over a dead attempt's leases while
			// another process's partition transactions lock the same
			// rows in another order) and rolled back whole: claim
			// again, after a pause that differs from run to run.
			deadlocks++
			cl.log.Warn("the claim's transaction was a deadlock's victim; claiming again", "err", err, "time", deadlocks)
			if err := afterDeadlock(ctx, deadlocks); err != nil {
				return claimed{recovered: recovered}, err
			}
			continue
		}
		if err != nil && ctx.Err() == nil && cl.e.st.Driver.Locked(err) {
			// A lock the claim needed stayed held past --busy-timeout.
			cl.res.Outcome = Busy
			c, err = claimed{decision: ledger.Busy}, cl.locked(ctx)
		}
		c.recovered = recovered
		if c.decision != ledger.Busy || time.Now().After(deadline) {
			return c, err
		}
		cl.log.Debug("busy; waiting", "err", err)
		if err := sleep(ctx, min(time.Second, cl.req.Lease/4)); err != nil {
			return c, err
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

// claimed is what the claim stage decided and recorded for the run's
// attempt: the decision, whether it took the operation (an attempt row
// exists for this run), whether it made it, and what that replaces.
type claimed struct {
	decision ledger.Decision
	taken    bool             // the decision did not settle: this run's attempt works on the operation
	created  bool             // the claim created the operation, or reset it to be applied again
	replaces string           // the content digest of the version the operation replaces (ledger.Operation.Replaces)
	newer    *ledger.Snapshot // the last snapshot applied to the scope, when this run's is older (ledger.Stale)
	// recovered are the dead attempts whose planning lease the claim took
	// over, set with the claim's error too: a claim whose transaction
	// then did not commit reports them all the same.
	recovered []string
}

// claim makes the decision of the claim table and records it. Terminal
// outcomes that write nothing (duplicate, conflict, refused) are decided
// without taking the write lock: completed and refused operations never
// change their fingerprint or state.
func (cl *claimer) claim(ctx context.Context) (claimed, error) {
	op, c, settled, err := cl.claimUnlocked(ctx)
	if settled || err != nil {
		return c, err
	}
	tx, err := beginTx(ctx, cl.e.st.DB)
	if err != nil {
		if cl.e.st.Driver.Locked(err) {
			cl.res.Outcome = Busy
			return claimed{decision: ledger.Busy}, cl.locked(ctx)
		}
		return claimed{}, fmt.Errorf("begin claim: %w", err)
	}
	defer tx.Rollback()
	dd, err := cl.lockedDecision(ctx, tx.Tx, op)
	if err != nil {
		return claimed{}, err
	}
	if settles(dd.decision) {
		// A settled decision keeps nothing of the claim transaction. End
		// it before settle writes through the pool (a duplicate records
		// the path it was seen under): on SQLite that write would
		// otherwise wait, until the busy timeout, for the lock this very
		// transaction holds.
		if err := tx.Rollback(); err != nil {
			return claimed{}, fmt.Errorf("end claim: %w", err)
		}
		return dd.claimed(), cl.settle(ctx, dd)
	}
	// The claim commits without waiting for the log's flush where the
	// driver allows it (lazyCommitter): the run reports nothing of it, and
	// ends, whatever it does next, with a transaction that waits (the
	// plan's refusal, the attempt's end, the completion) and so makes the
	// claim durable first. A crash of the server before then loses the
	// claim, which leaves the operation as the rerun finds it before any
	// claim (docs/internals.md).
	if l, ok := cl.e.st.Driver.(lazyCommitter); ok {
		if err := l.CommitLazily(ctx, tx.Tx); err != nil {
			return claimed{}, err
		}
	}
	c, err = cl.take(ctx, tx.Tx, dd)
	stopped := claimed{recovered: c.recovered} // what a claim that fails from here reports
	if err != nil {
		return stopped, err
	}
	if !cl.quick && !cl.recorded {
		if err := cl.rememberDigests(ctx, tx); err != nil {
			return stopped, err
		}
	}
	if err := tx.Commit(); err != nil {
		return stopped, fmt.Errorf("commit claim: %w", err)
	}
	cl.res.AttemptID, cl.res.Replaces = cl.attempt.ID, c.replaces
	return c, nil
}

// claimUnlocked decides, without the write lock, a claim that settles (a
// duplicate, a conflict, a refusal): it reports settled, and settles it.
// Otherwise it returns the operation as stored, if any.
func (cl *claimer) claimUnlocked(ctx context.Context) (*ledger.Operation, claimed, bool, error) {
	// The clock only once there is an operation to judge: a new file's
	// claim reads it under the lock.
	op, err := cl.e.st.Ledger.Find(ctx, cl.e.st.DB, cl.id.Key)
	if err != nil || op == nil {
		return nil, claimed{}, false, err
	}
	now, err := cl.e.st.Ledger.Clock(ctx, cl.e.st.DB)
	if err != nil {
		return nil, claimed{}, false, err
	}
	dd, err := cl.decide(ctx, cl.e.st.DB, op, now)
	if err != nil {
		return nil, claimed{}, false, err
	}
	if !settles(dd.decision) || dd.decision == ledger.Busy {
		return op, claimed{decision: dd.decision}, false, nil
	}
	if !cl.quick && !cl.recorded {
		// The file was hashed: remember it, so the next run need not
		// (a rehash that found what the quick check records changes nothing).
		if err := cl.rememberDigests(ctx, cl.e.st.DB); err != nil && !cl.e.st.Driver.Locked(err) {
			return nil, claimed{}, true, err
		}
	}
	return nil, claimed{decision: dd.decision}, true, cl.settle(ctx, dd)
}

// lockedDecision takes the operation's write lock in tx, reaps the dead
// holders of op (the operation as read before) when it was processing, and
// decides on the operation as it is then.
func (cl *claimer) lockedDecision(ctx context.Context, tx *sql.Tx, op *ledger.Operation) (decided, error) {
	if err := cl.e.st.Ledger.Lock(ctx, tx, cl.id.Key); err != nil {
		return decided{}, err
	}
	if op != nil && op.State == ledger.Processing {
		if err := cl.leases().reapDead(ctx, tx, op); err != nil {
			return decided{}, err
		}
	}
	op, now, err := cl.e.st.Ledger.Get(ctx, tx, cl.id.Key)
	if err != nil {
		return decided{}, err
	}
	return cl.decide(ctx, tx, op, now)
}

// decided is what the claim table decides for a file's identity on the
// ledger as it is: the stored operation (nil when none), the situation
// read from it, the decision and, for ledger.Plan, the dead attempt whose
// planning lease it recovers. Import records it (take) or settles it;
// plan, --dry-run and verify report it.
type decided struct {
	op       *ledger.Operation
	s        ledger.Situation
	decision ledger.Decision
	from     string
	newer    *ledger.Snapshot // see claimed.newer
}

// claimed returns the claim of a decision that settles: nothing taken.
func (dd decided) claimed() claimed {
	c := claimed{decision: dd.decision, newer: dd.newer}
	if dd.op != nil {
		c.replaces = dd.op.Replaces
	}
	return c
}

// decide gathers, through q, the situation of the stored operation op (nil
// when none) at database time now, and decides on it (ledger.Decide).
func (cl *claimer) decide(ctx context.Context, q sink.Querier, op *ledger.Operation, now int64) (decided, error) {
	s, newer, err := cl.situation(ctx, q, op, now)
	if err != nil {
		return decided{}, err
	}
	d, from := ledger.Decide(s)
	return decided{op: op, s: s, decision: d, from: from, newer: newer}, nil
}

// take records decision dd, which does not settle, in tx: the operation
// created (or superseded, replaced, reset to be applied again) and this
// run's attempt started on it, recovering the planning lease of dd.from
// when set.
func (cl *claimer) take(ctx context.Context, tx *sql.Tx, dd decided) (claimed, error) {
	c := claimed{decision: dd.decision, taken: true}
	if dd.op != nil {
		c.replaces = dd.op.Replaces
	}
	switch from := dd.from; dd.decision {
	case ledger.Create, ledger.Supersede, ledger.Replace:
		return cl.create(ctx, tx, dd.decision, dd.op)
	case ledger.Reapply:
		c.created, c.replaces = true, "" // applied again, it replaces nothing (ledger.Reset)
		return c, cl.reset(ctx, tx, dd.s)
	case ledger.Plan:
		if from != "" {
			cl.attempt.RecoveredFrom = from
			c.recovered = append(c.recovered, from)
			cl.log.Warn("recovered the planning lease of a dead attempt", "from", from)
			if err := cl.e.st.Ledger.Died(ctx, tx, from); err != nil {
				return c, err
			}
		}
		return c, cl.e.st.Ledger.Start(ctx, tx, cl.id.Key, cl.attempt, true, cl.leaseMs)
	case ledger.Resume:
		return c, cl.e.st.Ledger.Start(ctx, tx, cl.id.Key, cl.attempt, false, cl.leaseMs)
	}
	return c, nil
}

// create records a new operation for decision d (create, supersede or
// replace), moving the stored operation op, if any, among past ones.
func (cl *claimer) create(ctx context.Context, tx *sql.Tx, d ledger.Decision, op *ledger.Operation) (claimed, error) {
	c := claimed{decision: d, taken: true, created: true}
	if op != nil {
		by := ""
		switch d {
		case ledger.Supersede:
			cl.res.note(cl.log, "supersedes the %s operation of %s (%s differs; it had no effect)", op.State, op.Key, differs(op, cl.id))
			// It was replacing an earlier version: this one
			// finishes that replacement.
			c.replaces = op.Replaces
		case ledger.Replace:
			cl.res.note(cl.log, "replaces the version of %s completed on %s (content %s, %s)",
				op.Key, formatMs(op.CompletedAt), ledger.ShortDigest(op.ContentDigest), english.Plural(op.Rows.Read-op.Rows.Rejected-op.Rows.Superseded, "row"))
			by, c.replaces = cl.id.ContentDigest, op.ContentDigest
		}
		if _, _, err := cl.e.st.CP.Drop(ctx, tx, cl.op); err != nil {
			return c, err
		}
		if err := cl.e.st.Ledger.Replace(ctx, tx, cl.id.Key, by); err != nil {
			return c, err
		}
	}
	if err := cl.e.st.Ledger.Create(ctx, tx, cl.id, cl.attempt, cl.leaseMs); err != nil {
		return c, err
	}
	if c.replaces != "" {
		if err := cl.e.st.Ledger.MarkReplaces(ctx, tx, cl.id.Key, c.replaces); err != nil {
			return c, err
		}
	}
	return c, nil
}

// reset makes the completed operation of s be applied again (--reapply, or
// its table is gone): its plan is dropped and this run's attempt plans it
// anew.
func (cl *claimer) reset(ctx context.Context, tx *sql.Tx, s ledger.Situation) error {
	op := s.Op
	if s.TableMissing {
		cl.res.note(cl.log, "imported again: %s was completed on %s, but its table %s no longer exists", op.Key, formatMs(op.CompletedAt), op.Table)
	} else {
		cl.res.note(cl.log, "applied again (--reapply): %s was completed on %s", op.Key, formatMs(op.CompletedAt))
	}
	if !cl.target.Ordinal() && cl.target.Version == "" {
		cl.res.note(cl.log, "rows are upserted by key without --version-col: this file's values overwrite any newer ones written since")
	}
	// The file is planned again (its stored plan may have been collected
	// by gc) and every partition applied again: the target keys are
	// deterministic, so rows that are still there are unchanged.
	if _, _, err := cl.e.st.CP.Drop(ctx, tx, cl.op); err != nil {
		return err
	}
	if err := cl.e.st.Ledger.Reset(ctx, tx, cl.id.Key); err != nil {
		return err
	}
	return cl.e.st.Ledger.Start(ctx, tx, cl.id.Key, cl.attempt, true, cl.leaseMs)
}

// situation gathers, through q, what the claim decision depends on for the
// stored operation op (nil when none) at database time now, and the newer
// snapshot that makes this run's stale (s.Stale).
func (cl *claimer) situation(ctx context.Context, q sink.Querier, op *ledger.Operation, now int64) (s ledger.Situation, newer *ledger.Snapshot, err error) {
	s = ledger.Situation{Op: op, ID: cl.id, Now: now, Reapply: cl.req.Reapply, Replace: cl.req.Replace}
	if newer, err = cl.stale(ctx, q); err != nil {
		return s, nil, err
	}
	s.Stale = newer != nil
	s, err = cl.situationOf(ctx, q, s)
	return s, newer, err
}

// situationOf completes s with what the decision depends on for its
// stored operation s.Op, when there is one.
func (cl *claimer) situationOf(ctx context.Context, q sink.Querier, s ledger.Situation) (ledger.Situation, error) {
	op, now := s.Op, s.Now
	var err error
	if op == nil {
		return s, nil
	}
	if err := cl.readAs(ctx, q, op); err != nil {
		return s, err
	}
	s.ID = cl.id
	s.Admits = cl.admits(op)
	if op.State == ledger.Processing {
		if s.Gone, err = cl.leases().goneHolders(ctx, q, op); err != nil {
			return s, err
		}
	}
	if op.Planned {
		p, err := cl.e.st.CP.Progress(ctx, q, cl.op, cl.attempt.ID)
		if err != nil {
			return s, err
		}
		s.Effect = p.Done > 0
		s.Claimable, s.Held = p.Claimable, p.Held
		if len(s.Gone) > 0 && p.Held > 0 {
			// The partitions of gone holders are taken over at once.
			parts, err := cl.e.st.CP.Partitions(ctx, q, cl.op)
			if err != nil {
				return s, err
			}
			for _, pt := range parts {
				if !pt.Done && pt.LeaseExpires > now && slices.Contains(s.Gone, pt.LeaseAttempt) {
					s.Claimable++
					s.Held--
				}
			}
		}
	}
	if op.State == ledger.Completed {
		t, err := cl.e.st.Driver.Describe(ctx, q, op.Table)
		if err != nil {
			return s, err
		}
		s.TableMissing = t == nil
	}
	return s, nil
}

// note records a sentence for the result res and the log (when there is
// one yet: a run has none before it is identified).
func (res *Result) note(log *slog.Logger, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	res.Notes = append(res.Notes, msg)
	if log != nil {
		log.Info(msg)
	}
}

// differs names what differs between op and id: content, mapping or both.
func differs(op *ledger.Operation, id ledger.Identity) string {
	what, _ := ledger.Difference(op, id)
	return what
}

// reapDead ends at once the leases of attempts that ran on this host in
// processes that have since died, so a rerun after a crash need not wait
// for them to expire. Leases of live processes, and of other hosts, are
// left to expire on their own.
func (l leases) reapDead(ctx context.Context, tx *sql.Tx, op *ledger.Operation) error {
	gone, err := l.goneHolders(ctx, tx, op)
	if err != nil {
		return err
	}
	for _, a := range gone {
		l.log.Info("the process holding a lease is gone", "holder", a)
		if err := l.st.CP.Expire(ctx, tx, l.op, a); err != nil {
			return err
		}
		if err := l.st.Ledger.Expire(ctx, tx, l.key, a); err != nil {
			return err
		}
		if err := l.st.Ledger.Died(ctx, tx, a); err != nil {
			return err
		}
	}
	return nil
}

// goneHolders returns the attempts holding op's leases (its planning lease,
// or live leases on its partitions) that ran on this host in processes that
// have since died. It writes nothing: import takes their leases over
// (reapDead), plan and --dry-run decide as if it had.
func (l leases) goneHolders(ctx context.Context, q sink.Querier, op *ledger.Operation) ([]string, error) {
	holders, err := l.st.CP.Holders(ctx, q, l.op)
	if err != nil {
		return nil, err
	}
	if op.LeaseAttempt != "" && !slices.Contains(holders, op.LeaseAttempt) {
		holders = append(holders, op.LeaseAttempt)
	}
	var gone []string
	for _, a := range holders {
		host, pid, start, ok, err := l.st.Ledger.Process(ctx, q, a)
		if err != nil {
			return nil, err
		}
		if ok && host == l.host && proc.Gone(pid, start) {
			gone = append(gone, a)
		}
	}
	return gone, nil
}

// settles reports whether decision d ends the run without an attempt.
func settles(d ledger.Decision) bool {
	switch d {
	case ledger.Duplicate, ledger.Conflict, ledger.Busy, ledger.Refuse, ledger.Stale:
		return true
	}
	return false
}

// admits reports whether a refused operation is planned again by this run:
// its reject limit allows the bad rows the stored report counted, or the
// refusal was for a table that did not fit the file (Refusal.Unfit), which
// may fit it now.
func (cl *claimer) admits(op *ledger.Operation) bool {
	if op.State != ledger.Refused {
		return false
	}
	var ref Refusal
	if json.Unmarshal([]byte(op.Outcome), &ref) != nil {
		return cl.req.MaxRejects.Allows(op.Rows.Rejected, op.Rows.Read)
	}
	// A defect that stopped the plan pass is admitted by no limit.
	return ref.Unfit || ref.Error == "" && cl.req.MaxRejects.Allows(op.Rows.Rejected, op.Rows.Read)
}

// noteNewerWrites says so when a natural-key duplicate's table was written
// by other operations after op completed: the table may no longer hold the
// file's values, and a delivery that repeats old bytes needs its own
// --file-id to be applied again.
func (cl *claimer) noteNewerWrites(ctx context.Context, op *ledger.Operation) error {
	ops, err := cl.e.st.Ledger.List(ctx, ledger.Filter{Table: op.Table, State: ledger.Completed})
	if err != nil {
		return err
	}
	n := 0
	for _, o := range ops {
		if o.FileID != op.FileID && o.CompletedAt > op.CompletedAt {
			n++
		}
	}
	if n > 0 {
		cl.res.note(cl.log, "%s was written by %s since this file was imported, so it may no longer hold this file's values; if this is a new delivery of the same data, give it its own --file-id (e.g. --file-id '%s/{name}')",
			op.Table, english.Plural(n, "other import"), op.Table)
	}
	return nil
}

// settle fills the result of a decision that ends the run without effect.
func (cl *claimer) settle(ctx context.Context, dd decided) error {
	d, op := dd.decision, dd.op
	if d == ledger.Stale { // op may be nil
		cl.res.Outcome = Stale
		cl.res.note(cl.log, "%s", cl.staleText(dd.newer))
		return nil
	}
	cl.res.Stored = op
	at := op.UpdatedAt
	if op.CompletedAt != 0 {
		at = op.CompletedAt
	}
	if d != ledger.Busy {
		cl.res.Previous = &Previous{State: string(op.State), AttemptID: op.CompletedBy, At: formatMs(at), Rows: op.Rows}
	}
	switch d {
	case ledger.Duplicate:
		return cl.settleDuplicate(ctx, op)
	case ledger.Conflict:
		cl.res.Outcome = Conflict
		what, how := ledger.Difference(op, cl.id)
		cl.res.Differs = what
		return fmt.Errorf("conflict: %s differs from the file %s as %s into %s on %s (%s)",
			what, map[bool]string{true: "refused", false: "imported"}[op.State == ledger.Refused], op.FileID, op.Table, formatMs(op.CreatedAt), how)
	case ledger.Refuse:
		cl.res.Outcome = Refused
		var ref Refusal
		if err := json.Unmarshal([]byte(op.Outcome), &ref); err == nil {
			cl.res.Refusal = &ref
		}
		return fmt.Errorf("refused earlier on %s: %s", formatMs(op.UpdatedAt), refusalLine(cl.res.Refusal))
	case ledger.Busy:
		cl.res.Outcome = Busy
		return cl.heldBy(ctx, op)
	}
	return nil
}

// settleDuplicate fills the result of a duplicate of the completed
// operation op from its stored outcome, and records that its file was
// seen again.
func (cl *claimer) settleDuplicate(ctx context.Context, op *ledger.Operation) error {
	cl.res.Outcome = Duplicate
	var so storedOutcome
	if err := json.Unmarshal([]byte(op.Outcome), &so); err == nil {
		cl.res.Previous.Rows = so.Rows
		cl.res.Partitions = idemtype.Partitions{Total: so.Partitions, Skipped: so.Partitions}
	}
	cl.res.AttemptID = op.CompletedBy
	cl.log.Info("duplicate", "completed_by", op.CompletedBy)
	if err := cl.e.st.Ledger.Seen(ctx, cl.e.st.DB, op.Key, cl.name()); err != nil {
		return err
	}
	if !cl.target.Ordinal() {
		return cl.noteNewerWrites(ctx, op)
	}
	return nil
}

// heldBy returns the BusyError of op, which live attempts hold (the
// decision ledger.Busy): the planner's, or those of its partitions.
func (cl *claimer) heldBy(ctx context.Context, op *ledger.Operation) *BusyError {
	if op.LeaseAttempt != "" && !op.Planned {
		return cl.leases().busy(ctx, fmt.Sprintf("is planning this file (lease until %s)", formatMs(op.LeaseExpires)), cl.req.Wait > 0)
	}
	return cl.leases().busy(ctx, "holds every unfinished partition", cl.req.Wait > 0)
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
	s := fmt.Sprintf("%d of %s %s bad (at most %s allowed)", ref.Rejected, english.Plural(ref.Rows, "row"), english.Verb(ref.Rejected, "is", "are"), ref.MaxRejects)
	for i, b := range ref.Rejects {
		if i == 5 {
			s += fmt.Sprintf("; … %d more", ref.Rejected-5)
			break
		}
		s += fmt.Sprintf("; row %d", b.Ordinal)
		if b.Column != "" {
			s += fmt.Sprintf(" column %q value %s", b.Column, cutValue(b.Value))
		}
		s += ": " + b.Message
	}
	return s
}

// refusalLine is refusalText in one line: the count, and the first bad
// row's reason; the rest is in the stored report (JSON, rejects list).
func refusalLine(ref *Refusal) string {
	if ref == nil || ref.Error != "" || len(ref.Rejects) <= 1 {
		return refusalText(ref)
	}
	one := *ref
	one.Rejects = ref.Rejects[:1]
	s := refusalText(&one)
	if ref.Rejected > 1 {
		s += fmt.Sprintf("; … %d more", ref.Rejected-1)
	}
	return s
}

// maxShown is about how many characters of a value a message in text
// shows; JSON output and 'rejects list -o json' keep values whole.
const maxShown = 80

// cutValue quotes v for a message, cut to about maxShown characters.
func cutValue(v string) string {
	if utf8.RuneCountInString(v) <= maxShown {
		return strconv.Quote(v)
	}
	i, n := 0, 0
	for i = range v {
		if n == maxShown {
			break
		}
		n++
	}
	return fmt.Sprintf("%s…[%d more bytes]", strconv.Quote(v[:i]), len(v)-i)
}
