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

// claimWaiting claims, and when busy and asked to wait, polls until the
// other attempt is done or the wait is over. Each try is logged (debug),
// so that a test can count them.
func (r *run) claimWaiting(ctx context.Context) (claimed, error) {
	deadline := time.Now().Add(r.req.Wait)
	var recovered []string // by every try, as the tries recorded them
	for {
		r.log.Debug("claiming the operation")
		c, err := r.claim(ctx)
		recovered = append(recovered, c.recovered...)
		if err != nil && ctx.Err() == nil && r.e.st.Driver.Locked(err) {
			// A lock the claim needed stayed held past --busy-timeout.
			r.res.Outcome = Busy
			c, err = claimed{decision: ledger.Busy}, r.locked(ctx)
		}
		c.recovered = recovered
		if c.decision != ledger.Busy || time.Now().After(deadline) {
			return c, err
		}
		r.log.Debug("busy; waiting", "err", err)
		if err := sleep(ctx, min(time.Second, r.req.Lease/4)); err != nil {
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
func (r *run) claim(ctx context.Context) (claimed, error) {
	op, c, settled, err := r.claimUnlocked(ctx)
	if settled || err != nil {
		return c, err
	}
	tx, err := beginTx(ctx, r.e.st.DB)
	if err != nil {
		if r.e.st.Driver.Locked(err) {
			r.res.Outcome = Busy
			return claimed{decision: ledger.Busy}, r.locked(ctx)
		}
		return claimed{}, fmt.Errorf("begin claim: %w", err)
	}
	defer tx.Rollback()
	dd, err := r.lockedDecision(ctx, tx.Tx, op)
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
		return dd.claimed(), r.settle(ctx, dd)
	}
	c, err = r.take(ctx, tx.Tx, dd)
	stopped := claimed{recovered: c.recovered} // what a claim that fails from here reports
	if err != nil {
		return stopped, err
	}
	if !r.quick {
		if err := r.rememberDigests(ctx, tx); err != nil {
			return stopped, err
		}
	}
	if err := tx.Commit(); err != nil {
		return stopped, fmt.Errorf("commit claim: %w", err)
	}
	r.res.AttemptID, r.res.Replaces = r.attempt.ID, c.replaces
	return c, nil
}

// claimUnlocked decides, without the write lock, a claim that settles (a
// duplicate, a conflict, a refusal): it reports settled, and settles it.
// Otherwise it returns the operation as stored, if any.
func (r *run) claimUnlocked(ctx context.Context) (*ledger.Operation, claimed, bool, error) {
	op, now, err := r.e.st.Ledger.Get(ctx, r.e.st.DB, r.id.Key)
	if err != nil || op == nil {
		return nil, claimed{}, false, err
	}
	dd, err := r.decide(ctx, r.e.st.DB, op, now)
	if err != nil {
		return nil, claimed{}, false, err
	}
	if !settles(dd.decision) || dd.decision == ledger.Busy {
		return op, claimed{decision: dd.decision}, false, nil
	}
	if !r.quick {
		// The file was hashed: remember it, so the next run need not.
		if err := r.rememberDigests(ctx, r.e.st.DB); err != nil && !r.e.st.Driver.Locked(err) {
			return nil, claimed{}, true, err
		}
	}
	return nil, claimed{decision: dd.decision}, true, r.settle(ctx, dd)
}

// lockedDecision takes the operation's write lock in tx, reaps the dead
// holders of op (the operation as read before) when it was processing, and
// decides on the operation as it is then.
func (r *run) lockedDecision(ctx context.Context, tx *sql.Tx, op *ledger.Operation) (decided, error) {
	if err := r.e.st.Ledger.Lock(ctx, tx, r.id.Key); err != nil {
		return decided{}, err
	}
	if op != nil && op.State == ledger.Processing {
		if err := r.leases().reapDead(ctx, tx, op); err != nil {
			return decided{}, err
		}
	}
	op, now, err := r.e.st.Ledger.Get(ctx, tx, r.id.Key)
	if err != nil {
		return decided{}, err
	}
	return r.decide(ctx, tx, op, now)
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
func (r *run) decide(ctx context.Context, q sink.Querier, op *ledger.Operation, now int64) (decided, error) {
	s, newer, err := r.situation(ctx, q, op, now)
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
func (r *run) take(ctx context.Context, tx *sql.Tx, dd decided) (claimed, error) {
	c := claimed{decision: dd.decision, taken: true}
	if dd.op != nil {
		c.replaces = dd.op.Replaces
	}
	switch from := dd.from; dd.decision {
	case ledger.Create, ledger.Supersede, ledger.Replace:
		return r.create(ctx, tx, dd.decision, dd.op)
	case ledger.Reapply:
		c.created, c.replaces = true, "" // applied again, it replaces nothing (ledger.Reset)
		return c, r.reset(ctx, tx, dd.s)
	case ledger.Plan:
		if from != "" {
			r.attempt.RecoveredFrom = from
			c.recovered = append(c.recovered, from)
			r.log.Warn("recovered the planning lease of a dead attempt", "from", from)
			if err := r.e.st.Ledger.Died(ctx, tx, from); err != nil {
				return c, err
			}
		}
		return c, r.e.st.Ledger.Start(ctx, tx, r.id.Key, r.attempt, true, r.leaseMs)
	case ledger.Resume:
		return c, r.e.st.Ledger.Start(ctx, tx, r.id.Key, r.attempt, false, r.leaseMs)
	}
	return c, nil
}

// create records a new operation for decision d (create, supersede or
// replace), moving the stored operation op, if any, among past ones.
func (r *run) create(ctx context.Context, tx *sql.Tx, d ledger.Decision, op *ledger.Operation) (claimed, error) {
	c := claimed{decision: d, taken: true, created: true}
	if op != nil {
		by := ""
		switch d {
		case ledger.Supersede:
			r.res.note(r.log, "supersedes the %s operation of %s (%s differs; it had no effect)", op.State, op.Key, differs(op, r.id))
			// It was replacing an earlier version: this one
			// finishes that replacement.
			c.replaces = op.Replaces
		case ledger.Replace:
			r.res.note(r.log, "replaces the version of %s completed on %s (content %s, %s)",
				op.Key, formatMs(op.CompletedAt), ledger.ShortDigest(op.ContentDigest), english.Plural(op.Rows.Read-op.Rows.Rejected-op.Rows.Superseded, "row"))
			by, c.replaces = r.id.ContentDigest, op.ContentDigest
		}
		if _, _, err := r.e.st.CP.Drop(ctx, tx, r.op); err != nil {
			return c, err
		}
		if err := r.e.st.Ledger.Replace(ctx, tx, r.id.Key, by); err != nil {
			return c, err
		}
	}
	if err := r.e.st.Ledger.Create(ctx, tx, r.id, r.attempt, r.leaseMs); err != nil {
		return c, err
	}
	if c.replaces != "" {
		if err := r.e.st.Ledger.MarkReplaces(ctx, tx, r.id.Key, c.replaces); err != nil {
			return c, err
		}
	}
	return c, nil
}

// reset makes the completed operation of s be applied again (--reapply, or
// its table is gone): its plan is dropped and this run's attempt plans it
// anew.
func (r *run) reset(ctx context.Context, tx *sql.Tx, s ledger.Situation) error {
	op := s.Op
	if s.TableMissing {
		r.res.note(r.log, "imported again: %s was completed on %s, but its table %s no longer exists", op.Key, formatMs(op.CompletedAt), op.Table)
	} else {
		r.res.note(r.log, "applied again (--reapply): %s was completed on %s", op.Key, formatMs(op.CompletedAt))
	}
	if !r.target.Ordinal() && r.target.Version == "" {
		r.res.note(r.log, "rows are upserted by key without --version-col: this file's values overwrite any newer ones written since")
	}
	// The file is planned again (its stored plan may have been collected
	// by gc) and every partition applied again: the target keys are
	// deterministic, so rows that are still there are unchanged.
	if _, _, err := r.e.st.CP.Drop(ctx, tx, r.op); err != nil {
		return err
	}
	if err := r.e.st.Ledger.Reset(ctx, tx, r.id.Key); err != nil {
		return err
	}
	return r.e.st.Ledger.Start(ctx, tx, r.id.Key, r.attempt, true, r.leaseMs)
}

// situation gathers, through q, what the claim decision depends on for the
// stored operation op (nil when none) at database time now, and the newer
// snapshot that makes this run's stale (s.Stale).
func (r *run) situation(ctx context.Context, q sink.Querier, op *ledger.Operation, now int64) (s ledger.Situation, newer *ledger.Snapshot, err error) {
	s = ledger.Situation{Op: op, ID: r.id, Now: now, Reapply: r.req.Reapply, Replace: r.req.Replace}
	if newer, err = r.stale(ctx, q); err != nil {
		return s, nil, err
	}
	s.Stale = newer != nil
	s, err = r.situationOf(ctx, q, s)
	return s, newer, err
}

// situationOf completes s with what the decision depends on for its
// stored operation s.Op, when there is one.
func (r *run) situationOf(ctx context.Context, q sink.Querier, s ledger.Situation) (ledger.Situation, error) {
	op, now := s.Op, s.Now
	var err error
	if op == nil {
		return s, nil
	}
	if err := r.readAs(ctx, q, op); err != nil {
		return s, err
	}
	s.ID = r.id
	s.Admits = r.admits(op)
	if op.State == ledger.Processing {
		if s.Gone, err = r.leases().goneHolders(ctx, q, op); err != nil {
			return s, err
		}
	}
	if op.Planned {
		p, err := r.e.st.CP.Progress(ctx, q, r.op, r.attempt.ID)
		if err != nil {
			return s, err
		}
		s.Effect = p.Done > 0
		s.Claimable, s.Held = p.Claimable, p.Held
		if len(s.Gone) > 0 && p.Held > 0 {
			// The partitions of gone holders are taken over at once.
			parts, err := r.e.st.CP.Partitions(ctx, q, r.op)
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
		t, err := r.e.st.Driver.Describe(ctx, q, op.Table)
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

// admits reports whether this run's reject limit lets a refused operation be
// planned again: the stored report counted fewer bad rows than it allows.
func (r *run) admits(op *ledger.Operation) bool {
	return op.State == ledger.Refused && r.req.MaxRejects.Allows(op.Rows.Rejected, op.Rows.Read) && !r.refusedByDefect(op)
}

// refusedByDefect reports whether the stored refusal was for a defect that
// stopped the plan pass (no limit admits those).
func (r *run) refusedByDefect(op *ledger.Operation) bool {
	var ref Refusal
	return json.Unmarshal([]byte(op.Outcome), &ref) == nil && ref.Error != ""
}

// noteNewerWrites says so when a natural-key duplicate's table was written
// by other operations after op completed: the table may no longer hold the
// file's values, and a delivery that repeats old bytes needs its own
// --file-id to be applied again.
func (r *run) noteNewerWrites(ctx context.Context, op *ledger.Operation) error {
	ops, err := r.e.st.Ledger.List(ctx, ledger.Filter{Table: op.Table, State: ledger.Completed})
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
		r.res.note(r.log, "%s was written by %s since this file was imported, so it may no longer hold this file's values; if this is a new delivery of the same data, give it its own --file-id (e.g. --file-id '%s/{name}')",
			op.Table, english.Plural(n, "other import"), op.Table)
	}
	return nil
}

// settle fills the result of a decision that ends the run without effect.
func (r *run) settle(ctx context.Context, dd decided) error {
	d, op := dd.decision, dd.op
	if d == ledger.Stale { // op may be nil
		r.res.Outcome = Stale
		r.res.note(r.log, "%s", r.staleText(dd.newer))
		return nil
	}
	r.res.Stored = op
	at := op.UpdatedAt
	if op.CompletedAt != 0 {
		at = op.CompletedAt
	}
	if d != ledger.Busy {
		r.res.Previous = &Previous{State: string(op.State), AttemptID: op.CompletedBy, At: formatMs(at), Rows: op.Rows}
	}
	switch d {
	case ledger.Duplicate:
		return r.settleDuplicate(ctx, op)
	case ledger.Conflict:
		r.res.Outcome = Conflict
		what, how := ledger.Difference(op, r.id)
		r.res.Differs = what
		return fmt.Errorf("conflict: %s differs from the file %s as %s into %s on %s (%s)",
			what, map[bool]string{true: "refused", false: "imported"}[op.State == ledger.Refused], op.FileID, op.Table, formatMs(op.CreatedAt), how)
	case ledger.Refuse:
		r.res.Outcome = Refused
		var ref Refusal
		if err := json.Unmarshal([]byte(op.Outcome), &ref); err == nil {
			r.res.Refusal = &ref
		}
		return fmt.Errorf("refused earlier on %s: %s", formatMs(op.UpdatedAt), refusalLine(r.res.Refusal))
	case ledger.Busy:
		r.res.Outcome = Busy
		return r.heldBy(ctx, op)
	}
	return nil
}

// settleDuplicate fills the result of a duplicate of the completed
// operation op from its stored outcome, and records that its file was
// seen again.
func (r *run) settleDuplicate(ctx context.Context, op *ledger.Operation) error {
	r.res.Outcome = Duplicate
	var so storedOutcome
	if err := json.Unmarshal([]byte(op.Outcome), &so); err == nil {
		r.res.Previous.Rows = so.Rows
		r.res.Partitions = idemtype.Partitions{Total: so.Partitions, Skipped: so.Partitions}
	}
	r.res.AttemptID = op.CompletedBy
	r.log.Info("duplicate", "completed_by", op.CompletedBy)
	if err := r.e.st.Ledger.Seen(ctx, r.e.st.DB, op.Key, r.name()); err != nil {
		return err
	}
	if !r.target.Ordinal() {
		return r.noteNewerWrites(ctx, op)
	}
	return nil
}

// heldBy returns the BusyError of op, which live attempts hold (the
// decision ledger.Busy): the planner's, or those of its partitions.
func (r *run) heldBy(ctx context.Context, op *ledger.Operation) *BusyError {
	if op.LeaseAttempt != "" && !op.Planned {
		return r.leases().busy(ctx, fmt.Sprintf("is planning this file (lease until %s)", formatMs(op.LeaseExpires)), r.req.Wait > 0)
	}
	return r.leases().busy(ctx, "holds every unfinished partition", r.req.Wait > 0)
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
